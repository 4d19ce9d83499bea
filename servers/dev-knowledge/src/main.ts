import { ConfigError, ownGrants, runServer } from '@bulkhead/core';
import { loadEnv } from './env.ts';
import { devKnowledgeServer } from './server.ts';

try {
  await runServer(devKnowledgeServer, {
    env: loadEnv(),
    stdio: process.argv.includes('--stdio'),
    grantsSql: ownGrants(import.meta.url),
  });
} catch (err) {
  process.stderr.write(
    `${devKnowledgeServer.name}: ${err instanceof ConfigError ? err.message : String(err)}\n`,
  );
  process.exit(1);
}
