import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseEnvShape, boolEnv, ownManifest, parseEnv, workspaceRoot } from '@bulkhead/core';
import { z } from 'zod';
import pkg from '../package.json' with { type: 'json' };

/** This deployable's manifest (`bulkhead` in package.json), read through the one manifest schema. */
const manifest = ownManifest(pkg);

/** The port when `PORT` is unset: the manifest's (`bulkhead.port` in package.json), written nowhere else. */
export const DEFAULT_PORT = manifest.port;

/** The first line of a secret's file; a file that cannot be read is a configuration problem. */
function secretFile(path: string, ctx: z.RefinementCtx, name = 'BULKHEAD_OIDC_CLIENT_SECRET_FILE'): string {
  try {
    return readFileSync(path, 'utf8').split('\n')[0]!.trim();
  } catch (err) {
    ctx.addIssue({
      code: 'custom',
      path: [name],
      message: `cannot be read: ${(err as Error).message}`,
    });
    return '';
  }
}

/** The SCIM bearer from its file (`BULKHEAD_SCIM_TOKEN_FILE`), at least 32 characters like the variable's. */
function scimTokenFile(path: string | undefined, ctx: z.RefinementCtx): string | undefined {
  if (!path) return undefined;
  const token = secretFile(path, ctx, 'BULKHEAD_SCIM_TOKEN_FILE');
  if (token && token.length < 32)
    ctx.addIssue({
      code: 'custom',
      path: ['BULKHEAD_SCIM_TOKEN_FILE'],
      message: 'holds fewer than 32 characters',
    });
  return token || undefined;
}

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
    /** The company's OpenID Provider (its issuer URL): people sign in there. Unset: token sign-in only. */
    BULKHEAD_OIDC_ISSUER: z.url({ protocol: /^https?$/ }).optional(),
    /** The console's client id at the OpenID Provider. */
    BULKHEAD_OIDC_CLIENT_ID: z.string().min(1).optional(),
    /** Its client secret, or a file holding it (`…_FILE`, one line). */
    BULKHEAD_OIDC_CLIENT_SECRET: z.string().min(1).optional(),
    BULKHEAD_OIDC_CLIENT_SECRET_FILE: z.string().min(1).optional(),
    /** The ID token claim that lists the person's groups. */
    BULKHEAD_OIDC_GROUPS_CLAIM: z.string().min(1).default('groups'),
    /** `off`: approver tokens no longer open the console (form or bearer); people sign in at the IdP only. */
    BULKHEAD_CONSOLE_TOKEN_SIGN_IN: z.enum(['on', 'off']).default('on'),
    /** The bearer the IdP's SCIM client presents at /scim/v2 (or a file holding it); unset: no SCIM (404). */
    BULKHEAD_SCIM_TOKEN: z.string().min(32).optional(),
    BULKHEAD_SCIM_TOKEN_FILE: z.string().min(1).optional(),
  })
  .superRefine((env, ctx) => {
    const oidc = ['BULKHEAD_OIDC_ISSUER', 'BULKHEAD_OIDC_CLIENT_ID'] as const;
    const secret = env.BULKHEAD_OIDC_CLIENT_SECRET ?? env.BULKHEAD_OIDC_CLIENT_SECRET_FILE;
    if (env.BULKHEAD_OIDC_ISSUER || env.BULKHEAD_OIDC_CLIENT_ID || secret)
      for (const name of oidc)
        if (!env[name])
          ctx.addIssue({ code: 'custom', path: [name], message: 'required for sign-in by OpenID Connect' });
    if (env.BULKHEAD_OIDC_ISSUER && !secret)
      ctx.addIssue({
        code: 'custom',
        path: ['BULKHEAD_OIDC_CLIENT_SECRET'],
        message: 'required (or BULKHEAD_OIDC_CLIENT_SECRET_FILE) for sign-in by OpenID Connect',
      });
    if (env.BULKHEAD_OIDC_CLIENT_SECRET && env.BULKHEAD_OIDC_CLIENT_SECRET_FILE)
      ctx.addIssue({
        code: 'custom',
        path: ['BULKHEAD_OIDC_CLIENT_SECRET_FILE'],
        message: 'set BULKHEAD_OIDC_CLIENT_SECRET or BULKHEAD_OIDC_CLIENT_SECRET_FILE, not both',
      });
    if (env.BULKHEAD_SCIM_TOKEN && env.BULKHEAD_SCIM_TOKEN_FILE)
      ctx.addIssue({
        code: 'custom',
        path: ['BULKHEAD_SCIM_TOKEN_FILE'],
        message: 'set BULKHEAD_SCIM_TOKEN or BULKHEAD_SCIM_TOKEN_FILE, not both',
      });
    if (env.BULKHEAD_CONSOLE_TOKEN_SIGN_IN === 'off' && !env.BULKHEAD_OIDC_ISSUER)
      ctx.addIssue({
        code: 'custom',
        path: ['BULKHEAD_CONSOLE_TOKEN_SIGN_IN'],
        message: 'off needs BULKHEAD_OIDC_ISSUER: nobody could sign in',
      });
  })
  .transform((env, ctx) => ({
    ...env,
    BULKHEAD_DATA_DIR: env.BULKHEAD_DATA_DIR ?? join(workspaceRoot(), '.bulkhead'),
    BULKHEAD_PUBLIC_URL: env.BULKHEAD_PUBLIC_URL ?? `http://${env.HOST}:${env.PORT}`,
    oidc: env.BULKHEAD_OIDC_ISSUER
      ? {
          issuer: env.BULKHEAD_OIDC_ISSUER,
          clientId: env.BULKHEAD_OIDC_CLIENT_ID!,
          clientSecret:
            env.BULKHEAD_OIDC_CLIENT_SECRET ?? secretFile(env.BULKHEAD_OIDC_CLIENT_SECRET_FILE!, ctx),
          groupsClaim: env.BULKHEAD_OIDC_GROUPS_CLAIM,
        }
      : undefined,
    tokenSignIn: env.BULKHEAD_CONSOLE_TOKEN_SIGN_IN === 'on',
    scimToken: env.BULKHEAD_SCIM_TOKEN ?? scimTokenFile(env.BULKHEAD_SCIM_TOKEN_FILE, ctx),
  }));

export type ConsoleEnv = z.output<typeof schema>;

/** The one place this deployable reads the environment. */
export function loadEnv(env: Record<string, string | undefined> = process.env): ConsoleEnv {
  return parseEnv(schema, env);
}
