import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { manifestProblems, manifestSchema, type Manifest } from './manifest.ts';

/** A read call that answers on the demo data: what cross-server tests and deployment checks call. */
export interface Probe {
  tool: string;
  arguments: Record<string, unknown>;
}

/**
 * A deployable found under `servers/` (the MCP servers) or `apps/` (the console), from the `bulkhead`
 * field of its package.json: the one place where its port, scopes and customer binding are written.
 * Everything else reads them here.
 */
export interface Deployable {
  /** Folder and package name: `admin`, `customer`, `dev-knowledge`, `console`. */
  name: string;
  dir: string;
  /** The package's `description`. */
  description: string;
  /** `mcp` servers take MCP tokens; `console` is the approvers' web console. */
  kind: 'mcp' | 'console';
  port: number;
  /** Every scope the server's tools need (checked against its tools by `test/manifests.test.ts`). */
  scopes: string[];
  /** True when some tool of the server is gated (checked against its tools, as above). */
  gated: boolean;
  /** True when every token of this server is bound to one customer (`--customer` required). */
  customerBound: boolean;
  /** A read call that succeeds on the demo data, for the token matrix and the image checks. */
  probe: Probe | null;
  /** The deployable's own grants and row policies (`grants.sql` beside its package.json), if any. */
  grantsSql: string | null;
  /**
   * The other systems it reaches (`bulkhead.upstreams`), each with the variable holding its base URL:
   * `pnpm start` starts the server only when every one is set. The kit checks the rest of each entry.
   */
  upstreams: { name: string; baseUrlEnv: string }[];
  /** The whole `bulkhead` field as checked, defaults filled in (each upstream's auth, limits, title). */
  manifest: Manifest;
}

/** A deployable's package.json whose `bulkhead` field is not what a deployable needs. */
export class ManifestError extends Error {
  override readonly name = 'ManifestError';
}

/** Reads and checks the manifest of the deployable in `dir`; null when its package.json has no `bulkhead` field. */
export function readDeployable(dir: string): Deployable | null {
  const file = join(dir, 'package.json');
  if (!existsSync(file)) return null;
  const pkg = JSON.parse(readFileSync(file, 'utf8')) as { description?: string; bulkhead?: unknown };
  if (pkg.bulkhead === undefined) return null;
  const name = basename(dir);
  const parsed = manifestSchema.safeParse(pkg.bulkhead);
  // The first problem, with the file it is in: the one a person fixes before looking again.
  if (!parsed.success)
    throw new ManifestError(
      `${basename(dirname(dir))}/${name}/package.json: ${manifestProblems(parsed.error)[0]}`,
    );
  const m = parsed.data;
  const grants = join(dir, 'grants.sql');
  return {
    name,
    dir,
    description: pkg.description ?? '',
    kind: m.kind,
    port: m.port,
    scopes: m.scopes,
    gated: m.gated,
    customerBound: m.customerBound,
    probe: m.probe ?? null,
    grantsSql: existsSync(grants) ? readFileSync(grants, 'utf8') : null,
    upstreams: Object.entries(m.upstreams).map(([upstream, u]) => ({
      name: upstream,
      baseUrlEnv: u.baseUrlEnv,
    })),
    manifest: m,
  };
}

/** The folders of a repository whose subfolders are deployables: the MCP servers, and the apps (the console). */
const DEPLOYABLE_FOLDERS = ['servers', 'apps'] as const;

/**
 * Finds the deployables by their folders (under `servers/` and `apps/`), in port order, so that
 * adding a bounded server means adding a folder: nothing lists them by name.
 */
export function discoverDeployables(root: string): Deployable[] {
  return DEPLOYABLE_FOLDERS.map((folder) => join(root, folder))
    .filter((base) => existsSync(base))
    .flatMap((base) =>
      readdirSync(base, { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .flatMap((entry) => readDeployable(join(base, entry.name)) ?? []),
    )
    .sort((a, b) => a.port - b.port);
}
