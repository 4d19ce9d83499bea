// The Cedar schema a policy set is validated against, made from the servers' tools: a policy that
// names an argument a tool does not have, or compares it as the wrong type, fails validation when it
// is proposed, not when a call meets it.
//
// One namespace a server (`admin` → `Admin`, `dev-knowledge` → `DevKnowledge`), whose actions are its
// tools, so that two servers' tools of one name keep their own arguments; and the
// shared `Bulkhead` namespace with the principal (`Token`, in its `Group`s) and the resource
// (`Server`). Every action's context has the same frame — `args` (the validated arguments),
// `gated`, `read_only`, `time` and `usage` — so a policy over every action (`permit(principal,
// action, resource) when { context.gated }`) validates too.
import type { SchemaJson, TypeOfAttribute } from '@cedar-policy/cedar-wasm/nodejs';
import type { ToolCatalog } from '../tool-definition/catalog.ts';

type CedarType = TypeOfAttribute<string>;
type Json = Record<string, unknown>;

/** The namespace of a server's actions: `dev-knowledge` → `DevKnowledge`. */
export function serverNamespace(server: string): string {
  return server
    .split(/[^a-zA-Z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');
}

/** The Cedar type of a JSON Schema, or null when Cedar has none (a union, null, a number with a fraction). */
function cedarType(schema: Json): CedarType | null {
  switch (schema.type) {
    case 'string':
      return { type: 'String' };
    case 'integer':
      return { type: 'Long' };
    case 'boolean':
      return { type: 'Boolean' };
    case 'array': {
      const element = cedarType((schema.items ?? {}) as Json);
      return element ? { type: 'Set', element } : null;
    }
    case 'object':
      return recordOf(schema);
    default:
      // A string enum has no `type` in some schemas; a number may have a fraction, which Long cannot hold.
      if (Array.isArray(schema.enum) && schema.enum.every((v) => typeof v === 'string'))
        return { type: 'String' };
      return null;
  }
}

/** A JSON Schema object as a Cedar record: properties Cedar cannot type are left out (a policy cannot name them). */
function recordOf(schema: Json): CedarType {
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const attributes: Record<string, CedarType> = {};
  for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) {
    const type = cedarType(property);
    if (type) attributes[name] = { ...type, required: required.has(name) } as CedarType;
  }
  return { type: 'Record', attributes };
}

const long = { type: 'Long' } as const;

/** What every call's context holds besides its arguments. */
const FRAME: Record<string, CedarType> = {
  gated: { type: 'Boolean' },
  read_only: { type: 'Boolean' },
  // The time of the call in the policy's time zone: hour 0–23, minute 0–59, weekday 1 (Monday) – 7 (Sunday).
  time: { type: 'Record', attributes: { hour: long, minute: long, weekday: long } },
  // Durable counts: calls of this tool by this token today (in the policy's time zone), before this one.
  usage: { type: 'Record', attributes: { today: long } },
};

/** A tool's facts as a Cedar record: every one present on every call. */
function factsOf(facts: Readonly<Record<string, 'Long' | 'String' | 'Boolean'>>): CedarType {
  const attributes: Record<string, CedarType> = {};
  for (const [name, type] of Object.entries(facts)) attributes[name] = { type } as CedarType;
  return { type: 'Record', attributes };
}

/** A tool as its server lists it: its name and its input's JSON Schema (a catalog's listing, or tools/list). */
export interface ListedTool {
  name: string;
  inputSchema: Record<string, unknown>;
  /** The facts the tool gives its policy (`context.facts`), by Cedar type (`policyFacts` of its definition). */
  facts?: Readonly<Record<string, 'Long' | 'String' | 'Boolean'>> | undefined;
}

/** A server's tools as its policy schema needs them: each listing, with the facts the tool declares. */
export function policyTools(catalog: ToolCatalog): ListedTool[] {
  return catalog.tools.map((t) => ({ ...catalog.listings.get(t.name)!, facts: t.policyFacts?.types }));
}

/**
 * The Cedar schema for the given servers' tools (as JSON, the form `validate` takes), from their
 * listings: the same for a server's own catalog and for what a running server answers to tools/list.
 */
export function cedarSchema(servers: Readonly<Record<string, readonly ListedTool[]>>): SchemaJson<string> {
  const schema: SchemaJson<string> = {
    Bulkhead: {
      entityTypes: {
        Group: {},
        Token: {
          memberOfTypes: ['Group'],
          shape: {
            type: 'Record',
            attributes: {
              server: { type: 'String' },
              owner: { type: 'String', required: false },
              scopes: { type: 'Set', element: { type: 'String' } },
            },
          },
        },
        Server: {},
      },
      actions: {},
    },
  };
  for (const [server, tools] of Object.entries(servers)) {
    const actions: Record<string, unknown> = {};
    for (const tool of tools) {
      const args = recordOf(tool.inputSchema);
      actions[tool.name] = {
        appliesTo: {
          principalTypes: ['Bulkhead::Token'],
          resourceTypes: ['Bulkhead::Server'],
          context: {
            type: 'Record',
            attributes: { args, ...FRAME, ...(tool.facts ? { facts: factsOf(tool.facts) } : {}) },
          },
        },
      };
    }
    schema[serverNamespace(server)] = { entityTypes: {}, actions } as SchemaJson<string>[string];
  }
  return schema;
}
