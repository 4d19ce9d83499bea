import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAuditWriter } from '@bulkhead/audit';
import { issueToken, personKey, samePerson } from '@bulkhead/core/operator';
import { testApprover } from '@bulkhead/core/testing';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../root.ts';
import { runCli } from '../run-cli.ts';

/**
 * Issue 42, item 4: one person, one spelling. Each of these passed for someone other than `Bob` — a
 * zero-width space, a no-break space, a tab, an ideographic space, a Cyrillic о — and so did a request
 * filed under it that Bob then approved.
 */
const SPELLINGS = ['B\u200bob', 'Bob\u00a0', 'Bob\t', 'Bob\u3000', 'B\u043eb', '\uff42\uff4f\uff42'];

let db: TestDatabase;
let console: Sql;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  db = await createTestDatabase();
  console = (await db.as('console')).sql;
  env = { DATABASE_URL: db.url, BULKHEAD_OPERATOR: 'ops:ana', PORT: undefined, HOST: undefined };
});
afterAll(async () => {
  await db.drop();
});

const usage = (command: string) => `Run \`bulkhead ${command} --help\` for usage.\n`;

async function sqlKeys(names: string[]): Promise<string[]> {
  const rows = await db.sql<{ key: string }[]>`
    select public.bulkhead_person_key(n) as key from unnest(${names}::text[]) with ordinality as t(n, i) order by i`;
  return rows.map((r) => r.key);
}

describe('a person’s key', () => {
  it('is one for the six spellings of Bob, in TypeScript and in the database', async () => {
    expect(SPELLINGS.map(personKey)).toEqual(SPELLINGS.map(() => 'bob'));
    expect(await sqlKeys(SPELLINGS)).toEqual(SPELLINGS.map(() => 'bob'));
    expect(SPELLINGS.map((s) => samePerson(s, 'Bob'))).toEqual(SPELLINGS.map(() => true));
    const [row] = await db.sql<{ same: boolean[] }[]>`
      select array_agg(public.bulkhead_same_person(n, 'Bob') order by i) as same
      from unnest(${SPELLINGS}::text[]) with ordinality as t(n, i)`;
    expect(row!.same).toEqual(SPELLINGS.map(() => true));
    expect([samePerson('Bobby', 'Bob'), samePerson('Rob', 'Bob'), samePerson('Anna', 'Ana')]).toEqual([
      false,
      false,
      false,
    ]);
  });

  it('is the same in both implementations for every code point of the table and of the BMP', async () => {
    const map = JSON.parse(
      readFileSync(join(repoRoot, 'packages/core/src/pipeline/text-safety/person-name-map.json'), 'utf8'),
    ) as Record<string, string>;
    const names = [...Object.keys(map), ...Object.values(map), 'Zoë', 'ZOË', 'Straße', 'STRASSE', 'İlkay'];
    for (let cp = 1; cp < 0x10000; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      names.push(`a${String.fromCodePoint(cp)}b`);
    }
    const sql: string[] = [];
    for (let i = 0; i < names.length; i += 8192) sql.push(...(await sqlKeys(names.slice(i, i + 8192))));
    const differ = names.filter((n, i) => personKey(n) !== sql[i]);
    // The only differences allowed are characters that one engine's Unicode (Node's ICU, PostgreSQL's
    // own tables) is too old to know: it leaves them undecomposed where the newer one decomposes them.
    const [known] = await db.sql<{ same: boolean[] }[]>`
      select coalesce(array_agg(normalize(n, nfkd) = n order by i), '{}') as same
      from unnest(${differ}::text[]) with ordinality as t(n, i)`;
    expect(differ.filter((n, i) => (n.normalize('NFKD') === n) === known!.same[i])).toEqual([]);
  });
});

describe('bulkhead tokens issue --owner and approvers add --person', () => {
  it('store an invisible or spaced spelling as the name, and refuse a name that mixes scripts', async () => {
    const zero = await runCli(
      [
        'tokens',
        'issue',
        '--server',
        'admin',
        '--label',
        'zero-width',
        '--owner',
        'B\u200bob\u3000',
        '--json',
      ],
      env,
    );
    expect(zero.code).toBe(0);
    expect(JSON.parse(zero.stdout).owner).toBe('Bob');
    const spaced = await runCli(
      [
        'tokens',
        'issue',
        '--server',
        'admin',
        '--label',
        'spaced',
        '--owner',
        ' Ana\u00a0\u00a0Lima\t',
        '--json',
      ],
      env,
    );
    expect(JSON.parse(spaced.stdout).owner).toBe('Ana Lima');
    const sentence =
      '"B\u043eb" mixes Latin and Cyrillic letters ("\u043e" (U+043E) is Cyrillic): a name that mixes scripts can pass for someone else\'s, so write it in one script';
    expect(
      await runCli(['tokens', 'issue', '--server', 'admin', '--label', 'mixed', '--owner', 'B\u043eb'], env),
    ).toEqual({ code: 2, stdout: '', stderr: `bulkhead tokens: --owner: ${sentence}\n${usage('tokens')}` });
    expect(await runCli(['approvers', 'add', '--person', 'B\u043eb'], env)).toEqual({
      code: 2,
      stdout: '',
      stderr: `bulkhead approvers: --person: ${sentence}\n${usage('approvers')}`,
    });
    expect(await runCli(['approvers', 'add', '--person', '\u200b\u200b'], env)).toEqual({
      code: 2,
      stdout: '',
      stderr: `bulkhead approvers: --person: a person is named with letters or digits, and this name has none\n${usage('approvers')}`,
    });
    const [rows] = await db.sql<{ n: number }[]>`select count(*)::int as n from bulkhead_tokens`;
    expect(rows!.n).toBe(2);
    // Five runs of the real binary: on a busy machine, more than the default 30 s.
  }, 120_000);
});

describe('a request filed under another spelling of Bob', () => {
  it('is refused to Bob, by the kit and by the database on its own', async () => {
    const bob = await testApprover(db, 'Bob');
    for (const [i, spelling] of SPELLINGS.entries()) {
      // A token issued under that spelling some other way (before this check, or by any other path).
      const { record } = await issueToken(db.sql, {
        server: 'admin',
        label: `client ${i}`,
        scopes: ['billing:write'],
        expiresAt: null,
        createdBy: 'test',
        owner: spelling,
      });
      const id = `ap_spellingbob${'abcdef'[i]}`;
      await db.sql`
        insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
          expires_at, request_id, requested_by_token_id)
        values (${id}, 'admin', 'issue_credit_note', '{}', '{}', ${createHash('sha256').update('{}').digest('hex')},
          'Credit €1', now() + interval '1 hour', 'r', ${record.id})`;
      await expect(bob.decide(id, 'approve')).rejects.toThrow(
        `approval ${id} was requested with a token issued to Bob, who may not approve it too: another approver must decide (separation of duties)`,
      );
      // The database refuses it too, with the decision's event written as the console writes it.
      const verdict = await console
        .begin(async (tx) => {
          // Bob's own proof (his approver token), as the console presents it: the guard then weighs who he is.
          await tx`select 1 from bulkhead_console_prove(${bob.token})`;
          const event = randomUUID();
          await createAuditWriter(tx as unknown as Sql).appendIn(tx, {
            id: event,
            server: 'console',
            method: 'approvals/decide',
            outcome: 'approved',
            approvalId: id,
            tokenId: bob.approver.tokenId,
            requestId: 'r',
            durationMs: 0,
          });
          await tx`update bulkhead_approvals set status = 'approved', decided_by = 'console:Bob',
            decided_by_token_id = ${bob.approver.tokenId}, decided_arguments_hash = arguments_hash,
            decision_event_id = ${event} where id = ${id}`;
          return 'approved';
        })
        .catch((err: Error) => err.message);
      expect([spelling, verdict]).toEqual([
        spelling,
        `approval ${id} was requested by ${spelling}, who may not approve it too`,
      ]);
    }
    const [left] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from bulkhead_approvals where id like 'ap_spelling%' and status = 'pending'`;
    expect(left!.n).toBe(SPELLINGS.length);
  });
});
