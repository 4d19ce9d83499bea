import { issueTestToken } from '@bulkhead/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminServer } from './server.ts';
import { callTool, connectClient, startAdmin, type AdminHarness } from './test-client.ts';

let h: AdminHarness;
beforeAll(async () => {
  h = await startAdmin();
});
afterAll(async () => {
  await h?.close();
});

const read = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** Each tool's scope, annotations and whether a person must approve it: the table in the README. */
const EXPECTED = {
  find_customers: ['customers:read', read, false],
  get_customer: ['customers:read', read, false],
  update_customer_contact: [
    'customers:write',
    { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    true,
  ],
  list_invoices: ['invoices:read', read, false],
  send_invoice: [
    'invoices:write',
    { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    true,
  ],
  issue_credit_note: [
    'credits:write',
    { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    true,
  ],
  list_tickets: ['tickets:read', read, false],
  get_ticket: ['tickets:read', read, false],
  categorize_ticket: [
    'tickets:write',
    { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    false,
  ],
  escalate_ticket: [
    'tickets:write',
    { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    false,
  ],
  answer_ticket: [
    'tickets:write',
    { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    true,
  ],
  get_approval_status: ['approvals:read', read, false],
} as const;

describe('tools/list', () => {
  it('lists every tool with its annotations (title there), an output schema unless gated, and an icon', async () => {
    const { tools } = await h.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(Object.keys(EXPECTED));
    for (const t of tools) {
      const [scope, annotations, gated] = EXPECTED[t.name as keyof typeof EXPECTED];
      const tool = adminServer.catalog.byName.get(t.name)!;
      expect(tool.scope).toBe(scope);
      expect(Boolean(tool.approval)).toBe(gated);
      expect(t.title).toBeUndefined();
      expect(t.annotations).toEqual({ title: tool.title, ...annotations });
      // A gated call answers the kit's pending_approval envelope (or a task), explained in the description.
      expect(t.outputSchema?.type).toBe(gated ? undefined : 'object');
      if (gated) expect(t.description).toContain('Returns pending_approval (gated).');
      else expect(t.outputSchema?.required).toEqual(Object.keys(t.outputSchema!.properties!));
      expect(t.inputSchema.additionalProperties).toBeUndefined();
      expect(t.icons).toEqual([expect.objectContaining({ mimeType: 'image/svg+xml', sizes: ['any'] })]);
    }
  });

  it('says in list_tickets that the text is left out and where to get it', async () => {
    const { tools } = await h.client.listTools();
    const description = tools.find((t) => t.name === 'list_tickets')!.description!;
    expect(description).toContain(
      'Returns short forms (key, subject, sender, customer, received, category, status)',
    );
    expect(description).toContain('get_ticket has the text');
  });
});

describe('scopes', () => {
  it('shows a token only the tools of its scopes, and refuses the others', async () => {
    const token = await issueTestToken(h.db.sql, adminServer, { scopes: ['tickets:read'] });
    const client = await connectClient(h.server.url, token);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['list_tickets', 'get_ticket']);
      const r = await callTool(client, 'get_ticket', { key: 'T-1001' });
      expect(r.isError).toBe(false);
      await expect(
        callTool(client, 'escalate_ticket', { key: 'T-1013', reason: 'Needs a second look.' }),
      ).rejects.toMatchObject({
        code: -32602,
        message: expect.stringContaining('Unknown tool: escalate_ticket'),
      });
      const [t] = await h.db.sql`select status from tickets where key = 'T-1013'`;
      expect(t!.status).toBe('open');
    } finally {
      await client.close();
    }
  });
});
