import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';

// For tests only (`@bulkhead/audit/testing`): a time-stamping authority on loopback.

const run = promisify(execFile);

/** A time-stamping authority on loopback, for tests. */
export interface Tsa {
  /** Where RFC 3161 requests go (HTTP POST, application/timestamp-query). */
  url: string;
  /** Its certificate: what a verifier trusts. */
  cert: X509Certificate;
  /** The certificate's PEM file. */
  certFile: string;
  close(): Promise<void>;
}

/**
 * A real TSA for tests: OpenSSL's `ts -reply` behind a small HTTP handler on 127.0.0.1, with its own
 * self-signed certificate (extended key usage: timeStamping, as RFC 3161 requires).
 */
export async function startTsa(dir: string, name: string): Promise<Tsa> {
  const at = (file: string) => join(dir, `${name}-${file}`);
  await run('openssl', [
    ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
    ...['-keyout', at('key.pem'), '-out', at('cert.pem'), '-days', '2', '-subj', `/CN=${name}`],
    ...['-addext', 'extendedKeyUsage=critical,timeStamping'],
  ]);
  await writeFile(at('serial'), '01\n');
  await writeFile(
    at('ts.cnf'),
    [
      '[ tsa ]',
      'default_tsa = tsa_config',
      '[ tsa_config ]',
      `serial = ${at('serial')}`,
      `signer_cert = ${at('cert.pem')}`,
      `signer_key = ${at('key.pem')}`,
      'signer_digest = sha256',
      'default_policy = 1.2.3.4.1',
      'digests = sha256',
      'ess_cert_id_alg = sha256',
      '',
    ].join('\n'),
  );
  let requests = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = ++requests;
      void (async () => {
        await writeFile(at(`${n}.tsq`), Buffer.concat(chunks));
        await run('openssl', [
          'ts',
          '-reply',
          '-config',
          at('ts.cnf'),
          '-queryfile',
          at(`${n}.tsq`),
          '-out',
          at(`${n}.tsr`),
        ]);
        res
          .writeHead(200, { 'content-type': 'application/timestamp-reply' })
          .end(await readFile(at(`${n}.tsr`)));
      })().catch(() => res.writeHead(500).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/`,
    cert: new X509Certificate(await readFile(at('cert.pem'))),
    certFile: at('cert.pem'),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
