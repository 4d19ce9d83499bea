// The bare reference of `pnpm bench`: the official SDK v2 alone (createMcpHandler on Hono), serving a
// tool of the same shape as the customer server's get_account_balance with the same one Postgres query
// — no token, no rate limit, no audit, no transaction. Started as its own process by run.ts.
import { serve } from '@hono/node-server';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { createSql } from '@bulkhead/db';
import { Hono } from 'hono';
import { z } from 'zod';

// A process of its own, started by run.ts with these three values.
const { BENCH_DATABASE_URL: url, BENCH_PORT: port, BENCH_CUSTOMER: given } = process.env;
if (!url || !port || !given)
  throw new Error('BENCH_DATABASE_URL, BENCH_PORT and BENCH_CUSTOMER are required');
const customer: string = given;
const sql = createSql(url, { max: 10, applicationName: 'bench-bare' });

const balance = z.object({
  currency: z.string(),
  due_cents: z.number(),
  overdue_cents: z.number(),
  open_invoices: z.number(),
  overdue_invoices: z.number(),
  oldest_overdue_days: z.number().nullable(),
  next_due_on: z.string().nullable(),
});

function build(): McpServer {
  const server = new McpServer({ name: 'bare', version: '1.0.0' });
  server.registerTool(
    'get_account_balance',
    {
      title: 'Account balance',
      description: 'What this account owes, per currency.',
      inputSchema: z.object({}),
      outputSchema: z.object({ customer_id: z.string(), balances: z.array(balance) }),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async () => {
      const rows = await sql<z.infer<typeof balance>[]>`
        select currency,
          coalesce(sum(due_cents) filter (where status in ('open', 'overdue')), 0)::float8 as due_cents,
          coalesce(sum(due_cents) filter (where status = 'overdue'), 0)::float8 as overdue_cents,
          count(*) filter (where status in ('open', 'overdue'))::int as open_invoices,
          count(*) filter (where status = 'overdue')::int as overdue_invoices,
          max(current_date - due_on) filter (where status = 'overdue') as oldest_overdue_days,
          to_char(min(due_on) filter (where status = 'open'), 'YYYY-MM-DD') as next_due_on
        from invoice_balances
        where customer_id = ${customer} and status <> 'draft'
        group by currency order by currency`;
      const value = { customer_id: customer, balances: rows };
      return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value };
    },
  );
  return server;
}

const handler = createMcpHandler(() => build());
const app = new Hono();
app.all('/mcp', (c) => handler.fetch(c.req.raw));
app.get('/healthz', (c) => c.json({ status: 'ok' }));
serve({ fetch: app.fetch, port: Number(port), hostname: '127.0.0.1' });
process.on('SIGTERM', () => process.exit(0));
