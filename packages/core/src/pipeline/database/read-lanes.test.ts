import { createSql, isConnectionError, type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TokenProof } from '../call/access.ts';
import { createReadLanes, proofSetting, type ReadSettings } from './read-lanes.ts';
import { NoConnectionInTime } from '../call/time-limit.ts';

// Lanes share a connection between the calls of one customer: these tests hold them to never letting a
// query run under another call's settings, however calls interleave.
let db: TestDatabase;
const pools: Sql[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  for (const pool of pools.splice(0)) await pool.end({ timeout: 1 });
});
afterAll(async () => {
  await db.drop();
});

function lanesOf(max: number) {
  const reads = createSql(db.url, { max, readOnly: true });
  pools.push(reads);
  return createReadLanes(reads, max);
}

interface Seen {
  customer: string;
  token: string;
  timeout: string;
  pid: number;
}

const seen = async (conn: Sql): Promise<Seen> => {
  const [row] = await conn<Seen[]>`
    select current_setting('bulkhead.customer_id') as customer, current_setting('bulkhead.customer_token') as token,
      current_setting('statement_timeout') as timeout, pg_backend_pid() as pid`;
  return row!;
};

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('read lanes', () => {
  it('give every query of a call its own customer, token proof and time limit, however calls of others interleave on one connection', async () => {
    const lanes = lanesOf(1);
    // Two tokens of one customer: a lane proves one token, so they never share one.
    const proof = (id: string, byte: number) => new TokenProof(id, Buffer.alloc(32, byte));
    const settings: ReadSettings[] = [
      { customerId: 'C-1001', proof: proof('tokenaaaaaaa', 1), timeoutMs: 2_000 },
      { customerId: 'C-1002', proof: proof('tokenbbbbbbb', 2), timeoutMs: 2_000 },
      { customerId: null, timeoutMs: 2_000 },
      { customerId: 'C-1001', proof: proof('tokenaaaaaaa', 1), timeoutMs: 3_000 },
      { customerId: 'C-1001', proof: proof('tokencccccc2', 3), timeoutMs: 2_000 },
    ];
    // Three ways a handler sends its queries: awaited one by one, through .then, and all at once.
    const shapes = [
      async (conn: Sql) => [await seen(conn), (await pause(3), await seen(conn)), await seen(conn)],
      (conn: Sql) =>
        conn<Seen[]>`select current_setting('bulkhead.customer_id') as customer,
          current_setting('bulkhead.customer_token') as token,
          current_setting('statement_timeout') as timeout, pg_backend_pid() as pid`.then((rows) => [
          rows[0]!,
        ]),
      (conn: Sql) => Promise.all([seen(conn), seen(conn), seen(conn)]),
    ];
    const calls = Array.from({ length: 48 }, (_, i) => {
      const s = settings[i % settings.length]!;
      return lanes.run(s, shapes[i % shapes.length]!).then((rows) => ({ s, rows }));
    });
    const done = await Promise.all(calls);
    for (const { s, rows } of done)
      for (const row of rows) {
        expect(row.customer).toBe(s.customerId ?? '');
        expect(row.token).toBe(proofSetting(s.proof));
        expect(row.timeout).toBe(`${s.timeoutMs / 1000}s`);
      }
    expect(lanes.usage).toEqual({ lanes: 0, calls: 0 });
  });

  it('let calls with the same settings share a lane, and never run another customer’s call beside them', async () => {
    const lanes = lanesOf(1);
    const spans: { customer: string; pid: number; from: number; to: number }[] = [];
    const call = (customerId: string) =>
      lanes.run({ customerId, timeoutMs: 2_000 }, async (conn) => {
        const from = performance.now();
        const row = await seen(conn);
        await conn`select pg_sleep(0.05)`;
        spans.push({ customer: row.customer, pid: row.pid, from, to: performance.now() });
      });
    const a = Array.from({ length: 6 }, () => call('C-1001'));
    await pause(5);
    expect(lanes.usage).toEqual({ lanes: 1, calls: 6 });
    const b = Array.from({ length: 6 }, () => call('C-1002'));
    await Promise.all([...a, ...b]);
    const ones = spans.filter((s) => s.customer === 'C-1001');
    const twos = spans.filter((s) => s.customer === 'C-1002');
    expect(ones).toHaveLength(6);
    expect(twos).toHaveLength(6);
    // The six of C-1001 ran together on one backend; C-1002's began only after the last of them ended.
    expect(new Set(ones.map((s) => s.pid)).size).toBe(1);
    expect(Math.min(...twos.map((s) => s.from))).toBeGreaterThanOrEqual(Math.max(...ones.map((s) => s.to)));
    expect(lanes.usage).toEqual({ lanes: 0, calls: 0 });
  });

  it('open a lane per call while the pool has room, and share them once it has none', async () => {
    const lanes = lanesOf(3);
    const pids = new Set<number>();
    const calls = Array.from({ length: 9 }, () =>
      lanes.run({ customerId: 'C-1001', timeoutMs: 2_000 }, async (conn) => {
        pids.add((await seen(conn)).pid);
        await conn`select pg_sleep(0.05)`;
      }),
    );
    await pause(5);
    expect(lanes.usage).toEqual({ lanes: 3, calls: 9 });
    await Promise.all(calls);
    expect(pids.size).toBe(3);
  });

  it('let a call of another customer in while one customer keeps its lane busy', async () => {
    const lanes = lanesOf(1);
    let other: Seen | undefined;
    let ones = 0;
    // Three calls of C-1001 in flight at all times, a new one as each ends, until C-1002's is answered.
    const stream = async () => {
      while (!other && ones < 200) {
        await lanes.run({ customerId: 'C-1001', timeoutMs: 2_000 }, async (conn) => {
          await conn`select pg_sleep(0.01)`;
        });
        ones++;
      }
    };
    const streams = [stream(), stream(), stream()];
    await pause(30);
    other = await lanes.run({ customerId: 'C-1002', timeoutMs: 2_000 }, seen);
    const before = ones;
    await Promise.all(streams);
    expect(other.customer).toBe('C-1002');
    // It waited for the calls on the lane when it came, not for the stream to end.
    expect(before).toBeLessThan(20);
  });

  it('withhold a result read on a lane whose settings could not be set', async () => {
    const lanes = lanesOf(1);
    // `statement_timeout` refuses this value: the query after it runs, but its result must not go out.
    let ran = false;
    await expect(
      lanes.run({ customerId: 'C-1001', timeoutMs: Number.NaN }, async (conn) => {
        await seen(conn);
        ran = true;
        return 'read under the wrong settings';
      }),
    ).rejects.toThrow(/statement_timeout/);
    expect(ran).toBe(true);
    expect(await lanes.run({ customerId: 'C-1002', timeoutMs: 2_000 }, seen)).toMatchObject({
      customer: 'C-1002',
    });
  });

  it('give a call a new connection after its lane’s was lost', async () => {
    const lanes = lanesOf(1);
    const first = await lanes.run({ customerId: 'C-1001', timeoutMs: 2_000 }, seen);
    const lost = await lanes
      .run({ customerId: 'C-1001', timeoutMs: 2_000 }, async (conn) => {
        await db.sql`select pg_terminate_backend(${first.pid})`;
        return seen(conn);
      })
      .catch((err: unknown) => err);
    expect(isConnectionError(lost)).toBe(true);
    // Once the pool has seen the connection close (it may take a moment after the call's error).
    await pause(100);
    const next = await lanes.run({ customerId: 'C-1001', timeoutMs: 2_000 }, seen);
    expect(next.customer).toBe('C-1001');
    expect(next.pid).not.toBe(first.pid);
  });

  it('give up on a connection that does not come within the call’s time limit, and join that lane no more', async () => {
    const lanes = lanesOf(1);
    // C-1001 holds the pool's one connection past the others' time limit.
    let endHolder!: () => void;
    let holderPid: number | undefined;
    const holder = lanes.run({ customerId: 'C-1001', timeoutMs: 5_000 }, async (conn) => {
      holderPid = (await seen(conn)).pid;
      await new Promise<void>((r) => (endHolder = r));
    });
    while (holderPid === undefined) await pause(5);
    // The holder never lets go until the end: only the time limit can end this wait.
    const waited = await lanes
      .run({ customerId: 'C-1002', timeoutMs: 300 }, seen)
      .catch((err: unknown) => err);
    expect(waited).toBeInstanceOf(NoConnectionInTime);
    expect(isConnectionError(waited)).toBe(true);
    // The lane given up on is gone: C-1001's next call shares the busy lane at once instead of queueing behind it.
    expect(lanes.usage).toEqual({ lanes: 1, calls: 1 });
    const joined = await lanes.run({ customerId: 'C-1001', timeoutMs: 5_000 }, seen);
    expect(joined.pid).toBe(holderPid);
    endHolder();
    await holder;
    // The connection that came late for the lane given up on went back to the pool: the next call gets it.
    expect(await lanes.run({ customerId: 'C-1002', timeoutMs: 2_000 }, seen)).toMatchObject({
      customer: 'C-1002',
    });
    await pause(20);
    expect(lanes.usage).toEqual({ lanes: 0, calls: 0 });
  });

  it('stop waiting for a connection when the call is withdrawn', async () => {
    const lanes = lanesOf(1);
    let endHolder!: () => void;
    const holder = lanes.run({ customerId: 'C-1001', timeoutMs: 5_000 }, async (conn) => {
      await seen(conn);
      await new Promise<void>((r) => (endHolder = r));
    });
    while (!endHolder) await pause(5);
    const withdraw = new AbortController();
    const waiting = lanes
      .run({ customerId: 'C-1002', timeoutMs: 5_000 }, seen, undefined, withdraw.signal)
      .catch((err: unknown) => err);
    await pause(50);
    withdraw.abort();
    expect(await waiting).toMatchObject({ name: 'Cancelled' });
    endHolder();
    await holder;
    expect(await lanes.serves(2_000)).toBe(true);
  });

  it('name the backend a withdrawn call may cancel only while the call has its lane to itself', async () => {
    const lanes = lanesOf(1);
    let alone: (() => number | undefined) | undefined;
    let pid: number | undefined;
    let endFirst!: () => void;
    const first = lanes.run(
      { customerId: 'C-1001', timeoutMs: 2_000 },
      async (conn) => {
        pid = (await seen(conn)).pid;
        await new Promise<void>((r) => (endFirst = r));
      },
      (stoppable) => (alone = stoppable),
    );
    while (pid === undefined) await pause(5);
    expect(alone?.()).toBe(pid);
    let endSecond!: () => void;
    const second = lanes.run({ customerId: 'C-1001', timeoutMs: 2_000 }, async (conn) => {
      expect((await seen(conn)).pid).toBe(pid);
      await new Promise<void>((r) => (endSecond = r));
    });
    while (!endSecond) await pause(5);
    // A cancel now could stop the other call's query: none is named.
    expect(alone?.()).toBeUndefined();
    endSecond();
    await second;
    expect(alone?.()).toBe(pid);
    endFirst();
    await first;
  });
});
