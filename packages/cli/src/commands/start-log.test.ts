import { Writable } from 'node:stream';
import { createLogger } from '@bulkhead/core';
import { describe, expect, it } from 'vitest';
import { createLineRenderer, relayFormat } from './start-log.ts';

/** The lines a server's real logger prints for `log`, as `start` reads them from its pipe. */
function printed(log: (logger: ReturnType<typeof createLogger>) => void): string[] {
  let out = '';
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      out += chunk.toString();
      done();
    },
  });
  const logger = createLogger({ name: 'dev-knowledge', destination });
  log(logger);
  return out.trimEnd().split('\n');
}

describe('relayFormat', () => {
  it('is pretty on a terminal and JSON otherwise, as docs/configuration.md says of every server', () => {
    expect(relayFormat({ isTTY: true })).toBe('pretty');
    expect(relayFormat({ isTTY: false })).toBe('json');
    expect(relayFormat({})).toBe('json');
  });
});

describe('createLineRenderer', () => {
  const failure = () =>
    printed((logger) =>
      logger.error({ err: new Error('connect ECONNREFUSED 127.0.0.1:5432') }, 'token check failed'),
    );

  it('shows a pino line pretty on one line, with the error message and without its stack', () => {
    const [line] = failure();
    expect(line).toContain('"stack"');
    const shown = createLineRenderer('pretty', false)(line!)!;
    expect(shown.split('\n')).toHaveLength(1);
    expect(shown).toMatch(/^\[\d\d:\d\d:\d\d\] ERROR: token check failed /);
    expect(shown).toContain('connect ECONNREFUSED 127.0.0.1:5432');
    expect(shown).not.toMatch(/\bat \S+ \(|stack/);
    expect(shown).not.toContain('dev-knowledge');
  });

  it('keeps JSON off a terminal, without the stack', () => {
    const [line] = failure();
    const shown = JSON.parse(createLineRenderer('json', false)(line!)!) as Record<string, unknown>;
    const { err, ...rest } = JSON.parse(line!) as Record<string, unknown>;
    const { stack: _stack, ...errShown } = err as Record<string, unknown>;
    expect(shown).toEqual({ ...rest, err: errShown });
  });

  it('leaves out the frames of a stack printed outside the logger, and shows other lines as they are', () => {
    const render = createLineRenderer('pretty', false);
    expect(render('    at Server.listen (node:net:1:2)')).toBeNull();
    expect(render('Error: listen EADDRINUSE: address already in use 127.0.0.1:3103')).toBe(
      'Error: listen EADDRINUSE: address already in use 127.0.0.1:3103',
    );
    expect(render('{"not":"a log line"}')).toBe('{"not":"a log line"}');
  });
});
