import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { manifestProblems, mcpUpstreamManifestSchema } from '@bulkhead/deployables';
import type { McpUpstreamConfig } from '../pipeline/mcp-upstream/connection.ts';
import { parsePinFile, type PinFile } from '../pipeline/mcp-upstream/pins.ts';
import { ConfigError } from './config.ts';

/**
 * Resolves `bulkhead.mcpUpstream` against the environment a server's `env.ts` read: the child's
 * variables and the header's value, each from its variable or mounted file (relative paths from `cwd`).
 * Every problem is one sentence; they are thrown together as a {@link ConfigError}. Undefined without one.
 */
export function resolveMcpUpstream(
  manifest: unknown,
  env: Record<string, string | undefined>,
  cwd = process.cwd(),
): McpUpstreamConfig | undefined {
  if (manifest === undefined) return undefined;
  const parsed = mcpUpstreamManifestSchema.safeParse(manifest);
  if (!parsed.success)
    throw new ConfigError(manifestProblems(parsed.error, 'mcpUpstream').map((p) => `${p} (in package.json)`));
  const spec = parsed.data;
  const where = `mcpUpstream "${spec.name}"`;
  const problems: string[] = [];
  const secrets: string[] = [];
  const read = (source: { env?: string | undefined; file?: string | undefined }) => {
    let value = '';
    if (source.env !== undefined) {
      value = env[source.env] ?? '';
      if (!value) problems.push(`${source.env}: not set (${where} reads it)`);
    } else {
      const full = isAbsolute(source.file!) ? source.file! : resolve(cwd, source.file!);
      try {
        value = readFileSync(full, 'utf8').trim();
      } catch (err) {
        problems.push(`${where}: cannot read ${full} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      }
    }
    if (value) secrets.push(value);
    return value;
  };
  const title = spec.title ?? `the ${spec.name} server`;
  let config: McpUpstreamConfig;
  if (spec.command !== undefined) {
    const childEnv = Object.fromEntries(Object.entries(spec.env).map(([k, source]) => [k, read(source)]));
    // The child gets the variables it is given and the PATH to find its command, nothing else of ours.
    const base: Record<string, string> = env.PATH ? { PATH: env.PATH } : {};
    config = {
      name: spec.name,
      title,
      transport: {
        type: 'stdio',
        command: spec.command,
        args: spec.args,
        env: { ...base, ...childEnv },
        cwd,
      },
      secrets,
    };
  } else {
    const headers = spec.header ? { [spec.header.name]: read(spec.header) } : {};
    config = {
      name: spec.name,
      title,
      transport: { type: 'http', url: new URL(spec.url!), headers },
      secrets,
    };
  }
  if (problems.length) throw new ConfigError(problems);
  return config;
}

/** Reads a server's pin file (`bulkhead.mcpUpstream.pins`, relative to the folder of its package.json). */
export function readPins(packageJson: string | URL, file = 'pins.json'): PinFile & { others: string[] } {
  const dir = dirname(packageJson instanceof URL ? fileURLToPath(packageJson) : packageJson);
  const path = resolve(dir, file);
  return parsePinFile(readFileSync(path, 'utf8'), path);
}
