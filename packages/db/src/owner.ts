import type { Sql } from './connect.ts';

/** The role that owns Bulkhead's schema by default: no superuser, no CREATEROLE, no CREATEDB. */
export const OWNER_ROLE = 'bulkhead_owner';

type Conn = Sql | Parameters<Parameters<Sql['begin']>[1]>[0];

/** Options of {@link ensureOwner}. */
export interface EnsureOwnerOptions {
  /** The owner role (default `bulkhead_owner`). */
  role?: string;
  /** Makes the owner a login role with this password; without it a new owner is NOLOGIN and an existing one keeps its login. */
  password?: string;
}

/** What {@link ensureOwner} changed. */
export interface OwnerReport {
  role: string;
  created: boolean;
  /** Objects whose ownership moved to the owner (an older schema owned by a superuser). */
  moved: string[];
  /**
   * pg_catalog functions PUBLIC may no longer execute (large objects, advisory locks); empty when not
   * run by a superuser, the only role that may take them from PUBLIC.
   */
  revoked: string[];
}

/** Whether the connected role is a superuser. */
export async function isSuperuser(sql: Conn): Promise<boolean> {
  const [row] = await sql<
    { s: boolean }[]
  >`select rolsuper as s from pg_catalog.pg_roles where rolname = current_user`;
  return Boolean(row?.s);
}

/**
 * Hands the current database to a dedicated owner role: definer functions then run with
 * that role's rights, never a superuser's, so that a flaw in one of them cannot reach the operating
 * system or other databases. Creates the role when missing (NOSUPERUSER NOCREATEDB NOCREATEROLE
 * NOREPLICATION NOBYPASSRLS), makes it the database's owner (and the `public` schema's, where that is
 * not the database owner already), moves every object of the schema that someone else owns to it,
 * and takes from PUBLIC what no deployable needs and a session could abuse: TEMP on the database
 * (temporary objects shadow names), CREATE on the schema, creating large objects and taking advisory
 * locks (both granted back to the owner, which migrates, seeds and ingests under such locks; only a
 * superuser can take these two). Run as a superuser, or as a managed database's administrator (a role
 * with CREATEROLE and CREATEDB that owns the database, made a member of the owner role on the way).
 * Idempotent; every step is skipped when already done.
 */
export async function ensureOwner(admin: Sql, options: EnsureOwnerOptions = {}): Promise<OwnerReport> {
  const role = options.role ?? OWNER_ROLE;
  const [me] = await admin<{ name: string; superuser: boolean; createrole: boolean; createdb: boolean }[]>`
    select rolname as name, rolsuper as superuser, rolcreaterole as createrole, rolcreatedb as createdb
    from pg_catalog.pg_roles where rolname = current_user`;
  // A managed PostgreSQL has no superuser: its administrator role (CREATEROLE, CREATEDB, owner of the
  // database) can do all of this but take rights from PUBLIC on pg_catalog's functions.
  if (!me!.superuser && !(me!.createrole && me!.createdb))
    throw new Error(
      `handing the database to its owner role needs a superuser, or a role with CREATEROLE and CREATEDB that owns the database; ${me!.name} is neither`,
    );
  // The role is the cluster's, shared by every database on it: created and set outside the database's
  // transaction, retried when another session does the same at the same moment.
  const created = await retrying(async () => {
    const [existing] = await admin<{ super: boolean }[]>`
      select rolsuper as super from pg_catalog.pg_roles where rolname = ${role}`;
    if (existing?.super) throw new Error(`the owner role ${role} is a superuser; it must not be`);
    if (!existing)
      await admin`create role ${admin(role)} nologin nosuperuser nocreatedb nocreaterole noreplication nobypassrls`;
    if (options.password !== undefined) {
      const [stmt] = await admin<{ s: string }[]>`
        select format('alter role %I login password %L', ${role}::text, ${options.password}::text) as s`;
      await admin.unsafe(stmt!.s);
    }
    // The administrator must be able to act as the owner to hand it the database (a superuser always can).
    if (!me!.superuser) {
      const [member] = await admin<
        { m: boolean }[]
      >`select pg_has_role(current_user, ${role}, 'MEMBER') as m`;
      if (!member!.m) await admin`grant ${admin(role)} to ${admin(me!.name)}`;
    }
    return !existing;
  });
  return admin.begin(async (tx) => {
    // One at a time per database: processes starting together (servers on the embedded default) all get here.
    await tx`select pg_catalog.pg_advisory_xact_lock(${0x6275_6c6f})`;
    const [db] = await tx<{ name: string; owner: string }[]>`
      select datname as name, pg_catalog.pg_get_userbyid(datdba) as owner
      from pg_catalog.pg_database where datname = current_database()`;
    if (db!.owner !== role) await tx`alter database ${tx(db!.name)} owner to ${tx(role)}`;
    const [schema] = await tx<{ owner: string }[]>`
      select pg_catalog.pg_get_userbyid(nspowner) as owner from pg_catalog.pg_namespace where nspname = 'public'`;
    if (schema && schema.owner !== role && schema.owner !== 'pg_database_owner')
      await tx`alter schema public owner to ${tx(role)}`;
    const moved = await moveObjects(tx, role);
    await tx`revoke temporary on database ${tx(db!.name)} from public`;
    await tx`revoke create on schema public from public`;
    const revoked: string[] = [];
    if (me!.superuser)
      for (const fn of await revocable(tx)) {
        await tx.unsafe(`revoke execute on function ${fn} from public`);
        await tx.unsafe(`grant execute on function ${fn} to ${quoteIdent(role)}`);
        revoked.push(fn);
      }
    return { role, created, moved, revoked };
  });
}

/** Large-object creation and advisory locks: nothing a deployable needs, both a way to hoard or block. */
async function revocable(tx: Conn): Promise<string[]> {
  const rows = await tx<{ fn: string }[]>`
    select p.oid::pg_catalog.regprocedure::text as fn from pg_catalog.pg_proc p
    where p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace
      and (p.proname in ('lo_create', 'lo_creat', 'lo_from_bytea', 'lo_import')
        or p.proname ~ '^pg_(try_)?advisory_(xact_)?lock(_shared)?$')
    order by 1`;
  return rows.map((r) => r.fn);
}

/** Catalog races between sessions changing the same role: tried again a few times. */
async function retrying<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      const code = (err as { code?: string }).code;
      const race = code === '42710' || code === '23505' || code === 'XX000' || code === '40001';
      if (!race || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 20 * attempt));
    }
  }
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Moves tables, views, sequences and functions of `public` that another role owns to `role`. */
async function moveObjects(tx: Conn, role: string): Promise<string[]> {
  const rows = await tx<{ stmt: string; what: string }[]>`
    select format('alter %s %s owner to %I',
        case c.relkind when 'S' then 'sequence' when 'v' then 'view' when 'm' then 'materialized view'
          when 'f' then 'foreign table' else 'table' end,
        c.oid::pg_catalog.regclass, ${role}::text) as stmt,
      c.oid::pg_catalog.regclass::text as what
    from pg_catalog.pg_class c
    where c.relnamespace = 'public'::pg_catalog.regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
      and c.relowner <> to_regrole(quote_ident(${role}::text))
      -- A sequence that belongs to a column moves with its table.
      and not exists (select 1 from pg_catalog.pg_depend d
        where d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass and d.objid = c.oid and d.deptype in ('a', 'i'))
    union all
    select format('alter function %s owner to %I', p.oid::pg_catalog.regprocedure, ${role}::text),
      p.oid::pg_catalog.regprocedure::text
    from pg_catalog.pg_proc p
    where p.pronamespace = 'public'::pg_catalog.regnamespace and p.proowner <> to_regrole(quote_ident(${role}::text))
    order by 2`;
  for (const r of rows) await tx.unsafe(r.stmt);
  return rows.map((r) => r.what);
}

/**
 * The role that owns the schema (of `public.bulkhead_migrations`), or before the first migration the
 * database's owner: the role migrations run as.
 */
export async function schemaOwner(sql: Conn): Promise<{ role: string; superuser: boolean }> {
  const [row] = await sql<{ role: string; superuser: boolean }[]>`
    select r.rolname as role, r.rolsuper as superuser from pg_catalog.pg_roles r
    where r.oid = coalesce(
      (select relowner from pg_catalog.pg_class where oid = to_regclass('public.bulkhead_migrations')),
      (select datdba from pg_catalog.pg_database where datname = current_database()))`;
  return row!;
}
