import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UPSTREAMS } from '../env.ts';
import { __UPSTREAM_ANSWER__ } from '../stand-ins.ts';

/** What every GET gets from the stand-in: an answer the probe's tool takes. */
const ANSWER = __UPSTREAM_ANSWER__;

/**
 * What __SERVER_NAME__ reaches, for the cross-server tests (test/upstreams.ts finds this file by the manifest's
 * `bulkhead.upstreams`): a stand-in for __UPSTREAM__ on 127.0.0.1. Replace it with a real instance where
 * one can run in tests.
 */
export async function startTestUpstreams(): Promise<{ env: Record<string, string>; close(): Promise<void> }> {
  const standIn = createServer((req, res) => {
    if (req.method !== 'GET') return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(ANSWER));
  });
  await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
  const env: Record<string, string> = {};
  for (const upstream of Object.values(UPSTREAMS)) {
    env[upstream.baseUrlEnv] = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
    for (const [key, value] of Object.entries(upstream.auth))
      if (key.endsWith('Env') && typeof value === 'string') env[value] = 'test-secret';
  }
  return {
    env,
    close: async () => {
      standIn.closeAllConnections();
      await new Promise((resolve) => standIn.close(resolve));
    },
  };
}
