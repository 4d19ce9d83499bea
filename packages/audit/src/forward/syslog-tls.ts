import { isIP } from 'node:net';
import { connect } from 'node:tls';
import type { AuditEvent } from '../events.ts';
import type { ForwardDestination } from './destination.ts';
import { octetFrame, syslogMessage } from './syslog.ts';

/** A syslog receiver over TLS (RFC 5425). */
export interface SyslogTarget {
  /** `tls://host:port` (port 6514, RFC 5425's, when left out). */
  url: string;
  /** PEM certificates the receiver's certificate must chain to; the system's when left out. */
  ca?: Buffer;
  /** The HOSTNAME field of every message. */
  hostname: string;
  /** How long one batch may take, from connecting to the receiver's close (default 30 s). */
  timeoutMs?: number;
}

/**
 * Forwards to a syslog receiver: RFC 5424 messages over TLS, framed by octet counting (RFC 5425).
 *
 * Syslog over TLS has no acknowledgement of its own, and a write that returned only means the bytes
 * reached this machine's kernel. So each batch is one TLS connection: the messages, then this side's
 * close (close_notify and FIN, after the last message); the batch counts as acknowledged only when the
 * receiver, having read up to that close, closes its side in answer and nothing failed on the way. A
 * receiver that stops, crashes or resets the connection before that leaves the batch unacknowledged, and
 * it is sent again whole: the receiver may then hold the part of it it had read twice.
 */
export function syslogDestination(target: SyslogTarget): ForwardDestination {
  const url = new URL(target.url);
  if (url.protocol !== 'tls:') throw new Error(`${target.url}: a syslog URL is tls://host:port`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(url.port || 6514);
  const name = `syslog:tls://${url.host || host}${url.port ? '' : ':6514'}`;
  const timeoutMs = target.timeoutMs ?? 30_000;
  return {
    name,
    deliver: (events: readonly AuditEvent[]) =>
      sendBatch(
        { host, port, ...(target.ca ? { ca: target.ca } : {}), timeoutMs },
        events.map((e) => octetFrame(syslogMessage(e, target.hostname))),
      ),
  };
}

/** One batch on one connection, resolved once the receiver closed in answer to this side's close. */
function sendBatch(
  to: { host: string; port: number; ca?: Buffer; timeoutMs: number },
  frames: Buffer[],
): Promise<void> {
  return new Promise((resolve, reject) => {
    let flushed = false;
    let answered = false;
    let failure: Error | undefined;
    const socket = connect({
      host: to.host,
      port: to.port,
      ...(to.ca ? { ca: to.ca } : {}),
      ...(isIP(to.host) ? {} : { servername: to.host }),
    });
    const timer = setTimeout(() => {
      failure ??= new Error(
        `${to.host}:${to.port} did not close the batch's connection within ${to.timeoutMs / 1000} s`,
      );
      socket.destroy();
    }, to.timeoutMs);
    socket.once('secureConnect', () => {
      for (const frame of frames) socket.write(frame);
      socket.end();
    });
    // The receiver sends nothing; reading keeps the connection flowing.
    socket.on('data', () => {});
    socket.once('finish', () => (flushed = true));
    socket.once('end', () => (answered = flushed));
    socket.once('error', (err) => (failure ??= err));
    socket.once('close', () => {
      clearTimeout(timer);
      if (failure) reject(new Error(`${to.host}:${to.port}: ${failure.message}`));
      else if (!answered)
        reject(new Error(`${to.host}:${to.port} closed the connection before the batch's end reached it`));
      else resolve();
    });
  });
}
