import { describe, expect, it } from 'vitest';
import { manifestProblems, manifestSchema } from './manifest.ts';

/** The problems the schema finds in `bulkhead`, as the readers print them. */
function problems(bulkhead: unknown): string[] {
  const parsed = manifestSchema.safeParse(bulkhead);
  return parsed.success ? [] : manifestProblems(parsed.error);
}

describe('manifestSchema', () => {
  it('fills in what a manifest leaves out', () => {
    expect(manifestSchema.parse({ port: 3105 })).toEqual({
      kind: 'mcp',
      port: 3105,
      scopes: [],
      gated: false,
      customerBound: false,
      upstreams: {},
    });
    expect(
      manifestSchema.parse({ port: 3105, upstreams: { alerts: { baseUrlEnv: 'ALERTS_URL' } } }).upstreams,
    ).toEqual({
      alerts: {
        baseUrlEnv: 'ALERTS_URL',
        auth: { type: 'none' },
        maxResponseBytes: 1024 * 1024,
        timeoutMs: 5000,
        retries: 2,
      },
    });
  });

  it('names the field of each problem, down to an upstream auth kind', () => {
    expect(problems({ port: 0, kind: 'web' })).toEqual([
      'bulkhead.kind: "mcp" or "console"',
      'bulkhead.port: a whole number from 1 to 65535',
    ]);
    expect(
      problems({
        port: 3105,
        upstreams: { alerts: { baseUrlEnv: 'A', auth: { type: 'bearer', tokenEnv: 'x' } } },
      }),
    ).toEqual(['bulkhead.upstreams.alerts.auth.tokenEnv: an environment variable name (A-Z, 0-9, _)']);
    expect(
      problems({ port: 3105, upstreams: { alerts: { baseUrlEnv: 'A', auth: { type: 'kerberos' } } } }),
    ).toEqual([
      "bulkhead.upstreams.alerts.auth.type: Invalid discriminator value. Expected 'bearer' | 'basic' | 'header' | 'mtls' | 'none'",
    ]);
  });
});
