// `pnpm figures`: writes the tools/list figures into the READMEs (each server's tools table and
// sentence) and into the servers table of docs/servers/index.md, from the servers' own definitions. The figures are
// generated, never typed; test/readme-figures.test.ts fails when a README is out of step.
import { readFileSync, writeFileSync } from 'node:fs';
import { serverReadme, serversPage } from '@bulkhead/cli/figures';
import { root } from './helpers.ts';
import { discoverServerDefinitions } from './servers.ts';

const defs = await discoverServerDefinitions();
for (const def of defs) {
  const file = `${root}servers/${def.name}/README.md`;
  writeFileSync(file, serverReadme(def, readFileSync(file, 'utf8')));
}
const page = `${root}docs/servers/index.md`;
writeFileSync(page, serversPage(defs, readFileSync(page, 'utf8')));
console.log(`figures written for ${defs.map((d) => d.name).join(', ')}`);
