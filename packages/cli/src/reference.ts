// The CLI reference page (docs/cli.md) is generated from the commands' own --help: `pnpm docs:cli`
// writes it, test/cli-reference.test.ts fails when the page and the commands disagree.
import type { Command } from './command.ts';
import { commandListHelp, commands } from './commands/index.ts';

/** Where the generated part of the page begins and ends; the text around it is written by hand. */
export const CLI_REFERENCE_BEGIN =
  "<!-- cli reference: generated from the commands' --help by `pnpm docs:cli`; a test keeps it in step -->";
export const CLI_REFERENCE_END = '<!-- end of the cli reference -->';

const block = (help: string) => ['```text', help, '```'].join('\n');

/** One command's section: its help, then each subcommand's. */
function section(command: Command): string[] {
  const parts = [`## bulkhead ${command.name}`, '', command.summary, '', block(command.help), ''];
  for (const sub of command.subcommands ?? [])
    parts.push(`### bulkhead ${command.name} ${sub.name}`, '', block(sub.help), '');
  return parts;
}

/** The generated part of docs/cli.md: `bulkhead --help`, then every command in `--help`'s order. */
export async function cliReference(): Promise<string> {
  const loaded = await Promise.all(commands.map((c) => c.load()));
  return [
    CLI_REFERENCE_BEGIN,
    '',
    block(commandListHelp()),
    '',
    ...loaded.flatMap(section),
    CLI_REFERENCE_END,
  ].join('\n');
}

/**
 * Every command's `--help` by the words that run it: `''` for `bulkhead --help`, `'tokens'`,
 * `'tokens issue'`, ... (what test/documented-commands.test.ts checks the docs' commands against).
 */
export async function commandHelps(): Promise<Map<string, string>> {
  const helps = new Map([['', commandListHelp()]]);
  for (const command of await Promise.all(commands.map((c) => c.load()))) {
    helps.set(command.name, command.help);
    for (const sub of command.subcommands ?? []) helps.set(`${command.name} ${sub.name}`, sub.help);
  }
  return helps;
}

/** The page with its generated part replaced by what the commands say now. */
export async function cliReferencePage(page: string): Promise<string> {
  const start = page.indexOf(CLI_REFERENCE_BEGIN);
  const end = page.indexOf(CLI_REFERENCE_END);
  if (start < 0 || end < start)
    throw new Error(`docs/cli.md lacks the markers ${CLI_REFERENCE_BEGIN} … ${CLI_REFERENCE_END}`);
  return page.slice(0, start) + (await cliReference()) + page.slice(end + CLI_REFERENCE_END.length);
}
