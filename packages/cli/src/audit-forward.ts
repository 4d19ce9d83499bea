import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import {
  ocsfFileDestination,
  startForwarder,
  syslogDestination,
  type ForwardDestination,
  type Forwarder,
} from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import type { CliEnv } from './env.ts';
import { CliError } from './io.ts';

/**
 * The destinations sealed events are forwarded to, from the environment: `BULKHEAD_AUDIT_SYSLOG_URL`
 * (with `BULKHEAD_AUDIT_SYSLOG_CA_FILE`) and `BULKHEAD_AUDIT_OCSF_FILE`; none when neither is set.
 */
export async function auditDestinations(env: CliEnv): Promise<ForwardDestination[]> {
  const destinations: ForwardDestination[] = [];
  const host = hostname();
  if (env.BULKHEAD_AUDIT_SYSLOG_URL) {
    const caFile = env.BULKHEAD_AUDIT_SYSLOG_CA_FILE;
    const ca = caFile
      ? await readFile(resolve(env.cwd, caFile)).catch((err: NodeJS.ErrnoException) => {
          throw new CliError(
            `BULKHEAD_AUDIT_SYSLOG_CA_FILE: cannot read ${caFile} (${err.code ?? err.message})`,
          );
        })
      : undefined;
    if (ca && !ca.toString('latin1').includes('-----BEGIN CERTIFICATE-----'))
      throw new CliError(`BULKHEAD_AUDIT_SYSLOG_CA_FILE: ${caFile} holds no PEM certificate`);
    destinations.push(
      syslogDestination({ url: env.BULKHEAD_AUDIT_SYSLOG_URL, hostname: host, ...(ca ? { ca } : {}) }),
    );
  } else if (env.BULKHEAD_AUDIT_SYSLOG_CA_FILE)
    throw new CliError('BULKHEAD_AUDIT_SYSLOG_CA_FILE is for BULKHEAD_AUDIT_SYSLOG_URL, which is not set');
  if (env.BULKHEAD_AUDIT_OCSF_FILE)
    destinations.push(ocsfFileDestination(resolve(env.cwd, env.BULKHEAD_AUDIT_OCSF_FILE), host));
  return destinations;
}

/**
 * Forwards to `destinations` until stopped (`audit seal --follow`, `audit forward --follow`): a line when
 * a destination fails (once, not at every retry) and when it takes again, progress as events go out.
 */
export function startAuditForwarding(
  sql: Sql,
  destinations: readonly ForwardDestination[],
  report: { err(line: string): void; progress(line: string): void },
  intervalMs?: number,
): Forwarder {
  const failing = new Set<string>();
  const totals = new Map<string, number>();
  return startForwarder(sql, destinations, {
    ...(intervalMs ? { intervalMs } : {}),
    onError: (destination, err) => {
      if (failing.has(destination)) return;
      failing.add(destination);
      report.err(
        `forwarding to ${destination} failed, retrying from its last acknowledged event: ${err instanceof Error ? err.message : String(err)}`,
      );
    },
    onPass: (destination, pass) => {
      if (failing.delete(destination)) report.err(`forwarding to ${destination} again`);
      if (pass.missing.length)
        report.err(
          `${destination}: events ${pass.missing.map((s) => `#${s}`).join(', ')} are listed by their seals but gone from the log; \`audit verify\` names them`,
        );
      const total = (totals.get(destination) ?? 0) + pass.forwarded;
      totals.set(destination, total);
      report.progress(`forwarded ${total} event${total === 1 ? '' : 's'} to ${destination}`);
    },
  });
}
