import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { root } from './helpers.ts';

it('a server with a bad environment does not start and says why, one line per problem', () => {
  const run = spawnSync(process.execPath, ['--import', 'tsx', `${root}servers/dev-knowledge/src/main.ts`], {
    cwd: root,
    env: { ...process.env, PORT: '99999', HOST: '', BULKHEAD_MAX_BODY_BYTES: 'lots' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(run.status).toBe(1);
  const lines = run.stderr.trim().split('\n');
  expect(lines[0]).toBe('dev-knowledge: invalid configuration:');
  expect(
    lines
      .slice(1)
      .map((l) => l.trim().split(':')[0])
      .sort(),
  ).toEqual(['BULKHEAD_MAX_BODY_BYTES', 'PORT']);
});

it('a server with e-mail tools does not start without an SMTP server and a From, and names both variables', () => {
  const env: Record<string, string | undefined> = { ...process.env, BULKHEAD_MAIL_FROM: 'not an address' };
  delete env.BULKHEAD_SMTP_URL;
  const bad = spawnSync(process.execPath, ['--import', 'tsx', `${root}servers/admin/src/main.ts`], {
    cwd: root,
    env,
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(bad.status).toBe(1);
  expect(bad.stderr.trim().split('\n')).toEqual([
    'admin: invalid configuration:',
    '  BULKHEAD_MAIL_FROM: must be one plain address of the form name@domain.tld (got "not an address")',
  ]);

  delete env.BULKHEAD_MAIL_FROM;
  const run = spawnSync(process.execPath, ['--import', 'tsx', `${root}servers/admin/src/main.ts`], {
    cwd: root,
    env,
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(run.status).toBe(1);
  expect(run.stderr.trim().split('\n')).toEqual([
    'admin: invalid configuration:',
    '  BULKHEAD_SMTP_URL is not set: admin sends e-mail (send_invoice, answer_ticket) once a person approves it; ' +
      'set it to the SMTP server to send through (smtp://user:pass@host:587 or smtps://user:pass@host:465; ' +
      'pnpm start sets it to its local mail catcher)',
    '  BULKHEAD_MAIL_FROM is not set: admin sends e-mail (send_invoice, answer_ticket) once a person approves it; ' +
      'set it to the address it sends from (billing@example.com)',
  ]);
});

it('a server’s start-up errors show a URL as scheme, host, port and database only, whatever its password holds', () => {
  // Issue 43: a password holding '/' (here written unencoded, as people do) was printed in full.
  const run = spawnSync(process.execPath, ['--import', 'tsx', `${root}servers/admin/src/main.ts`], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: 'postgres://bulkhead:se/cr@t@db.example:5432/bulkhead',
      BULKHEAD_SMTP_URL: 'smtp://mailer:pa/ss:w@rd@smtp.example:587',
      BULKHEAD_MAIL_FROM: 'billing@example.com',
    },
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(run.status).toBe(1);
  expect(run.stderr.trim().split('\n')).toEqual([
    'admin: invalid configuration:',
    '  DATABASE_URL: Invalid URL (got "postgres://db.example:5432/bulkhead")',
    '  BULKHEAD_SMTP_URL: Invalid URL (got "smtp://smtp.example:587")',
  ]);
  expect(`${run.stdout}${run.stderr}`).not.toMatch(/se\/cr|pa\/ss|bulkhead:|mailer/);
});
