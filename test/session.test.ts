import { createHash, randomBytes } from 'node:crypto';
import { createAuditWriter } from '@bulkhead/audit';
import { decideApproval, issueToken, parseToken } from '@bulkhead/core/operator';
import {
  createSql,
  groupRole,
  isConnectionError,
  sessionHazards,
  unpinnedFunctions,
  type Sql,
} from '@bulkhead/db';
import { discoverDeployables } from '@bulkhead/deployables';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root } from './helpers.ts';

/**
 * Issue 31: the database must not trust what a session can change. Each attack below was carried out
 * as a server's database login would; each must now be refused by the database itself.
 */
let db: TestDatabase;
const roles: Record<string, Sql> = {};
const ROLES = [...discoverDeployables(root).map((d) => d.name), 'sealer'];

beforeAll(async () => {
  db = await createTestDatabase();
  for (const name of ROLES)
    roles[name] = (await db.as(name, name === 'sealer' ? { kind: 'sealer' } : undefined)).sql;
}, 120_000);
afterAll(async () => {
  await db?.drop();
});

/** What the database answered to `statement` run as `sql`, in a transaction that is rolled back. */
async function outcome(sql: Sql, statement: string): Promise<string> {
  try {
    await sql.begin(async (tx) => {
      await tx.unsafe(statement);
      throw new Error('rolled back');
    });
    return 'ok';
  } catch (err) {
    const message = (err as Error).message;
    return message === 'rolled back' ? 'ok' : message;
  }
}

describe('no session of a deployable creates anything', () => {
  it('every login role is refused temporary objects, objects in the schema and new schemas', async () => {
    for (const name of ROLES) {
      const sql = roles[name]!;
      expect([name, await outcome(sql, 'create temp table bulkhead_migrations (x int)')]).toEqual([
        name,
        expect.stringMatching(/permission denied to create temporary tables/),
      ]);
      expect([name, await outcome(sql, 'create temp view bulkhead_tokens as select 1 as id')]).toEqual([
        name,
        expect.stringMatching(/permission denied to create temporary tables/),
      ]);
      expect([name, await outcome(sql, 'create temp sequence audit_events_seq')]).toEqual([
        name,
        expect.stringMatching(/permission denied to create temporary tables/),
      ]);
      expect([name, await outcome(sql, 'create table public.shadow (x int)')]).toEqual([
        name,
        expect.stringMatching(/permission denied for schema public/),
      ]);
      expect([name, await outcome(sql, 'create schema shadow')]).toEqual([
        name,
        expect.stringMatching(/permission denied for database/),
      ]);
      expect([name, await sessionHazards(sql)]).toEqual([name, []]);
    }
  });

  it('every function of the schema pins its search path, and a new one that does not is named', async () => {
    expect(await unpinnedFunctions(db.sql)).toEqual([]);
    await db.sql`create function bulkhead_unpinned_probe() returns int language sql security definer as $$ select 1 $$`;
    await db.sql`create function bulkhead_half_pinned_probe() returns int language sql
      set search_path = public, pg_catalog as $$ select 1 $$`;
    try {
      expect(await unpinnedFunctions(db.sql)).toEqual([
        'bulkhead_half_pinned_probe()',
        'bulkhead_unpinned_probe()',
      ]);
    } finally {
      await db.sql`drop function bulkhead_unpinned_probe(), bulkhead_half_pinned_probe()`;
    }
  });

  it('the schema belongs to a role that is no superuser, and the deployables hold no TEMP', async () => {
    const [owner] = await db.sql<{ role: string; superuser: boolean; createrole: boolean }[]>`
      select rolname as role, rolsuper as superuser, rolcreaterole as createrole from pg_roles
      where oid = (select relowner from pg_class where oid = 'public.bulkhead_migrations'::regclass)`;
    expect(owner).toEqual({ role: 'bulkhead_owner', superuser: false, createrole: false });
    const [functions] = await db.sql<{ owners: string[] }[]>`
      select array_agg(distinct pg_get_userbyid(proowner)) as owners from pg_proc
      where pronamespace = 'public'::regnamespace`;
    expect(functions!.owners).toEqual(['bulkhead_owner']);
  });
});

describe('with TEMP granted back by mistake, no temporary object stands in for a name the kit uses', () => {
  /**
   * Generated from the catalog, so that a function added later is covered by default: every name a
   * function of the schema uses that is a relation, sequence or function gets a temporary twin (views
   * that raise when read, empty sequences, functions that raise), then every function each role may
   * call, and every trigger of a table it may write, is run twice — without and with the twins — and
   * must answer exactly the same, with no twin ever read.
   */
  it.each(ROLES)(
    'as %s: every function and trigger answers the same with shadows of every name',
    async (name) => {
      const login = `bh_shadow_${randomBytes(4).toString('hex')}`;
      await db.admin.unsafe(`create role ${login} login password 'bulkhead-test' in role ${groupRole(name)}`);
      await db.admin.unsafe(`grant temporary on database "${new URL(db.url).pathname.slice(1)}" to ${login}`);
      const url = new URL(db.url);
      url.username = login;
      url.password = 'bulkhead-test';
      const sql = createSql(url.toString(), { max: 1 });
      try {
        const { token, record } = await issueToken(db.sql, {
          kind: name === 'console' ? 'approver' : 'mcp',
          server: name,
          label: 'shadowed',
          scopes: ['grants:issue'],
          expiresAt: null,
          createdBy: 'test',
        });
        const secretHash = createHash('sha256').update(parseToken(token)!.secret).digest();
        const calls = await callableFunctions(sql, login);
        const names = await namesUsed();
        const run = async () => {
          const answers: Record<string, string> = {};
          for (const fn of calls) {
            const args = fn.args.map((a) => sampleArgument(a, { name, tokenId: record.id, secretHash }));
            answers[fn.signature] = await outcome(
              sql,
              `select * from public.${fn.name}(${args.map((a) => a.sql).join(', ')})`,
            ).then((o) => o.replace(/\d+/g, 'N'));
          }
          for (const statement of await triggerProbes(login))
            answers[statement] = await outcome(sql, statement);
          return answers;
        };
        const before = await run();
        // The connection keeps its temporary objects: one connection, so the second run sees them.
        await sql.unsafe(`create function pg_temp.shadow_hit() returns boolean language plpgsql as $$
        begin raise exception 'SHADOWED: a temporary object was used'; end $$`);
        for (const n of names.relations)
          await sql.unsafe(
            `create temp view ${n.name} as select * from ${n.schema}.${n.name} where pg_temp.shadow_hit()`,
          );
        for (const n of names.sequences) await sql.unsafe(`create temp sequence ${n} start 900000000`);
        for (const f of names.functions)
          await sql.unsafe(
            `create function pg_temp.${f.name}(${f.args}) returns ${f.returns} language plpgsql as $$
            begin raise exception 'SHADOWED: a temporary function was called'; end $$`,
          );
        const after = await run();
        expect(after).toEqual(before);
        expect(JSON.stringify(after)).not.toMatch(/SHADOWED/);
        for (const n of names.sequences) {
          const [seq] = await sql.unsafe<{ is_called: boolean }[]>(`select is_called from pg_temp.${n}`);
          expect([n, seq!.is_called]).toEqual([n, false]);
        }
        // The twins were there all along: a name read from this session resolves to them.
        expect(await outcome(sql, 'select 1 from bulkhead_deployables')).toMatch(/SHADOWED/);
      } finally {
        await sql.end({ timeout: 2 });
        await db.admin.unsafe(`revoke all on database "${new URL(db.url).pathname.slice(1)}" from ${login}`);
        await db.admin.unsafe(`drop role ${login}`);
      }
    },
  );
});

interface Callable {
  name: string;
  signature: string;
  args: { name: string; type: string }[];
}

/** The functions of the schema `login` may execute, with their argument names and types. */
async function callableFunctions(sql: Sql, login: string): Promise<Callable[]> {
  const rows = await db.sql<{ name: string; signature: string; names: string[] | null; types: string[] }[]>`
    select p.proname as name, p.oid::regprocedure::text as signature, p.proargnames as names,
      array(select format_type(t, null) from unnest(p.proargtypes) t) as types
    from pg_proc p
    where p.pronamespace = 'public'::regnamespace and p.prorettype <> 'trigger'::regtype
      and has_function_privilege(${login}, p.oid, 'EXECUTE')
    order by 2`;
  void sql;
  return rows.map((r) => ({
    name: r.name,
    signature: r.signature,
    args: r.types.map((type, i) => ({ name: r.names?.[i] ?? `$${i + 1}`, type })),
  }));
}

/** An argument that reaches as deep into a function as a real caller would: its own audience, a real token. */
function sampleArgument(
  arg: { name: string; type: string },
  ctx: { name: string; tokenId: string; secretHash: Buffer },
): { sql: string } {
  const literal = (v: string) => `'${v.replaceAll("'", "''")}'`;
  switch (arg.name) {
    case 'p_audience':
      return { sql: literal(ctx.name) };
    case 'p_kind':
      return { sql: literal(ctx.name === 'console' ? 'approver' : 'mcp') };
    case 'p_id':
    case 'p_tokens':
    case 'p_read':
      return { sql: arg.type.endsWith('[]') ? `array[${literal(ctx.tokenId)}]` : literal(ctx.tokenId) };
    case 'p_secret_hash':
      return { sql: `'\\x${ctx.secretHash.toString('hex')}'::bytea` };
    case 'r':
      return { sql: 'current_user' };
  }
  switch (arg.type) {
    case 'text':
    case 'name':
      return { sql: literal('x') };
    case 'bytea':
      return { sql: `'\\x00'::bytea` };
    case 'boolean':
      return { sql: 'true' };
    case 'timestamp with time zone':
      return { sql: `now() + interval '1 hour'` };
    case 'double precision[]':
      return { sql: `array[${Math.floor(Date.now() / 60_000) * 60_000}]::float8[]` };
    case 'integer[]':
      return { sql: 'array[1]' };
    case 'text[]':
      return { sql: `array['x']` };
    default:
      return { sql: `null::${arg.type}` };
  }
}

/** Every relation, sequence and function name the schema's functions use, from their source. */
async function namesUsed(): Promise<{
  relations: { schema: string; name: string }[];
  sequences: string[];
  functions: { name: string; args: string; returns: string }[];
}> {
  const [src] = await db.sql<{ text: string }[]>`
    select string_agg(prosrc, ' ') as text from pg_proc where pronamespace = 'public'::regnamespace`;
  const words = [...new Set(src!.text.toLowerCase().match(/[a-z_][a-z0-9_]*/g) ?? [])];
  const relations = await db.sql<{ schema: string; name: string }[]>`
    select n.nspname as schema, c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname in ('public', 'pg_catalog') and c.relkind in ('r', 'v') and c.relname = any (${words})
    order by 2`;
  const sequences = await db.sql<{ name: string }[]>`
    select relname as name from pg_class where relnamespace = 'public'::regnamespace and relkind = 'S'
      and relname = any (${words}) order by 1`;
  const functions = await db.sql<{ name: string; args: string; returns: string }[]>`
    select proname as name, pg_get_function_identity_arguments(oid) as args,
      case when proretset then 'setof record' else format_type(prorettype, null) end as returns
    from pg_proc where pronamespace = 'public'::regnamespace and proname = any (${words})
      and prorettype <> 'trigger'::regtype and not proretset order by 1`;
  return { relations: [...relations], sequences: sequences.map((s) => s.name), functions: [...functions] };
}

/** Statements that fire every trigger of a table `login` may write, as the role would write it. */
async function triggerProbes(login: string): Promise<string[]> {
  const probes: string[] = [];
  const can = async (table: string, privilege: string) => {
    const [row] = await db.sql<
      { ok: boolean }[]
    >`select has_table_privilege(${login}, ${table}, ${privilege}) as ok`;
    return row!.ok;
  };
  if (await can('public.audit_events', 'INSERT'))
    probes.push(
      `insert into public.audit_events (server, method, outcome, duration_ms, request_id) values ('x', 'tools/call', 'ok', 0, 'shadow')`,
    );
  if (await can('public.bulkhead_approvals', 'UPDATE'))
    probes.push(
      `update public.bulkhead_approvals set status = 'approved', decided_by = 'x', decided_by_token_id = 'x'`,
    );
  if (await can('public.bulkhead_approvals', 'INSERT'))
    probes.push(
      `insert into public.bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview, expires_at, request_id)
       values ('ap_shadowshadow', 'x', 't', '{}', '{}', '${'a'.repeat(64)}', 'p', now() + interval '1 hour', 'r')`,
    );
  if (await can('public.bulkhead_outbox', 'INSERT'))
    probes.push(`insert into public.bulkhead_outbox (server, kind, payload) values ('x', 'email', '{}')`);
  return probes;
}

describe('the attacks of issue 31, one by one', () => {
  async function pendingApproval(id: string, requester: string | null = null) {
    await db.sql`
      insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
        expires_at, request_id, requested_by_token_id)
      values (${id}, 'admin', 'issue_credit_note', '{}', '{}', ${createHash('sha256').update('{}').digest('hex')},
        'Credit €1', now() + interval '1 hour', 'r', ${requester})`;
  }
  async function approver(person: string) {
    const { token, record } = await issueToken(db.sql, {
      kind: 'approver',
      server: 'console',
      label: `approver ${person}`,
      scopes: ['approvals:decide'],
      expiresAt: null,
      createdBy: 'test',
      owner: person,
    });
    return { ...record, token };
  }

  it('4: a decision by nobody, by an approver id without its secret, by a token that is no live approver, or without its event is refused', async () => {
    await pendingApproval('ap_nobodynobody');
    const console = roles.console!;
    /** The decision as one statement, after `proof` (if any) was presented in the same transaction. */
    const decide = (set: string, proof?: string) =>
      console
        .begin(async (tx) => {
          if (proof) await tx`select 1 from bulkhead_console_prove(${proof})`;
          await tx.unsafe(
            `update bulkhead_approvals set status = 'approved', ${set} where id = 'ap_nobodynobody'`,
          );
          throw new Error('rolled back');
        })
        .catch((err: Error) => (err.message === 'rolled back' ? 'ok' : err.message));
    const unproven =
      /is taken by an approver who presents their token or console session in the same transaction/;
    expect(
      await decide(
        `decided_by = 'nobody', decided_by_token_id = 'doesnotexist', decided_arguments_hash = arguments_hash`,
      ),
    ).toMatch(unproven);
    const { token, record: ana } = await issueToken(db.sql, {
      kind: 'approver',
      server: 'console',
      label: 'approver ana',
      scopes: ['approvals:decide'],
      expiresAt: null,
      createdBy: 'test',
      owner: 'ana',
    });
    // Ana's id and label alone, as the console's login can read them: not a proof.
    expect(
      await decide(
        `decided_by = 'console:approver ana', decided_by_token_id = '${ana.id}', decided_arguments_hash = arguments_hash`,
      ),
    ).toMatch(unproven);
    expect(
      await decide(
        `decided_by = 'nobody', decided_by_token_id = '${ana.id}', decided_arguments_hash = arguments_hash`,
        token,
      ),
    ).toMatch(/the decider is recorded as its approver token's label/);
    expect(
      await decide(
        `decided_by = 'console:approver ana', decided_by_token_id = '${ana.id}', decided_arguments_hash = arguments_hash`,
        token,
      ),
    ).toMatch(/recorded with its audit event, written first in the same transaction/);
    // An event committed earlier, in a transaction of its own, is not the decision's.
    const eventId = crypto.randomUUID();
    await createAuditWriter(console).appendIn(console, {
      id: eventId,
      server: 'console',
      method: 'approvals/decide',
      outcome: 'approved',
      approvalId: 'ap_nobodynobody',
      tokenId: ana.id,
      requestId: 'r',
      durationMs: 0,
    });
    expect(
      await decide(
        `decided_by = 'console:approver ana', decided_by_token_id = '${ana.id}', decided_arguments_hash = arguments_hash, decision_event_id = '${eventId}'`,
        token,
      ),
    ).toMatch(/recorded with its audit event, written first in the same transaction/);
    const [row] = await db.sql`select status from bulkhead_approvals where id = 'ap_nobodynobody'`;
    expect(row).toEqual({ status: 'pending' });
    // A revoked approver proves nothing, so decides nothing either.
    await db.sql`update bulkhead_tokens set revoked_at = now() where id = ${ana.id}`;
    expect(
      await decide(
        `decided_by = 'console:approver ana', decided_by_token_id = '${ana.id}', decided_arguments_hash = arguments_hash`,
        token,
      ),
    ).toMatch(/no signed-in approver: the token or session presented is unknown, expired or revoked/);
  });

  it('4: the decision path writes its event first and is accepted; the event is in the log', async () => {
    await pendingApproval('ap_properproper');
    const bea = await approver('bea');
    const decided = await decideApproval(roles.console!, createAuditWriter(roles.console!), {
      id: 'ap_properproper',
      decision: 'approve',
      proof: bea.token,
      via: 'console',
    });
    expect(decided.status).toBe('approved');
    const [row] = await db.sql<{ event: string }[]>`
      select e.outcome || ' by ' || e.token_label as event from bulkhead_approvals a
      join audit_events e on e.id = a.decision_event_id where a.id = 'ap_properproper'`;
    expect(row).toEqual({ event: 'approved by console:approver bea' });
  });

  it('13: a person approves no request filed with their own token, whatever the case or width of the name', async () => {
    const { record: requester } = await issueToken(db.sql, {
      server: 'admin',
      label: 'Bob’s client',
      scopes: ['billing:write'],
      expiresAt: null,
      createdBy: 'test',
      owner: 'Bob',
    });
    await pendingApproval('ap_selfselfself', requester.id);
    for (const person of ['bob', ' BOB ', 'ｂｏｂ']) {
      const me = await approver(person);
      // The kit refuses it first …
      await expect(
        decideApproval(roles.console!, createAuditWriter(roles.console!), {
          id: 'ap_selfselfself',
          decision: 'approve',
          proof: me.token,
          via: 'console',
        }),
      ).rejects.toThrow(/issued to .*who may not approve it too/);
      // … and the database on its own, with the event written as the console would.
      const verdict = await roles
        .console!.begin(async (tx) => {
          await tx`select 1 from bulkhead_console_prove(${me.token})`;
          const id = crypto.randomUUID();
          await createAuditWriter(tx as unknown as Sql).appendIn(tx, {
            id,
            server: 'console',
            method: 'approvals/decide',
            outcome: 'approved',
            approvalId: 'ap_selfselfself',
            tokenId: me.id,
            requestId: 'r',
            durationMs: 0,
          });
          await tx`update bulkhead_approvals set status = 'approved', decided_by = ${`console:${me.label}`},
            decided_by_token_id = ${me.id}, decided_arguments_hash = arguments_hash, decision_event_id = ${id}
            where id = 'ap_selfselfself'`;
          return 'approved';
        })
        .catch((err: Error) => err.message);
      expect([person, verdict]).toEqual([
        person,
        'approval ap_selfselfself was requested by Bob, who may not approve it too',
      ]);
    }
  });

  it('2: an executed approval never goes back to approved, whoever asks', async () => {
    await db.sql`
      insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
        expires_at, request_id, status, decided_at, decided_by, decided_by_token_id, decided_arguments_hash, executed_at)
      values ('ap_executedexec', 'admin', 'issue_credit_note', '{}', '{}', ${'d'.repeat(64)}, 'p',
        now() + interval '1 hour', 'r', 'executed', now(), 'console:x', 'x', ${'d'.repeat(64)}, now())`;
    for (const name of ['console', 'admin'])
      expect(
        await outcome(
          roles[name]!,
          `update bulkhead_approvals set status = 'approved' where id = 'ap_executedexec'`,
        ),
      ).toMatch(/final \(executed\)|permission denied/);
  });

  it('3, 9: no role draws audit numbers of its own, creates large objects, takes advisory locks or locks the kit’s tables', async () => {
    for (const name of ROLES) {
      const sql = roles[name]!;
      expect([name, await outcome(sql, 'select lo_create(0)')]).toEqual([
        name,
        expect.stringMatching(/permission denied/),
      ]);
      expect([name, await outcome(sql, `select lo_from_bytea(0, '\\x00')`)]).toEqual([
        name,
        expect.stringMatching(/permission denied/),
      ]);
      for (const lock of [
        'select pg_advisory_lock(1651862635)',
        'select pg_try_advisory_lock(1651862636)',
        'select pg_advisory_xact_lock(1651862635)',
        'select pg_advisory_lock_shared(1, 2)',
      ])
        expect([name, lock, await outcome(sql, lock)]).toEqual([
          name,
          lock,
          expect.stringMatching(/permission denied/),
        ]);
      for (const table of ['bulkhead_migrations', 'bulkhead_rate_limits', 'audit_events', 'bulkhead_tokens'])
        expect([name, table, await outcome(sql, `lock table ${table} in access exclusive mode`)]).toEqual([
          name,
          table,
          expect.stringMatching(/permission denied/),
        ]);
      expect([name, await outcome(sql, `select setval('audit_events_seq', 999999)`)]).toEqual([
        name,
        expect.stringMatching(/permission denied/),
      ]);
    }
  });

  it('9: rate-limit counts are exchanged through the function alone, each server seeing its own', async () => {
    const window = Math.floor(Date.now() / 60_000) * 60_000;
    const exchange = (sql: Sql, n: number) => sql<{ token: string; count: number }[]>`
      select token_id as token, count from bulkhead_rate_limit_exchange(${['tok_rl']}::text[], ${[window]}::float8[],
        ${[n]}::int[], ${['tok_rl']}::text[], to_timestamp(${(window - 60_000) / 1000}), false)`;
    expect(await exchange(roles.customer!, 3)).toEqual([{ token: 'tok_rl', count: 3 }]);
    expect(await exchange(roles['dev-knowledge']!, 5)).toEqual([{ token: 'tok_rl', count: 5 }]);
    expect(await exchange(roles.customer!, 1)).toEqual([{ token: 'tok_rl', count: 4 }]);
    expect(
      await outcome(
        roles.sealer!,
        `select * from bulkhead_rate_limit_exchange('{}', '{}', '{}', '{}', now(), false)`,
      ),
    ).toMatch(/permission denied/);
  });

  it('9: settings a login stores for itself (ALTER ROLE … SET) are named, and servers refuse to start with them', async () => {
    const login = `bh_settings_${randomBytes(4).toString('hex')}`;
    await db.admin.unsafe(
      `create role ${login} login password 'bulkhead-test' in role ${groupRole('customer')}`,
    );
    const url = new URL(db.url);
    url.username = login;
    url.password = 'bulkhead-test';
    const sql = createSql(url.toString(), { max: 1 });
    try {
      // Any role may do this to itself.
      await sql.unsafe(`alter role ${login} set default_transaction_read_only = on`);
      const fresh = createSql(url.toString(), { max: 1 });
      try {
        expect(await sessionHazards(fresh)).toEqual([
          'settings are stored for the login role (default_transaction_read_only=on), applied to every connection it opens: clear them with ALTER ROLE … RESET ALL',
        ]);
      } finally {
        await fresh.end({ timeout: 2 });
      }
    } finally {
      await sql.end({ timeout: 2 });
      await db.admin.unsafe(`drop role ${login}`);
    }
  });

  it('7: a login role’s connection limit is a refusal the kit reports as the database being unavailable', async () => {
    const login = `bh_limited_${randomBytes(4).toString('hex')}`;
    await db.admin.unsafe(
      `create role ${login} login password 'bulkhead-test' connection limit 2 in role ${groupRole('dev-knowledge')}`,
    );
    const url = new URL(db.url);
    url.username = login;
    url.password = 'bulkhead-test';
    const sql = createSql(url.toString(), { max: 5 });
    try {
      const results = await Promise.allSettled(
        Array.from({ length: 5 }, () => sql`select pg_sleep(0.3), 1 as one`),
      );
      const refused = results
        .filter((r) => r.status === 'rejected')
        .map((r) => (r as PromiseRejectedResult).reason as Error & { code?: string });
      expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThanOrEqual(1);
      expect(refused.length).toBeGreaterThanOrEqual(1);
      for (const err of refused) {
        expect(err.code).toBe('53300');
        expect(isConnectionError(err)).toBe(true);
      }
    } finally {
      await sql.end({ timeout: 2 });
      await db.admin.unsafe(`drop role ${login}`);
    }
  });
});
