// Fills the templates of `bulkhead new server` (packages/cli/templates/server/): real TypeScript files,
// type-checked and linted with the CLI, whose placeholders the generator replaces. The conventions are
// described in packages/cli/templates/README.md.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../root.ts';
import { ts } from './openapi-tools.ts';

/**
 * The templates' folder, found from the repository rather than from this file: the CLI also runs
 * bundled (packages/cli/dist/cli.mjs), and `new server` writes into the repository in any case.
 */
export const TEMPLATES = join(repoRoot, 'packages', 'cli', 'templates', 'server');

/** The templates of a server in front of an upstream MCP server (`--from-mcp` with `--tool`). */
export const MCP_TEMPLATES = join(repoRoot, 'packages', 'cli', 'templates', 'mcp-server');

/** A placeholder: `__UPPER_SNAKE__`, alone in single quotes (a string), after `, ` (an argument), or bare. */
const PLACEHOLDER = /'(__[A-Z][A-Z0-9_]*__)'|(, )?(__[A-Z][A-Z0-9_]*__)/g;
/** An import of the stand-ins for computed code (src/stand-ins.ts), which no new server gets. */
const STAND_INS = /^import [^;]*? from '(?:\.{1,2}\/)+stand-ins\.ts';\n/gm;
/** `// @if flag`, `// @else`, `// @end` on a line of their own; `!flag` is its negation. */
const BLOCK = /^\s*\/\/ @(if !?\w+|else|end)\s*$/;
/** `// @if flag` at the end of a line of code (after an ESLint directive's `--`, if any). */
const LINE_IF = / \/\/ (?:eslint-disable-line .*? -- )?@if (!?\w+).*$/;

const holds = (condition: string, flags: Record<string, boolean>) =>
  condition.startsWith('!') ? !flags[condition.slice(1)] : Boolean(flags[condition]);

/** Keeps the lines whose `@if` holds and drops the markers. */
function pickLines(text: string, flags: Record<string, boolean>): string {
  const kept: string[] = [];
  const open: boolean[] = [];
  for (const line of text.split('\n')) {
    const block = BLOCK.exec(line)?.[1];
    if (block?.startsWith('if ')) open.push(holds(block.slice(3), flags));
    else if (block === 'else') open.push(!open.pop());
    else if (block === 'end') open.pop();
    else if (open.every(Boolean)) {
      const condition = LINE_IF.exec(line)?.[1];
      if (condition === undefined) kept.push(line);
      else if (holds(condition, flags)) kept.push(line.replace(LINE_IF, ''));
    }
  }
  return kept.join('\n');
}

/**
 * `text`, a template, filled in: its stand-in imports dropped, the lines its flags rule out left out,
 * and each placeholder replaced by its value — as a quoted string where the template quotes it
 * (`'__NAME__'`), with its comma gone where the value is empty (`, __TOKEN_OPTIONS__`), as it is
 * elsewhere. One pass: a value is never read for placeholders. A placeholder without a value throws.
 */
export function fillText(
  text: string,
  values: Record<string, string>,
  flags: Record<string, boolean> = {},
): string {
  return pickLines(text.replace(STAND_INS, ''), flags).replace(
    PLACEHOLDER,
    (_, quoted: string | undefined, comma = '', bare: string | undefined) => {
      const name = (quoted ?? bare)!;
      const value = values[name];
      if (value === undefined) throw new Error(`no value for ${name}`);
      if (quoted) return ts(value);
      return value === '' ? '' : `${comma}${value}`;
    },
  );
}

/** The template at `path` (relative to `root`, by default {@link TEMPLATES}) filled in, as {@link fillText} does. */
export function fillTemplate(
  path: string,
  values: Record<string, string>,
  flags: Record<string, boolean> = {},
  root = TEMPLATES,
): string {
  const file = join(root, path);
  try {
    return fillText(readFileSync(file, 'utf8'), values, flags);
  } catch (err) {
    if (err instanceof Error) err.message = `${file}: ${err.message}`;
    throw err;
  }
}
