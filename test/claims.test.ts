import { randomBytes } from 'node:crypto';
import { issueToken } from '@bulkhead/core/operator';
import { groupRole, type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { discoverDeployables } from '@bulkhead/deployables';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root } from './helpers.ts';

// Issue 42: the database acts for a person, a customer or an approval only on a proof it checks itself.
// This test is generated from the catalog: every SECURITY DEFINER function that a deployable's role may
// call and that takes an id of an approver, operator, token, grant, customer or approval must also take
// a proof (a secret the database hashes itself) — and refuse a wrong one — or be listed below with the
// state it checks instead, shown by a test of its own. A function added later without either fails here.

/** A parameter naming who or what a call acts for. */
const IDENTITY = /^p_(id|\w+_id|operator|approver|customer|person|approval|grant|requester)$/;
/** A parameter carrying a proof: a secret (or the hash only the owner can read) the function checks. */
const PROOF = /^p_(proof|secret|secret_hash|session|token|verifier|code)$/;

/** Functions that take an id but no proof: each checks a state in the database, tested below. */
const STATE_CHECKED: Record<string, string> = {
  'bulkhead_token_owner(p_id text)':
    'answers only for a token that requested an approval still pending (the approvals guard needs the requester)',
  'bulkhead_proven_is_requester(p_token_id text)':
    'answers only for the approver proven in the same transaction, and a token that requested an approval still pending',
  'bulkhead_approval_vote(p_approval text, p_event uuid, p_decided_by text)':
    'votes only as the approver proven in the same transaction, with their decision event written first in it',
  'bulkhead_approval_votes_of(p_approval text)':
    'reads only who approved a request, which the console reads of its decision events anyway; changes nothing',
  'bulkhead_token_groups(p_token_id text)':
    'answers only for a live token of the calling server (the groups its policy weighs); changes nothing',
  'bulkhead_policy_usage_today(p_token_id text, p_tool text, p_add boolean)':
    'counts only for a live token of the calling server, and only upwards: a forged id can use up a quota early, never lift one',
};

interface DefinerFunction {
  oid: number;
  signature: string;
  name: string;
  params: { name: string; type: string }[];
  /** The deployable roles that may execute it. */
  callers: string[];
}

let db: TestDatabase;
const roles = new Map<string, string>();
const logins: Record<string, Sql> = {};
/** An operator's real token id: the id a compromised login reads, without the secret. */
let operatorId = '';
/** That operator's token in full: a proof. */
let operatorToken = '';

async function definerFunctions(sql: Sql): Promise<DefinerFunction[]> {
  const rows = await sql<{ oid: number; name: string; names: string[] | null; types: string[] }[]>`
    select p.oid::int as oid, p.proname as name, p.proargnames[1:p.pronargs] as names,
      array(select format_type(t, null) from unnest(p.proargtypes) with ordinality as a(t, i) order by i) as types
    from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'public' and p.prosecdef and p.prokind = 'f' order by p.proname`;
  const out: DefinerFunction[] = [];
  for (const r of rows) {
    const callers: string[] = [];
    for (const [deployable, role] of roles) {
      const [ok] = await sql<{ ok: boolean }[]>`
        select has_function_privilege(${role}, ${r.oid}::oid, 'EXECUTE') as ok`;
      if (ok!.ok) callers.push(deployable);
    }
    const params = r.types.map((type, i) => ({ name: r.names?.[i] ?? `$${i + 1}`, type }));
    const signature = `${r.name}(${params.map((p) => `${p.name} ${p.type}`).join(', ')})`;
    out.push({ oid: r.oid, signature, name: r.name, params, callers });
  }
  return out;
}

/** The functions that name someone without a proof and are not known to check a state instead. */
function claimsOnly(fns: DefinerFunction[]): string[] {
  return fns
    .filter((f) => f.callers.length > 0)
    .filter((f) => f.params.some((p) => IDENTITY.test(p.name)))
    .filter((f) => !f.params.some((p) => PROOF.test(p.name)))
    .filter((f) => !(f.signature in STATE_CHECKED))
    .map((f) => `${f.signature} (callable by ${f.callers.join(', ')})`);
}

/** A plausible argument of `type`: real ids where an id is asked for, a wrong secret for a proof. */
function argumentFor(p: { name: string; type: string }, caller: string): string | null {
  if (PROOF.test(p.name)) {
    // The operator's real id with a made-up secret: exactly what a login that reads ids can present.
    if (p.type === 'bytea') return '\\x' + randomBytes(32).toString('hex');
    return `bh_console_${operatorId}_${randomBytes(32).toString('base64url')}`;
  }
  if (IDENTITY.test(p.name)) return p.type === 'text' ? operatorId : null;
  if (p.name === 'p_audience' || p.name === 'p_server') return caller;
  switch (p.type) {
    case 'text':
      return 'x';
    case 'text[]':
      return '{tokens:manage}';
    case 'bytea':
      return '\\x00';
    case 'boolean':
      return 'false';
    case 'integer':
    case 'double precision':
      return '60';
    case 'timestamp with time zone':
      return new Date(Date.now() + 3_600_000).toISOString();
    default:
      return null;
  }
}

const ROLLBACK = new Error('rolled back');

/** What a call answered: 'refused' (an error), or the rows it returned (its transaction rolled back). */
async function call(f: DefinerFunction, caller: string): Promise<'refused' | Record<string, unknown>[]> {
  const args = f.params.map((p) => argumentFor(p, caller));
  const placeholders = f.params.map((p, i) => `$${i + 1}::${p.type}`).join(', ');
  let rows: Record<string, unknown>[] = [];
  try {
    await logins[caller]!.begin(async (tx) => {
      rows = [...(await tx.unsafe(`select * from public.${f.name}(${placeholders})`, args))];
      throw ROLLBACK;
    });
  } catch (err) {
    if (err !== ROLLBACK) return 'refused';
  }
  return rows;
}

/** Nothing done, nothing told: no row, or rows of nulls and falses, or a verification status other than ok. */
function answeredNothing(result: 'refused' | Record<string, unknown>[]): boolean {
  if (result === 'refused') return true;
  // A `status` other than ok, and a `refused` reason (the ID-JAG exchange names why it wrote nothing),
  // say that nothing was given; every other column must be empty.
  return result.every((row) =>
    Object.entries(row).every(([k, v]) =>
      k === 'status'
        ? v !== 'ok'
        : k === 'refused' || v === null || v === false || (Array.isArray(v) && v.length === 0),
    ),
  );
}

beforeAll(async () => {
  db = await createTestDatabase();
  for (const d of discoverDeployables(root)) {
    roles.set(d.name, groupRole(d.name));
    logins[d.name] = (await db.as(d.name)).sql;
  }
  const { record, token } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Olga',
    scopes: ['approvals:decide', 'grants:issue', 'tokens:manage'],
    expiresAt: null,
    createdBy: 'test',
    owner: 'Olga',
  });
  operatorId = record.id;
  operatorToken = token;
}, 120_000);
afterAll(async () => {
  await db?.drop();
});

describe('definer functions act on proofs, not claims (generated from the catalog)', () => {
  it('every function a deployable may call that takes an id also takes a proof, or checks a state', async () => {
    const fns = await definerFunctions(db.sql);
    // The catalog is read, not assumed: the kit's own proof-taking functions are among them.
    expect(fns.map((f) => f.name)).toEqual(
      expect.arrayContaining([
        'bulkhead_console_prove',
        'bulkhead_operator_issue_token',
        'bulkhead_verify_token',
      ]),
    );
    expect(claimsOnly(fns)).toEqual([]);
    // Every state-checked entry still exists as written (a renamed function must be looked at again).
    expect(Object.keys(STATE_CHECKED).filter((s) => !fns.some((f) => f.signature === s))).toEqual([]);
  });

  it('names a new function that acts on an id alone', async () => {
    await db.sql`create function bulkhead_probe_decide(p_approval_id text, p_approver text) returns boolean
      language sql security definer set search_path = pg_catalog, public, pg_temp as $$ select true $$`;
    await db.sql`revoke all on function bulkhead_probe_decide(text, text) from public`;
    await db.sql`grant execute on function bulkhead_probe_decide(text, text) to ${db.sql(groupRole('admin'))}`;
    try {
      expect(claimsOnly(await definerFunctions(db.sql))).toEqual([
        'bulkhead_probe_decide(p_approval_id text, p_approver text) (callable by admin)',
      ]);
    } finally {
      await db.sql`drop function bulkhead_probe_decide(text, text)`;
    }
  });

  it('every function that takes a proof refuses a wrong secret beside a real id, for every role that may call it', async () => {
    const fns = (await definerFunctions(db.sql)).filter(
      (f) => f.callers.length > 0 && f.params.some((p) => PROOF.test(p.name)),
    );
    expect(fns.length).toBeGreaterThan(10);
    const answered: string[] = [];
    for (const f of fns)
      for (const caller of f.callers) {
        const result = await call(f, caller);
        if (!answeredNothing(result)) answered.push(`${f.signature} as ${caller}: ${JSON.stringify(result)}`);
      }
    expect(answered).toEqual([]);
  });

  it('bulkhead_token_owner answers only for a token that requested a pending approval', async () => {
    const { record } = await issueToken(db.sql, {
      server: 'admin',
      label: 'requester',
      scopes: ['invoices:read'],
      expiresAt: null,
      createdBy: 'test',
      owner: 'Rita',
    });
    const owner = async () =>
      (await logins.console!<{ o: string | null }[]>`select bulkhead_token_owner(${record.id}) as o`)[0]!.o;
    expect(await owner()).toBeNull();
    await db.sql`
      insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
        expires_at, request_id, requested_by_token_id)
      values ('ap_claimsclaims', 'admin', 'issue_credit_note', '{}', '{}', ${'0'.repeat(64)}, 'Credit', now() + interval '1 hour', 'r',
        ${record.id})`;
    expect(await owner()).toBe('Rita');
    await db.sql`update bulkhead_approvals set status = 'expired', expires_at = now() where id = 'ap_claimsclaims'`;
    expect(await owner()).toBeNull();
    // Nor for an approver's token, whatever its id.
    expect(
      (await logins.console!<{ o: string | null }[]>`select bulkhead_token_owner(${operatorId}) as o`)[0]!.o,
    ).toBeNull();
  });

  it('bulkhead_proven_is_requester answers only for the approver proven in the transaction and a token that requested a pending approval', async () => {
    const issue = (kind: 'mcp' | 'approver', owner: string) =>
      issueToken(db.sql, {
        kind,
        server: kind === 'mcp' ? 'admin' : 'console',
        label: owner,
        scopes: kind === 'mcp' ? ['invoices:read'] : ['approvals:decide'],
        expiresAt: null,
        createdBy: 'test',
        owner,
      });
    const { record } = await issue('mcp', 'Nora');
    const nora = (await issue('approver', 'Nora')).token;
    const rita = (await issue('approver', 'Rita')).token;
    const asked = (proof: string | null) =>
      logins.console!.begin(async (tx) => {
        if (proof) await tx`select 1 from bulkhead_console_prove(${proof})`;
        const [r] = await tx<{ same: boolean }[]>`select bulkhead_proven_is_requester(${record.id}) as same`;
        return r!.same;
      });
    expect([await asked(null), await asked(nora)]).toEqual([false, false]);
    await db.sql`
      insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
        expires_at, request_id, requested_by_token_id)
      values ('ap_claimsproven', 'admin', 'issue_credit_note', '{}', '{}', ${'0'.repeat(64)}, 'Credit', now() + interval '1 hour', 'r',
        ${record.id})`;
    expect([await asked(null), await asked(nora), await asked(rita)]).toEqual([false, true, false]);
    await db.sql`update bulkhead_approvals set status = 'expired', expires_at = now() where id = 'ap_claimsproven'`;
    expect(await asked(nora)).toBe(false);
  });

  it('bulkhead_policy_usage_today and bulkhead_token_groups answer only for a live token of the calling server; a vote needs the proof and its event', async () => {
    const issue = (server: string) =>
      issueToken(db.sql, {
        server,
        label: 'counted',
        scopes: ['invoices:read'],
        expiresAt: null,
        createdBy: 'test',
      });
    const own = (await issue('admin')).record.id;
    const other = (await issue('customer')).record.id;
    const count = (id: string, add: boolean) =>
      logins.admin!.begin(async (tx) => {
        const [r] = await tx<
          { n: number }[]
        >`select bulkhead_policy_usage_today(${id}, 'issue_credit_note', ${add}) as n`;
        return r!.n;
      });
    expect(await count(own, true)).toBe(0);
    expect(await count(own, false)).toBe(1);
    await expect(count(other, true)).rejects.toThrow(/is no live token of admin/);
    await expect(count('nosuchtoken0', true)).rejects.toThrow(/is no live token of admin/);
    await db.sql`update bulkhead_tokens set groups = '{finance}' where id in (${own}, ${other})`;
    const groups = async (id: string) =>
      (await logins.admin!<{ g: string[] | null }[]>`select bulkhead_token_groups(${id}) as g`)[0]!.g;
    expect([await groups(own), await groups(other)]).toEqual([['finance'], null]);
    // A vote without an approver proven in the transaction, or without its decision event: refused.
    await expect(
      logins.console!`select bulkhead_approval_vote('ap_claimsproven', ${crypto.randomUUID()}, 'console:x')`,
    ).rejects.toThrow(/proves themselves in the same transaction/);
    await expect(
      logins.console!.begin(async (tx) => {
        await tx`select 1 from bulkhead_console_prove(${operatorToken})`;
        await tx`select bulkhead_approval_vote('ap_claimsproven', ${crypto.randomUUID()}, 'console:x')`;
      }),
    ).rejects.toThrow(/recorded with its audit event/);
  });
});
