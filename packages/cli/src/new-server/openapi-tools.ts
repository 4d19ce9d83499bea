// Drafts one tool from one OpenAPI operation: a narrow zod input (path and query parameters, the
// body's required fields only, everything bounded), a description the linter passes, annotations from
// the method, and the example arguments and answer its test uses.

import {
  firstSentence,
  kebabName,
  pickOperations,
  upstreamAuth,
  type ApiDocument,
  type Operation,
  type Schema,
  type UpstreamAuthManifest,
} from './openapi.ts';

/** How deep nested objects are kept; deeper ones are dropped and named for the author. */
const MAX_DEPTH = 4;
const MAX_ITEMS = 20;
const MAX_STRING = 500;

/** One top-level argument of a drafted tool. */
export interface ToolArg {
  /** The argument's name (a TypeScript identifier). */
  name: string;
  /** Its name on the wire (path placeholder, query key, body field). */
  wire: string;
  in: 'path' | 'query' | 'body';
  required: boolean;
  /** The zod expression, `.describe()` and `.optional()` included. */
  zod: string;
  /** A value the schema accepts, for the test and the probe. */
  example: unknown;
  /** A query array sent as one comma-separated value (Swagger 2's default `csv`). */
  csv?: boolean;
}

/** A tool drafted from an operation, as the templates write it. */
export interface ToolPlan {
  operationId: string;
  /** `get_alerts`, `get-alerts`, `getAlerts`. */
  name: string;
  file: string;
  exportName: string;
  title: string;
  description: string;
  method: string;
  /** The path the upstream client gets: base path and the operation's path. */
  path: string;
  gated: boolean;
  scope: string;
  args: ToolArg[];
  /** The body: the required fields of an object as arguments, a whole (array or scalar) body as one, or none. */
  body: 'fields' | 'whole' | 'none';
  response: { status: number; example: unknown };
  /** For the author: fields not taken, free-text arguments, arguments the document does not describe. */
  dropped: string[];
  freeText: string[];
  undescribed: string[];
}

/** Facts of the server and the upstream a plan needs. */
export interface PlanContext {
  server: string;
  upstream: string;
  /** How the model reads the system's name: `the Alertmanager API`. */
  upstreamTitle: string;
  basePath: string;
}

interface Notes {
  dropped: string[];
  freeText: string[];
  undescribed: string[];
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `getAlerts` → `get_alerts`; anything else made snake_case and at most 64 characters. */
export function toolName(operationId: string): string {
  const snake = operationId
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .toLowerCase()
    .replace(/^[^a-z]+/, '')
    .replace(/_+$/, '');
  return (snake || 'call_operation').slice(0, 64).replace(/_+$/, '');
}

const argName = (wire: string) => {
  const name = wire.replace(/[^A-Za-z0-9_$]+/g, '_').replace(/^(\d)/, '_$1');
  return IDENTIFIER.test(name) ? name : `arg_${name}`;
};

/** A TypeScript string literal. */
export const ts = (value: string) => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

/** Merges `allOf` parts, and takes the first choice of a `oneOf`/`anyOf`. */
function flatten(schema: Schema): Schema {
  if (schema.allOf?.length) {
    const parts = schema.allOf.map(flatten);
    const merged: Schema = { ...schema, allOf: undefined, properties: {}, required: [] };
    for (const p of [schema, ...parts]) {
      Object.assign(merged.properties!, p.properties ?? {});
      merged.required!.push(...(p.required ?? []));
      if (p.type && !merged.type) merged.type = p.type;
      if (p.description && !merged.description) merged.description = p.description;
    }
    if (!merged.type && Object.keys(merged.properties!).length) merged.type = 'object';
    return merged;
  }
  const choice = schema.oneOf?.[0] ?? schema.anyOf?.[0];
  if (choice) return flatten({ ...choice, description: choice.description ?? schema.description });
  return schema;
}

function typeOf(schema: Schema): string {
  const types = Array.isArray(schema.type) ? schema.type.filter((t) => t !== 'null') : [schema.type];
  const type = types[0];
  if (type) return type;
  if (schema.properties || schema.additionalProperties) return 'object';
  if (schema.items) return 'array';
  if (schema.enum?.length) return typeof schema.enum[0];
  return 'string';
}

const FORMAT_HINTS: Record<string, { hint: string; example: string; max: number }> = {
  'date-time': {
    hint: 'an ISO 8601 date-time, e.g. 2026-03-02T09:00:00Z',
    example: '2026-03-02T09:00:00Z',
    max: 40,
  },
  date: { hint: 'a date like 2026-03-02', example: '2026-03-02', max: 10 },
  uuid: { hint: 'a UUID', example: '0b8c5f9e-3d2a-4c1b-9e7f-6a5d4c3b2a10', max: 36 },
  email: { hint: 'an e-mail address', example: 'ana@example.com', max: 254 },
};

/** The description of a value: the document's first sentence, its format and its default. */
function describe(schema: Schema, docText: string | undefined, label: string, notes: Notes): string {
  let text = firstSentence(docText ?? schema.description);
  if (!text) {
    notes.undescribed.push(label);
    text = `The ${label.split('.').pop()} field.`;
  }
  const hint = schema.format ? FORMAT_HINTS[schema.format]?.hint : undefined;
  const extras = [
    ...(hint ? [hint] : []),
    ...(schema.default !== undefined && typeof schema.default !== 'object'
      ? [`default ${String(schema.default)} when left out`]
      : []),
  ];
  return extras.length ? `${text.slice(0, -1)} (${extras.join('; ')}).` : text;
}

/** The zod expression of a value and an example it accepts; `label` names it for the author's notes. */
function zodOf(
  raw: Schema,
  label: string,
  depth: number,
  notes: Notes,
  docText?: string,
  /** An array's items: described by their array (their properties still are). */
  bare = false,
): { zod: string; example: unknown } | null {
  const schema = flatten(raw);
  const described = (zod: string) =>
    bare ? zod : `${zod}.describe(${ts(describe(schema, docText, label, notes))})`;
  const type = typeOf(schema);
  if (schema.enum?.length && schema.enum.every((v) => typeof v === 'string')) {
    const values = schema.enum as string[];
    return { zod: described(`z.enum([${values.map(ts).join(', ')}])`), example: values[0] };
  }
  if (schema.const !== undefined && typeof schema.const === 'string')
    return { zod: described(`z.literal(${ts(schema.const)})`), example: schema.const };
  switch (type) {
    case 'string': {
      const format = schema.format ? FORMAT_HINTS[schema.format] : undefined;
      const max = Math.min(schema.maxLength ?? format?.max ?? MAX_STRING, MAX_STRING * 8);
      if (!format && max > 40) notes.freeText.push(label);
      const example =
        typeof schema.example === 'string'
          ? schema.example
          : (format?.example ?? `example ${label.split('.').pop()!.replaceAll('[]', '')}`);
      return { zod: described(`z.string().max(${max})`), example: example.slice(0, max) };
    }
    case 'integer':
    case 'number': {
      const bounds = `${schema.minimum !== undefined ? `.min(${schema.minimum})` : ''}${schema.maximum !== undefined ? `.max(${schema.maximum})` : ''}`;
      const example = typeof schema.example === 'number' ? schema.example : (schema.minimum ?? 1);
      return { zod: described(`z.number()${type === 'integer' ? '.int()' : ''}${bounds}`), example };
    }
    case 'boolean':
      return { zod: described('z.boolean()'), example: true };
    case 'array': {
      if (!schema.items || depth >= MAX_DEPTH) {
        notes.dropped.push(`${label} (nested too deep)`);
        return null;
      }
      const item = zodOf(schema.items, `${label}[]`, depth + 1, notes, undefined, true);
      if (!item) return null;
      const max = Math.min(schema.maxItems ?? MAX_ITEMS, 100);
      return { zod: described(`z.array(${item.zod}).max(${max})`), example: [item.example] };
    }
    case 'object': {
      if (depth >= MAX_DEPTH) {
        notes.dropped.push(`${label} (nested too deep)`);
        return null;
      }
      const fields = objectFields(schema, label, depth + 1, notes);
      if (fields.length) {
        const shape = fields.map((f) => `${IDENTIFIER.test(f.key) ? f.key : ts(f.key)}: ${f.zod}`).join(', ');
        return {
          zod: described(`z.strictObject({ ${shape} })`),
          example: Object.fromEntries(fields.map((f) => [f.key, f.example])),
        };
      }
      // A map (labels, annotations): bounded keys and text values.
      notes.freeText.push(`${label} (a map of texts)`);
      return {
        zod: described('z.record(z.string().max(100), z.string().max(500))'),
        example: { key: 'value' },
      };
    }
    default:
      notes.dropped.push(`${label} (type ${type})`);
      return null;
  }
}

const rank = (list: string[] | undefined, key: string) => {
  const at = list?.indexOf(key) ?? -1;
  return at === -1 ? Number.MAX_SAFE_INTEGER : at;
};

/** The required properties of an object, each as a zod field; the optional ones are noted as dropped. */
function objectFields(
  schema: Schema,
  label: string,
  depth: number,
  notes: Notes,
): { key: string; zod: string; example: unknown }[] {
  const required = new Set(schema.required ?? []);
  const out: { key: string; zod: string; example: unknown }[] = [];
  // In the order the document lists them as required, then the rest (noted as not taken).
  const properties = Object.entries(schema.properties ?? {}).sort(
    ([a], [b]) => rank(schema.required, a) - rank(schema.required, b),
  );
  for (const [key, property] of properties) {
    const where = label ? `${label}.${key}` : key;
    if (!required.has(key)) {
      notes.dropped.push(where);
      continue;
    }
    const field = zodOf(property, where, depth, notes);
    if (field) out.push({ key, ...field });
  }
  return out;
}

/** An example of a value of `schema`, every property filled (for an upstream answer in a test). */
export function exampleOf(raw: Schema, name = 'value', depth = 0): unknown {
  const schema = flatten(raw);
  if (schema.example !== undefined) return schema.example;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if (schema.enum?.length) return schema.enum[0];
  if (depth > MAX_DEPTH) return null;
  switch (typeOf(schema)) {
    case 'string':
      return FORMAT_HINTS[schema.format ?? '']?.example ?? `example ${name}`;
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'array':
      return schema.items ? [exampleOf(schema.items, name, depth + 1)] : [];
    case 'object': {
      const entries = Object.entries(schema.properties ?? {});
      if (!entries.length)
        return typeof schema.additionalProperties === 'object'
          ? { key: exampleOf(schema.additionalProperties, 'key', depth + 1) }
          : {};
      return Object.fromEntries(entries.map(([k, p]) => [k, exampleOf(p, k, depth + 1)]));
    }
    default:
      return null;
  }
}

/** The expression made optional: `.optional()` before its own (the last) `.describe(`. */
function optional(zod: string): string {
  const at = zod.lastIndexOf('.describe(');
  return `${zod.slice(0, at)}.optional()${zod.slice(at)}`;
}

/**
 * A string path parameter as one path segment: `.` and `..` (written or percent-encoded) would be read
 * as steps in the path (`DELETE /projects/{p}/members/{id}` with id `..` deletes the project), so the
 * drafted tool refuses them by pattern, before the kit's client refuses them again.
 */
const PATH_SEGMENT = String.raw`.regex(/^(?!(?:\.|%2[eE]){1,2}$)/, 'a path segment: not . or ..')`;

/** The expression with the path segment pattern before its own (the last) `.describe(`, for a string. */
function pathSegment(zod: string): string {
  if (!zod.startsWith('z.string()')) return zod;
  const at = zod.lastIndexOf('.describe(');
  return `${zod.slice(0, at)}${PATH_SEGMENT}${zod.slice(at)}`;
}

/** The arguments of an operation: path and query parameters, then the body's required fields. */
function toolArgs(op: Operation, notes: Notes): { args: ToolArg[]; body: ToolPlan['body'] } {
  const args: ToolArg[] = [];
  for (const p of op.parameters) {
    if (p.in !== 'path' && p.in !== 'query') {
      if (p.required)
        notes.dropped.push(
          `${p.name} (a required ${p.in} parameter: the upstream's auth or a fixed header must supply it)`,
        );
      continue;
    }
    // Swagger 2 writes a parameter's type on the parameter itself.
    const { required: _required, ...inline } = p;
    const schema: Schema = p.schema ?? inline;
    const value = zodOf(schema, p.name, 1, notes, p.description ?? schema.description);
    if (!value) continue;
    const required = p.in === 'path' || p.required === true;
    args.push({
      name: argName(p.name),
      wire: p.name,
      in: p.in,
      required,
      zod: p.in === 'path' ? pathSegment(value.zod) : required ? value.zod : optional(value.zod),
      example: value.example,
      ...(typeOf(schema) === 'array' &&
      (p.collectionFormat === 'csv' || (!p.collectionFormat && !p.schema && p.in === 'query'))
        ? { csv: true }
        : {}),
    });
  }
  if (!op.body) return { args, body: 'none' };
  const schema = flatten(op.body.schema);
  if (typeOf(schema) === 'object' && schema.properties) {
    for (const field of objectFields(schema, '', 1, notes)) {
      const taken = new Set(args.map((a) => a.name));
      let name = argName(field.key);
      if (taken.has(name)) name = `body_${name}`;
      args.push({
        name,
        wire: field.key,
        in: 'body',
        required: true,
        zod: field.zod,
        example: field.example,
      });
    }
    return { args, body: 'fields' };
  }
  const whole = zodOf(schema, 'body', 1, notes, op.body.description);
  if (!whole) return { args, body: 'none' };
  args.push({
    name: 'body',
    wire: 'body',
    in: 'body',
    required: true,
    zod: whole.zod,
    example: whole.example,
  });
  return { args, body: 'whole' };
}

/** The tool's title: the summary, or its name in words. */
function titleOf(op: Operation, name: string): string {
  const text = firstSentence(op.summary || op.description).replace(/\.$/, '');
  const short = text.length > 60 ? text.slice(0, 60).replace(/\s+\S*$/, '') : text;
  if (short) return short;
  const words = name.replaceAll('_', ' ');
  return words[0]!.toUpperCase() + words.slice(1);
}

/** The description a model reads: what the operation does, what comes back, each argument named, how it differs. */
function descriptionOf(
  op: Operation,
  plan: Pick<ToolPlan, 'method' | 'path' | 'gated' | 'args'>,
  ctx: PlanContext,
): string {
  const what = firstSentence(op.summary) || firstSentence(op.description) || `Calls ${op.operationId}.`;
  const detail = op.summary && op.description ? firstSentence(op.description) : '';
  const call = `${plan.method} ${plan.path} on ${ctx.upstreamTitle}`;
  const args = plan.args.length
    ? `Arguments: ${plan.args.map((a) => a.name).join(', ')}${plan.args.some((a) => !a.required) ? ' (each optional one left out is not sent)' : ''}.`
    : 'Takes no arguments.';
  const parts = plan.gated
    ? [
        what,
        detail !== what ? detail : '',
        `The call only files a request (${call}): a person approves it first, then it is sent once.`,
        'Returns outbox_id, the queued request, once approved.',
        args,
      ]
    : [
        what,
        detail !== what ? detail : '',
        `Reads only (${call}); it changes nothing.`,
        'Returns http_status and data, the JSON answer with its texts marked untrusted.',
        args,
      ];
  return parts.filter(Boolean).join(' ');
}

/** Drafts the tool of one operation. */
export function planTool(op: Operation, ctx: PlanContext): ToolPlan {
  const notes: Notes = { dropped: [], freeText: [], undescribed: [] };
  const name = toolName(op.operationId);
  const { args, body } = toolArgs(op, notes);
  const gated = op.method !== 'GET';
  const path = `${ctx.basePath}/${op.path.replace(/^\/+/, '')}`;
  const plan = { method: op.method, path, gated, args };
  return {
    operationId: op.operationId,
    name,
    file: name.replaceAll('_', '-'),
    exportName: name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()),
    title: titleOf(op, name),
    description: descriptionOf(op, plan, ctx),
    ...plan,
    scope: `${ctx.server}:${gated ? 'write' : 'read'}`,
    body,
    response: {
      status: op.response.status,
      example: op.response.schema ? exampleOf(op.response.schema, 'value') : null,
    },
    ...notes,
  };
}

/** The tools drafted from the chosen operations, their upstream, and a note on its auth for the author. */
export interface Drafted {
  upstream: { name: string; baseUrlEnv: string; title: string; auth: UpstreamAuthManifest };
  openapi: { tools: ToolPlan[]; probe: { tool: string; arguments: Record<string, unknown> } | null };
  authNote?: string;
}

/**
 * Drafts the tools of `server` from the chosen operations. The upstream is `given` (`--upstream`), else
 * named after the document's title; the probe is the first read that needs no arguments.
 */
export function draftTools(
  api: ApiDocument,
  server: string,
  operationIds: readonly string[],
  given?: { name: string; baseUrlEnv: string },
): Drafted {
  const ops = pickOperations(api, operationIds);
  const name = given?.name ?? kebabName(api.title);
  const baseUrlEnv = given?.baseUrlEnv ?? `${name.replaceAll('-', '_').toUpperCase()}_URL`;
  const title = `the ${api.title}`.slice(0, 80);
  const { auth, note } = upstreamAuth(api, baseUrlEnv);
  const tools = ops.map((op) =>
    planTool(op, { server, upstream: name, upstreamTitle: title, basePath: api.basePath }),
  );
  const probe = tools.find((t) => !t.gated && t.args.every((a) => !a.required));
  return {
    upstream: { name, baseUrlEnv, title, auth },
    openapi: { tools, probe: probe ? { tool: probe.name, arguments: {} } : null },
    ...(note ? { authNote: note } : {}),
  };
}
