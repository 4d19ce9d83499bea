import { ConfigError, ownGrants, runServer } from '@bulkhead/core';
import { loadEnv } from './env.ts';
import { __SERVER__ } from './server.ts';

try {
  // @if upstream
  const env = loadEnv();
  await runServer(__SERVER__, {
    env,
    upstreams: env.upstreams,
    stdio: process.argv.includes('--stdio'),
    grantsSql: ownGrants(import.meta.url),
  });
  // @else
  await runServer(__SERVER__, {
    env: loadEnv(),
    stdio: process.argv.includes('--stdio'),
    grantsSql: ownGrants(import.meta.url),
  });
  // @end
} catch (err) {
  process.stderr.write(`${__SERVER__.name}: ${err instanceof ConfigError ? err.message : String(err)}\n`);
  process.exit(1);
}
