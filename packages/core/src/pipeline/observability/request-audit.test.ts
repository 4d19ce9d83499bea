import type { AuditEventInput } from '@bulkhead/audit';
import { describe, expect, it } from 'vitest';
import { createEventOwner, createRequestAudit, type EventSink } from './request-audit.ts';

/** A sink that keeps what it is given, in order. */
function recording(): { sink: EventSink; written: AuditEventInput[] } {
  const written: AuditEventInput[] = [];
  const sink: EventSink = {
    append: async (e) => {
      written.push(e);
      return e as never;
    },
    appendIn: async (_tx, e) => {
      written.push(e);
      return e as never;
    },
    keep: async (e) => {
      written.push(e);
    },
  };
  return { sink, written };
}

describe('an event owner', () => {
  it('fills in the server, the request, the caller it was told and the client from a draft', () => {
    const owner = createEventOwner({
      server: 'admin',
      requestId: 'req-7',
      started: performance.now() - 60_000,
    });
    owner.identify({ tokenId: 'tok-1', label: 'Claude (Ana)' });
    const event = owner.event({
      method: 'tools/call',
      tool: 'get_invoice',
      outcome: 'ok',
      client: { name: 'claude-ai', version: '1.2' },
    });
    expect(event).toEqual({
      server: 'admin',
      requestId: 'req-7',
      tokenId: 'tok-1',
      tokenLabel: 'Claude (Ana)',
      clientName: 'claude-ai',
      clientVersion: '1.2',
      method: 'tools/call',
      tool: 'get_invoice',
      outcome: 'ok',
      durationMs: expect.any(Number),
    });
    // Timed from the request's start, unless the draft says from when or how long.
    expect(event.durationMs).toBeGreaterThanOrEqual(60_000);
    expect(owner.event({ method: 'stdio', outcome: 'unauthorized', durationMs: 0 }).durationMs).toBe(0);
    const since = performance.now();
    expect(owner.event({ method: 'tasks/get', outcome: 'ok', since }).durationMs).toBeLessThan(60_000);
  });

  it('names another party when the draft says so, and no one before it is told', () => {
    const owner = createEventOwner({ server: 'console' });
    expect(owner.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(owner.event({ method: 'console/form', outcome: 'forbidden' })).toMatchObject({
      tokenId: null,
      tokenLabel: null,
      clientName: null,
      clientVersion: null,
    });
    owner.identify({ tokenId: 'tok-approver', label: 'bo@example.test' });
    const requester = { tokenId: 'tok-2', label: 'Cursor (Ana)' };
    expect(owner.event({ method: 'approvals/expire', outcome: 'expired', by: requester })).toMatchObject({
      requestId: owner.requestId,
      tokenId: 'tok-2',
      tokenLabel: 'Cursor (Ana)',
    });
  });
});

describe('a request’s audit owner', () => {
  it('writes one event: a settle after a claim writes nothing, and neither does one after a waiver', async () => {
    const { sink, written } = recording();
    const claimed = createRequestAudit(sink, 'req-1', { server: 'ops' });
    await claimed.claim().keep(claimed.event({ method: 'tools/call', outcome: 'ok' }));
    await claimed.settle(() => claimed.event({ method: 'tools/call', outcome: 'bad_request' }));
    expect(written.map((e) => [e.server, e.requestId, e.outcome])).toEqual([['ops', 'req-1', 'ok']]);
    expect(claimed.events).toBe(1);

    const waived = createRequestAudit(sink, 'req-2', { server: 'ops' });
    waived.waive();
    await waived.settle(() => waived.event({ method: 'http POST', outcome: 'unauthorized' }));
    expect(written).toHaveLength(1);
  });
});
