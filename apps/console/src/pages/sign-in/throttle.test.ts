import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSignInThrottle, SIGN_IN_POLICY } from './throttle.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

it('allows 10 refused sign-ins per source in 60 seconds, then says when the oldest leaves the window', async () => {
  expect(SIGN_IN_POLICY).toEqual({ failures: 10, windowSeconds: 60 });
  const throttle = createSignInThrottle(db.sql);
  const slots = [];
  for (let i = 0; i < 10; i++) slots.push(await throttle.reserve('192.0.2.1'));
  expect(slots.map((s) => s.ok)).toEqual(Array(10).fill(true));
  // The oldest refusal was 45 s ago: the next attempt may come in 15 s.
  await db.sql`
    update bulkhead_console_sign_in_failures set failures[1] = now() - interval '45 seconds' where source = '192.0.2.1'`;
  expect(await throttle.reserve('192.0.2.1')).toEqual({
    ok: false,
    retryAfterSeconds: 15,
    firstInWindow: true,
  });
  expect(await throttle.reserve('192.0.2.1')).toEqual({
    ok: false,
    retryAfterSeconds: 15,
    firstInWindow: false,
  });
  expect((await throttle.reserve('192.0.2.2')).ok).toBe(true);

  // Once the oldest has left the window, one more attempt may go ahead.
  await db.sql`
    update bulkhead_console_sign_in_failures set failures[1] = now() - interval '61 seconds' where source = '192.0.2.1'`;
  const next = await throttle.reserve('192.0.2.1');
  expect(next.ok).toBe(true);
  const [row] = await db.sql<{ n: number }[]>`
    select cardinality(failures) as n from bulkhead_console_sign_in_failures where source = '192.0.2.1'`;
  expect(row!.n).toBe(10);
});

it('gives a slot back when the sign-in succeeds', async () => {
  const throttle = createSignInThrottle(db.sql);
  for (let i = 0; i < 9; i++) await throttle.reserve('192.0.2.3');
  const tenth = await throttle.reserve('192.0.2.3');
  if (!tenth.ok) throw new Error('the tenth attempt should go ahead');
  await throttle.release('192.0.2.3', tenth.slot);
  expect((await throttle.reserve('192.0.2.3')).ok).toBe(true);
  expect(await throttle.reserve('192.0.2.3')).toMatchObject({ ok: false, firstInWindow: true });
});

it('holds across replicas and under concurrent attempts: exactly 10 go ahead', async () => {
  const a = createSignInThrottle(db.sql);
  const b = createSignInThrottle(db.sql);
  for (let i = 0; i < 5; i++) expect((await a.reserve('198.51.100.7')).ok).toBe(true);
  for (let i = 0; i < 5; i++) expect((await b.reserve('198.51.100.7')).ok).toBe(true);
  expect((await a.reserve('198.51.100.7')).ok).toBe(false);
  expect((await b.reserve('198.51.100.7')).ok).toBe(false);

  const results = await Promise.all(
    Array.from({ length: 25 }, (_, i) => (i % 2 ? a : b).reserve('198.51.100.8')),
  );
  expect(results.filter((r) => r.ok)).toHaveLength(10);
});

it('forgets sources that have been quiet for ten windows', async () => {
  const throttle = createSignInThrottle(db.sql);
  await throttle.reserve('203.0.113.9');
  await db.sql`
    update bulkhead_console_sign_in_failures set updated_at = now() - interval '601 seconds' where source = '203.0.113.9'`;
  await throttle.reserve('203.0.113.10');
  expect(
    await db.sql`select source from bulkhead_console_sign_in_failures where source like '203.0.113.%' order by source`,
  ).toEqual([{ source: '203.0.113.10' }]);
});
