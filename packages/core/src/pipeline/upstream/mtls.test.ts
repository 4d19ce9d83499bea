import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { resolveUpstreams } from '../../serve/upstream-config.ts';
import { createUpstreamClient, UpstreamError } from './client.ts';
import { createUpstreams, type UpstreamRecord } from './upstreams.ts';

// Mutual TLS against a real HTTPS server on 127.0.0.1 that demands a client certificate signed by its
// CA: the kit presents the certificate and key read from the files the manifest names.

let dir: string;
let server: Server;
let url: string;
const clients: unknown[] = [];

function openssl(...args: string[]) {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bulkhead-mtls-'));
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=test CA',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
  );
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  for (const [name, cn, ext] of [
    ['server', '127.0.0.1', 'server.ext'],
    ['client', 'bulkhead-test-client', null],
  ] as const) {
    openssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=${cn}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    );
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '1',
      '-out',
      `${name}.pem`,
      ...(ext ? ['-extfile', ext] : []),
    );
  }
  server = createHttpsServer(
    {
      key: readFileSync(join(dir, 'server.key')),
      cert: readFileSync(join(dir, 'server.pem')),
      ca: readFileSync(join(dir, 'ca.pem')),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      clients.push(peer?.subject?.CN ?? null);
      res.end(`hello ${peer?.subject?.CN}`);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

it('presents the client certificate from the files its manifest names; without one the upstream refuses', async () => {
  const upstreams = createUpstreams(
    resolveUpstreams(
      {
        vault: {
          baseUrlEnv: 'VAULT_URL',
          title: 'the vault',
          auth: { type: 'mtls', certFile: 'client.pem', keyFile: 'client.key', caFile: 'ca.pem' },
          retries: 0,
        },
      },
      { VAULT_URL: url },
      dir,
    ),
  );
  const records: UpstreamRecord[] = [];
  const signal = new AbortController().signal;
  const res = await createUpstreamClient(upstreams, 'vault', { signal, records, readOnly: true }).get('/who');
  expect(res.text().text).toBe('hello bulkhead-test-client');
  expect(clients).toEqual(['bulkhead-test-client']);
  expect(JSON.stringify(records)).not.toContain('PRIVATE KEY');
  await upstreams.close();

  // The same upstream trusting the CA but with no certificate of its own: the TLS handshake is refused.
  const bare = createUpstreams([{ ...upstreams.byName.get('vault')!, auth: { type: 'none' } }]);
  const { ca } = upstreams.byName.get('vault')!.auth as { ca: string };
  const trusting = createUpstreams([
    { ...upstreams.byName.get('vault')!, auth: { type: 'mtls', cert: '', key: '', ca } },
  ]);
  for (const u of [bare, trusting]) {
    const failed = await createUpstreamClient(u, 'vault', { signal, records: [], readOnly: true })
      .get('/who')
      .catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(UpstreamError);
    expect((failed as UpstreamError).message).toMatch(/^The vault could not be reached/);
    await u.close();
  }
  expect(clients).toEqual(['bulkhead-test-client']);
});
