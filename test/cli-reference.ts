// `pnpm docs:cli`: writes the CLI reference into docs/cli.md from the commands' own --help.
// test/cli-reference.test.ts fails when the page is out of step.
import { readFileSync, writeFileSync } from 'node:fs';
import { cliReferencePage } from '@bulkhead/cli/reference';
import { root } from './helpers.ts';

const page = `${root}docs/cli.md`;
writeFileSync(page, await cliReferencePage(readFileSync(page, 'utf8')));
console.log('docs/cli.md: the CLI reference written from --help');
