import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createServer, defineTool } from '../index.ts';
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '../testing/index.ts';

// A write call's COMMIT can wait long after its handler finished: for a synchronous standby that a
// failover took away, until the new one streams. Here a deferred constraint trigger stands in for that
// wait: it sleeps at COMMIT, as long as the row says, then lets it through or fails it. The call must
// answer by its time limit, never say a change it cannot confirm was made or was not, and leave one
// event: the COMMIT's own if it goes through, a refusal if it fails.
const LIMIT_MS = 500;
const def = createServer({
  name: 'commit-test',
  version: '1.0.0',
  description: 'A server whose one write commits slowly.',
  tools: [
    defineTool({
      name: 'write_note',
      title: 'Write a note',
      description: 'Writes a note whose COMMIT sleeps for the given seconds, then fails if asked to.',
      scope: 'notes:write',
      input: z.object({
        text: z.string().max(100),
        commitSeconds: z.number().min(0).max(10),
        fail: z.boolean(),
      }),
      output: z.object({ written: z.string() }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
      timeoutMs: LIMIT_MS,
      handler: async ({ text, commitSeconds, fail }, ctx) => {
        await ctx.sql`insert into commit_notes (text, commit_seconds, fail) values (${text}, ${commitSeconds}, ${fail})`;
        return { written: text };
      },
    }),
  ],
});

let db: TestDatabase;
let server: TestServer;
let client: Client;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql.unsafe(`
    create table commit_notes (text text primary key, commit_seconds float8 not null, fail boolean not null);
    create function commit_notes_at_commit() returns trigger language plpgsql as $$
    begin
      perform pg_sleep(new.commit_seconds);
      if new.fail then raise exception 'the commit of % fails', new.text; end if;
      return null;
    end $$;
    create constraint trigger commit_notes_at_commit after insert on commit_notes
      deferrable initially deferred for each row execute function commit_notes_at_commit();`);
  server = await startTestServer(def, { db });
  await db.sql`grant select, insert on commit_notes to bulkhead_commit_test`;
  client = await connectTestClient(server.url, await issueTestToken(db.sql, def), 'commit-test');
});
afterAll(async () => {
  await client?.close();
  await server?.close();
  await db?.drop();
});

const text = (r: Awaited<ReturnType<Client['callTool']>>) => JSON.stringify(r.content);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventsOf(note: string) {
  return db.sql<{ outcome: string; result_summary: { error?: string } | null }[]>`
    select outcome, result_summary from audit_events
    where tool = 'write_note' and arguments->>'text' = ${note} order by seq`;
}
async function noteExists(note: string): Promise<boolean> {
  return (await db.sql`select 1 from commit_notes where text = ${note}`).length === 1;
}

describe('a write whose COMMIT outlives the time limit', () => {
  it('commits quickly as usual: answered ok, one ok event', async () => {
    const r = await client.callTool({
      name: 'write_note',
      arguments: { text: 'quick', commitSeconds: 0, fail: false },
    });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toEqual({ written: 'quick' });
    expect((await eventsOf('quick')).map((e) => e.outcome)).toEqual(['ok']);
  });

  it('answers by its limit that the change may have been made; the COMMIT, not cancelled, makes it with its ok event', async () => {
    // The COMMIT sleeps 10 s, twenty times the limit: an answer that waited for it would find the note written.
    const r = await client.callTool({
      name: 'write_note',
      arguments: { text: 'slow', commitSeconds: 10, fail: false },
    });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(
      /did not finish within 0\.5 s while committing: the database has not confirmed the change, which may have been made/,
    );
    expect(await noteExists('slow')).toBe(false);
    // The COMMIT runs on past the tool's statement timeout (0.5 s) and goes through.
    await expect.poll(() => noteExists('slow'), { timeout: 20_000, interval: 100 }).toBe(true);
    await pause(200);
    expect((await eventsOf('slow')).map((e) => e.outcome)).toEqual(['ok']);
  }, 40_000);

  it('records the refusal as its one event when the COMMIT it answered for then fails, and nothing is written', async () => {
    const r = await client.callTool({
      name: 'write_note',
      arguments: { text: 'doomed', commitSeconds: 5, fail: true },
    });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(
      /while committing: the database has not confirmed the change, which may have been made/,
    );
    await expect
      .poll(async () => (await eventsOf('doomed')).map((e) => e.outcome), { timeout: 10_000, interval: 100 })
      .toEqual(['unavailable']);
    const [event] = await eventsOf('doomed');
    expect(event!.result_summary?.error).toMatch(
      /answered before its COMMIT ended; the COMMIT then failed, so it was not made/,
    );
    expect(await noteExists('doomed')).toBe(false);
  });

  it('a client giving up during the COMMIT does not cancel it: the change and its event are kept', async () => {
    const abort = new AbortController();
    const call = client.callTool(
      { name: 'write_note', arguments: { text: 'withdrawn', commitSeconds: 1.5, fail: false } },
      { signal: abort.signal },
    );
    call.catch(() => {});
    // The handler's insert is done within a few milliseconds; its COMMIT sleeps 1.5 s.
    await expect
      .poll(
        async () => {
          const [row] = await db.admin<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where datname = current_database() and query ilike 'commit%' and state = 'active'`;
          return row!.n;
        },
        { timeout: 5_000, interval: 20 },
      )
      .toBe(1);
    abort.abort();
    await expect(call).rejects.toThrow();
    await expect.poll(() => noteExists('withdrawn'), { timeout: 10_000, interval: 100 }).toBe(true);
    await pause(200);
    expect((await eventsOf('withdrawn')).map((e) => e.outcome)).toEqual(['ok']);
  });
});
