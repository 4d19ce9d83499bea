// The tool-definition room: what a tool and a server are. define-tool (a tool as data), server-definition,
// catalog (tools/list, computed once), icon, arguments (argument types a tool may use), errors (the
// ToolError a handler throws), and lint/ (the checks a server's tools pass before it starts).
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Sql } from '@bulkhead/db';
import type { Access } from '../call/access.ts';
import type { ProgressReporter } from '../call/progress.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { McpUpstreamClient } from '../mcp-upstream/client.ts';
import type { PinnedTool } from '../mcp-upstream/pins.ts';

/** What a handler running an approved action may use for effects outside the database. */
export interface Outbox {
  /**
   * Records an effect (`email`, `webhook`, ...) in the action's transaction:
   * it is delivered after the commit, and never if the action is rolled back.
   * Returns the outbox id, which receivers get as the idempotency key. An
   * `email` whose header fields carry a line break is refused (build it with
   * `emailMessage`).
   */
  enqueue(kind: string, payload: Record<string, unknown>): Promise<number>;
}

/**
 * What a handler gets besides its arguments. Handlers import no singletons: everything comes through here.
 * `V`: the values its gate fixes at approval ({@link ApprovalSpec.values}), handed back in `approval`.
 */
export interface ToolContext<V = unknown> {
  /** The caller, from its token. */
  access: Access;
  /** The database (inside an approved execution: the transaction that also records the decision's outcome). */
  sql: Sql;
  /** A child logger carrying the request id and tool name. */
  logger: Logger;
  /** Aborted when the tool's time limit expires or the client goes away. */
  signal: AbortSignal;
  /** The name of the server serving the call. */
  server: string;
  requestId: string;
  /**
   * Reports how far long work is: `done` of `total` (units the tool chooses; `total` when known) and
   * a short status line. Becomes `notifications/progress` when the client asked for progress (sent a
   * progress token): in order, at most four a second (the newest report wins), and a final one at
   * `total` when the call completes. Without a token, and while an approved action runs, it does
   * nothing. Never throws and never waits: call it freely.
   */
  progress: ProgressReporter;
  /**
   * The client of an upstream the server declares in its manifest (`bulkhead.upstreams`): the only way a
   * handler reaches another system. The call's time limit and cancellation reach its requests, each
   * is recorded in the call's audit event, and a read-only tool may only read. An undeclared name throws.
   */
  upstream: (name: string) => UpstreamClient;
  /**
   * The client of an upstream MCP server the server declares (`bulkhead.mcpUpstream`): the call's time
   * limit reaches it as cancellation, its progress becomes the call's, each call is recorded in the
   * call's audit event, and what it answers comes back as untrusted text. An undeclared name throws.
   */
  mcpUpstream: (name: string) => McpUpstreamClient;
  /** Set only while an approved action runs: effects outside the database go here, in the same transaction. */
  outbox?: Outbox;
  /**
   * Set only while an approved action runs: which approval, who gave it, the preview they approved,
   * and the values its effect uses as they were approved ({@link ApprovalSpec.values}; null for a
   * tool without them). By the time the handler runs, the kit has read those values again and found
   * them unchanged: the handler builds its effect from these.
   */
  approval?: { id: string; decidedBy: string; preview: string; values: V };
}

/** MCP tool annotations; all four are required so that no tool is unmarked. */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * The annotations of a tool that only reads the kit's own database: nothing
 * changes, so nothing is destroyed and a repeat is harmless; no outside system is reached.
 */
export const READ_ONLY: Readonly<ToolAnnotations> = Object.freeze({
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
});

/** An icon as MCP describes it (SEP-973). */
export interface ToolIcon {
  src: string;
  mimeType?: string;
  sizes?: string[];
}

/**
 * The values an approved action's effect will use, by name (`recipient`, `amount`): JSON (they are
 * stored with the approval as jsonb and handed back in that form). A name reads as a word in the
 * sentence that refuses a changed value ("the recipient changed after approval").
 */
export type ApprovedValues = Record<string, unknown>;

/** Declares that a tool stops at a human approval gate before it acts. */
export interface ApprovalSpec<I, V extends ApprovedValues | null = null> {
  /**
   * Every value the effect will use that the arguments alone do not fix: what the database or an
   * upstream holds now (an address on file, an amount still due), and what the effect derives
   * from the arguments. Read when the call is filed, stored with the approval, shown to the person,
   * read again when the approved action runs (in its transaction, before the handler): if anything
   * differs, the kit refuses and nothing runs; otherwise the handler gets them as
   * `ctx.approval.values` and builds its effect from them. A `ToolError` thrown here refuses the call
   * (when filed) or the action (when it runs).
   */
  values?: (args: I, ctx: ToolContext) => V | Promise<V>;
  /**
   * The plain-language sentence a person approves ("Send invoice R-2026-0001 (€120.00) to ..."):
   * it names every value in `values` (given here as they are stored), and quotes what comes from
   * outside with `quoted`.
   */
  preview: (args: I, ctx: ToolContext, values: V) => string | Promise<string>;
  /** Hours until an undecided request expires (default 72). */
  expiresInHours?: number;
  /** Outbox kinds the approved action enqueues (`['email']`): a server with e-mail tools needs an SMTP server to start. */
  sends?: readonly string[];
}

/** What {@link ToolSpec.policyFacts} declares: each fact's Cedar type, and how the arguments give them. */
export interface PolicyFacts<I> {
  types: Readonly<Record<string, 'Long' | 'String' | 'Boolean'>>;
  of: (args: I) => Record<string, number | string | boolean>;
}

type Output<O> = O extends z.ZodObject ? z.input<O> : string | Record<string, unknown>;

/** Everything a tool is: what the model sees (name, title, description, schemas, annotations) and its handler. */
export interface ToolSpec<
  I extends z.ZodObject,
  O extends z.ZodObject | undefined = undefined,
  V extends ApprovedValues | null = null,
> {
  /** snake_case verb and object (`list_open_orders`). */
  name: string;
  title: string;
  /** Written for the model: what comes back, what the arguments do, how it differs from its neighbour. */
  description: string;
  /** The scope a token needs to see and call this tool (`invoices:read`). */
  scope: string;
  input: I;
  output?: O;
  annotations: ToolAnnotations;
  icons?: ToolIcon[];
  /** Time limit in milliseconds (default 10 000). */
  timeoutMs?: number;
  /**
   * Set on a tool served from an upstream MCP server: the upstream's name and its pinned definition,
   * listed as pinned (its input schema as the upstream gave it, not computed from `input`), and compared
   * with what the upstream lists at run time (a drifted tool is withheld).
   */
  pinned?: { upstream: string; pin: PinnedTool };
  /** Present on tools whose action leaves the house: the call is persisted and waits for a person. */
  approval?: ApprovalSpec<z.output<I>, V>;
  /**
   * Facts the company's policy may weigh besides the arguments (`context.facts`), computed from the
   * validated arguments — a silence's `duration: "1h30m"` as `minutes: 90` — with their Cedar types, so
   * that the schema a policy set is validated against has them.
   */
  policyFacts?: PolicyFacts<z.output<I>>;
  handler: (args: z.output<I>, ctx: ToolContext<V>) => Promise<Output<O>>;
}

/** A defined tool; the kit serves any list of these. */
export type ToolDefinition<
  I extends z.ZodObject = z.ZodObject,
  O extends z.ZodObject | undefined = z.ZodObject | undefined,
  V extends ApprovedValues | null = ApprovedValues | null,
> = Readonly<ToolSpec<I, O, V>>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a heterogeneous list of tools erases their argument types
export type AnyTool = ToolDefinition<any, any, any>;

const NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** Defines a tool. Checks the parts the type system cannot (name shape, a schema that is an object). */
export function defineTool<
  I extends z.ZodObject,
  O extends z.ZodObject | undefined = undefined,
  V extends ApprovedValues | null = null,
>(spec: ToolSpec<I, O, V>): ToolDefinition<I, O, V> {
  if (!NAME.test(spec.name)) throw new Error(`tool name "${spec.name}" must be snake_case, 1-64 characters`);
  if (spec.approval && spec.annotations.readOnlyHint)
    throw new Error(`tool ${spec.name} has a gate but says readOnlyHint`);
  return Object.freeze({ ...spec });
}
