import { ConfigError, ownGrants, runServer } from '@bulkhead/core';
import { loadEnv } from './env.ts';
import { opsServer } from './server.ts';

try {
  const env = loadEnv();
  await runServer(opsServer, {
    env,
    upstreams: env.upstreams,
    stdio: process.argv.includes('--stdio'),
    grantsSql: ownGrants(import.meta.url),
  });
} catch (err) {
  process.stderr.write(`${opsServer.name}: ${err instanceof ConfigError ? err.message : String(err)}\n`);
  process.exit(1);
}
