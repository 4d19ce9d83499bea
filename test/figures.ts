// `pnpm figures`: writes the tools/list figures into the READMEs (each server's tools table and
// sentence, the main README's servers table) from the servers' own definitions. The figures are
// generated, never typed; test/readme-figures.test.ts fails when a README is out of step.
import { readFileSync, writeFileSync } from 'node:fs';
import { mainReadme, serverReadme } from '@bulkhead/cli/figures';
import { root } from './helpers.ts';
import { discoverServerDefinitions } from './servers.ts';

const defs = await discoverServerDefinitions();
for (const def of defs) {
  const file = `${root}servers/${def.name}/README.md`;
  writeFileSync(file, serverReadme(def, readFileSync(file, 'utf8')));
}
const main = `${root}README.md`;
writeFileSync(main, mainReadme(defs, readFileSync(main, 'utf8')));
console.log(`figures written for ${defs.map((d) => d.name).join(', ')}`);
