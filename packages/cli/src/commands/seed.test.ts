import { createTokenVerifier, parseToken } from '@bulkhead/core/operator';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../env.ts';
import type { Io } from '../io.ts';
import { runCli } from '../run-cli.ts';
import type { ServerManifest } from '../servers.ts';
import { demoStartHook } from './demo-start.ts';
import { manifestSchema } from '@bulkhead/deployables';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

function bufferIo() {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (l) => out.push(l), err: (l) => err.push(l), progress: () => {} };
  return { io, out, err };
}

const servers: ServerManifest[] = [
  {
    name: 'customer',
    dir: '/x',
    kind: 'mcp',
    port: 3102,
    scopes: ['account:read', 'tickets:read'],
    gated: false,
    customerBound: true,
    description: '',
    probe: null,
    grantsSql: null,
    upstreams: [],
    manifest: manifestSchema.parse({
      port: 3102,
      scopes: ['account:read', 'tickets:read'],
      customerBound: true,
    }),
  },
  {
    name: 'dev-knowledge',
    dir: '/y',
    kind: 'mcp',
    port: 3103,
    scopes: ['docs:read'],
    gated: false,
    customerBound: false,
    description: '',
    probe: null,
    grantsSql: null,
    upstreams: [],
    manifest: manifestSchema.parse({ port: 3103, scopes: ['docs:read'] }),
  },
  {
    name: 'console',
    dir: '/z',
    kind: 'console',
    port: 3104,
    scopes: [],
    gated: false,
    customerBound: false,
    description: '',
    probe: null,
    grantsSql: null,
    upstreams: [],
    manifest: manifestSchema.parse({ kind: 'console', port: 3104 }),
  },
];

describe('bulkhead db seed', () => {
  it('refuses without --demo and says why', async () => {
    const run = await runCli(['db', 'seed'], { DATABASE_URL: db.url });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('give --demo: the demo data set is the only data set there is');
    const [row] = await db.sql`select count(*)::int as n from customers`;
    expect(row!.n).toBe(0);
  });

  it('loads the demo data, then finds it there the second time', async () => {
    const first = await runCli(['db', 'seed', '--demo', '--json'], { DATABASE_URL: db.url });
    expect(first.code).toBe(0);
    const result = JSON.parse(first.stdout);
    expect(result.seed).toBe(20_260_101);
    expect(result.inserted).toMatchObject({ customers: 50, invoices: 500, tickets: 300 });
    expect(result.inserted).toEqual(result.dataset);

    const second = await runCli(['db', 'seed', '--demo'], { DATABASE_URL: db.url });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('The demo data is already there (seed 20260101); nothing inserted.');
    const [row] = await db.sql`select count(*)::int as n from invoices`;
    expect(row!.n).toBe(500);
  });

  it('rejects a seed that is not a number', async () => {
    const run = await runCli(['db', 'seed', '--demo', '--seed', 'abc'], { DATABASE_URL: db.url });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--seed: a whole number');
  });
});

describe('the first-start hook', () => {
  const env = loadEnv({ BULKHEAD_OPERATOR: 'ops:test', BULKHEAD_DATA_DIR: '/tmp/unused' });

  it('on an external database with no customers only prints the seed hint', async () => {
    const fresh = await createTestDatabase();
    try {
      const { io, out, err } = bufferIo();
      await demoStartHook({ sql: fresh.sql, env, io, embedded: false, servers });
      expect(err).toEqual(['The database has no customers. For demo data run: pnpm bulkhead db seed --demo']);
      expect(out).toEqual([]);
      const [row] =
        await fresh.sql`select (select count(*) from customers)::int as c, (select count(*) from bulkhead_tokens)::int as t`;
      expect(row).toEqual({ c: 0, t: 0 });
    } finally {
      await fresh.drop();
    }
  });

  it('on an empty embedded database seeds and prints one working demo token per MCP server', async () => {
    const fresh = await createTestDatabase();
    try {
      const { io, out } = bufferIo();
      await demoStartHook({ sql: fresh.sql, env, io, embedded: true, servers });
      const [row] = await fresh.sql`select count(*)::int as n from customers`;
      expect(row!.n).toBe(50);
      const lines = out.filter((l) => l.includes('bh_'));
      expect(lines).toHaveLength(2);
      const tokens = lines.map((l) => /(bh_\S+)/.exec(l)![1]!);
      expect(lines[0]).toContain('(sees customer C-1001 only)');
      const records = await fresh.sql`
        select server, label, scopes, customer_id, created_by, round(extract(epoch from expires_at - now()) / 86400)::int as days
        from bulkhead_tokens order by server`;
      expect(records).toEqual([
        {
          server: 'customer',
          label: 'demo',
          scopes: ['account:read', 'tickets:read'],
          customer_id: 'C-1001',
          created_by: 'ops:test',
          days: 30,
        },
        {
          server: 'dev-knowledge',
          label: 'demo',
          scopes: ['docs:read'],
          customer_id: null,
          created_by: 'ops:test',
          days: 30,
        },
      ]);
      expect(parseToken(tokens[0]!)?.server).toBe('customer');
      const verifier = createTokenVerifier(fresh.sql, 'customer');
      const verified = await verifier.verify(tokens[0]!);
      await verifier.close();
      expect(verified).toMatchObject({ ok: true, access: { customerId: 'C-1001', label: 'demo' } });
      expect(out.at(-1)).toContain('claude mcp add --transport http customer http://127.0.0.1:3102/mcp');

      // A second start finds customers and does nothing.
      const again = bufferIo();
      await demoStartHook({ sql: fresh.sql, env, io: again.io, embedded: true, servers });
      expect(again.out).toEqual([]);
      expect(again.err).toEqual([]);
      const [count] = await fresh.sql`select count(*)::int as n from bulkhead_tokens`;
      expect(count!.n).toBe(2);
    } finally {
      await fresh.drop();
    }
  });
});
