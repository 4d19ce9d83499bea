import type { AuditEventInput, AuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import { expiryEvent } from '../approvals/audit-trail.ts';
import { APPROVAL_COLUMNS, APPROVAL_ID, type ApprovalRecord } from '../approvals/store.ts';

/**
 * Whose tasks a request may see: the calling token's, on this server, for its customer. A task id
 * of another token, another server or another customer does not exist for the caller — the same
 * answer as an id that was never issued.
 */
export interface TaskOwner {
  server: string;
  tokenId: string;
  customerId: string | null;
}

/** The most tasks one `tasks/list` page holds. */
export const TASK_PAGE = 20;

function owned(sql: Sql, owner: TaskOwner) {
  return sql`server = ${owner.server} and as_task and requested_by_token_id = ${owner.tokenId}
    and customer_id is not distinct from ${owner.customerId}`;
}

/** The approval behind task `id` when the caller owns it; undefined for any other id. */
export async function findTask(sql: Sql, owner: TaskOwner, id: string): Promise<ApprovalRecord | undefined> {
  if (!APPROVAL_ID.test(id)) return undefined;
  const [row] = await sql<ApprovalRecord[]>`
    select ${sql.unsafe(APPROVAL_COLUMNS)} from bulkhead_approvals where id = ${id} and ${owned(sql, owner)}`;
  return row;
}

/**
 * The caller's tasks, newest first, a page at a time. `after` is the last task id of the previous
 * page (the cursor); one the caller does not own is refused (undefined), never a way to look
 * at someone else's.
 */
export async function listTasks(
  sql: Sql,
  owner: TaskOwner,
  after?: string,
): Promise<{ tasks: ApprovalRecord[]; next: string | undefined } | undefined> {
  let from = sql``;
  if (after !== undefined) {
    const anchor = await findTask(sql, owner, after);
    if (!anchor) return undefined;
    from = sql`and (requested_at, id) < (select requested_at, id from bulkhead_approvals where id = ${anchor.id})`;
  }
  const rows = await sql<ApprovalRecord[]>`
    select ${sql.unsafe(APPROVAL_COLUMNS)} from bulkhead_approvals
    where ${owned(sql, owner)} ${from}
    order by requested_at desc, id desc
    limit ${TASK_PAGE + 1}`;
  const tasks = rows.slice(0, TASK_PAGE);
  return { tasks, next: rows.length > TASK_PAGE ? tasks[tasks.length - 1]!.id : undefined };
}

/** What {@link withdrawTask} did to a task the caller owns. */
export interface Withdrawal {
  /** The approval afterwards. */
  record: ApprovalRecord;
  /** True when this call withdrew it; false when someone had decided it, or it was final or lapsed. */
  withdrawn: boolean;
}

/**
 * Withdraws the caller's task while no one has decided it: the approval becomes `withdrawn` (the
 * database lets only the owning server do that, only from `pending` and before the expiry) and
 * `event` is appended in the same transaction, so the withdrawal exists exactly when its audit
 * event does. A request found past its expiry is marked expired instead, with its own event. A
 * decided or final one is left as it is. Undefined: no such task for this caller.
 */
export async function withdrawTask(
  sql: Sql,
  audit: Pick<AuditWriter, 'appendIn'>,
  owner: TaskOwner,
  id: string,
  event: (approval: ApprovalRecord) => AuditEventInput,
): Promise<Withdrawal | undefined> {
  if (!APPROVAL_ID.test(id)) return undefined;
  return sql.begin(async (tx) => {
    const [a] = await tx<ApprovalRecord[]>`
      select ${tx.unsafe(APPROVAL_COLUMNS)} from bulkhead_approvals
      where id = ${id} and server = ${owner.server} and as_task and requested_by_token_id = ${owner.tokenId}
        and customer_id is not distinct from ${owner.customerId}
      for update`;
    if (!a) return undefined;
    if (a.status !== 'pending') return { record: a, withdrawn: false };
    const [clock] = await tx<{ lapsed: boolean }[]>`select ${a.expiresAt} <= now() as lapsed`;
    if (clock!.lapsed) {
      const [expired] = await tx<ApprovalRecord[]>`
        update bulkhead_approvals set status = 'expired' where id = ${a.id}
        returning ${tx.unsafe(APPROVAL_COLUMNS)}`;
      await audit.appendIn(tx, expiryEvent(expired!, owner.server));
      return { record: expired!, withdrawn: false };
    }
    const [withdrawn] = await tx<ApprovalRecord[]>`
      update bulkhead_approvals set status = 'withdrawn' where id = ${a.id}
      returning ${tx.unsafe(APPROVAL_COLUMNS)}`;
    await audit.appendIn(tx, event(withdrawn!));
    return { record: withdrawn!, withdrawn: true };
  });
}
