import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../env.ts';
import type { Io } from '../io.ts';
import { workspaceRoot } from '@bulkhead/core';
import { kbStartHook } from './kb-start.ts';
import { startHooks } from './start.ts';
import { commands } from './index.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

function bufferIo() {
  const err: string[] = [];
  const progress: string[] = [];
  const io: Io = { out: () => {}, err: (l) => err.push(l), progress: (l) => progress.push(l) };
  return { io, err, progress };
}

describe('the knowledge-base start hook', () => {
  const env = loadEnv({ BULKHEAD_DATA_DIR: '/tmp/unused', INIT_CWD: workspaceRoot() });

  it('is registered with `start` when start is loaded', async () => {
    await commands.find((c) => c.name === 'start')!.load();
    expect(startHooks).toContain(kbStartHook);
  });

  it('loads the sample documents into an empty knowledge base, and leaves a filled one alone', async () => {
    const first = bufferIo();
    await kbStartHook({ sql: db.sql, env, io: first.io, embedded: false, servers: [] });
    expect(first.err).toEqual([
      'Loading the sample engineering documents for dev-knowledge...',
      'docs/handbook: 42 files, 42 added, 0 updated, 0 unchanged, 0 removed, 0 invalid',
    ]);
    expect(first.progress).toHaveLength(42);
    expect(first.progress[0]).toBe('[1/42] adr/adr-0001-record-architecture-decisions.md');
    const [row] = await db.sql`select count(*)::int as n from kb_documents`;
    expect(row!.n).toBe(42);

    await db.sql`delete from kb_documents where kind <> 'adr'`;
    const second = bufferIo();
    await kbStartHook({ sql: db.sql, env, io: second.io, embedded: false, servers: [] });
    expect(second.err).toEqual([]);
    const [after] = await db.sql`select count(*)::int as n from kb_documents`;
    expect(after!.n).toBe(12);
  });
});
