import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import {
  manifestProblems,
  manifestSchema,
  upstreamsManifestSchema,
  type Manifest,
} from '@bulkhead/deployables';
import { ConfigError } from './config.ts';
import type { UpstreamAuth, UpstreamConfig } from '../pipeline/upstream/upstreams.ts';

/**
 * A deployable's own manifest, the `bulkhead` field of the package.json its `env.ts` imports, read
 * through the one manifest schema (@bulkhead/deployables): defaults filled in, and a field it would
 * refuse named in a {@link ConfigError}, as discovery names it.
 */
export function ownManifest(pkg: { bulkhead?: unknown }): Manifest {
  const parsed = manifestSchema.safeParse(pkg.bulkhead);
  if (!parsed.success)
    throw new ConfigError(manifestProblems(parsed.error).map((p) => `${p} (in package.json)`));
  return parsed.data;
}

/**
 * Resolves `bulkhead.upstreams` against the environment a server's `env.ts` read: each base URL from
 * its variable, each secret from its variable or mounted file (relative paths from `cwd`). Every problem
 * is one sentence naming the upstream and the variable or file; they are thrown together as a
 * {@link ConfigError}, so that a server does not start half-configured.
 */
export function resolveUpstreams(
  manifest: unknown,
  env: Record<string, string | undefined>,
  cwd = process.cwd(),
): UpstreamConfig[] {
  if (manifest === undefined) return [];
  const parsed = upstreamsManifestSchema.safeParse(manifest);
  if (!parsed.success)
    throw new ConfigError(manifestProblems(parsed.error, 'upstreams').map((p) => `${p} (in package.json)`));
  const problems: string[] = [];
  const configs: UpstreamConfig[] = [];
  for (const [name, spec] of Object.entries(parsed.data)) {
    const where = `upstream "${name}"`;
    const variable = (v: string) => {
      const value = env[v];
      if (value === undefined || value === '') problems.push(`${v}: not set (${where} reads it)`);
      return value ?? '';
    };
    const file = (path: string) => {
      const full = isAbsolute(path) ? path : resolve(cwd, path);
      try {
        return readFileSync(full, 'utf8');
      } catch (err) {
        problems.push(`${where}: cannot read ${full} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
        return '';
      }
    };
    const secret = (key: string, s: Record<string, string | undefined>) => {
      const fromEnv = s[`${key}Env`];
      const fromFile = s[`${key}File`];
      if ((fromEnv === undefined) === (fromFile === undefined)) {
        problems.push(`${where}: auth needs exactly one of ${key}Env or ${key}File`);
        return '';
      }
      return fromEnv !== undefined ? variable(fromEnv) : file(fromFile!).trim();
    };
    const rawUrl = variable(spec.baseUrlEnv);
    let baseUrl: URL | undefined;
    if (rawUrl) {
      try {
        baseUrl = new URL(rawUrl);
        if (baseUrl.protocol !== 'http:' && baseUrl.protocol !== 'https:') throw new Error('protocol');
        if (baseUrl.username || baseUrl.password) {
          problems.push(
            `${spec.baseUrlEnv}: carries credentials in the URL; give them through ${where}'s auth instead`,
          );
          baseUrl = undefined;
        }
      } catch {
        problems.push(`${spec.baseUrlEnv}: not an http(s) URL (${where} reads it)`);
        baseUrl = undefined;
      }
    }
    const a = spec.auth;
    let auth: UpstreamAuth = { type: 'none' };
    const secrets: string[] = [];
    if (a.type === 'bearer') {
      const token = secret('token', a);
      secrets.push(token);
      auth = { type: 'header', header: 'authorization', value: `Bearer ${token}` };
    } else if (a.type === 'header') {
      const value = secret('value', a);
      secrets.push(value);
      auth = { type: 'header', header: a.header.toLowerCase(), value };
    } else if (a.type === 'basic') {
      const user = a.usernameEnv ? variable(a.usernameEnv) : (a.username ?? '');
      const password = secret('password', a);
      const encoded = Buffer.from(`${user}:${password}`).toString('base64');
      secrets.push(password, encoded);
      auth = { type: 'header', header: 'authorization', value: `Basic ${encoded}` };
    } else if (a.type === 'mtls') {
      const key = file(a.keyFile);
      secrets.push(key);
      auth = { type: 'mtls', cert: file(a.certFile), key, ...(a.caFile ? { ca: file(a.caFile) } : {}) };
    }
    if (baseUrl)
      configs.push({
        name,
        title: spec.title ?? `the ${name} upstream`,
        baseUrl,
        auth,
        maxResponseBytes: spec.maxResponseBytes,
        timeoutMs: spec.timeoutMs,
        retries: spec.retries,
        secrets: secrets.filter((v) => v.length > 0),
      });
  }
  if (problems.length) throw new ConfigError([...new Set(problems)]);
  return configs;
}
