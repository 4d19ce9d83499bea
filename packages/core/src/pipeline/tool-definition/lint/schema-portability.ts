import type { RuleId } from './rules.ts';

/** A schema-portability problem at one place of a tool's input or output schema. */
export interface SchemaProblem {
  rule: Extract<RuleId, 'boolean-schema' | 'type-union' | 'remote-ref' | 'untyped-schema'>;
  message: string;
  path: string;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keywords whose value is one subschema (`items` may also be a list of them). */
const ONE_SCHEMA = [
  'items',
  'contains',
  'not',
  'propertyNames',
  'if',
  'then',
  'else',
  'additionalProperties',
  'unevaluatedProperties',
  'additionalItems',
  'unevaluatedItems',
  'contentSchema',
] as const;
/** Keywords whose value is a list of subschemas. */
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'] as const;
/** Keywords whose value maps names to subschemas. */
const SCHEMA_MAPS = [
  'properties',
  'patternProperties',
  'dependentSchemas',
  'dependencies',
  '$defs',
  'definitions',
] as const;
/** Where `true` / `false` is the usual spelling ("any other key", "no other key"), not a stand-in for a schema. */
const BOOLEAN_PLACES = new Set([
  'additionalProperties',
  'unevaluatedProperties',
  'additionalItems',
  'unevaluatedItems',
]);
/**
 * Keywords that constrain the value a schema accepts (assertions, applicators, references); a schema
 * with none of them accepts anything. `if` counts only with `then` or `else`.
 */
const CONSTRAINING = new Set([
  'type',
  'enum',
  'const',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'format',
  'contentMediaType',
  'contentEncoding',
  'contentSchema',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxContains',
  'minContains',
  'maxProperties',
  'minProperties',
  'required',
  'dependentRequired',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'items',
  'prefixItems',
  'contains',
  'additionalItems',
  'unevaluatedItems',
  'properties',
  'patternProperties',
  'additionalProperties',
  'unevaluatedProperties',
  'propertyNames',
  'dependentSchemas',
  'dependencies',
  '$ref',
  '$dynamicRef',
  '$recursiveRef',
]);
const TYPES = new Set(['null', 'boolean', 'object', 'array', 'number', 'string', 'integer']);
const MAX_DEPTH = 64;

function key(path: string, k: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`;
}

/** Calls `visit` for each subschema directly below `node`, with its path and the keyword it stands under. */
function eachSubschema(
  node: Json,
  path: string,
  visit: (sub: unknown, path: string, keyword: string) => void,
) {
  for (const keyword of SCHEMA_MAPS) {
    const map = node[keyword];
    if (isObject(map))
      for (const [name, sub] of Object.entries(map)) visit(sub, key(key(path, keyword), name), keyword);
  }
  for (const keyword of SCHEMA_LISTS) {
    const list = node[keyword];
    if (Array.isArray(list)) list.forEach((sub, i) => visit(sub, `${key(path, keyword)}[${i}]`, keyword));
  }
  for (const keyword of ONE_SCHEMA) {
    if (!(keyword in node)) continue;
    const value = node[keyword];
    if (keyword === 'items' && Array.isArray(value))
      value.forEach((sub, i) => visit(sub, `${key(path, keyword)}[${i}]`, keyword));
    else visit(value, key(path, keyword), keyword);
  }
}

/** Whether any schema at or below `node` declares an `$id` (a relative `$ref` may then resolve inside it). */
function declaresId(node: unknown, depth = 0): boolean {
  if (depth > MAX_DEPTH || !isObject(node)) return false;
  if (typeof node.$id === 'string' && node.$id !== '') return true;
  let found = false;
  eachSubschema(node, '', (sub) => (found ||= declaresId(sub, depth + 1)));
  return found;
}

function constrains(node: Json): boolean {
  return (
    Object.keys(node).some((k) => CONSTRAINING.has(k)) || ('if' in node && ('then' in node || 'else' in node))
  );
}

/**
 * The schema-portability problems of one schema, the four checks the MCP Inspector (2.x, `tools/list`)
 * reports under "Schema portability" and by the same names: a bare boolean where a schema object is
 * expected (`boolean-schema`), a list of types (`type-union`), a `$ref` outside the document
 * (`remote-ref`) and a schema that constrains nothing (`untyped-schema`). Clients that translate tool
 * schemas into another dialect (the OpenAPI subset of Gemini's function declarations, strict modes of
 * model APIs) reject these or silently drop the constraint.
 */
export function schemaPortability(schema: unknown, path: string): SchemaProblem[] {
  const out: SchemaProblem[] = [];
  const remoteRefsResolve = declaresId(schema);
  const walk = (node: unknown, at: string, keyword: string | undefined, depth: number) => {
    if (depth > MAX_DEPTH) return;
    if (typeof node === 'boolean') {
      if (keyword === undefined || !BOOLEAN_PLACES.has(keyword))
        out.push({
          rule: 'boolean-schema',
          message: `a bare ${node} stands where a schema object is expected${node ? ' (it accepts any value)' : ' (it accepts no value)'}`,
          path: at,
        });
      return;
    }
    if (!isObject(node)) return;
    const type = node.type;
    if (
      Array.isArray(type) &&
      type.length > 0 &&
      type.every((t) => typeof t === 'string' && TYPES.has(t)) &&
      new Set(type).size === type.length
    )
      out.push({
        rule: 'type-union',
        message: `type is a list (${JSON.stringify(type)}), which a client with one type per schema cannot express`,
        path: at,
      });
    const ref = node.$ref;
    if (typeof ref === 'string' && ref !== '' && !ref.startsWith('#') && !remoteRefsResolve)
      out.push({
        rule: 'remote-ref',
        message: `$ref points outside the schema (${JSON.stringify(ref)}), and clients fetch no remote schemas`,
        path: at,
      });
    if (!constrains(node) && keyword !== 'not')
      out.push({
        rule: 'untyped-schema',
        message: 'the schema has no type nor any other validation keyword: it accepts any value',
        path: at,
      });
    eachSubschema(node, at, (sub, subPath, subKeyword) => walk(sub, subPath, subKeyword, depth + 1));
  };
  walk(schema, path, undefined, 0);
  return out;
}
