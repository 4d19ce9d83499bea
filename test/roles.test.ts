import { createHash } from 'node:crypto';
import { createAuditWriter } from '@bulkhead/audit';
import { issueToken, parseToken } from '@bulkhead/core/operator';
import { groupRole, type Sql } from '@bulkhead/db';
import { discoverDeployables } from '@bulkhead/deployables';
import { seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root } from './helpers.ts';

let db: TestDatabase;
const roles: Record<string, Sql> = {};
/** The shipped deployables, whose rights EXPECTED spells out. */
const DEPLOYABLES = ['admin', 'customer', 'dev-knowledge', 'ops', 'console', 'sealer'] as const;
const found = discoverDeployables(root);
/** Every MCP server under servers/, and every role, shipped or added since (`bulkhead new server`). */
const MCP = found.filter((d) => d.kind === 'mcp').map((d) => d.name);
const ROLES = [...found.map((d) => d.name), 'sealer'];

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  for (const name of ROLES)
    roles[name] = (await db.as(name, name === 'sealer' ? { kind: 'sealer' } : undefined)).sql;
}, 120_000);
afterAll(async () => {
  await db.drop();
});

/** Runs `statement` as `name` in a transaction that is always rolled back; returns what the database said. */
async function attempt(name: string, statement: string): Promise<'ok' | 'denied' | string> {
  try {
    await roles[name]!.begin(async (tx) => {
      await tx.unsafe(statement);
      throw new Error('rollback');
    });
    return 'ok';
  } catch (err) {
    const message = (err as Error).message;
    if (message === 'rollback') return 'ok';
    // A refused privilege; any other error (a NOT NULL, a row policy) means the privilege check passed.
    return /permission denied/.test(message) ? 'denied' : 'ok';
  }
}

interface Rights {
  select?: 'all' | string[];
  insert?: 'all' | string[];
  update?: 'all' | string[];
  delete?: true;
}

/**
 * What each role may do with each table and view, exactly: anything not listed is refused by the
 * database. Column lists name the only columns a role may insert or update (or read).
 */
const EXPECTED: Record<(typeof DEPLOYABLES)[number], Record<string, Rights>> = {
  admin: {
    audit_events: { insert: 'all' },
    bulkhead_approvals: {
      select: 'all',
      insert: 'all',
      update: ['status', 'executed_at', 'executed_by', 'duration_ms', 'result', 'error', 'failure'],
    },
    bulkhead_deployables: { select: 'all' },
    bulkhead_outbox: {
      select: 'all',
      insert: 'all',
      update: ['status', 'attempts', 'next_attempt_at', 'delivered_at', 'last_error'],
    },
    bulkhead_outbox_attempts: { select: 'all', insert: 'all' },
    credit_notes: { select: 'all', insert: 'all' },
    customers: { select: 'all', update: ['email', 'phone', 'street', 'postal_code', 'city', 'updated_at'] },
    invoice_balances: { select: 'all' },
    invoice_lines: { select: 'all' },
    invoices: { select: 'all', update: ['status', 'sent_at'] },
    payments: { select: 'all' },
    ticket_messages: { select: 'all', insert: ['ticket_key', 'author_kind', 'author_name', 'body'] },
    tickets: {
      select: 'all',
      update: ['category', 'status', 'updated_at', 'escalated_at', 'escalation_reason'],
    },
  },
  customer: {
    audit_events: { insert: 'all' },
    bulkhead_deployables: { select: 'all' },
    credit_notes: { select: 'all' },
    customers: { select: ['id', 'name', 'language'] },
    invoice_balances: { select: 'all' },
    invoice_lines: { select: 'all' },
    invoices: { select: 'all' },
    payments: { select: 'all' },
    // Every column but the generated id.
    ticket_messages: { select: 'all', insert: 'all' },
    tickets: {
      select: 'all',
      insert: ['key', 'customer_id', 'subject', 'category', 'status'],
      update: ['status', 'updated_at'],
    },
  },
  'dev-knowledge': {
    audit_events: { insert: 'all' },
    bulkhead_deployables: { select: 'all' },
    kb_documents: { select: 'all' },
  },
  // A gated server without business tables: its tools act on Alertmanager, through approvals and the outbox.
  ops: {
    audit_events: { insert: 'all' },
    bulkhead_approvals: {
      select: 'all',
      insert: 'all',
      update: ['status', 'executed_at', 'executed_by', 'duration_ms', 'result', 'error', 'failure'],
    },
    bulkhead_deployables: { select: 'all' },
    bulkhead_outbox: {
      select: 'all',
      insert: 'all',
      update: ['status', 'attempts', 'next_attempt_at', 'delivered_at', 'last_error'],
    },
    bulkhead_outbox_attempts: { select: 'all', insert: 'all' },
  },
  console: {
    audit_events: { select: 'all', insert: 'all' },
    // Seals and the prune checkpoint: an operator's event page tells whether the event is sealed.
    audit_prune_checkpoint: { select: 'all' },
    audit_seals: { select: 'all' },
    bulkhead_approvals: {
      select: 'all',
      update: [
        'status',
        'decided_by',
        'decided_by_token_id',
        'decision_reason',
        'decided_arguments_hash',
        'decision_event_id',
      ],
    },
    bulkhead_caught_mail: { select: 'all' },
    bulkhead_console_sign_in_failures: { select: 'all', insert: 'all', update: 'all', delete: true },
    bulkhead_console_sign_in_forms: { select: 'all', insert: 'all', delete: true },
    bulkhead_deployables: { select: 'all' },
    // People and the group mapping hold no secret: read for the pages, written only through functions
    // (a sign-in the database started, an operator's proof).
    bulkhead_groups: { select: 'all' },
    // The OAuth authorization server's own tables; grants, codes, refresh tokens and the token table are
    // written only through functions that take an approver's proof or the grant's own secrets.
    bulkhead_oauth_clients: { select: 'all', insert: 'all', update: 'all' },
    bulkhead_oauth_codes: { select: 'all', update: ['used_at'] },
    bulkhead_oauth_grants: { select: 'all' },
    bulkhead_oauth_refresh_tokens: { select: 'all', update: ['used_at'] },
    bulkhead_outbox: { select: 'all' },
    bulkhead_persons: { select: 'all' },
    // Policy sets hold no secret: read for the pages, written only through functions (an operator's proof).
    bulkhead_policy_sets: { select: 'all' },
    customers: { select: ['id', 'name'] },
  },
  sealer: {
    audit_events: { select: 'all' },
    audit_prune_checkpoint: { select: 'all' },
    audit_seals: { select: 'all', insert: 'all' },
    // Signed checkpoints, written with each seal (0060), and their timestamps (0061).
    audit_checkpoint_timestamps: { select: 'all', insert: 'all' },
    audit_signed_checkpoints: { select: 'all', insert: 'all' },
    // How far each SIEM destination acknowledged forwarded events, and which forwarder holds it (0062).
    audit_forward_positions: {
      select: 'all',
      insert: 'all',
      update: ['seal_no', 'sent', 'forwarded', 'holder', 'expires_at', 'updated_at'],
    },
    // The election: a leased row only the sealer may take.
    audit_sealer_lease: { select: 'all', update: ['holder', 'expires_at'] },
    bulkhead_deployables: { select: 'all' },
  },
};

/** Probes one role on one relation, column by column: the database's own answer, nothing computed. */
async function probe(name: string, table: string): Promise<Rights> {
  const columns = await db.sql<{ c: string; writable: boolean }[]>`
    select column_name as c, (is_identity = 'NO' and is_generated = 'NEVER') as writable
    from information_schema.columns where table_schema = 'public' and table_name = ${table}
    order by ordinal_position`;
  const only = async (op: (c: string) => string, list: { c: string }[]) => {
    const ok: string[] = [];
    for (const { c } of list) if ((await attempt(name, op(c))) === 'ok') ok.push(c);
    return ok.length === 0 ? undefined : ok.length === list.length ? ('all' as const) : ok;
  };
  const writable = columns.filter((c) => c.writable);
  const isView =
    (await db.sql`select 1 from pg_views where schemaname = 'public' and viewname = ${table}`).length > 0;
  const rights: Rights = {};
  const select = await only((c) => `select "${c}" from "${table}" limit 1`, columns);
  if (select) rights.select = select;
  if (!isView) {
    const insert = await only((c) => `insert into "${table}" ("${c}") values (default)`, writable);
    if (insert) rights.insert = insert;
    const update = await only((c) => `update "${table}" set "${c}" = "${c}" where false`, writable);
    if (update) rights.update = update;
    if ((await attempt(name, `delete from "${table}" where false`)) === 'ok') rights.delete = true;
  }
  return rights;
}

/** What `name` may do with each table and view, probed one privilege at a time. */
async function rightsOf(name: string): Promise<Record<string, Rights>> {
  const relations = (
    await db.sql<{ t: string }[]>`
      select tablename as t from pg_tables where schemaname = 'public'
      union select viewname from pg_views where schemaname = 'public' order by 1`
  ).map((r) => r.t);
  const actual: Record<string, Rights> = {};
  for (const table of relations) {
    const rights = await probe(name, table);
    if (Object.keys(rights).length) actual[table] = rights;
  }
  return actual;
}

describe('every role × every table × select, insert, update, delete, refused by the database itself', () => {
  it.each(DEPLOYABLES)('%s may do exactly what its deployable needs', async (name) => {
    expect(await rightsOf(name)).toEqual(EXPECTED[name]);
  });

  // A server added since, without gated tools: the kit's rights and what its grants.sql adds. Fresh from
  // `bulkhead new server` it grants nothing more; once it does, spell its rights out in EXPECTED.
  const added = found.filter(
    (d) => d.kind === 'mcp' && !d.gated && !(DEPLOYABLES as readonly string[]).includes(d.name),
  );
  it.each(added.map((d) => d.name))(
    '%s (added) may do what the kit gives every MCP server, and nothing else',
    async (name) => {
      const kit = Object.fromEntries(
        Object.entries(EXPECTED['dev-knowledge']).filter(([t]) => t !== 'kb_documents'),
      );
      expect(await rightsOf(name)).toEqual(kit);
    },
  );
});

describe('forging, as each server role would if it were compromised', () => {
  it('no server role approves a request, writes a decision, or opens a console session', async () => {
    const [pending] = await db.sql<{ id: string }[]>`
      insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
        expires_at, request_id)
      values ('ap_forgeforgefr', 'admin', 'issue_credit_note', '{}', '{}', ${'a'.repeat(64)}, 'Credit €42.42',
        now() + interval '1 hour', 'r') returning id`;
    const approve = `update bulkhead_approvals set status = 'approved', decided_by = 'x', decided_by_token_id = 'x',
      decided_arguments_hash = arguments_hash where id = '${pending!.id}'`;
    for (const name of [...MCP, 'sealer']) expect(await attempt(name, approve)).toBe('denied');
    await expect(
      roles.admin!`update bulkhead_approvals set status = 'approved' where id = ${pending!.id}`,
    ).rejects.toThrow(/only the console role decides approvals, not admin/);
    const session = `insert into bulkhead_console_sessions (id_hash, token_id, csrf, expires_at)
      values ('\\x00', 'x', 'x', now() + interval '1 hour')`;
    for (const name of [...MCP, 'sealer', 'console']) expect(await attempt(name, session)).toBe('denied');
  });

  it('the console decides but records no outcome, and files no request', async () => {
    const [a] = await db.sql<{ id: string }[]>`
      insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
        expires_at, request_id, status, decided_at, decided_by, decided_by_token_id, decided_arguments_hash)
      values ('ap_consoleexecc', 'admin', 'send_invoice', '{}', '{}', ${'b'.repeat(64)}, 'Send',
        now() + interval '1 hour', 'r', 'approved', now(), 'console:x', 'x', ${'b'.repeat(64)}) returning id`;
    await expect(
      roles.console!`update bulkhead_approvals set status = 'executed' where id = ${a!.id}`,
    ).rejects.toThrow(/only admin records the outcome of its approvals/);
    expect(
      await attempt(
        'console',
        `insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview, expires_at, request_id)
         values ('ap_consolefiled', 'admin', 't', '{}', '{}', '${'c'.repeat(64)}', 'p', now(), 'r')`,
      ),
    ).toBe('denied');
  });

  it('an audit event is stored under the writing role’s own server, and only the console records decisions', async () => {
    const id = crypto.randomUUID();
    await createAuditWriter(roles.customer!).appendIn(roles.customer!, {
      server: 'admin',
      method: 'tools/call',
      outcome: 'ok',
      requestId: id,
      durationMs: 0,
    });
    const [row] = await db.sql`select server, db_role from audit_events where request_id = ${id}`;
    expect(row).toEqual({ server: 'customer', db_role: 'bulkhead_customer_login' });
    for (const name of MCP)
      await expect(
        roles[name]!`insert into audit_events (id, server, method, outcome, duration_ms, request_id)
          values (gen_random_uuid(), 'console', 'approvals/decide', 'approved', 0, 'forged')`,
      ).rejects.toThrow(/only the console records decisions/);
    expect(
      await attempt(
        'sealer',
        `insert into audit_events (server, method, outcome, duration_ms, request_id) values ('x', 'm', 'ok', 0, 'r')`,
      ),
    ).toBe('denied');
  });

  it('no server role reads the token table; the token check answers only for its own audience', async () => {
    for (const name of ROLES) expect(await attempt(name, 'select id from bulkhead_tokens')).toBe('denied');
    const { token, record } = await issueToken(db.sql, {
      server: 'admin',
      label: 'admin client',
      scopes: ['invoices:read'],
      expiresAt: null,
      createdBy: 'test',
    });
    const hash = createHash('sha256').update(parseToken(token)!.secret).digest();
    const [own] =
      await roles.admin!`select status, scopes from bulkhead_verify_token(${record.id}, ${hash}, 'admin', 'mcp')`;
    expect(own).toEqual({ status: 'ok', scopes: ['invoices:read'] });
    // Its last-use note commits without waiting for a synchronous standby (a failover's new primary
    // may have none yet): the check's transaction, and only it, runs with synchronous_commit = local.
    await db.sql`update bulkhead_tokens set last_used_at = null where id = ${record.id}`;
    const [noted] = await roles.admin!.begin(
      (tx) => tx`select (select status from bulkhead_verify_token(${record.id}, ${hash}, 'admin', 'mcp')),
        current_setting('synchronous_commit') as commit`,
    );
    expect(noted).toEqual({ status: 'ok', commit: 'local' });
    const [after] = await roles.admin!`select current_setting('synchronous_commit') as commit`;
    expect(after!.commit).toBe('on');
    const [row] = await db.sql`select last_used_at from bulkhead_tokens where id = ${record.id}`;
    expect(row!.last_used_at).not.toBeNull();
    // dev-knowledge asking about an admin token, as admin or as itself: refused, or told it is another server's.
    await expect(
      roles['dev-knowledge']!`select * from bulkhead_verify_token(${record.id}, ${hash}, 'admin', 'mcp')`,
    ).rejects.toThrow(/may check tokens only for its own server/);
    const [other] = await roles['dev-knowledge']!`
      select status, scopes from bulkhead_verify_token(${record.id}, ${hash}, 'dev-knowledge', 'mcp')`;
    expect(other).toEqual({ status: 'wrong_server', scopes: null });
    expect(
      await attempt('sealer', `select * from bulkhead_verify_token('x', '\\x00', 'sealer', 'mcp')`),
    ).toBe('denied');
  });
});

describe('OAuth grants', () => {
  it('no server role touches the OAuth tables or issues a grant token; the console issues only from a live grant, with its secret', async () => {
    const issueFn = `select * from bulkhead_oauth_issue_token('g', 'bhc_x', 'v', 'id', '\\x00', 'l', now() + interval '1 hour',
      'r', '\\x00', now() + interval '1 day')`;
    for (const name of [...MCP, 'sealer']) {
      for (const table of [
        'bulkhead_oauth_clients',
        'bulkhead_oauth_grants',
        'bulkhead_oauth_codes',
        'bulkhead_oauth_refresh_tokens',
      ])
        expect([name, table, await attempt(name, `select 1 from ${table}`)]).toEqual([name, table, 'denied']);
      expect(await attempt(name, issueFn)).toBe('denied');
    }
    const console = roles.console!;
    await console`insert into bulkhead_oauth_clients (client_id, source, redirect_uris)
      values ('bhc_roles', 'registered', ${['http://127.0.0.1/cb']})`;
    // The console's login writes no grant, code or refresh token itself.
    expect(
      await attempt(
        'console',
        `insert into bulkhead_oauth_grants (id, client_id, server, scopes, granted_by_token_id, granted_by)
         values ('g_roles_00', 'bhc_roles', 'admin', '{}', 'x', 'x')`,
      ),
    ).toBe('denied');
    /** A grant as the consent page records one (here by the owner), with its code; answers the code's secrets. */
    const grant = async (id: string, by: string, server = 'admin') => {
      const code = `bhc_${id.slice(-2).repeat(22).slice(0, 43)}`;
      const verifier = `v${id.slice(-2)}`.padEnd(43, 'x');
      await db.sql`insert into bulkhead_oauth_grants (id, client_id, server, scopes, granted_by_token_id, granted_by)
        values (${id}, 'bhc_roles', ${server}, ${['invoices:read']}, ${by}, 'x')`;
      await db.sql`insert into bulkhead_oauth_codes (code_hash, grant_id, client_id, redirect_uri, code_challenge, resource, expires_at)
        values (${createHash('sha256').update(code).digest()}, ${id}, 'bhc_roles', 'http://127.0.0.1/cb',
          ${createHash('sha256').update(verifier).digest('base64url')}, 'http://127.0.0.1/mcp', now() + interval '2 minutes')`;
      return { code, verifier };
    };
    const issue = (grantId: string, secret: { code: string; verifier: string }, lifetime = '1 hour') =>
      console`select * from bulkhead_oauth_issue_token(${grantId}, ${secret.code}, ${secret.verifier},
        ${'rolestoken' + grantId.slice(-2)}, ${Buffer.from([0])}, 'l', now() + ${lifetime}::interval,
        ${'refresh' + grantId.slice(-2) + 'xxxxxxx'}, ${Buffer.from([0])}, now() + interval '1 day')`;
    // A grant given by an approver token without grants:issue, or by a made-up token id, yields nothing.
    const { record: decider } = await issueToken(db.sql, {
      kind: 'approver',
      server: 'console',
      label: 'decider',
      scopes: ['approvals:decide'],
      expiresAt: null,
      createdBy: 'test',
    });
    await expect(issue('g_roles_01', await grant('g_roles_01', decider.id))).rejects.toThrow(
      /given by a token that may not grant/,
    );
    await expect(issue('g_roles_02', await grant('g_roles_02', 'madeupid1234'))).rejects.toThrow(
      /given by a token that may not grant/,
    );
    const { record: granter } = await issueToken(db.sql, {
      kind: 'approver',
      server: 'console',
      label: 'granter',
      scopes: ['approvals:decide', 'grants:issue'],
      expiresAt: null,
      createdBy: 'test',
    });
    // Only for an MCP server, and never a token that outlives a day.
    await expect(issue('g_roles_03', await grant('g_roles_03', granter.id, 'console'))).rejects.toThrow(
      /not an MCP server/,
    );
    const secret = await grant('g_roles_04', granter.id);
    await expect(issue('g_roles_04', secret, '2 days')).rejects.toThrow(/up to a day/);
    // A grant id without its code, or with a wrong PKCE verifier, opens nothing.
    await expect(
      issue('g_roles_04', { code: `bhc_${'z'.repeat(43)}`, verifier: secret.verifier }),
    ).rejects.toThrow(/opened only with its unused authorization code/);
    await expect(issue('g_roles_04', { code: secret.code, verifier: 'w'.repeat(43) })).rejects.toThrow(
      /opened only with its unused authorization code/,
    );
    const [issued] = await issue('g_roles_04', secret);
    expect(issued).toMatchObject({ server: 'admin', scopes: ['invoices:read'], customer_id: null });
    // The code is redeemed once.
    await expect(issue('g_roles_04', secret)).rejects.toThrow(
      /opened only with its unused authorization code/,
    );
    // A grant is revoked by one of its own secrets (here its code), never by its id; revoking it revokes
    // its token, and the console cannot unrevoke it, having no write on tokens or grants.
    expect(await console`select * from bulkhead_oauth_revoke_grant('g_roles_04', 'test')`).toEqual([]);
    expect(await attempt('console', `update bulkhead_oauth_grants set revoked_at = now()`)).toBe('denied');
    expect(await console`select * from bulkhead_oauth_revoke_grant(${secret.code}, 'test')`).toEqual([
      { grant_id: 'g_roles_04', revoked: true },
    ]);
    const [row] =
      await db.sql`select revoked_at is not null as revoked from bulkhead_tokens where id = 'rolestoken04'`;
    expect(row).toEqual({ revoked: true });
    expect(await attempt('console', `update bulkhead_tokens set revoked_at = null`)).toBe('denied');
    const again = await grant('g_roles_05', granter.id);
    await db.sql`update bulkhead_oauth_grants set revoked_at = now() where id = 'g_roles_05'`;
    await expect(issue('g_roles_05', again)).rejects.toThrow(/unknown or revoked/);
  });
});

describe('customer rows under row-level security', () => {
  /** A live customer token's proof as the kit presents it (`<id>:<hex sha256 of the secret>`). */
  const proofOf = async (o: { customerId: string; server?: string; expiresAt?: Date | null }) => {
    const { token, record } = await issueToken(db.sql, {
      server: o.server ?? 'customer',
      label: 'fence test',
      scopes: ['account:read'],
      customerId: o.customerId,
      expiresAt: o.expiresAt ?? null,
      createdBy: 'test',
    });
    const hash = createHash('sha256').update(parseToken(token)!.secret).digest('hex');
    return { id: record.id, proof: `${record.id}:${hash}` };
  };
  const proofs = new Map<string, string>();
  /** Serves `customer` as the kit does: its token's proof for the transaction. */
  const asCustomer = <T>(customer: string | null, work: (tx: Sql) => Promise<T>): Promise<T> =>
    roles.customer!.begin(async (tx) => {
      if (customer !== null) {
        if (!proofs.has(customer)) proofs.set(customer, (await proofOf({ customerId: customer })).proof);
        await tx`select set_config('bulkhead.customer_token', ${proofs.get(customer)!}, true)`;
      }
      return work(tx as unknown as Sql);
    }) as Promise<T>;
  /** Every customer row the session sees, table by table. */
  const visible = (tx: Sql) =>
    tx<{ table: string; customer: string }[]>`
      select 'invoices' as table, customer_id as customer from invoices
      union select 'payments', customer_id from payments
      union select 'tickets', customer_id from tickets
      union select 'customers', id from customers
      union select 'credit_notes', customer_id from credit_notes
      union select 'invoice_balances', customer_id from invoice_balances
      union select 'ticket_messages', t.customer_id from ticket_messages m join tickets t on t.key = m.ticket_key
      order by 1, 2`;

  it('without the setting the customer role sees no customer row at all', async () => {
    const counts = await asCustomer(
      null,
      async (tx) =>
        tx<{ n: number }[]>`
        select (select count(*) from invoices)::int + (select count(*) from tickets)::int
          + (select count(*) from customers)::int + (select count(*) from payments)::int
          + (select count(*) from ticket_messages)::int + (select count(*) from invoice_balances)::int as n`,
    );
    expect(counts).toEqual([{ n: 0 }]);
  });

  it('serving C-1001, a query that forgets its filter still reads only C-1001, and C-1002 does not exist', async () => {
    const seen = await asCustomer('C-1001', async (tx) => ({
      invoices: await tx<{ c: string }[]>`select distinct customer_id as c from invoices`,
      tickets: await tx<{ c: string }[]>`select distinct customer_id as c from tickets`,
      balances: await tx<{ c: string }[]>`select distinct customer_id as c from invoice_balances`,
      customers: await tx<{ id: string }[]>`select id from customers`,
      other: await tx<{ n: number }[]>`
        select (select count(*) from invoices where customer_id = 'C-1002')::int
          + (select count(*) from tickets where customer_id = 'C-1002')::int as n`,
      drafts: await tx<{ n: number }[]>`select count(*)::int as n from invoices where status = 'draft'`,
      lines: await tx<{ n: number }[]>`
        select count(*)::int as n from invoice_lines l where not exists (
          select 1 from invoices i where i.number = l.invoice_number and i.customer_id = 'C-1001')`,
    }));
    expect(seen.invoices).toEqual([{ c: 'C-1001' }]);
    expect(seen.tickets).toEqual([{ c: 'C-1001' }]);
    expect(seen.balances).toEqual([{ c: 'C-1001' }]);
    expect(seen.customers).toEqual([{ id: 'C-1001' }]);
    expect(seen.other).toEqual([{ n: 0 }]);
    expect(seen.drafts).toEqual([{ n: 0 }]);
    expect(seen.lines).toEqual([{ n: 0 }]);
    const [truth] = await db.sql<
      { n: number }[]
    >`select count(*)::int as n from invoices where customer_id = 'C-1002'`;
    expect(truth!.n).toBeGreaterThan(0);
  });

  it('serving C-1001, a credit note is seen only with an invoice C-1001 sees', async () => {
    const [[sent], [other]] = await Promise.all([
      db.sql<
        { number: string }[]
      >`select number from invoices where customer_id = 'C-1001' and status <> 'draft' limit 1`,
      db.sql<{ number: string }[]>`select number from invoices where customer_id = 'C-1002' limit 1`,
    ]);
    await db.sql`
      insert into invoices (number, customer_id, status, issued_on, due_on, total_cents)
      values ('R-2026-0977', 'C-1001', 'draft', '2026-11-20', '2026-12-04', 5000)`;
    // The last two are inconsistent on purpose: a row policy holds whatever the rows say.
    await db.sql`
      insert into credit_notes (number, invoice_number, customer_id, amount_cents, reason) values
        ('CN-2026-9971', ${sent!.number}, 'C-1001', 100, 'goodwill'),
        ('CN-2026-9972', 'R-2026-0977', 'C-1001', 100, 'on a draft'),
        ('CN-2026-9973', ${other!.number}, 'C-1001', 100, 'on another customer''s invoice')`;
    try {
      const seen = await asCustomer(
        'C-1001',
        (tx) =>
          tx<
            { number: string }[]
          >`select number from credit_notes where number like 'CN-2026-997%' order by number`,
      );
      expect(seen.map((r) => r.number)).toEqual(['CN-2026-9971']);
      const [balance] = await asCustomer(
        'C-1001',
        (tx) =>
          tx<
            { due: string }[]
          >`select due_cents::text as due from invoice_balances where invoice_number = ${sent!.number}`,
      );
      const [truth] = await db.sql<{ due: string }[]>`
        select due_cents::text as due from invoice_balances where invoice_number = ${sent!.number}`;
      expect(balance).toEqual(truth);
    } finally {
      await db.sql`delete from credit_notes where number like 'CN-2026-997%'`;
      await db.sql`delete from invoices where number = 'R-2026-0977'`;
    }
  });

  it('serving C-1001, a ticket or message for C-1002 cannot be written', async () => {
    const [theirs] = await db.sql<
      { key: string }[]
    >`select key from tickets where customer_id = 'C-1002' limit 1`;
    await expect(
      asCustomer(
        'C-1001',
        (tx) =>
          tx`insert into tickets (key, customer_id, subject, category, status)
          values ('T-99999', 'C-1002', 'x', 'question', 'open')`,
      ),
    ).rejects.toThrow(/row-level security/);
    await expect(
      asCustomer(
        'C-1001',
        (tx) =>
          tx`insert into ticket_messages (ticket_key, author_kind, author_name, body)
          values (${theirs!.key}, 'customer', 'x', 'x')`,
      ),
    ).rejects.toThrow(/row-level security/);
    const updated = await asCustomer(
      'C-1001',
      (tx) => tx`update tickets set status = 'closed' where key = ${theirs!.key}`,
    );
    expect((updated as { count: number }).count).toBe(0);
  });

  it('a login that names another customer itself (issue 42) sees, changes and locks none of its rows', async () => {
    const [victim] = await db.sql<{ id: string; ticket: string }[]>`
      select t.customer_id as id, min(t.key) as ticket from tickets t
      where t.customer_id <> 'C-1001' and exists (select 1 from payments p where p.customer_id = t.customer_id)
        and exists (select 1 from invoices i where i.customer_id = t.customer_id and i.status <> 'draft')
      group by t.customer_id order by t.customer_id limit 1`;
    const other = victim!.id;
    const own = await proofOf({ customerId: 'C-1001' });
    const conn = await roles.customer!.reserve();
    try {
      // For the whole session, as a leaked DATABASE_URL would: the setting the fence used to trust.
      await conn`select set_config('bulkhead.customer_id', ${other}, false)`;
      expect(await visible(conn)).toEqual([]);
      expect((await conn`update tickets set status = 'closed' where customer_id = ${other}`).count).toBe(0);
      await conn`begin`;
      expect(await conn`select key from tickets where customer_id = ${other} for update`).toEqual([]);
      // Nothing is held: admin's categorize_ticket would take the row at once.
      const locked = await db.sql.begin(
        (tx) => tx`select key from tickets where key = ${victim!.ticket} for update nowait`,
      );
      expect(locked).toEqual([{ key: victim!.ticket }]);
      await conn`rollback`;
      // With a live token of its own, the login sees its own customer, whatever else it names.
      await conn`select set_config('bulkhead.customer_token', ${own.proof}, false)`;
      const seen = await visible(conn);
      expect(new Set(seen.map((r) => r.customer))).toEqual(new Set(['C-1001']));
      expect(seen.map((r) => r.table)).toEqual([
        'credit_notes',
        'customers',
        'invoice_balances',
        'invoices',
        'payments',
        'ticket_messages',
        'tickets',
      ]);
    } finally {
      await conn`reset all`;
      conn.release();
    }
  });

  it('an approved call proves its customer by the approval its transaction has claimed, and only then', async () => {
    const file = (id: string, status: 'pending' | 'approved') => db.sql`
      insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
        expires_at, request_id, customer_id, status, decided_at, decided_by, decided_by_token_id,
        decided_arguments_hash)
      values (${id}, 'admin', 't', '{}', '{}', ${'f'.repeat(64)}, 'p', now() + interval '1 hour', 'r', 'C-1007',
        ${status}, ${status === 'approved' ? new Date() : null}, ${status === 'approved' ? 'console:x' : null},
        ${status === 'approved' ? 'x' : null}, ${status === 'approved' ? 'f'.repeat(64) : null})`;
    await file('ap_fenceclaimed', 'approved');
    await file('ap_fencepending', 'pending');
    // As 0047's function answers, and as 0067's does for the server a policy names.
    const fenced = (id: string, claim: boolean, server?: string) =>
      roles.admin!.begin(async (tx) => {
        if (claim) await tx`select id from bulkhead_approvals where id = ${id} for update`;
        const [row] = await tx<{ c: string | null }[]>`
          select set_config('bulkhead.customer_approval', ${id}, true),
            ${server === undefined ? tx`bulkhead_fenced_customer()` : tx`bulkhead_fenced_customer(${server})`} as c`;
        return row!.c;
      });
    try {
      for (const server of [undefined, 'admin']) {
        expect(await fenced('ap_fenceclaimed', true, server)).toBe('C-1007');
        expect(await fenced('ap_fenceclaimed', false, server)).toBe(null);
        expect(await fenced('ap_fencepending', true, server)).toBe(null);
      }
      // A policy of another server does not take this server's approval.
      expect(await fenced('ap_fenceclaimed', true, 'customer')).toBe(null);
      // Not another server's approval, whoever holds it.
      const asCustomerRole = await roles.customer!.begin(async (tx) => {
        const [row] = await tx<{ c: string | null }[]>`
          select set_config('bulkhead.customer_approval', 'ap_fenceclaimed', true), bulkhead_fenced_customer() as c`;
        return row!.c;
      });
      expect(asCustomerRole).toBe(null);
    } finally {
      await db.sql`delete from bulkhead_approvals where id in ('ap_fenceclaimed', 'ap_fencepending')`;
    }
  });

  it("only a live token of the customer server, with its secret's hash, proves a customer", async () => {
    const other = 'C-1002';
    const live = await proofOf({ customerId: other });
    const revoked = await proofOf({ customerId: other });
    await db.sql`update bulkhead_tokens set revoked_at = now() where id = ${revoked.id}`;
    const expired = await proofOf({ customerId: other, expiresAt: new Date(Date.now() + 60_000) });
    await db.sql`update bulkhead_tokens set expires_at = now() - interval '1 second' where id = ${expired.id}`;
    const admin = await proofOf({ customerId: other, server: 'admin' });
    const wrongHash = `${live.id}:${'0'.repeat(64)}`;
    const refused = [
      wrongHash,
      live.id,
      `${live.id}:`,
      `${live.id}:not-hex`,
      revoked.proof,
      expired.proof,
      admin.proof,
      `:${live.proof.split(':')[1]!}`,
    ];
    for (const presented of refused) {
      const seen = await roles.customer!.begin(async (tx) => {
        await tx`select set_config('bulkhead.customer_token', ${presented}, true),
          set_config('bulkhead.customer_id', ${other}, true)`;
        return visible(tx as unknown as Sql);
      });
      expect({ presented, seen }).toEqual({ presented, seen: [] });
    }
    const [fenced] = await roles.customer!.begin(
      (tx) =>
        tx`select set_config('bulkhead.customer_token', ${live.proof}, true), bulkhead_fenced_customer() as c,
          bulkhead_fenced_customer('customer') as named, bulkhead_fenced_customer('admin') as other_server`,
    );
    expect(fenced).toEqual({ set_config: live.proof, c: other, named: other, other_server: null });
    // The server a policy names says whose tokens count: an admin token proves no customer to the
    // customer server's policies.
    const [named] = await roles.customer!.begin(
      (tx) =>
        tx`select set_config('bulkhead.customer_token', ${admin.proof}, true),
          bulkhead_fenced_customer('customer') as c`,
    );
    expect(named!.c).toBe(null);
  });
});

it('the group roles are NOLOGIN, one per deployable, and recorded as deployables', async () => {
  const rows = await db.sql<{ name: string; role: string; login: boolean }[]>`
    select d.name, d.role, r.rolcanlogin as login from bulkhead_deployables d join pg_roles r on r.rolname = d.role
    order by d.name`;
  expect(rows).toEqual(
    [...discoverDeployables(root).map((d) => d.name), 'sealer'].sort().map((name) => ({
      name,
      role: groupRole(name),
      login: false,
    })),
  );
});
