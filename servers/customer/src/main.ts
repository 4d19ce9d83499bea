import { ConfigError, ownGrants, runServer } from '@bulkhead/core';
import { loadEnv } from './env.ts';
import { customerServer } from './server.ts';

try {
  await runServer(customerServer, {
    env: loadEnv(),
    stdio: process.argv.includes('--stdio'),
    grantsSql: ownGrants(import.meta.url),
  });
} catch (err) {
  process.stderr.write(`${customerServer.name}: ${err instanceof ConfigError ? err.message : String(err)}\n`);
  process.exit(1);
}
