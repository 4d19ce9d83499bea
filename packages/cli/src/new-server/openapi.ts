// Reads an OpenAPI 3.0/3.1 or Swagger 2.0 document for `bulkhead new server --from-openapi`: lists its
// operations, and drafts one narrow tool for each operation the author chose (never one per endpoint).

import { existsSync } from 'node:fs';
import SwaggerParser from '@apidevtools/swagger-parser';
import { parse as parseYaml } from 'yaml';
import { CliError, UsageError } from '../io.ts';

/** The part of a JSON Schema (OpenAPI's dialect, Swagger 2's included) the drafts read. */
export interface Schema {
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  additionalProperties?: boolean | Schema;
  maxLength?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  default?: unknown;
  example?: unknown;
  examples?: unknown;
  nullable?: boolean;
}

export interface Parameter extends Omit<Schema, 'required'> {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie' | 'body' | 'formData';
  required?: boolean;
  schema?: Schema;
  collectionFormat?: string;
  style?: string;
  explode?: boolean;
}

/** One operation of the document, its parameters merged with its path's. */
export interface Operation {
  operationId: string;
  method: string;
  /** As the document writes it, without the base path. */
  path: string;
  summary: string;
  description: string;
  parameters: Parameter[];
  body?: { schema: Schema; required: boolean; description: string };
  /** The first 2xx answer: its status and, when it is JSON, its schema. */
  response: { status: number; schema?: Schema };
}

/** The auth entry of `bulkhead.upstreams.<name>` (see the kit's upstream-config.ts). */
export type UpstreamAuthManifest =
  | { type: 'none' }
  | { type: 'bearer'; tokenEnv: string }
  | { type: 'basic'; usernameEnv: string; passwordEnv: string }
  | { type: 'header'; header: string; valueEnv: string };

/** A document, read and dereferenced. */
export interface ApiDocument {
  version: string;
  title: string;
  /** Prefixed to every operation's path: Swagger 2's `basePath`, or the path of OpenAPI 3's first server. */
  basePath: string;
  operations: Operation[];
  /** The security scheme the tools authenticate with (the document's first requirement), if any. */
  security?: { type: string; scheme?: string; in?: string; name?: string };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;
/** What a drafted tool can do: a read, or a change through the outbox (the kit's upstream effects). */
const SUPPORTED = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

/** Reads `source` (a file, JSON or YAML, or an http(s) URL) and dereferences it; a sentence naming the source when it is not a document. */
export async function loadApiDocument(source: string): Promise<ApiDocument> {
  let input: string | object;
  if (/^https?:\/\//i.test(source)) {
    let res: Response;
    try {
      res = await fetch(source, { signal: AbortSignal.timeout(30_000) });
    } catch (err) {
      throw new CliError(`--from-openapi ${source}: cannot fetch it (${(err as Error).message})`);
    }
    if (!res.ok) throw new CliError(`--from-openapi ${source}: answered HTTP ${res.status}`);
    const text = await res.text();
    try {
      input = text.trimStart().startsWith('{') ? (JSON.parse(text) as object) : (parseYaml(text) as object);
    } catch (err) {
      throw new CliError(`--from-openapi ${source}: neither JSON nor YAML (${(err as Error).message})`);
    }
  } else {
    if (!existsSync(source)) throw new CliError(`--from-openapi ${source}: no such file`);
    input = source;
  }
  let doc: Record<string, unknown>;
  try {
    // The parser validates the document against its version's schema and resolves every $ref.
    doc = (await SwaggerParser.dereference(input as string)) as unknown as Record<string, unknown>;
  } catch (err) {
    throw new CliError(
      `--from-openapi ${source}: not a valid OpenAPI 3 or Swagger 2.0 document: ${(err as Error).message.split('\n')[0]}`,
    );
  }
  return readDocument(doc);
}

/** The document's facts the drafts need, from its dereferenced JSON. */
export function readDocument(doc: Record<string, unknown>): ApiDocument {
  const swagger2 = doc.swagger === '2.0';
  const info = (doc.info ?? {}) as { title?: string };
  const basePath = swagger2 ? ((doc.basePath as string | undefined) ?? '') : serverPath(doc);
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Record<string, unknown>>)) {
    const shared = (item.parameters ?? []) as Parameter[];
    for (const method of METHODS) {
      const op = item[method] as Record<string, unknown> | undefined;
      if (!op) continue;
      const own = (op.parameters ?? []) as Parameter[];
      const parameters = [
        ...shared.filter((p) => !own.some((o) => o.name === p.name && o.in === p.in)),
        ...own,
      ];
      operations.push({
        operationId: (op.operationId as string | undefined) ?? syntheticId(method, path),
        method: method.toUpperCase(),
        path,
        summary: oneLine((op.summary as string | undefined) ?? ''),
        description: oneLine((op.description as string | undefined) ?? ''),
        parameters: parameters.filter((p) => p.in !== 'body'),
        ...requestBody(op, parameters, swagger2),
        response: successResponse(op, swagger2),
      });
    }
  }
  return {
    version: swagger2 ? '2.0' : String(doc.openapi),
    title: oneLine(info.title ?? 'the upstream'),
    basePath: basePath.replace(/\/+$/, ''),
    operations,
    ...securityScheme(doc, swagger2),
  };
}

/** The path of OpenAPI 3's first server URL, its variables filled with their defaults. */
function serverPath(doc: Record<string, unknown>): string {
  const server = (
    doc.servers as { url?: string; variables?: Record<string, { default?: string }> }[] | undefined
  )?.[0];
  if (!server?.url) return '';
  const url = server.url.replace(/\{([^}]+)\}/g, (_, v: string) => server.variables?.[v]?.default ?? '');
  try {
    return new URL(url, 'http://placeholder.invalid').pathname;
  } catch {
    return '';
  }
}

function requestBody(
  op: Record<string, unknown>,
  parameters: Parameter[],
  swagger2: boolean,
): Pick<Operation, 'body'> {
  if (swagger2) {
    const body = parameters.find((p) => p.in === 'body');
    return body?.schema
      ? {
          body: {
            schema: body.schema,
            required: body.required === true,
            description: body.description ?? '',
          },
        }
      : {};
  }
  const rb = op.requestBody as
    { required?: boolean; description?: string; content?: Record<string, { schema?: Schema }> } | undefined;
  const schema = rb?.content && jsonContent(rb.content)?.schema;
  return schema
    ? { body: { schema, required: rb.required === true, description: rb.description ?? '' } }
    : {};
}

function jsonContent<T>(content: Record<string, T>): T | undefined {
  const type = Object.keys(content).find((t) => /^application\/(.+\+)?json/.test(t));
  return type ? content[type] : undefined;
}

function successResponse(op: Record<string, unknown>, swagger2: boolean): Operation['response'] {
  const responses = (op.responses ?? {}) as Record<
    string,
    { schema?: Schema; content?: Record<string, { schema?: Schema }> }
  >;
  const code = Object.keys(responses).find((c) => /^2\d\d$/.test(c));
  if (!code) return { status: 200 };
  const r = responses[code]!;
  const schema = swagger2 ? r.schema : r.content && jsonContent(r.content)?.schema;
  return { status: Number(code), ...(schema ? { schema } : {}) };
}

function securityScheme(doc: Record<string, unknown>, swagger2: boolean): Pick<ApiDocument, 'security'> {
  const schemes = (
    swagger2
      ? doc.securityDefinitions
      : (doc.components as { securitySchemes?: unknown } | undefined)?.securitySchemes
  ) as Record<string, ApiDocument['security'] & object> | undefined;
  if (!schemes || !Object.keys(schemes).length) return {};
  const wanted = (doc.security as Record<string, unknown>[] | undefined)?.flatMap((r) => Object.keys(r))[0];
  const scheme = schemes[wanted ?? ''] ?? Object.values(schemes)[0];
  return scheme ? { security: scheme } : {};
}

const syntheticId = (method: string, path: string) =>
  camelWords(
    `${method} ${path
      .replace(/\{[^}]*\}/g, '')
      .split('/')
      .filter(Boolean)
      .join(' ')}`,
  );

function camelWords(text: string): string {
  const words = text.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return words.map((w, i) => (i ? w[0]!.toUpperCase() + w.slice(1) : w.toLowerCase())).join('');
}

/** Text on one line: whitespace collapsed. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** One row of the listing mode. */
export interface OperationSummary {
  operationId: string;
  method: string;
  path: string;
  summary: string;
}

/** The document's operations, in its order, for the author to choose from. */
export function listOperations(doc: ApiDocument): OperationSummary[] {
  return doc.operations.map((o) => ({
    operationId: o.operationId,
    method: o.method,
    path: o.path,
    summary: o.summary || firstSentence(o.description),
  }));
}

/** The chosen operations, in the order given; an unknown or unsupported one is a usage error naming near matches. */
export function pickOperations(doc: ApiDocument, ids: readonly string[]): Operation[] {
  const picked: Operation[] = [];
  for (const id of ids) {
    const op = doc.operations.find((o) => o.operationId === id);
    if (!op) {
      const near = nearMatches(
        id,
        doc.operations.map((o) => o.operationId),
      );
      throw new UsageError(
        `--operation ${id}: the document has no such operationId${near.length ? `; did you mean ${near.join(', ')}?` : ''} (without --operation, bulkhead new server lists them)`,
      );
    }
    if (!SUPPORTED.has(op.method))
      throw new UsageError(
        `--operation ${id}: ${op.method} is not drafted (only GET, POST, PUT, PATCH, DELETE)`,
      );
    if (!picked.includes(op)) picked.push(op);
  }
  return picked;
}

/** Up to five ids close to `id`: sharing a word with it, or a few edits away. */
export function nearMatches(id: string, ids: readonly string[]): string[] {
  const lower = id.toLowerCase();
  const scored = ids
    .map((candidate) => {
      const c = candidate.toLowerCase();
      const shared = c.includes(lower) || lower.includes(c);
      return { candidate, shared, score: editDistance(lower, c) };
    })
    .filter((s) => s.shared || s.score <= Math.max(3, Math.floor(id.length / 3)))
    .sort((a, b) => a.score - b.score || a.candidate.localeCompare(b.candidate));
  return scored.slice(0, 5).map((s) => s.candidate);
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

/**
 * The first sentence of documentation text, safe to show a model: links, URLs, markup and hidden
 * characters taken out, at most 160 characters, ending with a full stop ('' for none).
 */
export function firstSentence(text: string | undefined): string {
  const clean = (text ?? '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\(?\b[a-z][a-z0-9+.-]*:\/\/\S+\)?/gi, '')
    .replace(/\(?\bwww\.\S+\)?/gi, '')
    .replace(/<[^>]*>/g, '')
    .replace(/&[a-z#0-9]+;/gi, ' ')
    .replace(/[`*_|]/g, '')
    .replace(/[\p{Cf}\p{Cc}]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (!clean) return '';
  // The first full stop that ends a sentence, not an abbreviation's (e.g., i.e., etc.).
  const end = clean.search(/(?<!\b(?:e\.g|i\.e|etc|vs|cf))[.!?](\s|$)/i);
  let sentence = (end >= 0 ? clean.slice(0, end) : clean).trim();
  if (sentence.length > 160) sentence = `${sentence.slice(0, 157).replace(/\s+\S*$/, '')}…`;
  sentence = sentence.replace(/[\s,;:]+$/, '');
  return sentence ? `${sentence[0]!.toUpperCase()}${sentence.slice(1)}.` : '';
}

/** `Alertmanager API` → `alertmanager-api` (an upstream name: kebab-case, at most 40 characters). */
export function kebabName(title: string): string {
  const words = title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim()
    .split(' ')
    .filter(Boolean);
  let name = '';
  for (const w of words) {
    const next = name ? `${name}-${w}` : w;
    if (next.length > 40) break;
    name = next;
  }
  name = name.replace(/^[^a-z]+/, '');
  return name || 'upstream';
}

/** The kit's auth entry for the document's security scheme, its secrets read from variables named after `baseUrlEnv`. */
export function upstreamAuth(
  doc: ApiDocument,
  baseUrlEnv: string,
): { auth: UpstreamAuthManifest; note?: string } {
  const prefix = baseUrlEnv.replace(/_(BASE_)?URL$/, '');
  const s = doc.security;
  if (!s) return { auth: { type: 'none' } };
  const kind = `${s.type}${s.scheme ? ` ${s.scheme.toLowerCase()}` : ''}`;
  if (kind === 'basic' || kind === 'http basic')
    return { auth: { type: 'basic', usernameEnv: `${prefix}_USERNAME`, passwordEnv: `${prefix}_PASSWORD` } };
  if (s.type === 'apiKey' && s.in === 'header' && s.name)
    return { auth: { type: 'header', header: s.name, valueEnv: `${prefix}_API_KEY` } };
  if (kind === 'http bearer' || s.type === 'oauth2' || s.type === 'openIdConnect')
    return { auth: { type: 'bearer', tokenEnv: `${prefix}_TOKEN` } };
  return {
    auth: { type: 'none' },
    note: `its security scheme (${kind}${s.in ? ` in ${s.in}` : ''}) has no kit auth type: the upstream's auth is { type: 'none' }; set it by hand`,
  };
}
