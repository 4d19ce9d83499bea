/** One check of the tool linter: an id, why it matters (one line) and how to fix a finding. */
export interface LintRule {
  id: RuleId;
  /** What the rule checks, and how, in one line (heuristics are named). */
  checks: string;
  /** Why the rule exists, in one line. */
  reason: string;
  fix: string;
}

/** Every rule id, in the order findings are reported within a tool. */
export type RuleId =
  | 'name-format'
  | 'name-duplicate'
  | 'description-missing'
  | 'description-returns'
  | 'description-arguments'
  | 'description-neighbour'
  | 'hidden-characters'
  | 'no-html'
  | 'no-urls'
  | 'no-markdown-links'
  | 'no-orders'
  | 'property-described'
  | 'default-stated'
  | 'enum-for-vocabulary'
  | 'boolean-schema'
  | 'type-union'
  | 'remote-ref'
  | 'untyped-schema'
  | 'annotations-present'
  | 'annotations-consistent'
  | 'tools-budget';

/**
 * The rules, listed in docs/model.md. They work offline on the tools/list JSON
 * alone, so the same checks vet the shipped servers and any third-party one.
 */
export const RULES: readonly LintRule[] = [
  {
    id: 'name-format',
    checks:
      'The tool name is 1–128 characters of A–Z, a–z, 0–9, `_`, `-`, `.`, not starting or ending with `-` or `.` (SEP-986).',
    reason: 'Clients and model APIs reject or mangle other names, and the model calls tools by name.',
    fix: 'Rename the tool, e.g. `list_open_orders`.',
  },
  {
    id: 'name-duplicate',
    checks: 'No two tools of the server share a name.',
    reason: 'A client can call only one of them, and the model cannot tell them apart.',
    fix: 'Give each tool its own name.',
  },
  {
    id: 'description-missing',
    checks: 'The tool has a non-empty description.',
    reason: 'Without one the model guesses from the name, and calls the tool never or always.',
    fix: 'Write what comes back, what the arguments do and how the tool differs from its neighbour.',
  },
  {
    id: 'description-returns',
    checks:
      'The description says what comes back: it contains "returns", "comes back" or "result" (heuristic).',
    reason: 'The model picks a tool by what it gives back; unsaid, it calls the tool to find out.',
    fix: 'Add a sentence "Returns …" naming the fields.',
  },
  {
    id: 'description-arguments',
    checks: 'The description names every top-level argument (the property name appears as a word).',
    reason: 'The model reads the description first; an argument it is not told about is left out or misused.',
    fix: 'Say what each argument does, e.g. "status: open, paid or all (default open)".',
  },
  {
    id: 'description-neighbour',
    checks:
      'The description names another tool of the same server, or draws a contrast with "not", "only", "unlike", "instead" or "rather than" (heuristic).',
    reason:
      'Tools with similar names are confused; saying how this one differs keeps the model on the right one.',
    fix: 'Name the tool it could be confused with, or say what it does not do.',
  },
  {
    id: 'hidden-characters',
    checks:
      'No zero-width characters, bidirectional controls, Unicode tag characters, variation selectors or control characters in any string of the definition.',
    reason:
      'Hidden text reaches the model but not the human who reviews the tool: the classic tool-poisoning carrier.',
    fix: 'Delete the invisible characters; write everything in plain visible text.',
  },
  {
    id: 'no-html',
    checks: 'No HTML tags, comments or entities in any string of the definition.',
    reason: 'Markup is noise to the model and a place to hide instructions (`<IMPORTANT>`, comments).',
    fix: 'Write plain sentences.',
  },
  {
    id: 'no-urls',
    checks: 'No URLs (`scheme://…`, `www.…`) in any string of the definition.',
    reason: 'Links invite the model to fetch or send data elsewhere and cost tokens on every request.',
    fix: 'Remove the URL; documentation belongs in the README, not in what the model sees.',
  },
  {
    id: 'no-markdown-links',
    checks: 'No markdown links or images (`[text](target)`) in any string of the definition.',
    reason: 'Same as URLs, and a rendered link hides its target from a human reviewer.',
    fix: 'Remove the link; say it in words.',
  },
  {
    id: 'no-orders',
    checks:
      'No orders to the model in any string of the definition ("always call", "you must", "ignore …", "do not tell the user", "call this first", "call get_x first", "make sure to", "must be called", "the assistant should", "prefer this tool", "include the conversation", requests for secrets, role markers).',
    reason:
      'A description is data about a tool; orders in it steer the model against its user (tool poisoning).',
    fix: 'Describe what the tool does and returns; leave the decision to the model and its user.',
  },
  {
    id: 'property-described',
    checks:
      'Every property of the input schema, at any depth, has a description; output schema properties are not checked (the description names what comes back, see description-returns).',
    reason: 'An undescribed argument is filled in by guesswork.',
    fix: 'Add `.describe("…")` to the property.',
  },
  {
    id: 'default-stated',
    checks:
      'An argument with a default says so: its description or the tool description contains "default" and the default value.',
    reason: 'The model cannot see code; an unstated default surprises it (and the user) with the result.',
    fix: 'Add "(default 20)" to the property description.',
  },
  {
    id: 'enum-for-vocabulary',
    checks:
      'A string whose description lists its values ("one of", quoted alternatives, `a|b|c`) or whose pattern is a list of literals is an enum (heuristic).',
    reason:
      'An enum is checked by the schema and shown to the model as a closed list; a free string invites invented values.',
    fix: 'Use `z.enum([...])`.',
  },
  {
    id: 'boolean-schema',
    checks:
      'No bare `true` or `false` stands for a schema in the input or output schema, at any depth (allowed as the value of additionalProperties, unevaluatedProperties, additionalItems and unevaluatedItems); as the MCP Inspector checks schema portability.',
    reason:
      'Clients that translate tool schemas into another dialect have no spelling for a boolean schema and reject the tool.',
    fix: 'Write the object form: `{}` for true under `not`, `{"not": {}}` for false, or declare what the value is.',
  },
  {
    id: 'type-union',
    checks:
      'No `type` in the input or output schema, at any depth, is a list of types (`["string", "null"]`); as the MCP Inspector checks schema portability.',
    reason:
      'Legal JSON Schema, but a client that maps schemas onto one type per schema (the OpenAPI subset of Gemini function declarations) rejects the tool or drops the constraint.',
    fix: 'Split it into `anyOf` branches of one `type` each (the kit writes zod’s `.nullable()` so).',
  },
  {
    id: 'remote-ref',
    checks:
      'No `$ref` in the input or output schema points outside the document (anything not starting with `#`, unless the schema declares an `$id`); as the MCP Inspector checks schema portability.',
    reason: 'Clients fetch no remote schemas: the constraint is dropped or the tool is rejected.',
    fix: 'Inline the referenced schema, or put it under `$defs` and refer to `#/$defs/<name>`.',
  },
  {
    id: 'untyped-schema',
    checks:
      'Every schema in the input or output schema, at any depth, has a type or another validation keyword (enum, const, anyOf, properties, $ref …), except directly under `not`; as the MCP Inspector checks schema portability.',
    reason:
      'A schema that constrains nothing accepts any value: the model is told nothing, and strict clients reject it.',
    fix: 'Declare what the value is, e.g. `{"type": "object", "additionalProperties": true}` for a free-form object, instead of `z.unknown()`.',
  },
  {
    id: 'annotations-present',
    checks: 'The tool sets all four hints: readOnlyHint, destructiveHint, idempotentHint, openWorldHint.',
    reason:
      'Absent hints default to the least safe reading (not read-only, destructive, open world), or clients guess.',
    fix: 'Set all four booleans.',
  },
  {
    id: 'annotations-consistent',
    checks:
      'Hints agree with each other and with the tool: read-only is not destructive; a tool with an approval gate is not read-only (known for the kit’s own servers); annotations.title equals title.',
    reason: 'Clients decide on confirmation prompts and auto-approval from these hints.',
    fix: 'Correct the hint that is wrong.',
  },
  {
    id: 'tools-budget',
    checks:
      "The part of the server's tools/list a model reads (JSON of each tool's name, title, description and inputSchema) fits its budget in characters (default 6,000); the whole list (with output schemas, annotations and icons, which serve the client) is measured and shown, and checked only against a limit asked for; tokens are estimated as characters / 4.",
    reason:
      'The model part is sent beside the system prompt on every request: its size is a cost paid every time, in tokens and in attention.',
    fix: 'Tighten descriptions and input schemas; a server whose purpose has outgrown the budget is two servers.',
  },
];
