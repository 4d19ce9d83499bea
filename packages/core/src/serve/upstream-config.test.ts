import { describe, expect, it } from 'vitest';
import { ConfigError } from './config.ts';
import { ownManifest } from './upstream-config.ts';

describe('ownManifest', () => {
  it("reads a deployable's manifest through the one schema, defaults filled in", () => {
    expect(ownManifest({ bulkhead: { port: 3999 } })).toEqual({
      kind: 'mcp',
      port: 3999,
      scopes: [],
      gated: false,
      customerBound: false,
      upstreams: {},
    });
    const alerts = ownManifest({
      bulkhead: { port: 3998, upstreams: { alerts: { baseUrlEnv: 'ALERTS_URL' } } },
    });
    // The schema's defaults for an upstream entry the manifest leaves short.
    expect(alerts.upstreams.alerts).toEqual({
      baseUrlEnv: 'ALERTS_URL',
      auth: { type: 'none' },
      maxResponseBytes: 1024 * 1024,
      timeoutMs: 5000,
      retries: 2,
    });
  });

  it('names the field the schema refuses, as discovery does', () => {
    const refused = () => ownManifest({ bulkhead: { port: 70000, upstreams: { Bad: {} } } });
    expect(refused).toThrow(ConfigError);
    expect(refused).toThrow(/bulkhead\.port: a whole number from 1 to 65535 \(in package\.json\)/);
    expect(refused).toThrow(/bulkhead\.upstreams\.Bad/);
    expect(() => ownManifest({})).toThrow(/bulkhead/);
  });
});
