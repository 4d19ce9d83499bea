// The tools/list figures in the READMEs (each server's tools table and sentence) and in the servers
// table of docs/servers/index.md, computed from the servers' own definitions: `pnpm figures` writes them,
// test/readme-figures.test.ts checks them, and `bulkhead new server` writes a new server's README with them.
import { type ServerDefinition } from '@bulkhead/core';
import { lintServer, modelPart } from '@bulkhead/core/operator';

const fmt = (n: number) => n.toLocaleString('en-US');

/** A server README with its tools rows and its figures sentence set to what the definition measures. */
export function serverReadme(def: ServerDefinition, readme: string): string {
  const { size } = lintServer(def);
  let out = readme
    .split('\n')
    .map((line) => {
      const listing = [...def.catalog.listings.values()].find((l) => line.startsWith(`| \`${l.name}\``));
      if (!listing) return line;
      const model = modelPart([listing]).length - 2; // without the brackets of the one-element list
      const cells = line.split(' | ');
      cells[cells.length - 2] = fmt(model);
      cells[cells.length - 1] = `${fmt(JSON.stringify(listing).length)} |`;
      return cells.join(' | ');
    })
    .join('\n');
  out = out.replace(
    // An older README still gives the whole list its retired budget (` of 12,000`); the match drops it.
    /the part a model reads measures [\d,]+ characters \(about [\d,]+ tokens\) of a budget of [\d,]+, the whole tools\/list [\d,]+ \(about [\d,]+ tokens\)(?: of [\d,]+)?/,
    figuresSentence(def, size),
  );
  return out;
}

/** A server README's figures sentence: the part a model reads against its budget, the whole list as measured. */
export function figuresSentence(def: ServerDefinition, size = lintServer(def).size): string {
  return `the part a model reads measures ${fmt(size.modelChars)} characters (about ${fmt(size.modelTokens)} tokens) of a budget of ${fmt(def.modelBudgetChars)}, the whole tools/list ${fmt(size.chars)} (about ${fmt(size.tokens)} tokens)`;
}

/** The servers page's cells of one server: the model part against its budget, the whole list as measured. */
export function serversPageCells(def: ServerDefinition): string {
  const { size } = lintServer(def);
  return `| ${fmt(size.modelChars)} of ${fmt(def.modelBudgetChars)} (~${fmt(size.modelTokens)} tokens) | ${fmt(size.chars)} (~${fmt(size.tokens)} tokens) |`;
}

/** The servers page (docs/servers/index.md) with every server's row figures set. */
export function serversPage(defs: ServerDefinition[], page: string): string {
  return page
    .split('\n')
    .map((line) => {
      const def = defs.find((d) => line.startsWith(`| \`${d.name}\` |`));
      if (!def) return line;
      return line.replace(
        /\| [\d,]+ of [\d,]+ \(~[\d,]+ tokens\) \| [\d,]+(?: of [\d,]+)? \(~[\d,]+ tokens\) \|/,
        serversPageCells(def),
      );
    })
    .join('\n');
}
