import type { ConnectionOptions } from 'node:tls';
import type SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';
import { DeliveryError, type Deliverer, type OutboxItem } from './outbox.ts';
import { assertEmailHeaders } from './email.ts';

/** Where approved e-mails go: `BULKHEAD_SMTP_URL` and `BULKHEAD_MAIL_FROM`. */
export interface SmtpOptions {
  /**
   * `smtp://[user:pass@]host[:587]` (STARTTLS; required unless the host is loopback) or
   * `smtps://[user:pass@]host[:465]` (TLS from the first byte). User and password are AUTH's.
   */
  url: string;
  /** The `From` of every e-mail this deployment sends (one plain address). */
  from: string;
  /** How long one send may take, connection to the server's last answer (default 30 s). */
  timeoutMs?: number;
  /** TLS options (a private CA in `ca`, for instance). */
  tls?: ConnectionOptions;
}

/** The header that names the approval an e-mail carries out, so a person can trace it back. */
export const APPROVAL_HEADER = 'X-Bulkhead-Approval';
/** The header that names the outbox row an e-mail was sent from. */
export const OUTBOX_HEADER = 'X-Bulkhead-Outbox';

const LOOPBACK = /^(127\.0\.0\.1|localhost|\[::1\])$/i;

/** The parts of a `BULKHEAD_SMTP_URL`, or a sentence saying what is wrong with it. */
export function parseSmtpUrl(
  url: string,
): SMTPConnection.Options & { auth?: { user: string; pass: string } } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(
      'BULKHEAD_SMTP_URL is not a URL (smtp://user:pass@host:587 or smtps://user:pass@host:465)',
    );
  }
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:')
    throw new Error(
      `BULKHEAD_SMTP_URL must start with smtp:// (STARTTLS) or smtps:// (TLS), not ${u.protocol}//`,
    );
  const secure = u.protocol === 'smtps:';
  const user = decodeURIComponent(u.username);
  return {
    host: u.hostname,
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    // Over the network, AUTH and the message go nowhere in the clear: STARTTLS is required.
    requireTLS: !secure && !LOOPBACK.test(u.hostname),
    ...(user ? { auth: { user, pass: decodeURIComponent(u.password) } } : {}),
  };
}

/**
 * The Message-ID of an outbox row, made from its idempotency key: the same row resent carries the same
 * id, so a receiver can drop the repeat.
 */
export function messageId(item: Pick<OutboxItem, 'key' | 'server'>, from: string): string {
  return `<${item.key}.${item.server}@${from.split('@')[1]}>`;
}

/** The message of an `email` outbox row, as the bytes sent in DATA. */
async function compose(item: OutboxItem, from: string): Promise<Buffer> {
  const { default: MailComposer } = await import('nodemailer/lib/mail-composer/index.js');
  const p = item.payload as {
    to: string;
    subject?: string;
    text?: string;
    cc?: string;
    bcc?: string;
    reply_to?: string;
  };
  const headers: Record<string, string> = { [OUTBOX_HEADER]: String(item.id) };
  if (item.approvalId) headers[APPROVAL_HEADER] = item.approvalId;
  return new MailComposer({
    from,
    to: p.to,
    ...(p.cc ? { cc: p.cc } : {}),
    ...(p.reply_to ? { replyTo: p.reply_to } : {}),
    subject: p.subject ?? '',
    text: p.text ?? '',
    messageId: messageId(item, from),
    headers,
    // Nodemailer's own header would name the library; the Message-ID already says where it came from.
    xMailer: false,
  } as never)
    .compile()
    .build();
}

/** A failed SMTP step as a {@link DeliveryError}: a 5xx answer is final, anything else is retried. */
function smtpFailure(err: SMTPConnection.SMTPError, step: string): DeliveryError {
  const code = err.responseCode;
  const said = err.response ? `: ${err.response}` : err.message ? `: ${err.message}` : '';
  const command = err.command && err.command !== 'CONN' ? err.command : step;
  return new DeliveryError(`SMTP ${command} failed${said}`, code, code !== undefined && code >= 500);
}

/**
 * Sends `email` outbox rows over SMTP, one connection per e-mail: the
 * deployment's `From`, the payload's `to`/`cc`/`bcc`/`reply_to`/`subject`/
 * `text` (header fields checked again, as the outbox does), a Message-ID made
 * from the outbox row's key, and the approval in `X-Bulkhead-Approval`. A recipient or
 * message the server refuses for good (5xx) fails the row at once; a refused
 * connection, a dropped one, a 4xx answer or a server slower than `timeoutMs`
 * is retried by the outbox. The outbox's stop signal closes the connection.
 */
export function smtpDeliverer(options: SmtpOptions): Deliverer {
  const { auth, ...connection } = parseSmtpUrl(options.url);
  const timeoutMs = options.timeoutMs ?? 30_000;
  return async (item, { signal, logger }) => {
    assertEmailHeaders(item.payload);
    const p = item.payload as { to: string; cc?: string; bcc?: string };
    const message = await compose(item, options.from);
    // Loaded on the first e-mail: every server and CLI command that never sends one starts without it.
    const { default: SMTPConnection } = await import('nodemailer/lib/smtp-connection/index.js');
    const conn = new SMTPConnection({
      ...connection,
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
      ...(options.tls ? { tls: options.tls } : {}),
    });
    const limit = AbortSignal.any([AbortSignal.timeout(timeoutMs), signal]);
    let failed: (err: DeliveryError) => void = () => {};
    const ended = new Promise<never>((_, reject) => (failed = reject));
    ended.catch(() => {});
    const onAbort = () => {
      failed(
        new DeliveryError(
          signal.aborted
            ? 'SMTP send interrupted: the server is stopping'
            : `SMTP server did not finish within ${timeoutMs / 1000} s`,
        ),
      );
      conn.close();
    };
    limit.addEventListener('abort', onAbort, { once: true });
    // An error after the callbacks (a reset socket) must not become an unhandled 'error' event.
    conn.on('error', (err) => failed(smtpFailure(err, 'connection')));
    const step = <T>(
      name: string,
      run: (done: (err: SMTPConnection.SMTPError | null | undefined, v?: T) => void) => void,
    ) =>
      Promise.race([
        ended,
        new Promise<T>((resolve, reject) =>
          run((err, v) => (err ? reject(smtpFailure(err, name)) : resolve(v as T))),
        ),
      ]);
    try {
      if (limit.aborted) onAbort();
      await step('connection', (done) => conn.connect((err) => done(err)));
      if (auth) await step('AUTH', (done) => conn.login(auth, (err) => done(err)));
      const recipients = [p.to, p.cc, p.bcc].filter((r): r is string => !!r);
      const info = await step<SMTPConnection.SentMessageInfo>('send', (done) =>
        conn.send({ from: options.from, to: recipients }, message, (err, info) => done(err, info)),
      );
      // All refused is an error above; some refused still delivered the e-mail to the rest, so it is not resent.
      if (info.rejected.length)
        logger.warn(
          { rejected: info.rejected },
          'SMTP server refused some recipients; the others have the e-mail',
        );
      conn.quit();
      return { statusCode: Number(/^\d{3}/.exec(info.response)?.[0] ?? 250) };
    } catch (err) {
      conn.close();
      throw err instanceof DeliveryError
        ? err
        : new DeliveryError(`SMTP send failed: ${(err as Error).message}`);
    } finally {
      limit.removeEventListener('abort', onAbort);
    }
  };
}
