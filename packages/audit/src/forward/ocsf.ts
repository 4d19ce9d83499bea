import { SUCCESSFUL_OUTCOMES, type AuditEvent, type Outcome } from '../events.ts';

/** The OCSF version the events are written in. */
export const OCSF_VERSION = '1.2.0';
/** OCSF's API Activity class (category 6, Application Activity). */
export const OCSF_API_ACTIVITY = 6003;

/** How grave an outcome is, from 1 (informational) to 4 (an error of the deployment itself). */
export function outcomeGravity(outcome: Outcome): 1 | 2 | 3 | 4 {
  switch (outcome) {
    case 'invalid_arguments':
    case 'unknown_tool':
    case 'tool_error':
    case 'cancelled':
      return 2;
    case 'unauthorized':
    case 'forbidden':
    case 'payload_too_large':
    case 'bad_request':
    case 'rate_limited':
      return 3;
    case 'timeout':
    case 'unavailable':
    case 'internal_error':
      return 4;
    default:
      return 1;
  }
}

/** What an event did, as OCSF's API activities name it: reading (lists, reads) or other (a tool's call). */
function activity(method: string): { id: 2 | 3 | 99; name: string } {
  if (/\/(list|read|get)$/.test(method)) return { id: 2, name: 'Read' };
  if (method === 'approvals/decide') return { id: 3, name: 'Update' };
  return { id: 99, name: 'Other' };
}

const SUCCESS: ReadonlySet<Outcome> = new Set(SUCCESSFUL_OUTCOMES);

/**
 * An audit event as an OCSF 1.2 API Activity event (class 6003): who called (the token as the user,
 * the MCP client as the app), which operation on which server, the outcome as status, the event's id
 * and number in `metadata`; what OCSF has no attribute for (arguments, result summary) in `unmapped`.
 */
export function ocsfApiActivity(event: AuditEvent, hostname: string): Record<string, unknown> {
  const act = activity(event.method);
  const gravity = outcomeGravity(event.outcome);
  const severity = Math.max(gravity, event.injectionSuspected ? 3 : 1);
  const operation = event.method === 'tools/call' && event.tool ? event.tool : event.method;
  const client = event.clientName
    ? `${event.clientName}${event.clientVersion ? `/${event.clientVersion}` : ''}`
    : 'unknown';
  return {
    activity_id: act.id,
    activity_name: act.name,
    category_uid: 6,
    category_name: 'Application Activity',
    class_uid: OCSF_API_ACTIVITY,
    class_name: 'API Activity',
    type_uid: OCSF_API_ACTIVITY * 100 + act.id,
    type_name: `API Activity: ${act.name}`,
    time: event.at.getTime(),
    timezone_offset: 0,
    duration: event.durationMs,
    severity_id: severity,
    severity: ['', 'Informational', 'Low', 'Medium', 'High'][severity],
    status_id: SUCCESS.has(event.outcome) ? 1 : 2,
    status: SUCCESS.has(event.outcome) ? 'Success' : 'Failure',
    status_code: event.outcome,
    message: `${event.server}: ${operation} ${event.outcome}`,
    metadata: {
      version: OCSF_VERSION,
      product: { name: 'Bulkhead', vendor_name: 'Bulkhead' },
      uid: event.id,
      sequence: event.seq,
      original_time: event.at.toISOString(),
      log_name: 'audit',
      log_provider: 'bulkhead',
      correlation_uid: event.traceId ?? event.requestId,
    },
    actor: {
      app_name: client,
      ...(event.tokenId ? { user: { uid: event.tokenId, name: event.tokenLabel ?? event.tokenId } } : {}),
    },
    api: {
      operation,
      service: { name: event.server },
      request: { uid: event.requestId },
    },
    src_endpoint: { name: client },
    dst_endpoint: { svc_name: event.server, hostname },
    ...(event.approvalId ? { resources: [{ type: 'approval', uid: event.approvalId }] } : {}),
    unmapped: {
      method: event.method,
      arguments: event.arguments,
      result_summary: event.resultSummary,
      injection_suspected: event.injectionSuspected,
      db_role: event.dbRole,
      trace_id: event.traceId,
    },
  };
}
