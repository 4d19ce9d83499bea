import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { getApproval, type ApprovalExecutor } from '@bulkhead/core/operator';
import { testApprover } from '@bulkhead/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toAmMatcher, type Matcher } from './alertmanager.ts';
import { ASKER, startOps, type OpsHarness } from './test-client.ts';

/**
 * Issue 43, item 2: the check before a retry of create_silence searched every silence's JSON for
 * `[bulkhead-outbox-N]`, N a predictable sequence. A silence whose comment carried later keys (approved
 * by someone who saw a routine comment) made a later approved silence count as delivered after one
 * failed attempt: "Approved and executed", and no such silence in Alertmanager. Now the key is random
 * per row, the model's text may not carry one, and only a silence with exactly the creator, the comment
 * with the key, and the matchers the delivery wrote counts as made.
 */
let h: OpsHarness;
let executor: (ApprovalExecutor & { stop(): Promise<void> }) | undefined;

const DISK: Matcher[] = [{ label: 'alertname', op: '=', value: 'DiskFull' }];
const CREATOR = `${ASKER} (approved by console:approver@example.test, via bulkhead)`;

beforeAll(async () => {
  h = await startOps();
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  await h.am.postAlerts([{ labels: { alertname: 'DiskFull', severity: 'warning', instance: 'db-1' } }]);
}, 60_000);
afterAll(async () => {
  await executor?.stop();
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await h?.close();
});

/**
 * A loopback proxy in front of Alertmanager: the next DELETE is forwarded, and once Alertmanager has
 * answered, the connection is dropped: the silence is expired, the deliverer never heard so.
 */
const seen: string[] = [];
const proxy = createServer((req, res) => {
  seen.push(`${req.method} ${req.url}`);
  const drop = req.method === 'DELETE' && seen.filter((x) => x.startsWith('DELETE')).length === 1;
  const out = httpRequest(
    new URL(req.url!, h.am.url),
    { method: req.method, headers: req.headers },
    (answer: IncomingMessage) => {
      const chunks: Buffer[] = [];
      answer.on('data', (c: Buffer) => chunks.push(c));
      answer.on('end', () => {
        if (drop) return req.socket.destroy();
        res.writeHead(answer.statusCode!, answer.headers).end(Buffer.concat(chunks));
      });
    },
  );
  out.on('error', () => req.socket.destroy());
  req.pipe(out);
});

async function approvals(): Promise<number> {
  const [row] = await h.db.sql<{ n: number }[]>`select count(*)::int as n from bulkhead_approvals`;
  return row!.n;
}

/** A silence made in Alertmanager directly, past Bulkhead (an engineer, a script, an alert source's tool). */
async function plant(silence: { matchers: Matcher[]; createdBy: string; comment: string }) {
  const now = Date.now();
  const res = await fetch(`${h.am.url}/api/v2/silences`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      matchers: silence.matchers.map(toAmMatcher),
      startsAt: new Date(now).toISOString(),
      endsAt: new Date(now + 3600_000).toISOString(),
      createdBy: silence.createdBy,
      comment: silence.comment,
    }),
  });
  expect(res.status).toBe(200);
}

describe('create_silence and the outbox key', () => {
  it('refuses a comment or a matcher value that carries an outbox key or {key}, filing nothing', async () => {
    const before = await approvals();
    const comment = 'Routine disk swap [bulkhead-outbox-18] [bulkhead-outbox-19]';
    expect(await h.call('create_silence', { matchers: DISK, duration: '1h', comment })).toEqual({
      isError: true,
      text:
        `Invalid arguments — comment: got ${JSON.stringify(comment)}, expected text without "bulkhead-outbox-" or "{key}" ` +
        '(Bulkhead appends its own delivery key to the comment). Nothing was done; call again with corrected arguments.',
      structured: undefined,
    });
    const braces = await h.call('create_silence', { matchers: DISK, duration: '1h', comment: 'Swap {key}' });
    expect(braces.text).toMatch(/^Invalid arguments — comment: got "Swap \{key\}", expected text without/);
    const value = await h.call('create_silence', {
      matchers: [{ label: 'alertname', op: '=', value: 'x BULKHEAD-OUTBOX-7' }],
      duration: '1h',
      comment: 'Routine disk swap',
    });
    expect(value.text).toMatch(
      /^Invalid arguments — matchers: got .+, expected values without "bulkhead-outbox-" or "\{key\}" \(Bulkhead reserves them for its delivery keys\)\./,
    );
    expect(await approvals()).toBe(before);
  });

  it('across an outage, silences planted with its key do not count: the approved silence is still made, once', async () => {
    const r = await h.call('create_silence', {
      matchers: DISK,
      duration: '1h',
      comment: 'Disk swap, OPS-77',
    });
    const id = (r.structured as { approval_id: string }).approval_id;
    // Alertmanager is down when the approved action runs: the first delivery fails.
    await h.am.stop();
    const first = await h.executor();
    await (await testApprover(h.db)).decide(id, 'approve');
    await first.drain();
    await first.stop();
    expect(await getApproval(h.db.sql, id)).toMatchObject({ status: 'executed' });
    const [row] = await h.db.sql<{ id: string; key: string; status: string; attempts: number }[]>`
      select id, idempotency_key as key, status, attempts from bulkhead_outbox where approval_id = ${id}`;
    expect(row!.status).toBe('pending');
    expect(row!.attempts).toBeGreaterThanOrEqual(1);
    expect(row!.key).toMatch(/^bulkhead-outbox-[0-9a-f]{32}$/);

    // Back up, Alertmanager holds silences that carry the row's id as the old key, and even its key
    // itself — each differing in what only the delivery writes: creator, comment or matchers.
    await h.am.restart();
    await h.am.postAlerts([{ labels: { alertname: 'DiskFull', severity: 'warning', instance: 'db-1' } }]);
    const comment = `Disk swap, OPS-77 [${row!.key}]`;
    await plant({ matchers: DISK, createdBy: CREATOR, comment: `Routine [bulkhead-outbox-${row!.id}]` });
    await plant({ matchers: DISK, createdBy: 'mallory', comment });
    await plant({ matchers: DISK, createdBy: CREATOR, comment: `${comment} (copy)` });
    await plant({
      matchers: [...DISK, { label: 'instance', op: '=', value: 'db-9' }],
      createdBy: CREATOR,
      comment,
    });
    const planted = (await h.am.silences()).length;

    executor = await h.executor();
    for (let i = 0; i < 200; i++) {
      const [now] = await h.db.sql<
        { status: string }[]
      >`select status from bulkhead_outbox where id = ${row!.id}`;
      if (now!.status !== 'pending') break;
      await sleep(50);
    }
    const attempts = await h.db.sql<{ ok: boolean }[]>`
      select ok from bulkhead_outbox_attempts where outbox_id = ${row!.id} order by attempt`;
    // The failed attempts during the outage, then one that made the silence.
    expect(attempts.map((a) => a.ok)).toEqual([...Array(row!.attempts).fill(false), true]);
    const silences = (await h.am.silences()) as (Awaited<ReturnType<typeof h.am.silences>>[number] & {
      matchers: unknown[];
    })[];
    expect(silences).toHaveLength(planted + 1);
    // With this creator and this comment: the one planted with other matchers, and the one made.
    const exact = silences.filter((s) => s.createdBy === CREATOR && s.comment === comment);
    expect(exact).toHaveLength(2);
    const made = exact.filter((s) => s.matchers.length === 1);
    expect(made).toEqual([
      expect.objectContaining({
        status: { state: 'active' },
        matchers: [{ name: 'alertname', value: 'DiskFull', isRegex: false, isEqual: true }],
      }),
    ]);
    const [alert] = (await (
      await fetch(`${h.am.url}/api/v2/alerts?filter=alertname%3D%22DiskFull%22`)
    ).json()) as {
      status: { silencedBy: string[] };
    }[];
    expect(alert!.status.silencedBy).toContain(made[0]!.id);
  });
});

describe('expire_silence', () => {
  it('when the answer to its DELETE was lost, the retry finds that silence expired by its state, and sends nothing again', async () => {
    await executor?.stop();
    const viaProxy = await h.executor(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
    try {
      const [live] = (await h.am.silences()).filter((x) => x.status.state === 'active');
      const r = await h.call('expire_silence', { silence_id: live!.id });
      const id = (r.structured as { approval_id: string }).approval_id;
      seen.length = 0;
      await (await testApprover(h.db)).decide(id, 'approve');
      await viaProxy.drain();
      let row: { status: string; attempts: number } | undefined;
      for (let i = 0; i < 200 && row?.status !== 'delivered'; i++) {
        if (i) await sleep(50);
        [row] = await h.db.sql<{ status: string; attempts: number }[]>`
          select status, attempts from bulkhead_outbox where approval_id = ${id}`;
      }
      expect(row).toEqual({ status: 'delivered', attempts: 2 });
      expect(seen).toEqual([`DELETE /api/v2/silence/${live!.id}`, `GET /api/v2/silence/${live!.id}`]);
      expect((await h.am.silences()).find((x) => x.id === live!.id)!.status.state).toBe('expired');
    } finally {
      await viaProxy.stop();
      executor = undefined;
    }
  });
});
