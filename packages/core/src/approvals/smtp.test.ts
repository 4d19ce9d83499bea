import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMailCatcher } from './mail-catcher.ts';
import { DEFAULT_RETRY, DeliveryError, dispatchOutbox, messageId, smtpDeliverer } from './index.ts';

let db: TestDatabase;
let certDir = '';
let tls: { key: string; cert: string };
const logger = pino({ level: 'silent' });
const FROM = 'billing@bulkhead.test';

beforeAll(async () => {
  db = await createTestDatabase();
  // A self-signed certificate for STARTTLS, trusted by the sender as its own CA.
  certDir = mkdtempSync(join(tmpdir(), 'bulkhead-smtp-tls-'));
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
    '-keyout', join(certDir, 'key.pem'), '-out', join(certDir, 'cert.pem'),
  ], { stdio: 'ignore' }); // prettier-ignore
  tls = {
    key: readFileSync(join(certDir, 'key.pem'), 'utf8'),
    cert: readFileSync(join(certDir, 'cert.pem'), 'utf8'),
  };
});
afterAll(async () => {
  await db.drop();
  rmSync(certDir, { recursive: true, force: true });
});

/** Queues one e-mail of `server` and returns its outbox id. */
async function queue(server: string, to = 'kunde@nordlicht.example'): Promise<number> {
  const [row] = await db.sql<{ id: string }[]>`
    insert into bulkhead_outbox (server, kind, payload)
    values (${server}, 'email', ${db.sql.json({ to, subject: 'Invoice R-2026-0001', text: 'Dear Nordlicht,\n\nplease pay.\n' })})
    returning id`;
  return Number(row!.id);
}

/** The idempotency key the database gave outbox row `id`. */
async function keyOf(id: number): Promise<string> {
  const [row] = await db.sql<
    { key: string }[]
  >`select idempotency_key as key from bulkhead_outbox where id = ${id}`;
  return row!.key;
}

async function outboxRow(id: number) {
  const [row] = await db.sql<{ status: string; attempts: number; last_error: string | null }[]>`
    select status, attempts, last_error from bulkhead_outbox where id = ${id}`;
  const attempts = await db.sql<{ ok: boolean; status_code: number | null }[]>`
    select ok, status_code from bulkhead_outbox_attempts where outbox_id = ${id} order by attempt`;
  return { ...row!, attempts: attempts.map((a) => ({ ok: a.ok, status_code: a.status_code })) };
}

/** A real SMTP server on loopback with test-chosen misbehaviour; `sockets` are its client connections. */
async function smtpServer(options: SMTPServerOptions, host = '127.0.0.1') {
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    ...options,
  });
  server.on('error', () => {});
  const sockets: Socket[] = [];
  server.server.on('connection', (s: Socket) => sockets.push(s));
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.server.address() as { port: number };
  return {
    url: `smtp://${host}:${port}`,
    sockets,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Drains an SMTP DATA stream to a string. */
async function read(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
}

/** Runs the dispatcher for `server` until no row of it is due, as the executor's passes do. */
async function dispatch(server: string, deliver: ReturnType<typeof smtpDeliverer>, baseDelayMs = 0) {
  const policy = { ...DEFAULT_RETRY, baseDelayMs };
  for (let pass = 0; pass < 5; pass++) {
    const { handled } = await dispatchOutbox(db.sql, server, { email: deliver }, logger, policy);
    if (!handled) return;
  }
}

describe('the SMTP deliverer against a real SMTP server', () => {
  it('sends over STARTTLS with AUTH: recipient, subject, body, From, Message-ID and the approval header arrive', async () => {
    const catcher = await startMailCatcher({ auth: { user: 'bulkhead', pass: 's3cret pass' }, tls });
    try {
      const id = await queue('smtp-ok');
      const deliver = smtpDeliverer({
        url: catcher.url.replace('127.0.0.1', 'localhost'),
        from: FROM,
        tls: { ca: tls.cert },
      });
      await dispatch('smtp-ok', deliver);
      const mail = await catcher.received(1);
      expect(mail).toEqual({
        receivedAt: expect.any(Date),
        from: FROM,
        to: ['kunde@nordlicht.example'],
        subject: 'Invoice R-2026-0001',
        text: 'Dear Nordlicht,\n\nplease pay.\n',
        messageId: messageId({ key: await keyOf(id), server: 'smtp-ok' }, FROM),
        approvalId: null,
        outboxId: id,
      });
      expect(await outboxRow(id)).toEqual({
        status: 'delivered',
        attempts: [{ ok: true, status_code: 250 }],
        last_error: null,
      });
    } finally {
      await catcher.close();
    }
  });

  it('fails the row at once when the server refuses the password (535): AUTH is never skipped', async () => {
    const catcher = await startMailCatcher({ auth: { user: 'bulkhead', pass: 'right' }, tls });
    try {
      const id = await queue('smtp-auth');
      const url = `smtp://bulkhead:wrong@localhost:${catcher.port}`;
      await dispatch('smtp-auth', smtpDeliverer({ url, from: FROM, tls: { ca: tls.cert } }));
      const row = await outboxRow(id);
      expect(row).toMatchObject({ status: 'failed', attempts: [{ ok: false, status_code: 535 }] });
      expect(row.last_error).toBe('SMTP AUTH PLAIN failed: 535 Invalid username or password');
      expect(catcher.mails).toEqual([]);
    } finally {
      await catcher.close();
    }
  });

  it('fails the row for good when the server refuses the recipient (550), and records the answer', async () => {
    const server = await smtpServer({
      onRcptTo: (address, _s, cb) =>
        cb(Object.assign(new Error(`No such user ${address.address}`), { responseCode: 550 })),
    });
    try {
      const id = await queue('smtp-refused', 'gone@nordlicht.example');
      await dispatch('smtp-refused', smtpDeliverer({ url: server.url, from: FROM }));
      expect(await outboxRow(id)).toEqual({
        status: 'failed',
        attempts: [{ ok: false, status_code: 550 }],
        last_error: 'SMTP RCPT TO failed: 550 No such user gone@nordlicht.example',
      });
    } finally {
      await server.close();
    }
  });

  it('retries a 4xx refusal (try again later) and delivers on the next attempt', async () => {
    let refusals = 1;
    const got: string[] = [];
    const server = await smtpServer({
      onRcptTo: (_a, _s, cb) =>
        refusals-- > 0 ? cb(Object.assign(new Error('Greylisted, try again'), { responseCode: 451 })) : cb(),
      onData: (stream, _s, cb) => void read(stream).then((t) => (got.push(t), cb())),
    });
    try {
      const id = await queue('smtp-grey');
      await dispatch('smtp-grey', smtpDeliverer({ url: server.url, from: FROM }));
      expect(await outboxRow(id)).toMatchObject({
        status: 'delivered',
        attempts: [
          { ok: false, status_code: 451 },
          { ok: true, status_code: 250 },
        ],
      });
      expect(got).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('retries when the server drops the connection mid-message, and the e-mail arrives once', async () => {
    let drops = 1;
    const got: string[] = [];
    const server = await smtpServer({
      onData(stream, _s, cb) {
        if (drops-- > 0) {
          // The first bytes of the message arrive, then the connection is gone.
          stream.once('data', () => server.sockets.forEach((s) => s.destroy()));
          return;
        }
        void read(stream).then((t) => (got.push(t), cb()));
      },
    });
    try {
      const id = await queue('smtp-drop');
      await dispatch('smtp-drop', smtpDeliverer({ url: server.url, from: FROM }));
      const row = await outboxRow(id);
      expect(row).toMatchObject({
        status: 'delivered',
        attempts: [
          { ok: false, status_code: null },
          { ok: true, status_code: 250 },
        ],
      });
      expect(got).toHaveLength(1);
      expect(got[0]).toContain('Subject: Invoice R-2026-0001');
      const [first] = await db.sql<{ error: string }[]>`
        select error from bulkhead_outbox_attempts where outbox_id = ${id} and attempt = 1`;
      console.log(`dropped mid-message, attempt 1 recorded as: ${first!.error}`);
    } finally {
      await server.close();
    }
  });

  it('ends a send to a server that stops answering at its time limit, and the row is retried', async () => {
    let stalls = 1;
    const got: string[] = [];
    const server = await smtpServer({
      onData(stream, _s, cb) {
        // The first message is read in full and never answered, as an overloaded server does.
        if (stalls-- > 0) return void read(stream);
        void read(stream).then((t) => (got.push(t), cb()));
      },
    });
    try {
      const id = await queue('smtp-slow');
      const started = performance.now();
      await dispatch('smtp-slow', smtpDeliverer({ url: server.url, from: FROM, timeoutMs: 500 }));
      console.log(
        `slow server: two attempts took ${Math.round(performance.now() - started)} ms (limit 500 ms)`,
      );
      const row = await outboxRow(id);
      expect(row).toMatchObject({
        status: 'delivered',
        attempts: [{ ok: false }, { ok: true, status_code: 250 }],
      });
      const [first] = await db.sql<{ error: string }[]>`
        select error from bulkhead_outbox_attempts where outbox_id = ${id} and attempt = 1`;
      expect(first!.error).toBe('SMTP server did not finish within 0.5 s');
      expect(got).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it("honours the outbox's stop signal: a send in progress ends at once", async () => {
    const server = await smtpServer({ onData: (stream) => void read(stream) });
    try {
      const id = await queue('smtp-stop');
      const stop = new AbortController();
      const deliver = smtpDeliverer({ url: server.url, from: FROM, timeoutMs: 600_000 });
      const sending = deliver(
        {
          id,
          server: 'smtp-stop',
          approvalId: null,
          kind: 'email',
          key: `bulkhead-outbox-${'0'.repeat(32)}`,
          attempt: 1,
          payload: { to: 'a@b.example', subject: 's', text: 't' },
        },
        { logger, signal: stop.signal },
      );
      while (server.sockets.length === 0) await new Promise((r) => setTimeout(r, 10));
      stop.abort();
      await expect(sending).rejects.toEqual(
        new DeliveryError('SMTP send interrupted: the server is stopping'),
      );
    } finally {
      await server.close();
    }
  });

  it('refuses an smtp:// URL to another host without STARTTLS: AUTH never crosses a network in the clear', async () => {
    // A server offering no STARTTLS at an address other than 127.0.0.1 or localhost (a network, as far as the sender knows).
    const server = await smtpServer({}, '127.0.0.2');
    try {
      const deliver = smtpDeliverer({ url: server.url, from: FROM, timeoutMs: 5_000 });
      await expect(
        deliver(
          {
            id: 1,
            server: 'x',
            approvalId: null,
            kind: 'email',
            key: `bulkhead-outbox-${'0'.repeat(32)}`,
            attempt: 1,
            payload: { to: 'a@b.example', subject: 's', text: 't' },
          },
          { logger, signal: new AbortController().signal },
        ),
      ).rejects.toThrow(/STARTTLS/);
    } finally {
      await server.close();
    }
  });
});
