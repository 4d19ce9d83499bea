import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A CA and a server certificate for 127.0.0.1 signed by it, made by OpenSSL in `dir`. */
export async function makeCertificates(dir: string): Promise<{ ca: string; cert: string; key: string }> {
  const at = (f: string) => join(dir, f);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    at('ca.key'),
    '-out',
    at('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=Test SIEM CA',
  ]);
  await run('openssl', [
    'req',
    ...ec,
    '-keyout',
    at('server.key'),
    '-out',
    at('server.csr'),
    '-subj',
    '/CN=127.0.0.1',
  ]);
  await writeFile(at('server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  await run('openssl', [
    ...['x509', '-req', '-in', at('server.csr'), '-CA', at('ca.pem'), '-CAkey', at('ca.key')],
    ...['-CAcreateserial', '-out', at('server.pem'), '-days', '2', '-extfile', at('server.ext')],
  ]);
  return { ca: at('ca.pem'), cert: at('server.pem'), key: at('server.key') };
}

/** Debian's rsyslogd, receiving syslog over TLS on a loopback port. */
export interface Rsyslog {
  /** Where it writes every message it receives, one a line. */
  file: string;
  start(): Promise<void>;
  /** Stops it as `systemctl stop` does (SIGTERM): it writes what it received, then exits. */
  stop(): Promise<void>;
  output(): string;
}

/**
 * An rsyslogd of its own (no system configuration, no other inputs): `imtcp` on 127.0.0.1:`port` over TLS
 * with the OpenSSL network stream driver and the given certificate, writing each message it parsed as
 * `<PRI> VERSION APP-NAME MSGID MSG` (RFC 5424's fields as rsyslog read them) to `file`.
 */
export async function rsyslogOnLoopback(
  dir: string,
  port: number,
  certs: { ca: string; cert: string; key: string },
): Promise<Rsyslog> {
  const work = join(dir, 'rsyslog');
  await mkdir(work, { recursive: true });
  const file = join(dir, 'received.log');
  const conf = join(dir, 'rsyslog.conf');
  await writeFile(
    conf,
    [
      `global(workDirectory="${work}" maxMessageSize="256k"`,
      `  defaultNetstreamDriver="ossl" defaultNetstreamDriverCAFile="${certs.ca}"`,
      `  defaultNetstreamDriverCertFile="${certs.cert}" defaultNetstreamDriverKeyFile="${certs.key}")`,
      'module(load="imtcp" streamDriver.name="ossl" streamDriver.mode="1" streamDriver.authMode="anon")',
      `input(type="imtcp" address="127.0.0.1" port="${port}")`,
      'template(name="fields" type="string" string="<%PRI%> %PROTOCOL-VERSION% %APP-NAME% %MSGID% %msg%\\n")',
      `action(type="omfile" file="${file}" template="fields")`,
      '',
    ].join('\n'),
  );
  let child: ChildProcess | undefined;
  let output = '';
  return {
    file,
    output: () => output,
    async start() {
      child = spawn('/usr/sbin/rsyslogd', ['-n', '-f', conf, '-i', join(work, 'rsyslogd.pid')], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      const started = child;
      // Listening once a TCP connection is accepted; bounded only against an rsyslogd that hangs.
      for (let tries = 0; ; tries++) {
        if (started.exitCode !== null) throw new Error(`rsyslogd exited: ${output}`);
        const open = await new Promise<boolean>((resolve) => {
          const s = connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
          s.once('error', () => resolve(false));
        });
        if (open) return;
        if (tries > 300) throw new Error(`rsyslogd does not listen on ${port}: ${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill('SIGTERM');
      });
    },
  };
}
