import type { Sql } from '@bulkhead/db';

/** What one role may do with one table or view, as the catalog says. */
export interface TablePrivileges {
  role: string;
  table: string;
  /** Per privilege: `all` columns, the granted columns, or absent. */
  select?: string[] | 'all';
  insert?: string[] | 'all';
  update?: string[] | 'all';
  delete?: 'all';
  /** Row policies that apply to the role (command: condition). */
  policies: string[];
}

/** The rights of `roles` on tables and functions, read from `information_schema` and `pg_policies`. */
export async function describePrivileges(
  sql: Sql,
  roles: string[],
): Promise<{
  tables: TablePrivileges[];
  functions: { role: string; name: string }[];
  sequences: { role: string; name: string }[];
}> {
  const tableGrants = await sql<{ role: string; table: string; privilege: string }[]>`
    select grantee as role, table_name as table, privilege_type as privilege
    from information_schema.role_table_grants
    where table_schema = 'public' and grantee = any(${roles}::text[])`;
  const columnGrants = await sql<{ role: string; table: string; privilege: string; column: string }[]>`
    select grantee as role, table_name as table, privilege_type as privilege, column_name as column
    from information_schema.column_privileges
    where table_schema = 'public' and grantee = any(${roles}::text[])
    order by column_name`;
  const policies = await sql<
    { table: string; name: string; roles: string[]; cmd: string; qual: string | null; check: string | null }[]
  >`
    select tablename as table, policyname as name, roles::text[] as roles, cmd, qual, with_check as check
    from pg_policies where schemaname = 'public' order by tablename, policyname`;
  // By name: the overloads of one function (`bulkhead_fenced_customer`, with and without its server) once.
  const functions = await sql<{ role: string; name: string }[]>`
    select distinct grantee as role, routine_name as name from information_schema.routine_privileges
    where routine_schema = 'public' and grantee = any(${roles}::text[]) and privilege_type = 'EXECUTE'
    order by grantee, routine_name`;
  const sequences = await sql<{ role: string; name: string }[]>`
    select r.rolname as role, c.relname as name from pg_class c
    join pg_namespace n on n.oid = c.relnamespace and n.nspname = 'public'
    cross join pg_roles r
    where c.relkind = 'S' and r.rolname = any(${roles}::text[]) and has_sequence_privilege(r.oid, c.oid, 'USAGE')
    order by r.rolname, c.relname`;

  const byKey = new Map<string, TablePrivileges>();
  const entry = (role: string, table: string) => {
    const key = `${role}\0${table}`;
    let e = byKey.get(key);
    if (!e) {
      e = { role, table, policies: [] };
      byKey.set(key, e);
    }
    return e;
  };
  for (const g of tableGrants) {
    const e = entry(g.role, g.table);
    if (g.privilege === 'SELECT') e.select = 'all';
    if (g.privilege === 'INSERT') e.insert = 'all';
    if (g.privilege === 'UPDATE') e.update = 'all';
    if (g.privilege === 'DELETE') e.delete = 'all';
  }
  for (const g of columnGrants) {
    const e = entry(g.role, g.table);
    const key = g.privilege.toLowerCase() as 'select' | 'insert' | 'update';
    if (!['select', 'insert', 'update'].includes(key) || e[key] === 'all') continue;
    (e[key] = (e[key] as string[] | undefined) ?? []).push(g.column);
  }
  for (const p of policies) {
    for (const role of p.roles) {
      if (!roles.includes(role)) continue;
      const e = entry(role, p.table);
      const cond = p.qual ?? p.check ?? 'true';
      e.policies.push(`${p.cmd.toLowerCase()}: ${cond.replace(/\s+/g, ' ')}`);
    }
  }
  const tables = [...byKey.values()].sort((a, b) =>
    a.role === b.role ? a.table.localeCompare(b.table) : roles.indexOf(a.role) - roles.indexOf(b.role),
  );
  return { tables, functions, sequences };
}

function cell(v: string[] | 'all' | undefined): string {
  if (!v) return '—';
  return v === 'all' ? 'yes' : v.join(', ');
}

/** The README's roles table: one row per role and table, then each role's functions and sequences. */
export function privilegesTable(p: Awaited<ReturnType<typeof describePrivileges>>): string {
  const lines = [
    '| role | table | select | insert | update | delete | rows (policies) |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...p.tables.map(
      (t) =>
        `| \`${t.role}\` | \`${t.table}\` | ${cell(t.select)} | ${cell(t.insert)} | ${cell(t.update)} | ${cell(t.delete)} | ${
          t.policies.length ? t.policies.map((x) => `\`${x.replaceAll('|', '\\|')}\``).join('<br>') : '—'
        } |`,
    ),
    '',
    '| role | functions it may call | sequences it may use |',
    '| --- | --- | --- |',
  ];
  const roles = [...new Set([...p.tables.map((t) => t.role)])];
  for (const role of roles) {
    const fns = p.functions.filter((f) => f.role === role).map((f) => `\`${f.name}\``);
    const seqs = p.sequences.filter((s) => s.role === role).map((s) => `\`${s.name}\``);
    lines.push(`| \`${role}\` | ${fns.join(', ') || '—'} | ${seqs.join(', ') || '—'} |`);
  }
  return lines.join('\n');
}
