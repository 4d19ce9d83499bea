import { readFileSync } from 'node:fs';
import { type ServerDefinition } from '@bulkhead/core';
import { lintServer, modelPart } from '@bulkhead/core/operator';
import { describe, expect, it } from 'vitest';
import { root } from './helpers.ts';
import { discoverServerDefinitions } from './servers.ts';
import { serverReadme, serversPage } from '@bulkhead/cli/figures';

const fmt = (n: number) => n.toLocaleString('en-US');
const definitions: ServerDefinition[] = await discoverServerDefinitions();

/** The README's tools tables show the tools/list figures; this keeps them true when a tool changes. */
describe.each(definitions)('README figures of $name', (def) => {
  const readme = readFileSync(`${root}servers/${def.name}/README.md`, 'utf8');

  it('lists every tool with the part a model reads and its whole entry, in characters', () => {
    for (const listing of def.catalog.listings.values()) {
      const row = readme.split('\n').find((line) => line.startsWith(`| \`${listing.name}\``));
      expect(row, `README row for ${listing.name}`).toBeDefined();
      const model = modelPart([listing]).length - 2; // without the brackets of the one-element list
      expect(row!.trim(), `sizes of ${listing.name}`).toMatch(
        new RegExp(`\\| ${fmt(model)} \\| ${fmt(JSON.stringify(listing).length)} \\|$`),
      );
    }
  });

  // The servers table of docs/servers/index.md lists the shipped servers; one added by `bulkhead new
  // server` has its figures in its own README until someone adds its row (then `pnpm figures` keeps it true).
  const main = readFileSync(`${root}docs/servers/index.md`, 'utf8');
  it.runIf(main.split('\n').some((line) => line.startsWith(`| \`${def.name}\` |`)))(
    'appears in the servers table of docs/servers/index.md with both figures, the model part against its budget',
    () => {
      const { size } = lintServer(def);
      expect(main).toContain(
        `| ${fmt(size.modelChars)} of ${fmt(def.modelBudgetChars)} (~${fmt(size.modelTokens)} tokens) | ${fmt(size.chars)} (~${fmt(size.tokens)} tokens) |`,
      );
    },
  );

  it('states both figures, the model part against its budget, in its own README', () => {
    const { size } = lintServer(def);
    expect(readme.replace(/\s+/g, ' ')).toContain(
      `the part a model reads measures ${fmt(size.modelChars)} characters (about ${fmt(size.modelTokens)} tokens) of a budget of ${fmt(def.modelBudgetChars)}, the whole tools/list ${fmt(size.chars)} (about ${fmt(size.tokens)} tokens)`,
    );
  });
});

it('the READMEs and the servers page hold exactly what `pnpm figures` writes', () => {
  for (const def of definitions) {
    const readme = readFileSync(`${root}servers/${def.name}/README.md`, 'utf8');
    expect(serverReadme(def, readme), `servers/${def.name}/README.md: run pnpm figures`).toBe(readme);
  }
  const page = readFileSync(`${root}docs/servers/index.md`, 'utf8');
  expect(serversPage(definitions, page), 'docs/servers/index.md: run pnpm figures').toBe(page);
});
