import type { Client } from '@modelcontextprotocol/client';
import type { TestApprover } from '@bulkhead/core/testing';

/** The tools' time limit (5 s), and what a client waits beyond it before it counts a call as hung. */
export const LIMIT_MS = 5_000;
export const HUNG_MS = LIMIT_MS + 5_000;

/** One MCP call's answer as a client saw it. */
export interface Answer {
  tool: string;
  args: Record<string, unknown>;
  ok: boolean;
  hung: boolean;
  text: string;
  started: number;
  ended: number;
  structured?: Record<string, unknown> | undefined;
}

/** Calls `name` and never throws: a refusal, a lost connection and a timeout each become an Answer. */
export async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Answer> {
  const started = performance.now();
  try {
    const result = await client.callTool({ name, arguments: args }, { timeout: HUNG_MS });
    const text = (result.content as { text?: string }[]).map((c) => c.text ?? '').join('\n');
    return {
      tool: name,
      args,
      ok: result.isError !== true,
      hung: false,
      text,
      started,
      ended: performance.now(),
      structured: result.structuredContent as Record<string, unknown> | undefined,
    };
  } catch (err) {
    const text =
      err instanceof Error
        ? `${err.message} ${String((err as { cause?: unknown }).cause ?? '')}`
        : String(err);
    return {
      tool: name,
      args,
      ok: false,
      hung: /timed? ?out/i.test(text),
      text,
      started,
      ended: performance.now(),
    };
  }
}

/** What one scenario's load did. */
export interface LoadRecord {
  answers: Answer[];
  /** Subjects of the tickets each open_ticket call asked for (whether or not it was answered ok). */
  ticketSubjects: string[];
  /** Approvals the approver approved (its decision committed and acknowledged). */
  approved: string[];
  /** Decisions the approver could not get acknowledged, after retrying: their error texts. */
  decideFailures: string[];
}

export interface LoadOptions {
  tag: string;
  customers: Client[];
  admins: Client[];
  approver: TestApprover;
  invoices: string[];
  /** Resolves when the load may stop. */
  until: Promise<void>;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Steady load on both servers until `until` resolves: each customer client alternates a read and
 * opening a ticket; each admin client requests a credit note (a gated call), and the approver
 * approves it through the console's decision path, retrying while the database is unreachable.
 */
export async function runLoad(o: LoadOptions): Promise<LoadRecord> {
  const rec: LoadRecord = { answers: [], ticketSubjects: [], approved: [], decideFailures: [] };
  let done = false;
  void o.until.then(() => (done = true));
  let n = 0;
  const customerLoop = async (client: Client, i: number) => {
    for (let k = 0; !done; k++) {
      if (k % 2 === 0) {
        rec.answers.push(
          await call(client, i % 2 ? 'get_account_balance' : 'list_my_tickets', i % 2 ? {} : { limit: 3 }),
        );
      } else {
        const subject = `failover ${o.tag} ${++n}`;
        rec.ticketSubjects.push(subject);
        rec.answers.push(
          await call(client, 'open_ticket', { subject, category: 'question', body: `Load during ${o.tag}.` }),
        );
      }
    }
  };
  const adminLoop = async (client: Client, i: number) => {
    for (let k = 0; !done; k++) {
      const invoice = o.invoices[(i * 7 + k) % o.invoices.length]!;
      const a = await call(client, 'issue_credit_note', {
        invoice_number: invoice,
        amount_cents: 1,
        reason: `failover ${o.tag} credit ${i}-${k}`,
      });
      rec.answers.push(a);
      const id = a.ok ? (a.structured?.approval_id as string | undefined) : undefined;
      if (!id) continue;
      // The approver keeps trying until the decision is acknowledged, or known to be taken.
      for (let attempt = 0; ; attempt++) {
        try {
          await o.approver.decide(id, 'approve', { reason: `failover ${o.tag}` });
          rec.approved.push(id);
          break;
        } catch (err) {
          const text = err instanceof Error ? err.message : String(err);
          if (/already decided \(approved/.test(text)) {
            rec.approved.push(id);
            break;
          }
          if (attempt >= 40) {
            rec.decideFailures.push(text);
            break;
          }
          await pause(250);
        }
      }
    }
  };
  await Promise.all([...o.customers.map(customerLoop), ...o.admins.map(adminLoop)]);
  return rec;
}

/** Seconds from `from` until `run` calls in a row (started after `from`, in the order answered) succeeded. */
export function secondsToRecover(answers: Answer[], from: number, run = 20): number {
  const ordered = answers.filter((a) => a.started >= from).sort((a, b) => a.ended - b.ended);
  let streak = 0;
  for (const a of ordered) {
    streak = a.ok ? streak + 1 : 0;
    if (streak === run) return (a.ended - from) / 1000;
  }
  return Number.NaN;
}
