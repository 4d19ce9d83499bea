import { forwardAll, readForwardLag } from '@bulkhead/audit';
import { auditDestinations, startAuditForwarding } from '../audit-forward.ts';
import { followInterval, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { CliError } from '../io.ts';

/** `bulkhead audit forward`: sealed events to the SIEM, once or `--follow`. */
export const forwardCommand: Command = {
  name: 'forward',
  summary: 'send sealed events to the SIEM: syslog over TLS and/or an OCSF file (once, or --follow)',
  help: `Usage: bulkhead audit forward [--follow] [--interval <ms>] [--json]

Forwards every sealed event that a destination has not acknowledged yet, in
the order the events were sealed, to the destinations the environment sets:
  BULKHEAD_AUDIT_SYSLOG_URL      tls://host:port: RFC 5424 messages over TLS,
                                 RFC 5425 framing, each one's body an OCSF event
  BULKHEAD_AUDIT_SYSLOG_CA_FILE  the receiver's CA (PEM; default: the system's)
  BULKHEAD_AUDIT_OCSF_FILE       OCSF 1.2 API Activity events, one JSON a line
Each destination's position is kept in the database and moved only after the
destination acknowledged a batch: a restart of Bulkhead or of the receiver
loses nothing and sends again at most the unacknowledged batch. One forwarder
moves a destination at a time (others wait). \`audit seal --follow\` forwards
too when these are set; this command is for deployments that seal with a
CronJob. /metrics shows the lag (bulkhead_audit_forward_lag_events).

Options:
  --follow          keep forwarding as events are sealed, until Ctrl-C
  --interval <ms>   with --follow, how often to look for new seals (default 1000)
  --json            print [{ destination, forwarded, lag }]`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      follow: { type: 'boolean', default: false },
      interval: { type: 'string', default: '1000' },
      json: { type: 'boolean', default: false },
    });
    const interval = followInterval(values.interval);
    const destinations = await auditDestinations(env);
    if (!destinations.length)
      throw new CliError(
        'nowhere to forward to: set BULKHEAD_AUDIT_SYSLOG_URL (tls://host:port) or BULKHEAD_AUDIT_OCSF_FILE',
      );
    return withDatabase(env, io, async ({ sql }) => {
      if (values.follow) {
        const forwarder = startAuditForwarding(
          sql,
          destinations,
          { err: (l) => io.err(`bulkhead audit forward: ${l}`), progress: io.progress },
          interval,
        );
        io.err(`Forwarding to ${destinations.map((d) => d.name).join(' and ')} until Ctrl-C.`);
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await forwarder.stop();
        return 0;
      }
      const done: { destination: string; forwarded: number; held: boolean; error?: string }[] = [];
      for (const destination of destinations) {
        try {
          done.push({ destination: destination.name, ...(await forwardAll(sql, destination)) });
        } catch (err) {
          done.push({
            destination: destination.name,
            forwarded: 0,
            held: true,
            error: (err as Error).message,
          });
        }
      }
      const lag = new Map((await readForwardLag(sql)).map((l) => [l.destination, l.lag]));
      if (values.json)
        io.out(
          JSON.stringify(
            done.map((d) => ({
              destination: d.destination,
              forwarded: d.forwarded,
              lag: lag.get(d.destination) ?? null,
              ...(d.held ? {} : { skipped: 'another forwarder holds it' }),
              ...(d.error ? { error: d.error } : {}),
            })),
          ),
        );
      else
        for (const d of done)
          io.out(
            d.error
              ? `${d.destination}: failed, ${lag.get(d.destination) ?? '?'} events still to forward: ${d.error}`
              : !d.held
                ? `${d.destination}: another forwarder holds it; nothing done.`
                : `${d.destination}: forwarded ${d.forwarded} event${d.forwarded === 1 ? '' : 's'}, ${lag.get(d.destination) ?? 0} still to forward.`,
          );
      return done.some((d) => d.error) ? 1 : 0;
    });
  },
};
