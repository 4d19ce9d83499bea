import type { AuditEvent } from '../events.ts';
import { ocsfApiActivity, outcomeGravity } from './ocsf.ts';

/** RFC 5424's facility 13, "log audit". */
const LOG_AUDIT = 13;

/** RFC 5424's severities by gravity: informational, notice, warning, error. */
const SEVERITY = { 1: 6, 2: 5, 3: 4, 4: 3 } as const;

/** A header field of RFC 5424: printable US-ASCII, no space, at most `max` characters; "-" when empty. */
function headerField(text: string, max: number): string {
  const clean = text.replace(/[^\x21-\x7e]/g, '').slice(0, max);
  return clean || '-';
}

/**
 * One audit event as an RFC 5424 syslog message: facility "log audit", the severity from the outcome
 * (warning at least for a suspected injection), the event's time, APP-NAME `bulkhead`, MSGID `audit`,
 * and as MSG the event as one OCSF API Activity object in JSON, UTF-8 behind the BOM RFC 5424 asks for.
 */
export function syslogMessage(event: AuditEvent, hostname: string): string {
  const gravity = Math.max(outcomeGravity(event.outcome), event.injectionSuspected ? 3 : 1) as 1 | 2 | 3 | 4;
  const pri = LOG_AUDIT * 8 + SEVERITY[gravity];
  const header = `<${pri}>1 ${event.at.toISOString()} ${headerField(hostname, 255)} bulkhead - audit -`;
  return `${header} \uFEFF${JSON.stringify(ocsfApiActivity(event, hostname))}`;
}

/** RFC 5425's octet-counting framing: the message's length in octets, a space, the message. */
export function octetFrame(message: string): Buffer {
  const body = Buffer.from(message, 'utf8');
  return Buffer.concat([Buffer.from(`${body.length} `, 'ascii'), body]);
}
