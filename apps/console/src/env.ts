import { join } from 'node:path';
import { baseEnvShape, boolEnv, ownManifest, parseEnv, workspaceRoot } from '@bulkhead/core';
import { z } from 'zod';
import pkg from '../package.json' with { type: 'json' };

/** This deployable's manifest (`bulkhead` in package.json), read through the one manifest schema. */
const manifest = ownManifest(pkg);

/** The port when `PORT` is unset: the manifest's (`bulkhead.port` in package.json), written nowhere else. */
export const DEFAULT_PORT = manifest.port;

const schema = z
  .object({
    ...baseEnvShape,
    HOST: z.string().min(1).default('127.0.0.1'),
    PORT: z.coerce.number().int().min(0).max(65535).default(DEFAULT_PORT),
    /** The console's address as approvers reach it; https turns on Secure cookies. */
    BULKHEAD_PUBLIC_URL: z.url().optional(),
    /** Extra allowed `Host` names behind a proxy; loopback names are always allowed. */
    BULKHEAD_ALLOWED_HOSTS: z
      .string()
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean),
      )
      .optional(),
    BULKHEAD_MIGRATE: z
      .enum(['true', 'false', '1', '0', 'yes', 'no'])
      .transform((v) => v === 'true' || v === '1' || v === 'yes')
      .default(true),
    /** Reverse proxies in front of the console that append the client's address to X-Forwarded-For. */
    BULKHEAD_PROXY_HOPS: z.coerce.number().int().min(0).max(5).default(0),
    /** How long a sign-in lasts. */
    BULKHEAD_SESSION_HOURS: z.coerce.number().min(0.1).max(168).default(12),
    /** Run under the schema owner or a superuser (refused by default: the console runs under its own role). */
    BULKHEAD_ALLOW_OWNER_ROLE: boolEnv.default(false),
    /** A one-person shop: a person may approve what a token issued to them asked for. */
    BULKHEAD_ALLOW_SELF_APPROVAL: boolEnv.default(false),
    /**
     * Where clients reach the MCP servers the console grants OAuth access to, as each server's
     * BULKHEAD_PUBLIC_URL: `admin=https://admin.example.com,customer=…`. A server not named is taken
     * at http://127.0.0.1:<its manifest port>.
     */
    BULKHEAD_SERVER_URLS: z
      .string()
      .transform((v, ctx) => {
        const urls: Record<string, string> = {};
        for (const pair of v
          .split(',')
          .map((p) => p.trim())
          .filter(Boolean)) {
          const [name, url] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
          if (!pair.includes('=') || !name || !URL.canParse(url)) {
            ctx.addIssue({ code: 'custom', message: `"${pair}" is not <server>=<url>` });
            return z.NEVER;
          }
          urls[name] = url.replace(/\/$/, '');
        }
        return urls;
      })
      .optional(),
    /** Lets a scraper that is not on loopback read /metrics (Authorization: Bearer <token>). */
    BULKHEAD_METRICS_TOKEN: z.string().min(16).optional(),
    /** The sealer's key: with it the audit log's event pages check each event against its seal. */
    BULKHEAD_AUDIT_KEY: z.string().min(16).optional(),
  })
  .transform((env) => ({
    ...env,
    BULKHEAD_DATA_DIR: env.BULKHEAD_DATA_DIR ?? join(workspaceRoot(), '.bulkhead'),
    BULKHEAD_PUBLIC_URL: env.BULKHEAD_PUBLIC_URL ?? `http://${env.HOST}:${env.PORT}`,
  }));

export type ConsoleEnv = z.output<typeof schema>;

/** The one place this deployable reads the environment. */
export function loadEnv(env: Record<string, string | undefined> = process.env): ConsoleEnv {
  return parseEnv(schema, env);
}
