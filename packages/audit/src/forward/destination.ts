import type { AuditEvent } from '../events.ts';

/** Where sealed events are forwarded to. */
export interface ForwardDestination {
  /** Its name, the key of its durable position: `syslog:tls://host:port`, `ocsf:/path/of/file`. */
  name: string;
  /**
   * Delivers `events` in this order; resolves only once the destination acknowledged all of them, and
   * rejects otherwise (then the whole batch is sent again).
   */
  deliver(events: readonly AuditEvent[]): Promise<void>;
}
