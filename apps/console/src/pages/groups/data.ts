import type { GroupRights } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';

/** Every group with rights, for an operator proven by `proof` (insufficient_privilege otherwise). */
export async function operatorGroups(sql: Sql, proof: string): Promise<GroupRights[]> {
  return sql<GroupRights[]>`
    select idp_group as "group", approve, operate, tokens, updated_at as "updatedAt", updated_by as "updatedBy"
    from bulkhead_operator_groups(${proof})`;
}

/** Gives a group exactly these rights, as the operator `proof` names (recorded as who changed it). */
export async function setOperatorGroup(
  sql: Sql,
  proof: string,
  g: Pick<GroupRights, 'group' | 'approve' | 'operate' | 'tokens'>,
): Promise<void> {
  await sql`select bulkhead_operator_set_group(${proof}, ${g.group}, ${g.approve}, ${g.operate}, ${g.tokens})`;
}

/** Takes a group's rights away; false when it had none. */
export async function removeOperatorGroup(sql: Sql, proof: string, group: string): Promise<boolean> {
  const [row] = await sql<{ removed: boolean }[]>`
    select bulkhead_operator_remove_group(${proof}, ${group}) as removed`;
  return row!.removed;
}
