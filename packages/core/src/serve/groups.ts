import { createAuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import { createEventOwner } from '../pipeline/observability/request-audit.ts';

/** The rights an IdP group gives its members in Bulkhead, as stored (`bulkhead_groups`). */
export interface GroupRights {
  /** The group as the IdP names it in the ID token's groups claim (Entra ID: the group's object id). */
  group: string;
  /** MCP servers whose approval requests members decide. */
  approve: string[];
  /** Members operate in the console (tokens, audit log, tools, groups). */
  operate: boolean;
  /** Servers (`customer`) or server scopes (`customer:account:read`) members may hold tokens for. */
  tokens: string[];
  updatedAt: Date;
  updatedBy: string;
}

const COLUMNS = `idp_group as "group", approve, operate, tokens, updated_at as "updatedAt", updated_by as "updatedBy"`;

/** Every group with rights, by name. Needs the owner's connection (the console reads through its proof). */
export async function listGroups(sql: Sql): Promise<GroupRights[]> {
  return sql<GroupRights[]>`select ${sql.unsafe(COLUMNS)} from bulkhead_groups order by idp_group`;
}

/** What a group is to give, and who says so (`operator` is recorded as who changed it). */
export interface GroupChange {
  group: string;
  approve: string[];
  operate: boolean;
  tokens: string[];
  operator: string;
}

/** A change's event (method `groups/change`): on the console, named by the operator. */
function changeEvent(operator: string, summary: Record<string, unknown>) {
  const owner = createEventOwner({ server: 'console', by: { tokenId: null, label: operator } });
  return owner.event({ method: 'groups/change', outcome: 'ok', durationMs: 0, resultSummary: summary });
}

/**
 * Gives `group` exactly these rights (a group already mapped has them replaced), with its audit event in
 * the same transaction; returns the stored rights and those it had before (undefined for a new group).
 * Members' rights change at their next decision, grant or page: the database reads them at every use.
 */
export async function setGroup(
  sql: Sql,
  change: GroupChange,
): Promise<{ rights: GroupRights; before: GroupRights | undefined }> {
  const audit = createAuditWriter(sql);
  return sql.begin(async (tx) => {
    const [before] = await tx<GroupRights[]>`
      select ${tx.unsafe(COLUMNS)} from bulkhead_groups where idp_group = ${change.group} for update`;
    const [rights] = await tx<GroupRights[]>`
      insert into bulkhead_groups (idp_group, approve, operate, tokens, updated_by)
      values (${change.group}, ${change.approve}, ${change.operate}, ${change.tokens}, ${change.operator})
      on conflict (idp_group) do update set approve = excluded.approve, operate = excluded.operate,
        tokens = excluded.tokens, updated_by = excluded.updated_by, updated_at = now()
      returning ${tx.unsafe(COLUMNS)}`;
    await audit.appendIn(
      tx,
      changeEvent(change.operator, {
        action: before ? 'update' : 'add',
        group: change.group,
        approve: change.approve,
        operate: change.operate,
        tokens: change.tokens,
        ...(before
          ? { before: { approve: before.approve, operate: before.operate, tokens: before.tokens } }
          : {}),
      }),
    );
    return { rights: rights!, before };
  });
}

/** Removes a group's rights, audited; what it gave, or undefined when it had none. */
export async function removeGroup(
  sql: Sql,
  input: { group: string; operator: string },
): Promise<GroupRights | undefined> {
  const audit = createAuditWriter(sql);
  return sql.begin(async (tx) => {
    const [row] = await tx<GroupRights[]>`
      delete from bulkhead_groups where idp_group = ${input.group} returning ${tx.unsafe(COLUMNS)}`;
    if (!row) return undefined;
    await audit.appendIn(
      tx,
      changeEvent(input.operator, {
        action: 'remove',
        group: input.group,
        before: { approve: row.approve, operate: row.operate, tokens: row.tokens },
      }),
    );
    return row;
  });
}

/** The servers a group's rights name that are not among `servers`, and token rights not of `<server>[:<scope>]` form with a known scope. */
export function groupRightsProblems(
  rights: { approve: string[]; tokens: string[] },
  servers: readonly { name: string; scopes: readonly string[] }[],
): string[] {
  const names = servers.map((s) => s.name).join(', ');
  const problems: string[] = [];
  for (const server of rights.approve)
    if (!servers.some((s) => s.name === server))
      problems.push(`--approve: "${server}" is not an MCP server; the servers: ${names}`);
  for (const right of rights.tokens) {
    const [server, ...rest] = right.split(':');
    const scope = rest.join(':');
    const known = servers.find((s) => s.name === server);
    if (!known) problems.push(`--tokens: "${server}" is not an MCP server; the servers: ${names}`);
    else if (rest.length && !known.scopes.includes(scope))
      problems.push(`--tokens: ${server} has no scope "${scope}"; its scopes: ${known.scopes.join(', ')}`);
  }
  return problems;
}
