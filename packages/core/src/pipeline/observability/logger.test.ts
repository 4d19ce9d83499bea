import { Writable } from 'node:stream';
import pino from 'pino';
import { expect, it } from 'vitest';
import { createLogger, lazyChild, REDACT } from './logger.ts';

/** A logger redacting as the kit's does, writing into a string. */
function capturing() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return {
    logger: pino({ redact: { paths: REDACT, censor: '[redacted]' } }, sink),
    out: () => lines.join(''),
  };
}

it('redacts authorization headers and tokens at the depths requests and errors carry them', () => {
  const { logger, out } = capturing();
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
  for (const value of ['T0', 'T1', 'S1', 'A1', 'A2', 'A3', 'P1']) expect(out()).not.toContain(`"${value}"`);
  expect(out()).toContain('[redacted]');
});

it('a lazy child logs with its bindings (redacted like any child), and is made only when used', () => {
  const { logger, out } = capturing();
  let made = 0;
  const original = logger.child;
  logger.child = function (this: typeof logger, ...args: Parameters<typeof original>) {
    made++;
    return original.apply(this, args);
  } as typeof logger.child;
  const lazy = lazyChild(logger, { requestId: 'R-1', token: 'T9' });
  expect(made).toBe(0);
  lazy.info({ tool: 'x' }, 'hello');
  lazy.debug('below the level');
  expect(made).toBe(1);
  lazy.child({ step: 2 }).warn('nested');
  expect(made).toBe(2);
  const lines = out()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(lines).toMatchObject([
    { requestId: 'R-1', token: '[redacted]', tool: 'x', msg: 'hello' },
    { requestId: 'R-1', step: 2, msg: 'nested' },
  ]);
  expect(lazy.isLevelEnabled('debug')).toBe(false);
});

it('shows a URL in a line as scheme, host, port and database, whatever its password holds', async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const logger = createLogger({ destination: sink });
  logger.error(
    { err: new Error('connect to postgres://u:se/cr@t@db:5432/app failed'), smtp: 'smtp://m:p/w@mail:25' },
    'cannot reach %s',
    'postgres://u:x/y@db/app',
  );
  const [line] = lines.map((l) => JSON.parse(l) as { msg: string; smtp: string; err: { message: string } });
  expect([line!.msg, line!.smtp, line!.err.message]).toEqual([
    'cannot reach postgres://db/app',
    'smtp://mail:25',
    'connect to postgres://db:5432/app failed',
  ]);
  expect(lines.join('')).not.toMatch(/se\/cr|p\/w|x\/y/);
});
