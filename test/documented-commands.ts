// The `pnpm …` commands the docs and the CLI's --help tell a reader to run, and whether the pinned
// pnpm runs what they mean. test/documented-commands.test.ts holds every one of them to it.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';

/** One command as written: where, and the words after `pnpm`. */
export interface DocumentedCommand {
  /** `README.md:67`, `bulkhead tokens issue --help`. */
  where: string;
  /** `bulkhead tokens issue --server customer`. */
  command: string;
}

/** What a workspace package offers `pnpm <name>`: its scripts, and the bins pnpm finds for it. */
export interface PackageCommands {
  name: string;
  scripts: Set<string>;
  bins: Set<string>;
}

/** What the commands are checked against. */
export interface Workspace {
  root: PackageCommands;
  packages: PackageCommands[];
  /** The `bulkhead` commands by their words (`''`, `tokens`, `tokens issue`): commandHelps()'s keys. */
  cli: Set<string>;
}

/**
 * Every name pnpm 12.4.2 keeps for a command of its own (`pnpm help`, with the aliases): `pnpm <name>`
 * runs pnpm's command, never a script of that name. The test checks this list against `pnpm help`.
 */
export const PNPM_OWN_COMMANDS = new Set(
  [
    'access init recursive multi m add install i install-test it update up upgrade outdated audit',
    'change version lane bugs issues list ls ll la licenses licences why view info show v sbom',
    'whoami deprecate undeprecate unpublish star unstar stars dist-tag dist-tags ping doctor',
    'search s se find rebuild rb pack publish stage remove uninstall rm un uni patch patch-commit',
    'patch-remove peers set-script ss test t tst run pipeline exec dlx create completion start',
    'stop restart find-hash runtime rt env shim bin clean purge ci clean-install ic install-clean',
    'root prefix config c get set pkg pack-app store cache cat-file cat-index ignored-builds',
    'approve-builds link ln import dedupe deploy prune fetch unlink dislink docs home repo',
    'self-update setup login adduser team owner owners logout with edit profile token xmas help',
  ]
    .join(' ')
    .split(' '),
);

/** pnpm's own commands that the docs may name for what pnpm does with them. */
export const PNPM_COMMANDS_MEANT = new Set([
  'install',
  'i',
  'add',
  'remove',
  'update',
  'fetch',
  'dlx',
  'why',
  'help',
]);

/** pnpm's own commands that run the script of their name: the script must exist. */
const SCRIPT_COMMANDS = new Set(['test', 't', 'tst', 'start', 'stop', 'restart']);

/** Options before the command that take a value. */
const VALUE_OPTIONS = new Set(['--filter', '-F', '--dir', '-C']);

/** A word that stands for something the reader fills in: `<id>`, `…`, `[--all]`, `${dir}`. */
const placeholder = (word: string) => /[<>…[\]{}$]|^\.\.\.$/.test(word);

/** A `pnpm` that starts a command: not `pnpm-lock.yaml`, not the end of a path. */
const PNPM = /(?<![\w./-])pnpm(?=[ \t])/g;

/** The words of each command in `code` (a span or a line of a code block). */
function commandsInCode(code: string): string[] {
  // A command ends at a shell operator, a comment, a closing parenthesis or backquote, a column gap,
  // the end of a sentence or clause (`pnpm start, the CLI`), or the end of the line.
  const end = /&&|\|\||[;|)`]|\s#|\s{2,}|(?<=\S)[,.:](?=\s|$)/;
  return [...code.matchAll(PNPM)].map((m) => {
    const rest = code.slice(m.index + 'pnpm'.length);
    const stop = rest.search(end);
    return (stop < 0 ? rest : rest.slice(0, stop)).replace(/\\$/, '').trim();
  });
}

/** The line of `text` that `index` falls on, from 1. */
const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

/**
 * The commands in a Markdown file: in its code blocks and its code spans (prose that merely names
 * pnpm, such as "pnpm workspaces", is no instruction).
 */
export function commandsInMarkdown(file: string, markdown: string): DocumentedCommand[] {
  const found: DocumentedCommand[] = [];
  let fence: string | null = null;
  // The text outside the code blocks, their lines left empty so that line numbers stay true.
  const prose: string[] = [];
  markdown.split('\n').forEach((line, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === null || marker.startsWith(fence))) {
      fence = fence === null ? marker : null;
      prose.push('');
    } else if (fence !== null) {
      for (const command of commandsInCode(line)) found.push({ where: `${file}:${i + 1}`, command });
      prose.push('');
    } else prose.push(line);
  });
  const text = prose.join('\n');
  for (const span of text.matchAll(/(`+)([^`]+?)\1(?!`)/g))
    for (const command of commandsInCode(span[2]!.replace(/\s*\n\s*/g, ' ')))
      found.push({ where: `${file}:${lineOf(text, span.index)}`, command });
  return found;
}

/** The commands in a command's --help: its code spans, and `pnpm …` in its plain text. */
export function commandsInHelp(where: string, help: string): DocumentedCommand[] {
  const spans = [...help.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
  const plain = help.replace(/`[^`\n]*`/g, ' ').split('\n');
  return [...spans.flatMap((s) => commandsInCode(s)), ...plain.flatMap((l) => commandsInCode(l))].map(
    (command) => ({ where, command }),
  );
}

/** The package `--filter <name>` selects: by its name, or by its name without the scope. */
function filtered(name: string, workspace: Workspace): PackageCommands | undefined {
  const exact = workspace.packages.find((p) => p.name === name);
  if (exact) return exact;
  const unscoped = workspace.packages.filter((p) => p.name.replace(/^@[^/]+\//, '') === name);
  return unscoped.length === 1 ? unscoped[0] : undefined;
}

/** Why `bulkhead <words>` has no --help, or null when it has. */
function cliProblem(words: string[], cli: Set<string>): string | null {
  let known = '';
  for (const word of words) {
    if (!/^[a-z][a-z-]*$/.test(word)) break;
    const next = known ? `${known} ${word}` : word;
    if (cli.has(next)) {
      known = next;
      continue;
    }
    const group = [...cli].some((c) => c !== known && c.startsWith(known ? `${known} ` : ''));
    if (group)
      return `\`bulkhead ${next}\` is no command (\`bulkhead ${known ? `${known} ` : ''}--help\` lists them)`;
    break; // past a command without subcommands the words are its arguments (`kb ingest docs/handbook`)
  }
  return null;
}

/**
 * Why pnpm would not run what `command` (the words after `pnpm`) means, or null when it would: a
 * script of the root (or of the `--filter` package), a bin pnpm finds, a `bulkhead` command that
 * answers --help, or one of {@link PNPM_COMMANDS_MEANT}.
 */
export function commandProblem(command: string, workspace: Workspace): string | null {
  const words = command.split(/\s+/).filter(Boolean);
  let target = workspace.root;
  while (words[0]?.startsWith('-')) {
    const option = words.shift()!;
    const value = VALUE_OPTIONS.has(option) ? words.shift() : undefined;
    if (option !== '--filter' && option !== '-F') continue; // `--dir <repo>`: the docs mean the root
    if (value === undefined || placeholder(value)) return null; // `--filter <name>`: any package
    const found = filtered(value, workspace);
    if (!found) return `--filter ${value}: no workspace package of that name`;
    target = found;
  }
  const cut = words.findIndex(placeholder);
  if (cut >= 0) words.length = cut;
  const [name, ...args] = words;
  if (name === undefined) return null;
  const inPackage = target === workspace.root ? 'package.json' : `${target.name}'s package.json`;
  const bin = (b: string) => target.bins.has(b) || workspace.root.bins.has(b);
  const runsBin = (b: string, rest: string[]) =>
    !bin(b)
      ? `no bin \`${b}\` in node_modules/.bin (pnpm install adds the bins of the dependencies)`
      : b === 'bulkhead'
        ? cliProblem(rest, workspace.cli)
        : null;
  if (name === 'run') {
    const script = args.find((a) => !a.startsWith('-'));
    return script === undefined || target.scripts.has(script)
      ? null
      : `no script "${script}" in ${inPackage}`;
  }
  if (name === 'exec') {
    const [b, ...rest] = args;
    return b === undefined ? null : runsBin(b, rest);
  }
  if (SCRIPT_COMMANDS.has(name))
    return target.scripts.has(name)
      ? null
      : `no script "${name}" in ${inPackage} for \`pnpm ${name}\` to run`;
  if (PNPM_COMMANDS_MEANT.has(name)) return null;
  if (PNPM_OWN_COMMANDS.has(name))
    return `\`pnpm ${name}\` is pnpm's own command, not a script${target.scripts.has(name) ? ` (\`pnpm run ${name}\` runs the script)` : ''}`;
  if (target.scripts.has(name)) return null;
  if (bin(name)) return runsBin(name, args);
  return `no script "${name}" in ${inPackage}, and no bin of that name`;
}

/** A package's scripts and the bins of its node_modules/.bin. */
function packageCommands(dir: string): PackageCommands {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    name: string;
    scripts?: Record<string, string>;
  };
  const bins = join(dir, 'node_modules', '.bin');
  return {
    name: pkg.name,
    scripts: new Set(Object.keys(pkg.scripts ?? {})),
    bins: new Set(existsSync(bins) ? readdirSync(bins).map((f) => f.replace(/\.(cmd|ps1)$/, '')) : []),
  };
}

/** The workspace at `root` (its packages as pnpm-workspace.yaml lists them) and the CLI's commands. */
export function loadWorkspace(root: string, cli: Iterable<string>): Workspace {
  const { packages: globs } = parse(readFileSync(join(root, 'pnpm-workspace.yaml'), 'utf8')) as {
    packages: string[];
  };
  const dirs = globs.flatMap((glob) =>
    glob.endsWith('/*')
      ? readdirSync(join(root, glob.slice(0, -2)), { withFileTypes: true })
          .filter((e) => e.isDirectory())
          .map((e) => join(root, glob.slice(0, -2), e.name))
      : [join(root, glob)],
  );
  return {
    root: packageCommands(root),
    packages: dirs.filter((d) => existsSync(join(d, 'package.json'))).map(packageCommands),
    cli: new Set(cli),
  };
}

/** Markdown files under `dir`, but those of `skip` (folder names). */
function markdownUnder(dir: string, skip: string[]): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.md'))
    .map((e) => join(e.parentPath, e.name))
    .filter(
      (f) =>
        !relative(dir, f)
          .split(/[\\/]/)
          .some((part) => skip.includes(part)),
    );
}

/**
 * The Markdown a reader is sent to, relative to `root`: the READMEs, ARCHITECTURE.md, the docs site's
 * pages (not its build output) and infra's pages.
 */
export function documentedMarkdown(root: string): string[] {
  const skip = ['node_modules', '.vitepress', 'dist'];
  const readmes = ['servers', 'apps', 'packages']
    .flatMap((group) => readdirSync(join(root, group)).map((d) => join(root, group, d, 'README.md')))
    .filter(existsSync);
  return [
    join(root, 'README.md'),
    join(root, 'ARCHITECTURE.md'),
    ...markdownUnder(join(root, 'docs'), skip),
    ...readmes,
    ...markdownUnder(join(root, 'infra'), skip),
  ]
    .filter((f) => existsSync(f))
    .map((f) => relative(root, f).split('\\').join('/'))
    .sort();
}
