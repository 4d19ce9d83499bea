import type { ServerDefinition } from '../server-definition.ts';
import { RULES, type RuleId } from './rules.ts';
import { schemaPortability } from './schema-portability.ts';
import { checkText, hiddenMessage } from './text-checks.ts';

/** A tools/list entry as the linter reads it: the kit's `ToolListing`, or whatever a remote server sent. */
export interface LintableTool {
  name: string;
  title?: unknown;
  description?: unknown;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
}

/** One problem: which tool (null for the whole list), which rule, what is wrong and where in the definition. */
export interface LintFinding {
  tool: string | null;
  rule: RuleId;
  message: string;
  /** Where in the tool definition: `description`, `inputSchema.properties.limit.default`, `annotations.readOnlyHint`. */
  path: string;
}

/** What the linter needs besides the listings. */
export interface LintOptions {
  /** Tools that stop at an approval gate (known for the kit's own definitions; a remote server does not say). */
  gated?: ReadonlySet<string>;
  /**
   * A limit on the whole tools/list in characters, for a caller who asks for one (`lint-tools --budget`);
   * no check without it. The kit sets none: the whole list is measured and shown, the model part budgeted.
   */
  budgetChars?: number;
  /** The budget of the part a model reads (name, title, description, input schema); no check without it. */
  modelBudgetChars?: number;
}

/** The findings and the size of the tools/list. */
export interface LintResult {
  findings: LintFinding[];
  /**
   * `chars`: length of the JSON of the tools array; `modelChars`: the same with each tool cut to
   * the part a model reads (name, title, description, inputSchema); tokens estimated as chars / 4,
   * rounded up.
   */
  size: { chars: number; tokens: number; modelChars: number; modelTokens: number };
  budgetChars?: number;
  modelBudgetChars?: number;
}

type Json = Record<string, unknown>;

/** The characters and length a tool name may have (SEP-986): letters, digits, `.`, `_` and `-`, 1 to 128. */
export const TOOL_NAME = /^[A-Za-z0-9._-]{1,128}$/;
const RETURNS = /\b(?:returns?|returning|comes back|results?)\b/i;
const CONTRAST = /\b(?:not|doesn't|don't|only|unlike|instead|rather than)\b/i;
const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;
const NOT_TEXT = new Set(['$schema', '$id', '$ref', '$anchor', '$dynamicRef']);
const VALUE_KEYS = new Set(['enum', 'const', 'default', 'examples']);
const VOCABULARY = [
  /\bone of\b|\b(?:allowed|possible|valid|accepted) values\b/i,
  /["'`“‘][\w.-]{1,30}["'`”’]\s*(?:,|\bor\b|\/|\|)\s*["'`“‘][\w.-]{1,30}["'`”’]/,
  /\b[a-z_]+(?:\s*\|\s*[a-z_]+)+\b/,
  /\b[a-z_]+\/[a-z_]+\/[a-z_]+\b/,
];
const LITERAL_PATTERN = /^\^?\((?:\?:)?[\w-]+(?:\|[\w-]+)+\)\$?$|^\^?[\w-]+(?:\|[\w-]+)+\$?$/;
const RULE_ORDER = new Map(RULES.map((r, i) => [r.id, i]));

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const word = (name: string) =>
  new RegExp(`(?<![A-Za-z0-9_])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![A-Za-z0-9_])`, 'i');

function key(path: string, k: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`;
}

function nameProblems(name: unknown): string | undefined {
  if (typeof name !== 'string') return 'the tool has no name';
  const problems: string[] = [];
  if (!name.length) problems.push('it is empty');
  if (name.length > 128) problems.push(`it is ${name.length} characters long (at most 128)`);
  const bad = [...new Set([...name].filter((c) => !/[A-Za-z0-9._-]/.test(c)))];
  if (bad.length) problems.push(`it contains ${bad.map((c) => JSON.stringify(c)).join(', ')}`);
  if (/^[-.]|[-.]$/.test(name)) problems.push('it starts or ends with "-" or "."');
  if (!problems.length && TOOL_NAME.test(name)) return undefined;
  return `tool name ${JSON.stringify(name)} does not follow SEP-986: ${problems.join('; ')}`;
}

/** Calls `visit` for every property schema below `schema`, at any depth, with its path and whether it is top-level. */
function eachProperty(
  schema: unknown,
  path: string,
  visit: (name: string, prop: Json, path: string, topLevel: boolean) => void,
  depth = 0,
): void {
  if (Array.isArray(schema)) {
    schema.forEach((s, i) => eachProperty(s, `${path}[${i}]`, visit, depth + 1));
    return;
  }
  if (!isObject(schema)) return;
  for (const [k, v] of Object.entries(schema)) {
    if (VALUE_KEYS.has(k)) continue;
    if (k === 'properties' && isObject(v)) {
      for (const [name, prop] of Object.entries(v)) {
        const at = key(`${path}.properties`, name);
        if (isObject(prop)) {
          visit(name, prop, at, depth === 0);
          eachProperty(prop, at, visit, depth + 1);
        }
      }
    } else eachProperty(v, key(path, k), visit, depth + 1);
  }
}

/** Calls `visit` for every string inside a schema: values, and property names (`name: true`). */
function eachString(
  value: unknown,
  path: string,
  visit: (text: string, path: string, kind: 'text' | 'pattern' | 'name') => void,
  parentKey = '',
): void {
  if (typeof value === 'string') {
    if (!NOT_TEXT.has(parentKey)) visit(value, path, parentKey === 'pattern' ? 'pattern' : 'text');
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => eachString(v, `${path}[${i}]`, visit, parentKey));
  } else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (parentKey === 'properties') visit(k, key(path, k), 'name');
      eachString(v, key(path, k), visit, k);
    }
  }
}

function valueStated(value: unknown, text: string): boolean {
  if (!/\bdefaults?\b/i.test(text)) return false;
  if (typeof value === 'string') return value === '' || text.toLowerCase().includes(value.toLowerCase());
  if (typeof value === 'number' || typeof value === 'boolean') return word(String(value)).test(text);
  if (value === null) return /\b(?:null|none)\b/i.test(text);
  return true;
}

function isFreeString(schema: Json): boolean {
  const type = schema.type;
  const stringy = type === 'string' || (Array.isArray(type) && type.includes('string'));
  return stringy && !('enum' in schema) && !('const' in schema) && !('format' in schema);
}

/** Records one finding of the tool being linted. */
type Add = (rule: RuleId, message: string, path: string) => void;

function lintTool(tool: LintableTool, all: readonly LintableTool[], seen: Set<string>, options: LintOptions) {
  const name = typeof tool.name === 'string' ? tool.name : String(tool.name);
  const out: LintFinding[] = [];
  const add: Add = (rule, message, path) => out.push({ tool: name, rule, message, path });

  const nameProblem = nameProblems(tool.name);
  if (nameProblem) add('name-format', nameProblem, 'name');
  if (seen.has(name)) add('name-duplicate', `another tool is also named ${JSON.stringify(name)}`, 'name');
  seen.add(name);

  const input = isObject(tool.inputSchema) ? tool.inputSchema : {};
  const output = isObject(tool.outputSchema) ? tool.outputSchema : undefined;
  const description = typeof tool.description === 'string' ? tool.description : '';
  const annotations = isObject(tool.annotations) ? tool.annotations : undefined;

  lintDescription(tool, description, input, all, add);
  lintTexts(tool, description, annotations, add);
  lintProperties(input, output, description, add);
  for (const [schema, path] of [
    [tool.inputSchema, 'inputSchema'],
    [tool.outputSchema, 'outputSchema'],
  ] as const)
    if (schema !== undefined) for (const p of schemaPortability(schema, path)) add(p.rule, p.message, p.path);
  lintAnnotations(tool, annotations, options, add);
  return out.sort((a, b) => RULE_ORDER.get(a.rule)! - RULE_ORDER.get(b.rule)!);
}

/** The description: there at all, saying what comes back, what each argument does, and how the tool differs from its neighbours. */
function lintDescription(
  tool: LintableTool,
  description: string,
  input: Json,
  all: readonly LintableTool[],
  add: Add,
): void {
  if (!description.trim()) {
    add('description-missing', 'the tool has no description', 'description');
    return;
  }
  if (!RETURNS.test(description))
    add(
      'description-returns',
      'the description does not say what comes back (no "Returns …")',
      'description',
    );
  const inputProps = isObject(input.properties) ? Object.keys(input.properties) : [];
  for (const arg of inputProps) {
    if (!word(arg).test(description))
      add('description-arguments', `the description does not say what argument "${arg}" does`, 'description');
  }
  const others = all.filter((t) => t !== tool && typeof t.name === 'string' && t.name !== String(tool.name));
  if (!others.some((t) => word(t.name).test(description)) && !CONTRAST.test(description))
    add(
      'description-neighbour',
      'the description neither names another tool of this server nor says what the tool does not do',
      'description',
    );
}

/** Every text a client shows or a model reads (titles, description, each string in the schemas): what text-checks finds in it. */
function lintTexts(tool: LintableTool, description: string, annotations: Json | undefined, add: Add): void {
  const text = (value: string, path: string, kind: 'text' | 'pattern' | 'name') => {
    if (kind === 'name') {
      const hidden = hiddenMessage(value, 'property name contains');
      if (hidden) add('hidden-characters', hidden, path);
      return;
    }
    for (const p of checkText(value, kind === 'pattern' ? 'hidden' : undefined)) add(p.rule, p.message, path);
  };
  if (typeof tool.title === 'string') text(tool.title, 'title', 'text');
  if (description) text(description, 'description', 'text');
  if (typeof annotations?.title === 'string') text(annotations.title, 'annotations.title', 'text');
  eachString(tool.inputSchema, 'inputSchema', text);
  eachString(tool.outputSchema, 'outputSchema', text);
}

/** Each property: described, its default stated, and a fixed vocabulary given as an enum rather than in words. */
function lintProperties(input: Json, output: Json | undefined, description: string, add: Add): void {
  eachProperty(input, 'inputSchema', (prop, schema, path, topLevel) => {
    const own = typeof schema.description === 'string' ? schema.description : '';
    if (!own.trim()) add('property-described', `property "${prop}" has no description`, path);
    if ('default' in schema && !valueStated(schema.default, `${own} ${topLevel ? description : ''}`))
      add(
        'default-stated',
        `property "${prop}" defaults to ${JSON.stringify(schema.default)}, but no description says so`,
        `${path}.default`,
      );
  });
  const vocabulary = (prop: string, schema: Json, path: string) => {
    if (!isFreeString(schema)) return;
    const own = typeof schema.description === 'string' ? schema.description : '';
    if (VOCABULARY.some((v) => v.test(own)))
      add('enum-for-vocabulary', `"${prop}" is a free string, but its description lists fixed values`, path);
    else if (typeof schema.pattern === 'string' && LITERAL_PATTERN.test(schema.pattern))
      add(
        'enum-for-vocabulary',
        `"${prop}" is a free string, but its pattern allows only fixed values`,
        path,
      );
  };
  eachProperty(input, 'inputSchema', vocabulary);
  if (output) eachProperty(output, 'outputSchema', vocabulary);
}

/** The annotations: every hint given, and none contradicting another, the approval gate or the title. */
function lintAnnotations(
  tool: LintableTool,
  annotations: Json | undefined,
  options: LintOptions,
  add: Add,
): void {
  if (!annotations) {
    add('annotations-present', 'the tool has no annotations', 'annotations');
    return;
  }
  const missing = HINTS.filter((h) => typeof annotations[h] !== 'boolean');
  if (missing.length) add('annotations-present', `annotations lack ${missing.join(', ')}`, 'annotations');
  if (annotations.readOnlyHint === true && annotations.destructiveHint === true)
    add(
      'annotations-consistent',
      'readOnlyHint and destructiveHint are both true',
      'annotations.destructiveHint',
    );
  if (options.gated?.has(String(tool.name)) && annotations.readOnlyHint === true)
    add(
      'annotations-consistent',
      'the tool waits for an approval gate but says readOnlyHint: true',
      'annotations.readOnlyHint',
    );
  if (
    typeof annotations.title === 'string' &&
    typeof tool.title === 'string' &&
    annotations.title !== tool.title
  )
    add(
      'annotations-consistent',
      `annotations.title ${JSON.stringify(annotations.title)} differs from title ${JSON.stringify(tool.title)}`,
      'annotations.title',
    );
}

/**
 * Lints a tools/list: every rule in {@link RULES} on every tool, plus the
 * budgets it is given; both sizes are measured either way. Works on the JSON alone, so shipped servers (`lintServer`) and
 * remote ones (`bulkhead lint-tools --url`) get the same checks.
 */
export function lintTools(listings: readonly LintableTool[], options: LintOptions = {}): LintResult {
  const seen = new Set<string>();
  const findings = listings.flatMap((tool) => lintTool(tool, listings, seen, options));
  const chars = JSON.stringify(listings).length;
  const modelChars = modelPart(listings).length;
  const size = { chars, tokens: tokens(chars), modelChars, modelTokens: tokens(modelChars) };
  const over = (what: string, measured: number, budget: number | undefined) => {
    if (budget !== undefined && measured > budget)
      findings.push({
        tool: null,
        rule: 'tools-budget',
        message: `${what} is ${fmt(measured)} characters (~${fmt(tokens(measured))} tokens), over the budget of ${fmt(budget)}`,
        path: 'tools',
      });
  };
  over(
    'the part of tools/list a model reads (name, title, description, inputSchema)',
    modelChars,
    options.modelBudgetChars,
  );
  over('tools/list', chars, options.budgetChars);
  return {
    findings,
    size,
    ...(options.budgetChars !== undefined ? { budgetChars: options.budgetChars } : {}),
    ...(options.modelBudgetChars !== undefined ? { modelBudgetChars: options.modelBudgetChars } : {}),
  };
}

const tokens = (chars: number) => Math.ceil(chars / 4);
const fmt = (n: number) => n.toLocaleString('en-US');

/**
 * The part of a tools/list that a model reads: each tool's name, title,
 * description and input schema (clients send models these; annotations, icons
 * and output schemas serve the client). As JSON, so it is measured like the whole.
 */
export function modelPart(listings: readonly LintableTool[]): string {
  return JSON.stringify(
    listings.map((t) => ({
      name: t.name,
      ...(t.title !== undefined ? { title: t.title } : {}),
      description: t.description,
      inputSchema: t.inputSchema,
    })),
  );
}

/**
 * Lints a server definition's full tools/list (what a token with every scope sees) against the
 * budget of the part a model reads; the whole list is measured (`size.chars`), not budgeted.
 */
export function lintServer(def: ServerDefinition): LintResult {
  const listings = def.catalog.tools.map((t) => def.catalog.listings.get(t.name)!);
  const gated = new Set(def.catalog.tools.filter((t) => t.approval).map((t) => t.name));
  return lintTools(listings, { gated, modelBudgetChars: def.modelBudgetChars });
}
