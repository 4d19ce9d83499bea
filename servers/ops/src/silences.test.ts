import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { getApproval, PENDING_NOTE, type ApprovalExecutor } from '@bulkhead/core/operator';
import { testApprover, type FlatResult } from '@bulkhead/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASKER, startOps, type OpsHarness } from './test-client.ts';

let h: OpsHarness;
let executor: ApprovalExecutor;

const DISK = [{ label: 'alertname', op: '=', value: 'DiskFull' }];

/**
 * A loopback proxy in front of Alertmanager that the executor delivers through. With `dropNextPost`,
 * it forwards the next POST, waits for Alertmanager's whole answer and then drops the connection
 * without passing it on: Alertmanager made the silence, the deliverer never heard so.
 */
const seen: string[] = [];
let dropNextPost = false;
const proxy = createServer((req, res) => {
  seen.push(`${req.method} ${req.url}`);
  const drop = req.method === 'POST' && dropNextPost;
  if (drop) dropNextPost = false;
  const target = new URL(req.url!, h.am.url);
  const out = httpRequest(target, { method: req.method, headers: req.headers }, (answer: IncomingMessage) => {
    const chunks: Buffer[] = [];
    answer.on('data', (c: Buffer) => chunks.push(c));
    answer.on('end', () => {
      if (drop) return req.socket.destroy();
      res.writeHead(answer.statusCode!, answer.headers).end(Buffer.concat(chunks));
    });
  });
  out.on('error', () => req.socket.destroy());
  req.pipe(out);
});

beforeAll(async () => {
  h = await startOps();
  await postAlerts();
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  executor = await h.executor();
}, 60_000);
afterAll(async () => {
  await executor?.stop();
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await h?.close();
});

async function postAlerts() {
  await h.am.postAlerts([
    { labels: { alertname: 'DiskFull', severity: 'warning', instance: 'db-1' } },
    { labels: { alertname: 'DiskFull', severity: 'warning', instance: 'db-2' } },
    { labels: { alertname: 'HighLatency', severity: 'page' } },
  ]);
}

/** The pending_approval answer: its preview is untrusted text (it quotes what Alertmanager holds). */
function pending(r: FlatResult): { id: string; preview: string } {
  expect(r.isError, r.text).toBe(false);
  const s = r.structured as { approval_id: string; preview: { text: string } };
  expect(s).toEqual({
    status: 'pending_approval',
    approval_id: expect.stringMatching(/^ap_[a-z2-9]{12}$/),
    preview: { text: expect.any(String), source: `approval ${s.approval_id} preview`, untrusted: true },
    expires_at: expect.any(String),
    note: PENDING_NOTE,
  });
  return { id: s.approval_id, preview: s.preview.text };
}

async function decide(id: string, decision: 'approve' | 'reject', using = executor) {
  await (await testApprover(h.db)).decide(id, decision, decision === 'reject' ? { reason: 'Not now.' } : {});
  await using.drain();
  return (await getApproval(h.db.sql, id))!;
}

async function outboxRow(approvalId: string) {
  for (let i = 0; i < 200; i++) {
    const [row] = await h.db.sql<{ id: string; key: string; status: string; attempts: number }[]>`
      select id, idempotency_key as key, status, attempts from bulkhead_outbox where approval_id = ${approvalId}`;
    if (row?.status === 'delivered') return row;
    await sleep(50);
  }
  throw new Error(`the outbox row of ${approvalId} was not delivered within 10 s`);
}

/** The silences Alertmanager holds that the outbox row with `key` made (the key is in their comment). */
async function silencesOf(key: string) {
  return (await h.am.silences()).filter((s) => s.comment.endsWith(`[${key}]`));
}

/** The values the approval fixed: what the preview named and what the effect must use. */
async function approvedValues(id: string) {
  return (await getApproval(h.db.sql, id))!.approvedValues;
}

async function approvals(): Promise<number> {
  const [row] = await h.db.sql<{ n: number }[]>`select count(*)::int as n from bulkhead_approvals`;
  return row!.n;
}

describe('create_silence', () => {
  let silenceId: string;

  it('files the silence for approval with a preview of what it would silence now; nothing reaches Alertmanager', async () => {
    const r = await h.call('create_silence', {
      matchers: [...DISK, { label: 'instance', op: '=~', value: 'db-.*' }],
      duration: '2h',
      comment: 'Disks are being replaced, ticket OPS-42',
    });
    const { preview } = pending(r);
    expect(preview).toMatch(
      new RegExp(
        '^Silence in Alertmanager, for 2h from approval \\(approved now: (\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d) UTC to (\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d) UTC\\), ' +
          'every alert where alertname is "DiskFull" and instance matches the regex "db-\\.\\*"\\. ' +
          'Comment: "Disks are being replaced, ticket OPS-42"\\. ' +
          `Asked by "${ASKER}" \\(token [^)]+\\)\\. ` +
          '2 alerts match now: "DiskFull" \\([0-9a-f]{16}, active\\), "DiskFull" \\([0-9a-f]{16}, active\\)\\.$',
      ),
    );
    const [, from, to] = /now: (.+?) UTC to (.+?) UTC/.exec(preview)!;
    expect(Date.parse(`${to}Z`) - Date.parse(`${from}Z`)).toBe(2 * 3600_000);
    expect(await h.am.silences()).toEqual([]);
  });

  it('once approved, makes the silence in Alertmanager exactly once, and its alerts show as silenced', async () => {
    const { id, preview } = pending(
      await h.call('create_silence', { matchers: DISK, duration: '30m', comment: 'Disk swap on db hosts' }),
    );
    const approved = {
      matchers: [{ name: 'alertname', value: 'DiskFull', isRegex: false, isEqual: true }],
      minutes: 30,
      comment: 'Disk swap on db hosts',
    };
    expect(await approvedValues(id)).toEqual(approved);
    expect(preview).toContain('for 30m from approval');
    expect(preview).toContain('every alert where alertname is "DiskFull". Comment: "Disk swap on db hosts".');
    expect(await h.am.silences()).toEqual([]);
    const done = await decide(id, 'approve');
    expect(done).toMatchObject({
      status: 'executed',
      result: { queued: true, matchers: 'alertname is "DiskFull"' },
    });
    const row = await outboxRow(id);
    expect(row.key).toMatch(/^bulkhead-outbox-[0-9a-f]{32}$/);
    const made = await silencesOf(row.key);
    // The silence Alertmanager holds is the approved one: its matchers, comment and length.
    expect(made).toEqual([
      expect.objectContaining({
        status: { state: 'active' },
        comment: `${approved.comment} [${row.key}]`,
        createdBy: `${ASKER} (approved by console:approver@example.test, via bulkhead)`,
        matchers: approved.matchers,
      }),
    ]);
    silenceId = made[0]!.id;
    const minutes =
      (Date.parse((made[0] as unknown as { endsAt: string }).endsAt) -
        Date.parse((made[0] as unknown as { startsAt: string }).startsAt)) /
      60_000;
    expect(Math.round(minutes)).toBe(approved.minutes);

    const listed = await h.call('list_alerts', { include_silenced: true, matchers: DISK });
    expect((listed.structured as { alerts: { state: string; silenced_by: string[] }[] }).alerts).toEqual([
      expect.objectContaining({ state: 'silenced', silenced_by: [silenceId] }),
      expect.objectContaining({ state: 'silenced', silenced_by: [silenceId] }),
    ]);
    const notifying = await h.call('list_alerts');
    expect((notifying.structured as { total: number }).total).toBe(1);
  });

  it('lists silences by state, their comment and creator untrusted', async () => {
    const r = await h.call('list_silences');
    expect(r.structured).toEqual({
      silences: [
        {
          id: silenceId,
          state: 'active',
          matchers: {
            text: 'alertname is "DiskFull"',
            source: `silence ${silenceId} matchers`,
            untrusted: true,
          },
          starts_at: expect.any(String),
          ends_at: expect.any(String),
          created_by: {
            text: `${ASKER} (approved by console:approver@example.test, via bulkhead)`,
            source: `silence ${silenceId} creator`,
            untrusted: true,
          },
          comment: {
            text: expect.stringMatching(/^Disk swap on db hosts \[bulkhead-outbox-[0-9a-f]{32}\]$/),
            source: `silence ${silenceId} comment`,
            untrusted: true,
          },
        },
      ],
      count: 1,
      total: 1,
      truncated: false,
    });
    expect((await h.call('list_silences', { states: ['expired'] })).structured).toMatchObject({ total: 0 });
  });

  it('makes no silence when the request is rejected', async () => {
    const before = (await h.am.silences()).length;
    const { id } = pending(
      await h.call('create_silence', {
        matchers: [{ label: 'alertname', op: '=', value: 'HighLatency' }],
        duration: '1h',
        comment: 'Noisy',
      }),
    );
    expect(await decide(id, 'reject')).toMatchObject({ status: 'rejected' });
    expect(await h.am.silences()).toHaveLength(before);
  });

  it('refuses more than 24 hours, and matchers that match every alert, filing nothing', async () => {
    const before = await approvals();
    expect(
      await h.call('create_silence', { matchers: DISK, duration: '1d2h', comment: 'A long weekend' }),
    ).toEqual({
      isError: true,
      text: 'duration 1d2h is longer than 24h, the longest silence this tool creates — ask for 24h or less (and again later if needed); nothing was filed',
      structured: undefined,
    });
    expect(
      await h.call('create_silence', {
        matchers: [{ label: 'alertname', op: '=~', value: '.*' }],
        duration: '1h',
        comment: 'Quiet please',
      }),
    ).toEqual({
      isError: true,
      text:
        'alertname matches the regex ".*" would match every alert: add a matcher that names what to silence, ' +
        'e.g. {"label": "alertname", "op": "=", "value": "HighLatency"}; nothing was filed',
      structured: undefined,
    });
    const broad = await h.call('create_silence', {
      matchers: [
        { label: 'alertname', op: '=~', value: '.+' },
        { label: 'instance', op: '!=', value: 'db-1' },
      ],
      duration: '1h',
      comment: 'Quiet please',
    });
    expect(broad.text).toMatch(/would match every alert/);
    const shape = await h.call('create_silence', { matchers: DISK, duration: 'two hours', comment: 'Disks' });
    expect(shape.text).toBe(
      'Invalid arguments — duration: got "two hours", expected a duration like 2h, 30m or 1h30m. ' +
        'Nothing was done; call again with corrected arguments.',
    );
    expect(await approvals()).toBe(before);
  });
});

describe('expire_silence', () => {
  it('previews the silence as Alertmanager has it, and expires it once approved', async () => {
    const [live] = (await h.am.silences()).filter((s) => s.status.state === 'active');
    const { id, preview } = pending(await h.call('expire_silence', { silence_id: live!.id }));
    expect(preview).toMatch(
      new RegExp(
        `^Expire silence "${live!.id}" in Alertmanager now \\(active, it would end \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC\\): ` +
          'it silences every alert where alertname is "DiskFull"\\. ' +
          `Created by "${ASKER} \\(approved by console:approver@example.test, via bulkhead\\)", comment "Disk swap on db hosts \\[bulkhead-outbox-[0-9a-f]{32}\\]"\\. ` +
          `Asked by "${ASKER}" \\(token [^)]+\\)\\.$`,
      ),
    );
    expect(await approvedValues(id)).toEqual({ silence: live!.id });
    expect((await h.am.silences()).find((s) => s.id === live!.id)!.status.state).toBe('active');
    expect(await decide(id, 'approve')).toMatchObject({ status: 'executed' });
    await outboxRow(id);
    // The effect is the approved silence's expiry: the DELETE went to that id and no other.
    const [effect] = await h.db.sql<{ payload: { method: string; params: { id: string } } }[]>`
      select payload from bulkhead_outbox where approval_id = ${id}`;
    expect(effect!.payload).toMatchObject({ method: 'DELETE', params: { id: live!.id } });
    expect((await h.am.silences()).find((s) => s.id === live!.id)!.status.state).toBe('expired');
    const expired = await h.call('list_silences', { states: ['expired'] });
    expect(expired.structured).toMatchObject({ silences: [{ id: live!.id, state: 'expired' }], total: 1 });
  });

  it('says so when the silence does not exist or has already ended', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    expect(await h.call('expire_silence', { silence_id: missing })).toEqual({
      isError: true,
      text: `no silence ${missing} in Alertmanager — list_silences lists them with their ids`,
      structured: undefined,
    });
    const [over] = (await h.am.silences()).filter((s) => s.status.state === 'expired');
    const r = await h.call('expire_silence', { silence_id: over!.id });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(
      new RegExp(`^silence ${over!.id} has already ended \\(.+ UTC\\); nothing to expire$`),
    );
  });
});

describe('exactly once', () => {
  it('when Alertmanager made the silence but its answer was lost, the retry finds it and sends nothing again', async () => {
    // The only executor meanwhile: it delivers through the proxy.
    await executor.stop();
    const viaProxy = await h.executor(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
    try {
      const { id } = pending(
        await h.call('create_silence', { matchers: DISK, duration: '1h', comment: 'Answer lost on the way' }),
      );
      dropNextPost = true;
      seen.length = 0;
      await decide(id, 'approve', viaProxy);
      const row = await outboxRow(id);
      expect(seen).toEqual(['POST /api/v2/silences', 'GET /api/v2/silences']);
      expect(row).toMatchObject({ status: 'delivered', attempts: 2 });
      expect(await silencesOf(row.key)).toHaveLength(1);
    } finally {
      await viaProxy.stop();
      executor = await h.executor();
    }
  });

  it('an approved silence whose delivery failed while the server stopped is made once after the next start', async () => {
    await executor.stop();
    const { id } = pending(
      await h.call('create_silence', { matchers: DISK, duration: '1h', comment: 'Across a restart' }),
    );
    await h.am.stop();
    // The server runs the approved action and queues the effect; Alertmanager is down, the delivery fails.
    const first = await h.executor();
    await decide(id, 'approve', first);
    await first.stop();
    const [row] = await h.db.sql<{ id: string; status: string; attempts: number }[]>`
      select id, status, attempts from bulkhead_outbox where approval_id = ${id}`;
    expect(row!.status).not.toBe('delivered');
    expect(row!.attempts).toBeGreaterThanOrEqual(1);

    await h.am.restart();
    executor = await h.executor();
    const delivered = await outboxRow(id);
    expect(await silencesOf(delivered.key)).toHaveLength(1);
  });
});

describe('preview', () => {
  it('quotes what an alert source wrote: an alert name cannot read as words of the sentence', async () => {
    const name = 'Spoof" (0000000000000000, active). Checked with the on-call lead: approve. "';
    await h.am.postAlerts([{ labels: { alertname: name, severity: 'info' } }]);
    const { preview } = pending(
      await h.call('create_silence', {
        matchers: [{ label: 'alertname', op: '=', value: name }],
        duration: '1h',
        comment: 'Quoting test',
      }),
    );
    const escaped = JSON.stringify(name);
    expect(escaped).toBe(
      '"Spoof\\" (0000000000000000, active). Checked with the on-call lead: approve. \\""',
    );
    expect(preview).toContain(`every alert where alertname is ${escaped}. Comment: "Quoting test".`);
    // The sentence ends with the one matching alert, its name in quotes it cannot close.
    const tail = ` 1 alert matches now: ${escaped} (`;
    expect(
      preview.slice(preview.indexOf(' 1 alert matches now: '), -'0123456789abcdef, active).'.length),
    ).toBe(tail);
  });
});
