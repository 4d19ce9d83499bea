// Policy sets as the database keeps them (0068): proposed by one operator, approved by another, each
// proposal and decision audited with the text's version (the proposal's event holds the text), under
// the console's role, as the console does it; the database derives who from the proof presented.
import type { AuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import { createEventOwner } from '../observability/request-audit.ts';

/** The database channel a proposal or decision is announced on (payload: the version). */
export const POLICY_CHANNEL = 'bulkhead_policy';

/** One policy set as stored. */
export interface PolicySetRecord {
  version: string;
  status: 'proposed' | 'active' | 'retired' | 'rejected';
  text: string;
  proposedBy: string;
  proposedAt: Date;
  decidedBy: string | null;
  decidedAt: Date | null;
  reason: string | null;
}

/** Who acts: an operator's proof (their approver token in full, or a console session's cookie value). */
export interface PolicyActor {
  proof: string;
  /** The console's role, for a caller connected as the owner (the CLI); unset in the console itself. */
  asRole?: string | undefined;
  via: 'cli' | 'console';
}

/** A proposal or decision the database refused, with its sentence. */
export class PolicyChangeRefused extends Error {
  override readonly name = 'PolicyChangeRefused';
}

const COLUMNS = `version, status, text, proposed_by as "proposedBy", proposed_at as "proposedAt",
  decided_by as "decidedBy", decided_at as "decidedAt", reason`;

/** Every policy set, newest proposal first (the owner's or the console's connection). */
export async function listPolicySets(sql: Sql): Promise<PolicySetRecord[]> {
  return sql<
    PolicySetRecord[]
  >`select ${sql.unsafe(COLUMNS)} from bulkhead_policy_sets order by proposed_at desc`;
}

/** The active set, or undefined before any was approved (any server's connection). */
export async function activePolicySet(sql: Sql): Promise<{ version: string; text: string } | undefined> {
  const [row] = await sql<
    { version: string; text: string }[]
  >`select version, text from bulkhead_active_policy()`;
  return row;
}

/** The database's sentence for a refused proposal or decision, or the error itself. */
function refused(err: unknown): unknown {
  const code = (err as { code?: string }).code;
  if (code && ['42501', '23505', '23514', 'P0002'].includes(code))
    return new PolicyChangeRefused((err as Error).message);
  return err;
}

async function asActor<T>(sql: Sql, actor: PolicyActor, work: (tx: Sql) => Promise<T>): Promise<T> {
  try {
    return (await sql.begin(async (tx) => {
      if (actor.asRole) await tx`set local role ${tx(actor.asRole)}`;
      return work(tx as unknown as Sql);
    })) as T;
  } catch (err) {
    throw refused(err);
  }
}

/** Files `text` (validated by the caller against the servers' tools) as proposed; returns its version. */
export async function proposePolicySet(
  sql: Sql,
  audit: Pick<AuditWriter, 'appendIn'>,
  actor: PolicyActor,
  text: string,
): Promise<string> {
  return asActor(sql, actor, async (tx) => {
    const [row] = await tx<
      { version: string }[]
    >`select bulkhead_policy_propose(${actor.proof}, ${text}) as version`;
    const [set] = await tx<{ proposedBy: string; token: string }[]>`
      select proposed_by as "proposedBy", proposed_by_token as token from bulkhead_policy_sets where version = ${row!.version}`;
    const owner = createEventOwner({
      server: 'console',
      by: { tokenId: set!.token, label: set!.proposedBy },
    });
    await audit.appendIn(
      tx,
      owner.event({
        method: 'policy/propose',
        outcome: 'pending_approval',
        durationMs: 0,
        arguments: { text },
        resultSummary: { version: row!.version, proposed_by: set!.proposedBy, via: actor.via },
      }),
    );
    return row!.version;
  });
}

/** Approves (it becomes the active set) or rejects a proposed set, as an operator who did not propose it. */
export async function decidePolicySet(
  sql: Sql,
  audit: Pick<AuditWriter, 'appendIn'>,
  actor: PolicyActor,
  decision: { version: string; approve: boolean; reason?: string | undefined },
): Promise<PolicySetRecord> {
  return asActor(sql, actor, async (tx) => {
    await tx`select * from bulkhead_policy_decide(${actor.proof}, ${decision.version}, ${decision.approve},
      ${decision.reason ?? null})`;
    const [set] = await tx<(PolicySetRecord & { token: string })[]>`
      select ${tx.unsafe(COLUMNS)}, decided_by_token as token from bulkhead_policy_sets where version = ${decision.version}`;
    const owner = createEventOwner({ server: 'console', by: { tokenId: set!.token, label: set!.decidedBy } });
    await audit.appendIn(
      tx,
      owner.event({
        method: 'policy/decide',
        outcome: decision.approve ? 'approved' : 'rejected',
        durationMs: 0,
        resultSummary: {
          version: set!.version,
          proposed_by: set!.proposedBy,
          decided_by: set!.decidedBy,
          reason: set!.reason,
          via: actor.via,
        },
      }),
    );
    const { token: _token, ...record } = set!;
    return record;
  });
}
