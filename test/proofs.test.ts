import { createHash, randomBytes } from 'node:crypto';
import { createAuditWriter } from '@bulkhead/audit';
import { decideApproval, issueToken } from '@bulkhead/core/operator';
import { setAllowSelfApproval, type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Issue 42, items 1 and 3, tried as the console's own login (a leaked DATABASE_URL, an SQL injection):
// it can read and name any approver's or operator's token id, and set any setting. The database must act
// for an approver only on a secret whose hash it checks itself: an approver token, or a console session
// opened with one.

let db: TestDatabase;
let console: Sql;
/** Olga, an operator who may also grant OAuth access, signed in: her token and her session's cookie value. */
const olga = { id: '', token: '', sid: '' };
/** Ana, an approver who never signed in: the console's login knows only her token id and label. */
const ana = { id: '', token: '', label: 'Ana' };
/** Bob: an approver, signed in, whose own MCP token filed a request. */
const bob = { id: '', token: '', sid: '', mcp: '' };
/** An MCP token of Carl's, for the revocation attempts. */
let carl = '';

const refused = { code: '42501' };

async function approverToken(person: string, scopes: string[]) {
  const { token, record } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: person,
    scopes,
    expiresAt: null,
    createdBy: 'test',
    owner: person,
  });
  return { id: record.id, token };
}

/** Signs in as the console does: the approver token's secret opens a session; answers the cookie value. */
async function signIn(token: string): Promise<string> {
  const sid = randomBytes(32).toString('base64url');
  await console`select 1 from bulkhead_console_sign_in(${token}, ${sid}, ${randomBytes(32).toString('base64url')}, 1)`;
  return sid;
}

async function pendingApproval(id: string, requester: string | null) {
  await db.sql`
    insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
      expires_at, request_id, requested_by_token_id)
    values (${id}, 'admin', 'issue_credit_note', '{}', '{}', ${createHash('sha256').update('{}').digest('hex')},
      'Credit €1', now() + interval '1 hour', 'r', ${requester})`;
}

/** The decision as the console's login can write it by hand: its event first, then the row, with `proof` or none. */
function decideByHand(
  approvalId: string,
  who: { id: string; label: string },
  o: { proof?: string; setting?: [string, string] } = {},
): Promise<string> {
  return console
    .begin(async (tx) => {
      if (o.setting) await tx`select set_config(${o.setting[0]}, ${o.setting[1]}, true)`;
      if (o.proof) await tx`select 1 from bulkhead_console_prove(${o.proof})`;
      const eventId = crypto.randomUUID();
      await createAuditWriter(tx as unknown as Sql).appendIn(tx, {
        id: eventId,
        server: 'console',
        method: 'approvals/decide',
        outcome: 'approved',
        approvalId,
        tokenId: who.id,
        tokenLabel: `console:${who.label}`,
        requestId: 'r',
        durationMs: 0,
      });
      await tx`update bulkhead_approvals set status = 'approved', decided_by = ${`console:${who.label}`},
        decided_by_token_id = ${who.id}, decided_arguments_hash = arguments_hash, decision_event_id = ${eventId}
        where id = ${approvalId}`;
      return 'approved';
    })
    .catch((err: Error) => err.message);
}

async function status(approvalId: string): Promise<string> {
  const [row] = await db.sql<
    { status: string }[]
  >`select status from bulkhead_approvals where id = ${approvalId}`;
  return row!.status;
}

beforeAll(async () => {
  db = await createTestDatabase();
  console = (await db.as('console')).sql;
  Object.assign(olga, await approverToken('Olga', ['approvals:decide', 'tokens:manage', 'grants:issue']));
  olga.sid = await signIn(olga.token);
  Object.assign(ana, await approverToken('Ana', ['approvals:decide', 'tokens:manage', 'grants:issue']));
  Object.assign(bob, await approverToken('Bob', ['approvals:decide']));
  bob.sid = await signIn(bob.token);
  const bobs = await issueToken(db.sql, {
    server: 'admin',
    label: 'Bob’s client',
    scopes: ['billing:write'],
    expiresAt: null,
    createdBy: 'test',
    owner: 'Bob',
  });
  bob.mcp = bobs.record.id;
  carl = (
    await issueToken(db.sql, {
      server: 'admin',
      label: 'Carl’s client',
      scopes: ['invoices:read'],
      expiresAt: null,
      createdBy: 'test',
      owner: 'Carl',
    })
  ).record.id;
}, 120_000);
afterAll(async () => {
  await db?.drop();
});

describe('with an id but no secret, the console’s login acts for nobody', () => {
  it('reads no session’s token id, opens no session for a token id, and writes no session row', async () => {
    await expect(console`select token_id from bulkhead_console_sessions`).rejects.toThrow(
      /permission denied/,
    );
    await expect(
      console`insert into bulkhead_console_sessions (id_hash, token_id, csrf, expires_at)
        values (${Buffer.alloc(32)}, ${olga.id}, 'x', now() + interval '1 hour')`,
    ).rejects.toThrow(/permission denied/);
    for (const claim of [olga.id, `bh_console_${olga.id}_${'A'.repeat(43)}`])
      await expect(
        console`select * from bulkhead_console_sign_in(${claim}, ${'s'.repeat(43)}, ${'c'.repeat(43)}, 1)`,
      ).rejects.toMatchObject(refused);
  });

  it('mints no token with an operator’s id', async () => {
    const [before] = await db.sql<{ n: number }[]>`select count(*)::int as n from bulkhead_tokens`;
    for (const proof of [olga.id, ana.id])
      await expect(
        console`select * from bulkhead_operator_issue_token(${proof}, 'abcdefghijkm', ${Buffer.alloc(32)}, 'admin',
          'Minted', ${['billing:write']}, null, 'Mallory', null)`,
      ).rejects.toMatchObject(refused);
    const [after] = await db.sql<{ n: number }[]>`select count(*)::int as n from bulkhead_tokens`;
    expect(after!.n).toBe(before!.n);
  });

  it('revokes no token, grant or person, and switches no tool, with an operator’s id', async () => {
    const attempts = [
      console`select bulkhead_operator_revoke_token(${olga.id}, ${carl})`,
      console`select * from bulkhead_operator_revoke_person(${olga.id}, 'Carl')`,
      console`select bulkhead_operator_revoke_grant(${olga.id}, 'g_nosuchgrant')`,
      console`select * from bulkhead_operator_tokens(${olga.id})`,
      console`select * from bulkhead_operator_tool_switches(${olga.id})`,
      console`select bulkhead_operator_switch_tool(${olga.id}, 'admin', 'send_invoice', true, 'incident')`,
    ];
    for (const attempt of attempts) await expect(attempt).rejects.toMatchObject(refused);
    const [token] = await db.sql`select revoked_at from bulkhead_tokens where id = ${carl}`;
    expect(token).toEqual({ revoked_at: null });
    expect(await db.sql`select tool from bulkhead_tool_switches`).toEqual([]);
    await expect(
      console`insert into bulkhead_tool_switches (server, tool, reason, switched_by) values ('admin', 'send_invoice', 'x', 'x')`,
    ).rejects.toThrow(/permission denied/);
  });

  it('reads only the events of approvals, whatever operator id it names in `bulkhead.operator`', async () => {
    await createAuditWriter(db.sql).appendIn(db.sql, {
      server: 'admin',
      method: 'tools/call',
      outcome: 'ok',
      requestId: 'not-an-approval',
      durationMs: 0,
    });
    const [total] = await db.sql<{ n: number }[]>`select count(*)::int as n from audit_events`;
    const seen = (o: { setting?: string; proof?: string }) =>
      console.begin(async (tx) => {
        if (o.setting) await tx`select set_config('bulkhead.operator', ${o.setting}, true)`;
        if (o.proof) await tx`select 1 from bulkhead_console_prove(${o.proof})`;
        const [row] = await tx<{ all: number; approvals: number }[]>`
          select count(*)::int as all, count(approval_id)::int as approvals from audit_events`;
        return row!;
      });
    for (const o of [{ setting: olga.id }, { setting: ana.id }, { proof: bob.sid }, { proof: bob.token }]) {
      const row = await seen(o);
      expect(row.all).toBe(row.approvals);
    }
    // A proof of someone else's token id is no proof.
    await expect(seen({ proof: ana.id })).rejects.toMatchObject(refused);
    expect((await seen({ proof: olga.sid })).all).toBeGreaterThanOrEqual(total!.n);
  });

  it('opens no grant and mints no OAuth access token from a grant id', async () => {
    await console`insert into bulkhead_oauth_clients (client_id, source, redirect_uris)
      values ('c_proofs', 'registered', ${['http://127.0.0.1/cb']})`;
    // A grant or code it writes itself: refused outright.
    await expect(
      console`insert into bulkhead_oauth_grants (id, client_id, server, scopes, granted_by_token_id, granted_by)
        values ('g_forged', 'c_proofs', 'admin', ${['billing:write']}, ${ana.id}, 'Ana')`,
    ).rejects.toThrow(/permission denied/);
    await expect(
      console`insert into bulkhead_oauth_refresh_tokens (id, grant_id, secret_hash, expires_at)
        values ('abcdefghijklmnop', 'g_forged', ${Buffer.alloc(32)}, now() + interval '1 day')`,
    ).rejects.toThrow(/permission denied/);
    // Through the function, in the name of an approver who never signed in: refused.
    const code = `bhc_${randomBytes(32).toString('base64url')}`;
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const grant = (proof: string, id: string) =>
      console`select bulkhead_oauth_grant(${proof}, ${id}, 'c_proofs', 'admin', ${['billing:write']}, null, ${code},
        'http://127.0.0.1/cb', ${challenge}, 'http://127.0.0.1/mcp', 120)`;
    await expect(grant(ana.id, 'g_claimed')).rejects.toMatchObject(refused);
    // An existing grant, given properly by Olga: its id alone mints nothing.
    await grant(olga.sid, 'g_olgas');
    const issue = (secret: string | null, pkce: string | null) =>
      console`select * from bulkhead_oauth_issue_token('g_olgas', ${secret}, ${pkce}, 'mintedtoken1', ${Buffer.alloc(32)},
        'Minted', now() + interval '1 hour', 'abcdefghijklmnop', ${Buffer.alloc(32)}, now() + interval '1 day')`;
    for (const [secret, pkce] of [
      [null, null],
      ['g_olgas', null],
      [`bhc_${'A'.repeat(43)}`, verifier],
      [code, null],
      [code, 'x'.repeat(43)],
      [`bhr_abcdefghijklmnop_${'A'.repeat(43)}`, null],
    ] as const)
      await expect(issue(secret, pkce)).rejects.toMatchObject(refused);
    const [minted] = await db.sql`select count(*)::int as n from bulkhead_tokens where id = 'mintedtoken1'`;
    expect(minted).toEqual({ n: 0 });
  });

  it('approves nothing in the name of an approver who never signed in', async () => {
    await pendingApproval('ap_anonevernone', bob.mcp);
    expect(await decideByHand('ap_anonevernone', { id: ana.id, label: ana.label })).toBe(
      'a decision on ap_anonevernone is taken by an approver who presents their token or console session in the same transaction',
    );
    // Nor under Bob's proof in Ana's name.
    expect(await decideByHand('ap_anonevernone', { id: ana.id, label: ana.label }, { proof: bob.sid })).toBe(
      `a decision is recorded under the approver who proved it (${bob.id}), not ${ana.id}`,
    );
    expect(await status('ap_anonevernone')).toBe('pending');
  });

  it('does not switch separation of duties off with `bulkhead.allow_self_approval`', async () => {
    await pendingApproval('ap_bobforbobbob', bob.mcp);
    for (const proof of [bob.sid, bob.token])
      expect(
        await decideByHand(
          'ap_bobforbobbob',
          { id: bob.id, label: 'Bob' },
          { proof, setting: ['bulkhead.allow_self_approval', 'on'] },
        ),
      ).toBe('approval ap_bobforbobbob was requested by Bob, who may not approve it too');
    expect(await status('ap_bobforbobbob')).toBe('pending');
    // The console's login cannot write the owner's switch either.
    await expect(
      console`insert into bulkhead_settings (name, value) values ('allow_self_approval', 'on')`,
    ).rejects.toThrow(/permission denied/);
    await expect(console`update bulkhead_console_proofs set self_approval = true`).rejects.toThrow(
      /permission denied/,
    );
  });
});

describe('with the secret, the same paths work', () => {
  it('an operator lists, issues, revokes and switches, by session or by token', async () => {
    const listed = await console<{ id: string }[]>`select id from bulkhead_operator_tokens(${olga.sid})`;
    expect(listed.map((r) => r.id)).toContain(carl);
    const [issued] = await console<{ id: string }[]>`
      select id from bulkhead_operator_issue_token(${olga.token}, 'proofissued1', ${Buffer.alloc(32)}, 'admin',
        'Issued', ${['invoices:read']}, null, 'Dora', null)`;
    expect(issued).toEqual({ id: 'proofissued1' });
    const [row] = await db.sql`select created_by, owner from bulkhead_tokens where id = 'proofissued1'`;
    expect(row).toEqual({ created_by: 'console: Olga', owner: 'Dora' });
    const [revoked] =
      await console`select bulkhead_operator_revoke_token(${olga.sid}, 'proofissued1') as done`;
    expect(revoked).toEqual({ done: true });
    const [off] =
      await console`select bulkhead_operator_switch_tool(${olga.sid}, 'admin', 'send_invoice', true, 'incident') as done`;
    expect(off).toEqual({ done: true });
    expect(
      await console`select tool, switched_by from bulkhead_operator_tool_switches(${olga.token})`,
    ).toEqual([{ tool: 'send_invoice', switched_by: 'Olga' }]);
    await console`select bulkhead_operator_switch_tool(${olga.sid}, 'admin', 'send_invoice', false, null)`;
  });

  it('a session ends with its token, and at sign-out', async () => {
    const dora = await approverToken('Dora', ['approvals:decide', 'tokens:manage']);
    const sid = await signIn(dora.token);
    const [who] = await console`select token_id, label, owner from bulkhead_console_session(${sid})`;
    expect(who).toEqual({ token_id: dora.id, label: 'Dora', owner: 'Dora' });
    await db.sql`update bulkhead_tokens set revoked_at = now() where id = ${dora.id}`;
    expect(await console`select token_id from bulkhead_console_session(${sid})`).toEqual([]);
    await expect(console`select * from bulkhead_operator_tokens(${sid})`).rejects.toMatchObject(refused);
    const erin = await approverToken('Erin', ['approvals:decide']);
    const erinSid = await signIn(erin.token);
    const [out] = await console`select bulkhead_console_sign_out(${erinSid}) as done`;
    expect(out).toEqual({ done: true });
    expect(await console`select token_id from bulkhead_console_session(${erinSid})`).toEqual([]);
  });

  it('a grant is recorded under the approver its proof names, and opened with its code and PKCE verifier, then its refresh token', async () => {
    const code = `bhc_${randomBytes(32).toString('base64url')}`;
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    await console`select bulkhead_oauth_grant(${olga.token}, 'g_proofgrant', 'c_proofs', 'admin', ${['invoices:read']},
      null, ${code}, 'http://127.0.0.1/cb', ${challenge}, 'http://127.0.0.1/mcp', 120)`;
    const [grant] = await db.sql`
      select granted_by_token_id as by, granted_by, owner from bulkhead_oauth_grants where id = 'g_proofgrant'`;
    expect(grant).toEqual({ by: olga.id, granted_by: 'Olga', owner: 'Olga' });
    const refreshSecret = randomBytes(32).toString('base64url');
    const issue = (secret: string, pkce: string | null, id: string, refreshId: string) =>
      console`select token_id, server, scopes from bulkhead_oauth_issue_token('g_proofgrant', ${secret}, ${pkce}, ${id},
        ${Buffer.alloc(32)}, 'Client', now() + interval '1 hour', ${refreshId},
        ${createHash('sha256').update(refreshSecret).digest()}, now() + interval '30 days')`;
    expect(await issue(code, verifier, 'proofaccess1', 'refreshrefresh01')).toEqual([
      { token_id: 'proofaccess1', server: 'admin', scopes: ['invoices:read'] },
    ]);
    // The code works once; the refresh token it came with works once, too.
    await expect(issue(code, verifier, 'proofaccess2', 'refreshrefresh02')).rejects.toMatchObject(refused);
    const refresh = `bhr_refreshrefresh01_${refreshSecret}`;
    expect(await issue(refresh, null, 'proofaccess3', 'refreshrefresh03')).toEqual([
      { token_id: 'proofaccess3', server: 'admin', scopes: ['invoices:read'] },
    ]);
    await expect(issue(refresh, null, 'proofaccess4', 'refreshrefresh04')).rejects.toMatchObject(refused);
  });

  it('a signed-in approver decides under their own name; self-approval only by the owner’s switch', async () => {
    await pendingApproval('ap_olgadecidess', bob.mcp);
    const audit = createAuditWriter(console);
    const decided = await decideApproval(console, audit, {
      id: 'ap_olgadecidess',
      decision: 'approve',
      via: 'console',
      proof: olga.sid,
    });
    expect([decided.status, decided.decidedBy, decided.decidedByTokenId]).toEqual([
      'approved',
      'console:Olga',
      olga.id,
    ]);
    await pendingApproval('ap_bobforbobtwo', bob.mcp);
    const bobDecides = () =>
      decideApproval(console, audit, {
        id: 'ap_bobforbobtwo',
        decision: 'approve',
        via: 'console',
        proof: bob.sid,
      });
    await expect(bobDecides()).rejects.toThrow(/issued to Bob, who may not approve it too/);
    await setAllowSelfApproval(db.sql, true);
    try {
      expect((await bobDecides()).status).toBe('approved');
    } finally {
      await setAllowSelfApproval(db.sql, false);
    }
  });
});
