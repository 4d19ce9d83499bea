import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { CliEnv } from './env.ts';
import { UsageError, type Io } from './io.ts';

/** What every command gets. */
export interface CommandContext {
  env: CliEnv;
  io: Io;
}

/** One `bulkhead` command or subcommand. */
export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The full `--help` text. */
  help: string;
  /** A group's commands (`tokens issue`, `tokens list`, ...), for the CLI reference page. */
  subcommands?: Command[];
  run(argv: string[], ctx: CommandContext): Promise<number>;
}

/** Where the docs site explains the commands: the CLI reference page, at one command's section if named. */
export const referenceOf = (name?: string) =>
  `docs/cli.md${name ? `#bulkhead-${name}` : ''} (\`pnpm docs:dev\` serves it)`;

/** A command made of subcommands (`tokens issue`, `tokens list`, ...). */
export function group(name: string, summary: string, subcommands: Command[]): Command {
  const help = [
    `Usage: bulkhead ${name} <command> [options]`,
    '',
    summary,
    '',
    'Commands:',
    ...subcommands.map((c) => `  ${c.name.padEnd(12)} ${c.summary}`),
    '',
    `Run \`bulkhead ${name} <command> --help\` for the options of one command.`,
    `Reference: ${referenceOf(name)}.`,
  ].join('\n');
  return {
    name,
    summary,
    help,
    subcommands,
    async run(argv, ctx) {
      const [sub, ...rest] = argv;
      if (!sub || sub === '--help' || sub === '-h' || sub === 'help') {
        ctx.io.out(help);
        return sub ? 0 : 2;
      }
      const command = subcommands.find((c) => c.name === sub);
      if (!command)
        throw new UsageError(
          `unknown command "${name} ${sub}"; one of: ${subcommands.map((c) => c.name).join(', ')}`,
        );
      if (rest.includes('--help') || rest.includes('-h')) {
        ctx.io.out(command.help);
        return 0;
      }
      return command.run(rest, ctx);
    },
  };
}

/** `util.parseArgs` with strict options, turning its errors into usage errors. */
export function parse<T extends NonNullable<ParseArgsConfig['options']>>(
  argv: string[],
  options: T,
  allowPositionals = false,
) {
  try {
    return parseArgs({ args: argv, options, allowPositionals, strict: true });
  } catch (err) {
    // Node's hint about `--` for positionals that start with a dash is noise for a mistyped option.
    const message = (err as Error).message.replace(/^.*?: /, '').split('\n')[0]!;
    throw new UsageError(message.replace(/\. To specify a positional argument starting with a '-'.*$/, ''));
  }
}

/**
 * `argv` without the `--` that pnpm 12 passes through (`pnpm start -- --port-offset 1000`,
 * `pnpm bulkhead tokens list -- --server x`): the first `--` goes when only command
 * words stand before it. A `--` after an option is left to the command.
 */
export function dropPnpmSeparator(argv: string[]): string[] {
  const at = argv.indexOf('--');
  if (at === -1 || argv.slice(0, at).some((a) => a.startsWith('-'))) return argv;
  return [...argv.slice(0, at), ...argv.slice(at + 1)];
}

/** `--interval <ms>` of a command that follows (`audit seal --follow`, `audit forward --follow`). */
export function followInterval(value: string | undefined): number {
  const interval = Number(value);
  if (!Number.isInteger(interval) || interval < 50 || interval > 3_600_000)
    throw new UsageError('--interval: milliseconds from 50 to 3600000');
  return interval;
}
