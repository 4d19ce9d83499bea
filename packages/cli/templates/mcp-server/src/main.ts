import { ConfigError, ownGrants, runServer } from '@bulkhead/core';
import { loadEnv, MCP_UPSTREAM } from './env.ts';
import { __SERVER__ } from './server.ts';
import { PINS } from './tools/index.ts';

try {
  const env = loadEnv();
  await runServer(__SERVER__, {
    env,
    mcpUpstreams: env.mcpUpstreams,
    // The upstream's tools not chosen when it was pinned: any other it lists later is new drift.
    mcpKnownTools: { [MCP_UPSTREAM.name]: PINS.others },
    stdio: process.argv.includes('--stdio'),
    grantsSql: ownGrants(import.meta.url),
  });
} catch (err) {
  process.stderr.write(`${__SERVER__.name}: ${err instanceof ConfigError ? err.message : String(err)}\n`);
  process.exit(1);
}
