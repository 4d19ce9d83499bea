import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressProblem, emailMessage, headerText } from './email.ts';
import { createOutbox } from './outbox.ts';

describe('headerText', () => {
  it('turns every run of line breaks, tabs, controls and spaces into one space', () => {
    expect(headerText('Re: [T-5045] Hi\r\nBcc: attacker@evil.example')).toBe(
      'Re: [T-5045] Hi Bcc: attacker@evil.example',
    );
    expect(headerText('  a\n\n\tb\u0000c\u001bd\u0085e\u2028f\u2029g\u000bh  ')).toBe('a b c d e f g h');
    expect(headerText('Grüße 📠 aus Köln')).toBe('Grüße 📠 aus Köln');
  });

  it('cuts long text with "…", never inside a surrogate pair', () => {
    expect(headerText('x'.repeat(300))).toBe(`${'x'.repeat(199)}…`);
    expect(headerText(`${'x'.repeat(8)}📠📠`, 10)).toBe(`${'x'.repeat(8)}…`);
    expect(headerText('abcdefghij', 10)).toBe('abcdefghij');
  });
});

describe('addressProblem', () => {
  it('accepts one plain address, international ones too', () => {
    for (const ok of ['a@b.de', 'x.y+tag@mail.example.co.uk', 'müller@bücher.de'])
      expect(addressProblem(ok)).toBeUndefined();
  });

  it('says why anything a header could read as more than one address is refused', () => {
    expect(addressProblem('a@b.de\r\nBcc: attacker@evil.example')).toBe('it contains a line break');
    expect(addressProblem('a@b.de\u2028x')).toBe('it contains a line break');
    expect(addressProblem('a@b.de\u0000')).toBe('it contains a control character');
    expect(addressProblem('a@b.de attacker@evil.example')).toBe('it contains a space');
    for (const bad of ['a@b.de,attacker@evil.example', 'Eve<a@b.de>', '"a"@b.de', 'a@b', 'ab.de', 'a@@b.de'])
      expect(addressProblem(bad)).toBe('it is not one address of the form name@domain.tld');
  });
});

describe('emailMessage and the outbox', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('builds a payload whose subject is one line and keeps the other fields', () => {
    expect(
      emailMessage({ to: 'a@b.de', subject: 'Hi\r\nBcc: x@y.example', text: 'one\ntwo', ticket_key: 'T-1' }),
    ).toEqual({ to: 'a@b.de', subject: 'Hi Bcc: x@y.example', text: 'one\ntwo', ticket_key: 'T-1' });
    expect(() => emailMessage({ to: 'a@b.de\nBcc: x@y.example', subject: 's', text: 't' })).toThrow(
      'e-mail recipient refused: it contains a line break',
    );
  });

  it('refuses to queue an e-mail whose header fields carry a line break, and writes no row', async () => {
    const outbox = createOutbox(db.sql, 'test', null);
    await expect(
      outbox.enqueue('email', { to: 'a@b.de', subject: 'Hi\r\nBcc: x@y.example', text: 't' }),
    ).rejects.toThrow('e-mail header field subject carries a line break or control character');
    await expect(
      outbox.enqueue('email', { to: 'a@b.de', cc: 'c@d.de\nBcc: x@y.example', subject: 's', text: 't' }),
    ).rejects.toThrow('e-mail header field cc carries a line break or control character');
    await expect(
      outbox.enqueue('email', { to: 'a@b.de, x@y.example', subject: 's', text: 't' }),
    ).rejects.toThrow('e-mail recipient refused: it contains a space');
    await expect(outbox.enqueue('email', { subject: 's', text: 't' })).rejects.toThrow(
      'e-mail recipient refused: it is missing',
    );
    expect((await db.sql`select 1 from bulkhead_outbox`).length).toBe(0);
    // The body may have lines; other kinds are not e-mails.
    await outbox.enqueue('email', { to: 'a@b.de', subject: 's', text: 'one\r\ntwo' });
    await outbox.enqueue('webhook', { note: 'line\r\nbreak' });
    const rows = await db.sql`select kind, payload from bulkhead_outbox order by id`;
    expect(rows).toEqual([
      { kind: 'email', payload: { to: 'a@b.de', subject: 's', text: 'one\r\ntwo' } },
      { kind: 'webhook', payload: { note: 'line\r\nbreak' } },
    ]);
  });
});
