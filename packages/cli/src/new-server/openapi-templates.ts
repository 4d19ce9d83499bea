// The files `bulkhead new server --from-openapi` writes instead of the example tool: one tool a chosen
// operation, its test against a local stub of that operation, and the two helpers they share. The
// files are the templates of packages/cli/templates/server/ (read-operation.ts, gated-operation.ts and
// their tests, test-client.ts, upstream-data.ts); what is computed here is the code each tool's
// placeholders get: its input schema, its request, its preview, its example call and answer.

import { quoted } from '@bulkhead/core';
import { fillTemplate } from './fill.ts';
import type { ToolArg, ToolPlan } from './openapi-tools.ts';
import { ts } from './openapi-tools.ts';
import { toolsIndexTs } from './tools-index.ts';

/** What the drafted tools need to know of their server and upstream. */
export interface OpenApiServer {
  /** The server's name: `alerts`. */
  name: string;
  upstream: string;
  /** `the Alertmanager API`. */
  upstreamTitle: string;
  tools: ToolPlan[];
}

const capital = (text: string) => text[0]!.toUpperCase() + text.slice(1);

/** Text inside a template literal: backticks, backslashes and `${` kept as text. */
const tpl = (text: string) => text.replaceAll('\\', '\\\\').replaceAll('`', '\\`').replaceAll('${', '\\${');

/** A value as TypeScript source (JSON, whose quotes prettier turns into the repository's). */
const literal = (value: unknown) => JSON.stringify(value, null, 2);

const isJsonArg = (a: ToolArg) => /^z\.(array|strictObject|record)\(/.test(a.zod);
/** Free text the model writes: quoted in a preview, so that it cannot read as the sentence's own words. */
const isTextArg = (a: ToolArg) => /^z\.string\(/.test(a.zod);

/** `{ wire: name, ... }`, written `{ name }` where both are the same. */
function objectOf(args: ToolArg[], value: (a: ToolArg) => string = (a) => a.name): string {
  return `{ ${args.map((a) => (a.wire === a.name && value(a) === a.name ? a.name : `${/^[A-Za-z_$][\w$]*$/.test(a.wire) ? a.wire : ts(a.wire)}: ${value(a)}`)).join(', ')} }`;
}

/** `{ params, query }`: a GET's request options, or '' when it has none. */
function options(params: string | undefined, query: string | undefined): string {
  const parts = [...(params ? [`params: ${params}`] : []), ...(query ? [`query: ${query}`] : [])];
  return parts.length ? `{ ${parts.join(', ')} }` : '';
}

/** The query arguments as the client's `query` (a list repeats its key, a CSV one is joined), if any. */
function queryOf(t: ToolPlan): string | undefined {
  const query = t.args.filter((a) => a.in === 'query');
  if (!query.length) return undefined;
  return objectOf(query, (a) => (a.csv ? `${a.name}${a.required ? '' : '?'}.join(',')` : a.name));
}

function paramsOf(t: ToolPlan): string | undefined {
  const path = t.args.filter((a) => a.in === 'path');
  if (!path.length) return undefined;
  return objectOf(path, (a) => (/^z\.(string|number|enum)/.test(a.zod) ? a.name : `String(${a.name})`));
}

function jsonOf(t: ToolPlan): string | undefined {
  if (t.body === 'none') return undefined;
  if (t.body === 'whole') return 'body';
  return objectOf(t.args.filter((a) => a.in === 'body'));
}

/** The sentence a person approves: the operation, where it goes, and every argument. */
function previewCode(t: ToolPlan, upstreamTitle: string): string {
  const shown = t.args.map((a) => {
    const value =
      isJsonArg(a) || isTextArg(a)
        ? a.required
          ? `\${${isTextArg(a) ? 'quoted' : 'JSON.stringify'}(${a.name})}`
          : `\${${a.name} === undefined ? 'not given' : ${isTextArg(a) ? 'quoted' : 'JSON.stringify'}(${a.name})}`
        : a.required
          ? `\${${a.name}}`
          : `\${${a.name} ?? 'not given'}`;
    return `${tpl(a.name)} ${value}`;
  });
  const head = tpl(`${t.title} on ${upstreamTitle} (${t.method} ${t.path})`);
  return `\`${head}${shown.length ? `: ${shown.join(', ')}` : ''}.\``;
}

/** The preview of `args` as the tool's preview function writes it (for the test's expected value). */
export function previewText(t: ToolPlan, upstreamTitle: string, args: Record<string, unknown>): string {
  const shown = t.args.map((a) => {
    const v = args[a.name];
    const text =
      v === undefined
        ? 'not given'
        : isTextArg(a)
          ? quoted(String(v))
          : isJsonArg(a)
            ? JSON.stringify(v)
            : String(v);
    return `${a.name} ${text}`;
  });
  return `${t.title} on ${upstreamTitle} (${t.method} ${t.path})${shown.length ? `: ${shown.join(', ')}` : ''}.`;
}

const destructure = (t: ToolPlan) =>
  t.args.length ? `{ ${t.args.map((a) => a.name).join(', ')} }` : '_args';

/** The arguments a test calls the tool with: every one, optional ones too, with its example. */
export function exampleArgs(t: ToolPlan): Record<string, unknown> {
  return Object.fromEntries(t.args.map((a) => [a.name, a.example]));
}

/** The path and query the stub sees for `args`, as the kit's client writes the query. */
function sentUrl(t: ToolPlan, args: Record<string, unknown>): string {
  const search = new URLSearchParams();
  for (const a of t.args.filter((q) => q.in === 'query')) {
    const value = args[a.name];
    if (value === undefined) continue;
    const values = Array.isArray(value) ? (a.csv ? [value.join(',')] : value) : [value];
    for (const v of values) search.append(a.wire, String(v));
  }
  const query = search.toString();
  return `${concretePath(t, args)}${query ? `?${query}` : ''}`;
}

/** The path the stub sees for `args`: the placeholders filled, each encoded. */
function concretePath(t: ToolPlan, args: Record<string, unknown>): string {
  return t.path.replace(/\{([^}]+)\}/g, (_, wire: string) => {
    const arg = t.args.find((a) => a.in === 'path' && a.wire === wire);
    return encodeURIComponent(String(arg ? args[arg.name] : ''));
  });
}

/** The body the upstream gets for `args`. */
function sentBody(t: ToolPlan, args: Record<string, unknown>): unknown {
  if (t.body === 'whole') return args.body;
  if (t.body === 'none') return undefined;
  return Object.fromEntries(t.args.filter((a) => a.in === 'body').map((a) => [a.wire, args[a.name]]));
}

/** What a tool's file says of it: the placeholders of read-operation.ts and gated-operation.ts. */
function toolValues(s: OpenApiServer, t: ToolPlan): Record<string, string> {
  const input = t.args.length
    ? `z.strictObject({\n${t.args.map((a) => `    ${a.name}: ${a.zod},`).join('\n')}\n  })`
    : 'z.strictObject({})';
  return {
    __TOOL__: t.exportName,
    __TOOL_NAME__: t.name,
    __TOOL_TITLE__: t.title,
    __TOOL_DESCRIPTION__: t.description,
    __TOOL_SCOPE__: t.scope,
    __OPERATION__: `${t.operationId} (${t.method} ${t.path})`,
    __BODY_NOTE__: t.body === 'fields' ? ': only the required body fields are taken' : '',
    __INPUT__: input,
    __ARGS__: destructure(t),
    __UPSTREAM__: s.upstream,
    __PATH__: t.path,
    __REQUEST_OPTIONS__: options(paramsOf(t), queryOf(t)),
    __UPSTREAM_TITLE_AT_START__: tpl(capital(s.upstreamTitle)),
    __METHOD_AND_PATH__: tpl(`${t.method} ${t.path}`),
    __DATA_SOURCE__: `${s.upstream} ${t.method} ${t.path}`,
    __ANNOTATIONS__: `{ readOnlyHint: false, destructiveHint: ${t.method === 'DELETE'}, idempotentHint: ${t.method === 'PUT' || t.method === 'DELETE'}, openWorldHint: true }`,
    __PREVIEW__: previewCode(t, s.upstreamTitle),
    __GATED_METHOD__: ts(t.method),
    __PARAMS__: paramsOf(t) ?? '',
    __QUERY__: queryOf(t) ?? '',
    __JSON__: jsonOf(t) ?? '',
  };
}

/** What a tool's test says: the placeholders of read-operation.test.ts and gated-operation.test.ts. */
function testValues(s: OpenApiServer, t: ToolPlan): Record<string, string> {
  const args = exampleArgs(t);
  const body = sentBody(t, args);
  return {
    __EXAMPLE_ARGS__: literal(args),
    __EXAMPLE_ANSWER__: literal(t.response.example),
    __METHOD__: t.method,
    __SENT_PATH__: concretePath(t, args),
    __SENT_URL__: sentUrl(t, args),
    __STATUS__: String(t.response.status),
    __UPSTREAM_TITLE__: s.upstreamTitle,
    __UPSTREAM_TITLE_IN_TEST__: tpl(s.upstreamTitle),
    __ANSWER_BYTES__: t.response.example === null ? '0' : 'Buffer.byteLength(JSON.stringify(ANSWER))',
    __PREVIEW_TEXT__: previewText(t, s.upstreamTitle, args),
    __SENT_BODY__: body === undefined ? 'undefined' : literal(body),
  };
}

/** Every file of the drafted tools, by path relative to the server's folder; `server` holds the server's own placeholders. */
export function openApiFiles(s: OpenApiServer, server: Record<string, string>): Record<string, string> {
  const gated = s.tools.some((t) => t.gated);
  const files: Record<string, string> = {
    'src/upstream-data.ts': fillTemplate('src/upstream-data.ts', {}),
    'src/test-client.ts': fillTemplate('src/test-client.ts', server, { gated }),
    'src/tools/index.ts': toolsIndexTs(s.name, s.tools),
  };
  for (const t of s.tools) {
    const values = { ...server, ...toolValues(s, t), ...testValues(s, t) };
    const flags = {
      textArgs: t.args.some(isTextArg),
      params: paramsOf(t) !== undefined,
      query: queryOf(t) !== undefined,
      json: jsonOf(t) !== undefined,
    };
    const template = t.gated ? 'src/tools/gated-operation' : 'src/tools/read-operation';
    files[`src/tools/${t.file}.ts`] = fillTemplate(`${template}.ts`, values, flags);
    files[`src/tools/${t.file}.test.ts`] = fillTemplate(`${template}.test.ts`, values);
  }
  return files;
}
