import { issueToken } from '@bulkhead/core/operator';
import { DEMO_CUSTOMER, seedDemo } from '@bulkhead/demo';
import { defaultUrl } from '../servers.ts';
import { describeCounts } from './seed.ts';
import { nameWidth, type StartHook } from './start.ts';

const DEMO_TOKEN_DAYS = 30;

/**
 * First start: a database without customers gets the demo data and one demo
 * token per MCP server, printed once. Only on the embedded database — a
 * `DATABASE_URL` points at someone's real database, which gets a hint instead.
 */
export const demoStartHook: StartHook = async ({ sql, env, io, embedded, servers }) => {
  const [row] = await sql<{ any: boolean }[]>`select exists (select 1 from customers) as any`;
  if (row!.any) return;
  if (!embedded) {
    io.err('The database has no customers. For demo data run: pnpm bulkhead db seed --demo');
    return;
  }
  io.err('First start: loading the demo data...');
  const result = await seedDemo(sql, { progress: (line) => io.progress(`Seeding ${line}`) });
  io.err(`Demo data: ${describeCounts(result.inserted)}.`);

  const expiresAt = new Date(Date.now() + DEMO_TOKEN_DAYS * 86_400_000);
  const issued: { name: string; url: string; token: string; customer: string | null }[] = [];
  for (const server of servers) {
    if (server.kind !== 'mcp' || server.scopes.length === 0) continue;
    const customer = server.customerBound ? DEMO_CUSTOMER : null;
    const { token } = await issueToken(sql, {
      server: server.name,
      label: 'demo',
      scopes: server.scopes,
      customerId: customer,
      expiresAt,
      createdBy: env.operator,
    });
    issued.push({ name: server.name, url: defaultUrl(server), token, customer });
  }
  if (!issued.length) return;
  io.out('');
  io.out(`Demo tokens (shown once, valid ${DEMO_TOKEN_DAYS} days, label "demo"):`);
  const width = nameWidth(issued);
  for (const t of issued) {
    io.out(`  ${t.name.padEnd(width)} ${t.token}${t.customer ? `  (sees customer ${t.customer} only)` : ''}`);
  }
  const first = issued[0]!;
  io.out(
    `Connect a client, e.g. claude mcp add --transport http ${first.name} ${first.url} --header "Authorization: Bearer <token>"`,
  );
};
