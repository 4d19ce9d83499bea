import { injectTraceHeaders } from '../pipeline/observability/tracing.ts';
import { DeliveryError, type Deliverer } from './outbox.ts';
import type { ApprovalRecord } from './store.ts';

/** The console address a notification links to when `BULKHEAD_CONSOLE_URL` is unset. */
export const DEFAULT_CONSOLE_URL = 'http://127.0.0.1:3100';

/** The outbox kind of an approval notification. */
export const APPROVAL_WEBHOOK = 'approval_webhook';

/** Where an approval is reviewed in the console. */
export function consoleLink(consoleUrl: string | undefined, id: string): string {
  return `${(consoleUrl ?? DEFAULT_CONSOLE_URL).replace(/\/+$/, '')}/approvals/${id}`;
}

/**
 * Escapes text for Slack's message syntax, which reads `<…>` as links and
 * mentions (`<https://x|Approve>`, `<!channel>`): `&`, `<` and `>` become
 * entities, as Slack requires, so customer text in a preview stays text.
 */
export function slackEscape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/**
 * The webhook body: the approval (redacted arguments only), a link to the
 * console, and a Slack-compatible `text` so that a Slack incoming webhook
 * shows a readable message without any adapter. Every value in `text` is
 * escaped ({@link slackEscape}); the only markup is the console link.
 */
export function approvalWebhookPayload(approval: ApprovalRecord, consoleUrl: string | undefined) {
  const url = consoleLink(consoleUrl, approval.id);
  const e = slackEscape;
  return {
    type: 'approval.requested',
    text: `Approval needed on ${e(approval.server)}: ${e(approval.preview)}\nRequested by ${e(approval.requestedByLabel ?? 'unknown')} with ${e(approval.tool)}; expires ${approval.expiresAt.toISOString()}.\n<${e(url)}|Review ${e(approval.id)} in the console>`,
    url,
    approval: {
      id: approval.id,
      server: approval.server,
      tool: approval.tool,
      status: approval.status,
      preview: approval.preview,
      arguments: approval.argumentsRedacted,
      arguments_hash: approval.argumentsHash,
      requested_by: approval.requestedByLabel,
      requested_at: approval.requestedAt.toISOString(),
      expires_at: approval.expiresAt.toISOString(),
    },
  };
}

/**
 * POSTs the payload as JSON to `url` with the outbox row's key as `Idempotency-Key`;
 * any answer other than 2xx, a network error or 10 s without an answer is a
 * failed attempt (retried by the dispatcher).
 */
export function webhookDeliverer(url: string, timeoutMs = 10_000): Deliverer {
  return async (item, { signal }) => {
    let res: Response;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'idempotency-key': item.key,
      'x-bulkhead-delivery-attempt': String(item.attempt),
    };
    // The delivery's span (`deliver <kind>`), when traced: the receiver may continue its trace.
    injectTraceHeaders(headers);
    try {
      res = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(item.payload),
        signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), signal]),
        redirect: 'error',
      });
    } catch (err) {
      throw new DeliveryError(`webhook unreachable: ${(err as Error).message}`);
    }
    await res.body?.cancel();
    if (!res.ok) throw new DeliveryError(`webhook answered HTTP ${res.status}`, res.status);
    return { statusCode: res.status };
  };
}
