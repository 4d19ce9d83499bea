// The Cedar engine in a bundle. @cedar-policy/cedar-wasm's Node build reads its WebAssembly beside
// itself (`${__dirname}/cedar_wasm_bg.wasm`), which an ESM bundle has no __dirname for: the plugin
// points it at the bundle's own folder (and keeps the module CommonJS, as it is), and `copyCedarWasm` puts the file there.
import { readFile, copyFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(new URL('../core/package.json', import.meta.url));
const WASM = 'cedar_wasm_bg.wasm';

export const cedarWasm = {
  name: 'cedar-wasm',
  setup(b) {
    b.onLoad({ filter: /cedar-wasm[\\/]nodejs[\\/]cedar_wasm\.js$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      const from = `\`\${__dirname}/${WASM}\``;
      if (!text.includes(from))
        throw new Error(`${args.path} no longer reads ${from}: see packages/cli/cedar-wasm.mjs`);
      // `require` is the bundle's own (its banner makes it from the bundle's URL): it resolves beside the bundle.
      const beside = `require.resolve('./${WASM}')`;
      return { contents: text.replace(from, beside), loader: 'js' };
    });
  },
};

/** Copies the engine's WebAssembly into `dist`, beside the bundle. */
export async function copyCedarWasm(dist) {
  const module = dirname(require.resolve('@cedar-policy/cedar-wasm/nodejs'));
  await copyFile(join(module, WASM), join(dist, WASM));
}
