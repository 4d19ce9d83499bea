import type { Sql } from '@bulkhead/db';

/** An e-mail as an SMTP server received it: the envelope, the parsed message, and where it came from. */
export interface CaughtMail {
  receivedAt: Date;
  /** The envelope sender (MAIL FROM). */
  from: string;
  /** The envelope recipients (RCPT TO). */
  to: string[];
  subject: string;
  /** The plain-text body. */
  text: string;
  messageId: string | null;
  /** The `X-Bulkhead-Approval` header: the approval the e-mail carries out. */
  approvalId: string | null;
  /** The `X-Bulkhead-Outbox` header: the outbox row it was sent from. */
  outboxId: number | null;
}

/**
 * Keeps `mail` for the console's "Sent mail" page, and says whether it did: only an e-mail whose
 * `X-Bulkhead-Outbox` row is an e-mail of the approval its `X-Bulkhead-Approval` names, so that a
 * message any sender made up (headers are the sender's words) never shows as what an approval sent.
 * A Message-ID caught before is not kept twice.
 */
export async function storeCaughtMail(sql: Sql, mail: CaughtMail): Promise<boolean> {
  if (mail.outboxId === null || mail.approvalId === null) return false;
  const [own] = await sql`
    select 1 from bulkhead_outbox
    where id = ${mail.outboxId} and approval_id = ${mail.approvalId} and kind = 'email'`;
  if (!own) return false;
  await sql`
    insert into bulkhead_caught_mail
      (received_at, mail_from, rcpt_to, subject, body, message_id, approval_id, outbox_id)
    values (${mail.receivedAt}, ${mail.from}, ${mail.to}, ${mail.subject}, ${mail.text}, ${mail.messageId},
      ${mail.approvalId}, ${mail.outboxId})
    on conflict (message_id) do nothing`;
  return true;
}

/** The newest `limit` caught e-mails, newest first. */
export async function listCaughtMail(sql: Sql, limit = 50): Promise<CaughtMail[]> {
  const rows = await sql<(Omit<CaughtMail, 'outboxId'> & { outboxId: string | null })[]>`
    select received_at as "receivedAt", mail_from as "from", rcpt_to as "to", subject, body as text,
      message_id as "messageId", approval_id as "approvalId", outbox_id as "outboxId"
    from bulkhead_caught_mail order by received_at desc, id desc limit ${limit}`;
  return rows.map((r) => ({ ...r, outboxId: r.outboxId === null ? null : Number(r.outboxId) }));
}
