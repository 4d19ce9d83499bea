import { createHash } from 'node:crypto';
import { DOC_ID_PATTERN, DOC_KINDS, DOC_TAG_PATTERN, type DocKind } from './documents.ts';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** The front matter every document starts with, between two `---` lines. */
export const frontMatterSchema = z.strictObject({
  title: z.string().trim().min(3, 'at least 3 characters').max(200, 'at most 200 characters'),
  kind: z.enum(DOC_KINDS, { error: `one of ${DOC_KINDS.join(', ')}` }),
  tags: z
    .array(z.string().regex(DOC_TAG_PATTERN, 'lower-case words joined by "-", at most 40 characters'), {
      error: 'a list of tags, e.g. [tokens, security]',
    })
    .max(20, 'at most 20 tags'),
  updated: z.iso.date({ error: 'a date written YYYY-MM-DD' }),
});

/** A document read from a file, ready to store. */
export interface ParsedDocument {
  id: string;
  title: string;
  kind: DocKind;
  tags: string[];
  /** `YYYY-MM-DD`. */
  updated: string;
  body: string;
  /** SHA-256 of everything that is stored, so that an unchanged file is not written again. */
  contentHash: string;
}

/** Why a file could not be read as a document: the field at fault and what is wrong with it. */
export interface DocumentProblem {
  field: string;
  message: string;
}

/** Largest body accepted; a document longer than this is a book, not a runbook. */
export const MAX_BODY_CHARS = 200_000;

const FENCE = /^---[ \t]*\n([\s\S]*?)\n---[ \t]*(?:\n|$)/;

/**
 * Reads one markdown document: front matter (YAML between `---` lines, see
 * {@link frontMatterSchema}) and the body after it. `fileName` is the file's
 * base name; the doc id is that name without `.md`.
 */
export function parseDocument(
  fileName: string,
  text: string,
): { ok: true; doc: ParsedDocument } | { ok: false; problem: DocumentProblem } {
  const id = fileName.replace(/\.md$/, '');
  if (!DOC_ID_PATTERN.test(id))
    return fail('file name', `"${fileName}" is not a doc id: lower-case letters, digits and "-", 3-101 long`);
  const normalised = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const match = FENCE.exec(normalised);
  if (!match) return fail('front matter', 'missing: the file must start with a "---" line, YAML, and "---"');
  let data: unknown;
  try {
    data = parseYaml(match[1]!);
  } catch (err) {
    return fail('front matter', `not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    return fail('front matter', 'expected fields title, kind, tags and updated');
  const parsed = frontMatterSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === 'unrecognized_keys')
      return fail(issue.keys.join(', '), 'not a front matter field (title, kind, tags, updated)');
    const field = issue.path.length ? issue.path.map(String).join('.') : 'front matter';
    const given = issue.path.reduce<unknown>(
      (node, key) =>
        node && typeof node === 'object' ? (node as Record<PropertyKey, unknown>)[key] : undefined,
      data,
    );
    return fail(
      field,
      given === undefined ? 'missing' : `got ${JSON.stringify(given)}, expected ${issue.message}`,
    );
  }
  const body = normalised.slice(match[0].length).replace(/^\n+/, '').trimEnd();
  if (!body) return fail('body', 'empty: write the document below the front matter');
  if (body.length > MAX_BODY_CHARS)
    return fail('body', `${body.length} characters, at most ${MAX_BODY_CHARS}: split the document`);
  const { title, kind, tags, updated } = parsed.data;
  const contentHash = createHash('sha256')
    .update(JSON.stringify({ title, kind, tags, updated, body }))
    .digest('hex');
  return { ok: true, doc: { id, title, kind, tags, updated, body, contentHash } };
}

function fail(field: string, message: string): { ok: false; problem: DocumentProblem } {
  return { ok: false, problem: { field, message } };
}
