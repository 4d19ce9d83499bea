import { randomBytes } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { storeCaughtMail, type CaughtMail } from './caught-mail.ts';
import { APPROVAL_HEADER, OUTBOX_HEADER } from './smtp.ts';

/** How {@link startMailCatcher} listens. */
export interface MailCatcherOptions {
  /** Default 127.0.0.1: the catcher is for this machine only. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** When set, AUTH with this user and password is required before MAIL FROM. */
  auth?: { user: string; pass: string };
  /** A key and certificate: STARTTLS is offered (and not otherwise). */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /** Called with each e-mail received, before the server answers 250; a throw answers 451 (try again). */
  onMail?: (mail: CaughtMail) => Promise<void> | void;
}

/** A running catcher. */
export interface MailCatcher {
  /** `smtp://[user:pass@]127.0.0.1:<port>`: what `BULKHEAD_SMTP_URL` is set to. */
  url: string;
  port: number;
  /** Every e-mail received, oldest first. */
  readonly mails: readonly CaughtMail[];
  /** Resolves with the `n`-th e-mail received (1-based; default: the next one). */
  received(n?: number): Promise<CaughtMail>;
  close(): Promise<void>;
}

/**
 * A real SMTP server on loopback that accepts every e-mail and keeps it: `pnpm start` points the
 * servers at one and stores what it receives for the console; tests send to one. It speaks SMTP
 * as any server does (EHLO, optional STARTTLS and AUTH, MAIL, RCPT, DATA), so what it shows is
 * what a sender really delivered.
 */
export async function startMailCatcher(options: MailCatcherOptions = {}): Promise<MailCatcher> {
  const mails: CaughtMail[] = [];
  const waiting: { n: number; resolve: (m: CaughtMail) => void }[] = [];
  const serverOptions: SMTPServerOptions = {
    logger: false,
    banner: 'Bulkhead mail catcher',
    disabledCommands: [...(options.tls ? [] : ['STARTTLS']), ...(options.auth ? [] : ['AUTH'])],
    authOptional: !options.auth,
    // On loopback a password in the clear crosses no network.
    allowInsecureAuth: true,
    ...(options.tls ? { key: options.tls.key, cert: options.tls.cert } : {}),
    onAuth(auth, _session, callback) {
      const ok = options.auth && auth.username === options.auth.user && auth.password === options.auth.pass;
      if (!ok) return callback(new Error('Invalid username or password'));
      callback(null, { user: auth.username });
    },
    onData(stream, session, callback) {
      simpleParser(stream)
        .then(async (parsed) => {
          const header = (name: string) => {
            const v = parsed.headers.get(name.toLowerCase());
            return typeof v === 'string' ? v : null;
          };
          const outbox = header(OUTBOX_HEADER);
          const mail: CaughtMail = {
            receivedAt: new Date(),
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            messageId: parsed.messageId ?? null,
            approvalId: header(APPROVAL_HEADER),
            outboxId: outbox && /^\d+$/.test(outbox) ? Number(outbox) : null,
          };
          await options.onMail?.(mail);
          mails.push(mail);
          for (const w of waiting.filter((w) => w.n === mails.length)) w.resolve(mail);
          callback();
        })
        .catch((err: Error) => {
          const refusal = Object.assign(new Error(`not kept: ${err.message}`), { responseCode: 451 });
          callback(refusal);
        });
    },
  };
  const server = new SMTPServer(serverOptions);
  // A client that goes away mid-message is an error of that connection, not of the catcher.
  server.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.server.address() as { port: number };
  const cred = options.auth
    ? `${encodeURIComponent(options.auth.user)}:${encodeURIComponent(options.auth.pass)}@`
    : '';
  return {
    url: `smtp://${cred}${options.host ?? '127.0.0.1'}:${port}`,
    port,
    mails,
    received(n = mails.length + 1) {
      if (mails.length >= n) return Promise.resolve(mails[n - 1]!);
      return new Promise((resolve) => waiting.push({ n, resolve }));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * The catcher `pnpm start` runs for its servers: SMTP AUTH required, with a password made at this start
 * (in its URL, which only the servers it starts are given), so that no other local process can hand it
 * mail; and of what arrives only what an approval's outbox row sent is kept for the "Sent mail" page.
 */
export function startApprovalMailCatcher(
  sql: Sql,
  options: Omit<MailCatcherOptions, 'auth' | 'onMail'> = {},
): Promise<MailCatcher> {
  return startMailCatcher({
    ...options,
    auth: { user: 'bulkhead', pass: randomBytes(24).toString('base64url') },
    onMail: async (mail) => void (await storeCaughtMail(sql, mail)),
  });
}
