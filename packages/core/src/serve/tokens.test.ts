import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTokenVerifier, issueToken, parseToken, revokeToken } from './tokens.ts';

// "A revoked token is refused within a second" rests on two mechanisms, tested here with the clock in
// the test's hands (only `Date` is faked: timers, sockets and the database run as ever): a verdict is
// reused for under a second and never longer, and the database's announcement drops it at once.
// How many milliseconds it takes on a given machine is for `pnpm bench`, not for a test.

let db: TestDatabase;
/** The faked clock starts at the real time: the database judges expiry by its own clock. */
const T = Date.now();

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});
afterEach(() => {
  vi.useRealTimers();
});

async function issue(label: string): Promise<string> {
  const { token } = await issueToken(db.sql, {
    server: 'sleepy',
    label,
    scopes: ['sleep:read'],
    customerId: null,
    expiresAt: new Date(T + 3600_000),
    createdBy: 'test',
    owner: null,
  });
  return token;
}

const revoke = (token: string) => revokeToken(db.sql, parseToken(token)!.id);

/** Resolves once this database's connection LISTENs for token changes. */
async function listening(): Promise<void> {
  for (;;) {
    const [row] = await db.admin<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and query = 'listen "bulkhead_tokens"'`;
    if (row!.n > 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the token cache', () => {
  it('reuses a verdict for under its maximum age (900 ms), then asks the database again', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: T });
    const verifier = createTokenVerifier(db.sql, 'sleepy', 'mcp', { listen: false });
    const token = await issue('max age');
    expect(await verifier.verify(token)).toMatchObject({ ok: true });
    await revoke(token);
    // Unannounced (no LISTEN here), the revocation is not seen while the verdict is young.
    vi.setSystemTime(T + 899);
    expect(await verifier.verify(token)).toMatchObject({ ok: true });
    expect(verifier.stats).toEqual({ hits: 1, misses: 1 });
    vi.setSystemTime(T + 900);
    expect(await verifier.verify(token)).toMatchObject({ ok: false, reason: 'revoked' });
    expect(verifier.stats).toEqual({ hits: 1, misses: 2 });
    await verifier.close();
  });

  it('keeps no verdict a second or longer, whatever maximum age it is given', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: T });
    const verifier = createTokenVerifier(db.sql, 'sleepy', 'mcp', { listen: false, maxAgeMs: 60_000 });
    const token = await issue('capped max age');
    expect(await verifier.verify(token)).toMatchObject({ ok: true });
    await revoke(token);
    vi.setSystemTime(T + 999);
    expect(await verifier.verify(token)).toMatchObject({ ok: true });
    vi.setSystemTime(T + 1000);
    expect(await verifier.verify(token)).toMatchObject({ ok: false, reason: 'revoked' });
    await verifier.close();
  });

  it('drops a verdict as soon as the database announces the token changed, however young it is', async () => {
    // The clock stands still: the verdict never ages, so only the announcement can end it.
    vi.useFakeTimers({ toFake: ['Date'], now: T });
    const verifier = createTokenVerifier(db.sql, 'sleepy');
    await listening();
    const token = await issue('announced');
    expect(await verifier.verify(token)).toMatchObject({ ok: true });
    expect(await verifier.verify(token)).toMatchObject({ ok: true });
    expect(verifier.stats.hits).toBe(1);
    await revoke(token);
    let verdict = await verifier.verify(token);
    while (verdict.ok) {
      await new Promise((r) => setTimeout(r, 10));
      verdict = await verifier.verify(token);
    }
    expect(verdict).toMatchObject({ ok: false, reason: 'revoked' });
    await verifier.close();
  });
});

describe('the proof an access carries to the database', () => {
  it('is the token id and its secret hash, and is never written out with the access', async () => {
    const verifier = createTokenVerifier(db.sql, 'sleepy', 'mcp', { listen: false });
    const token = await issue('proof');
    const { id, secret } = parseToken(token)!;
    const hash = createHash('sha256').update(secret).digest('hex');
    const verdict = await verifier.verify(token);
    if (!verdict.ok) throw new Error(`refused: ${verdict.reason}`);
    expect(verdict.access.proof!.setting).toBe(`${id}:${hash}`);
    // A logger or an audit event given the whole access, as a careless handler might.
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    pino({}, sink).info({ access: verdict.access }, 'call');
    const written = [lines.join(''), JSON.stringify(verdict), inspect(verdict, { depth: 9 })];
    for (const text of written) {
      expect(text).toContain(id);
      expect(text).not.toContain(hash);
      expect(text).not.toContain(secret);
    }
    expect(JSON.parse(lines.join('')).access.proof).toBe('[token proof]');
    await verifier.close();
  });
});
