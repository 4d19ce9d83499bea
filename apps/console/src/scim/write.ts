import type { Outcome } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import { sourceAddress } from '../source.ts';
import { scimError } from './resources.ts';

/** A transaction of the console's connection. */
export type Tx = Parameters<Parameters<Sql['begin']>[1]>[0];

/** What a SCIM change did, for its audit event, and the answer to send. */
export interface ScimChange {
  summary: Record<string, unknown>;
  answer: () => Promise<Response> | Response;
}

/** The database's refusals as SCIM errors (RFC 7644 §3.12). */
const ERRORS: Record<string, [ContentfulStatusCode, string | undefined]> = {
  '23505': [409, 'uniqueness'],
  P0002: [404, undefined],
  '42501': [401, undefined],
  '23514': [400, 'invalidValue'],
  '22001': [400, 'invalidValue'],
};

/** Writes one audit event of the SCIM request (`console/scim`, the action as its tool), in `tx` when given. */
export async function auditScim(
  c: Context<ConsoleEnv>,
  ctx: ConsoleContext,
  tx: Tx | undefined,
  o: {
    action: string;
    outcome: Outcome;
    started: number;
    target?: string;
    summary?: Record<string, unknown>;
  },
): Promise<void> {
  const event = c.get('audit').event({
    method: 'console/scim',
    tool: o.action,
    outcome: o.outcome,
    since: o.started,
    arguments: {
      request: `${c.req.method} ${c.req.path}`,
      source: sourceAddress(c, ctx.proxyHops),
      ...(o.target ? { target: o.target } : {}),
    },
    resultSummary: o.summary ?? null,
  });
  await (tx ? ctx.audit.appendIn(tx, event) : ctx.audit.append(event));
}

/**
 * Runs one SCIM change and its audit event in one transaction: both commit, or neither does. A refusal
 * by the database is answered as a SCIM error and audited on its own.
 */
export async function scimWrite(
  c: Context<ConsoleEnv>,
  ctx: ConsoleContext,
  action: string,
  target: string | undefined,
  change: (tx: Tx) => Promise<ScimChange>,
): Promise<Response> {
  const started = performance.now();
  try {
    const done = await ctx.sql.begin(async (tx) => {
      const result = await change(tx);
      await auditScim(c, ctx, tx, { action, outcome: 'ok', started, target, summary: result.summary });
      return result;
    });
    return await done.answer();
  } catch (err) {
    const known = ERRORS[(err as { code?: string }).code ?? ''];
    if (!known) throw err;
    const detail = (err as Error).message;
    await auditScim(c, ctx, undefined, {
      action,
      outcome: known[0] === 401 ? 'unauthorized' : known[0] === 404 ? 'bad_request' : 'invalid_arguments',
      started,
      target,
      summary: { refused: detail },
    });
    return scimError(c, known[0], detail, known[1]);
  }
}
