import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { runInNewContext } from 'node:vm';

type Json = Record<string, unknown>;

/** The revisions whose schema the conformance suite ships and the servers speak. */
export type Revision = '2025-11-25' | '2026-07-28';

/**
 * The end of a JavaScript object literal that starts at `from` (a `{`): strings,
 * template literals (with their `${…}` parts) and nested braces are skipped.
 */
function literalEnd(source: string, from: number): number {
  let depth = 0;
  for (let i = from; i < source.length; i++) {
    const c = source[i]!;
    if (c === '"' || c === "'" || c === '`') {
      i = stringEnd(source, i);
      continue;
    }
    if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i + 1;
  }
  throw new Error('unterminated object literal');
}

function stringEnd(source: string, from: number): number {
  const quote = source[from]!;
  for (let i = from + 1; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\') i++;
    else if (c === quote) return i;
    else if (quote === '`' && c === '$' && source[i + 1] === '{') i = literalEnd(source, i + 1) - 1;
  }
  throw new Error('unterminated string');
}

/**
 * The MCP specification's JSON schema (`schema/<revision>/schema.json` of the
 * specification) as the npm package `@modelcontextprotocol/conformance` ships
 * it: the suite checks every message against it, and keeps it, per revision,
 * as an object literal in its bundled CLI (`dist/index.js`) — it exports no
 * module. The literal is located by the revision map that holds it and read
 * as data in an empty VM context. Pinned with the package, so a change of
 * layout fails here, loudly, with the version to look at.
 */
export function specSchema(revision: Revision): Json {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('@modelcontextprotocol/conformance/package.json', {
    paths: [new URL('.', import.meta.url).pathname],
  });
  const source = readFileSync(entry.replace(/package\.json$/, 'dist/index.js'), 'utf8');
  const map =
    /\{"2025-03-26":([\w$]+),"2025-06-18":([\w$]+),"2025-11-25":([\w$]+),\[[\w$]+\]:([\w$]+)\}/.exec(source);
  if (!map) throw new Error('@modelcontextprotocol/conformance: the map of schema revisions was not found');
  const name = revision === '2025-11-25' ? map[3]! : map[4]!;
  const start = new RegExp(`[,;\\s]${name.replace('$', '\\$')}=\\{\\$schema:`).exec(source);
  if (!start) throw new Error(`@modelcontextprotocol/conformance: the ${revision} schema was not found`);
  const open = source.indexOf('{', start.index);
  const schema = runInNewContext(`(${source.slice(open, literalEnd(source, open))})`, {}) as Json;
  if (typeof schema.$schema !== 'string' || typeof schema.$defs !== 'object')
    throw new Error(`@modelcontextprotocol/conformance: the ${revision} schema is not a JSON schema`);
  return JSON.parse(JSON.stringify(schema)) as Json;
}
