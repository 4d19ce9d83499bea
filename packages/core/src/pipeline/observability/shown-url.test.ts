import { describe, expect, it } from 'vitest';
import { shownUrl, withUrlsShown } from './shown-url.ts';

describe('a URL in a message', () => {
  it('shows scheme, host, port and database only, whatever the password holds', () => {
    expect(
      [
        'postgres://bulkhead:se/cr@t@db.example:5432/bulkhead?sslmode=require',
        'postgresql://bulkhead:p%2Fw@db.example/bulkhead',
        'smtp://mailer:pa/ss:w@rd@smtp.example:587',
        'smtps://smtp.example:465/',
        'postgres://db.example:5432/bulkhead#frag',
        'HTTPS://user:pw@api.example/v2/x?token=abc',
        'not a url',
      ].map(shownUrl),
    ).toEqual([
      'postgres://db.example:5432/bulkhead',
      'postgresql://db.example/bulkhead',
      'smtp://smtp.example:587',
      'smtps://smtp.example:465',
      'postgres://db.example:5432/bulkhead',
      'https://api.example/v2',
      'not a url',
    ]);
  });

  it('is shown so inside any text', () => {
    expect(
      withUrlsShown('could not reach postgres://u:a/b@h:5432/db (got "smtp://m:x/y@mail:25") — check it'),
    ).toBe('could not reach postgres://h:5432/db (got "smtp://mail:25") — check it');
  });
});
