import { Writable } from 'node:stream';
import pino from 'pino';
import { expect, it } from 'vitest';
import { REDACT } from './logger.ts';

it('redacts authorization headers and tokens at the depths requests and errors carry them', () => {
  let out = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      out += String(chunk);
      done();
    },
  });
  const logger = pino({ redact: { paths: REDACT, censor: '[redacted]' } }, sink);
  logger.info(
    {
      token: 'T0',
      a: { b: { token: 'T1', secret: 'S1' } },
      headers: { Authorization: 'A1' },
      err: { config: { headers: { authorization: 'A2' } } },
      req: { headers: { authorization: 'A3' } },
      deep: { x: { y: { password: 'P1' } } },
    },
    'request',
  );
  for (const value of ['T0', 'T1', 'S1', 'A1', 'A2', 'A3', 'P1']) expect(out).not.toContain(`"${value}"`);
  expect(out).toContain('[redacted]');
});
