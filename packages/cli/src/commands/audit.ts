import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import {
  eventJson,
  EXPORT_FORMATS,
  exportHeader,
  exportLine,
  OUTCOMES,
  pruneLog,
  readRecent,
  sealLog,
  startSealer,
  streamEvents,
  type AuditEvent,
  type AuditFilter,
  type Outcome,
  writeCheckpointedExport,
} from '@bulkhead/audit';
import { escapeJson, visible } from '@bulkhead/core/operator';
import { auditDestinations, startAuditForwarding } from '../audit-forward.ts';
import { auditSigner, auditTimestamper, requireKey } from '../audit-key.ts';
import { followInterval, group, parse, type Command } from '../command.ts';
import { forwardCommand } from './audit-forward.ts';
import { keysCommand } from './audit-keys.ts';
import { verifyCommand } from './audit-verify.ts';
import { withDatabase } from '../database.ts';
import { parseInstant } from '../duration.ts';
import { when } from '../format.ts';
import { UsageError } from '../io.ts';

const filterOptions = {
  server: { type: 'string' },
  token: { type: 'string' },
  tool: { type: 'string' },
  outcome: { type: 'string' },
  since: { type: 'string' },
} as const;

function filterFrom(values: {
  server?: string;
  token?: string;
  tool?: string;
  outcome?: string;
  since?: string;
  until?: string;
}): AuditFilter {
  if (values.outcome && !(OUTCOMES as readonly string[]).includes(values.outcome)) {
    throw new UsageError(`--outcome: "${values.outcome}" is not an outcome; one of: ${OUTCOMES.join(', ')}`);
  }
  return {
    ...(values.server ? { server: values.server } : {}),
    ...(values.token ? { tokenId: values.token } : {}),
    ...(values.tool ? { tool: values.tool } : {}),
    ...(values.outcome ? { outcome: values.outcome as Outcome } : {}),
    ...(values.since ? { since: parseInstant(values.since, '--since') } : {}),
    ...(values.until ? { until: parseInstant(values.until, '--until') } : {}),
  };
}

/** One readable line; everything a client chose (tool name, client name, arguments) is shown, never sent raw. */
function line(event: AuditEvent): string {
  const who = event.tokenId ? `${event.tokenId} "${event.tokenLabel ?? ''}"` : 'no token';
  const client = event.clientName
    ? ` via ${event.clientName}${event.clientVersion ? `/${event.clientVersion}` : ''}`
    : '';
  const args = event.arguments === null ? '' : ` ${JSON.stringify(event.arguments)}`;
  const extra = event.approvalId ? ` approval ${event.approvalId}` : '';
  const flag = event.injectionSuspected ? ' [injection suspected]' : '';
  return visible(
    `${when(event.at)}  #${event.seq}  ${event.server}  ${event.tool ?? event.method}  ${event.outcome}  ${event.durationMs}ms  ${who}${client}${extra}${flag}${args}`,
  );
}

const tail: Command = {
  name: 'tail',
  summary: 'show recent events, or follow new ones',
  help: `Usage: bulkhead audit tail [filters] [--limit N] [--follow] [--json]

Shows the newest events (oldest first), one readable line each.

Filters:
  --server <name>      one server
  --token <id>         one token
  --tool <name>        one tool
  --outcome <outcome>  ${OUTCOMES.join(', ')}
  --since <when>       2026-11-29, 2026-11-29T10:00Z, or 2h / 7d back
Options:
  --limit <n>          how many recent events (default 20, max 1000)
  --follow             keep printing new events until Ctrl-C
  --json               one JSON object per line`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      ...filterOptions,
      limit: { type: 'string', default: '20' },
      follow: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    });
    const limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw new UsageError('--limit: a whole number from 1 to 1000');
    const filter = filterFrom(values);
    const print = (event: AuditEvent) =>
      io.out(values.json ? escapeJson(JSON.stringify(eventJson(event))) : line(event));
    return withDatabase(env, io, async ({ sql }) => {
      // Following, Ctrl-C ends the loop below: heard from the start, so that one pressed while the recent
      // events are read still ends the command with 0 rather than killing it.
      let running = true;
      if (values.follow) process.once('SIGINT', () => (running = false));
      const recent = await readRecent(sql, filter, limit);
      recent.forEach(print);
      if (!values.follow) {
        if (!recent.length && !values.json) io.err('No events match.');
        return 0;
      }
      // Sequence numbers are taken at insert, not at commit: with several servers writing, #101 can become
      // visible before #100. So each poll re-reads a trailing window and prints what it has not printed yet.
      const WINDOW = 1000;
      const top = Number((await sql`select coalesce(max(seq), 0) as seq from audit_events`)[0]!.seq);
      const seen = new Set<number>(
        (await sql<{ seq: string }[]>`select seq from audit_events where seq > ${top - WINDOW}`).map((r) =>
          Number(r.seq),
        ),
      );
      let last = top;
      while (running) {
        for await (const e of streamEvents(sql, { ...filter, afterSeq: Math.max(0, last - WINDOW) })) {
          if (seen.has(e.seq)) continue;
          seen.add(e.seq);
          print(e);
          last = Math.max(last, e.seq);
        }
        for (const seq of seen) if (seq <= last - WINDOW) seen.delete(seq);
        await new Promise((r) => setTimeout(r, 500));
      }
      return 0;
    });
  },
};

async function write(out: Writable, chunk: string): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

const exportCommand: Command = {
  name: 'export',
  summary: 'stream events to a file or stdout as JSON Lines or CSV',
  help: `Usage: bulkhead audit export --since <when> [--until <when>] [--format jsonl|csv] [--output <file>] [filters]
       bulkhead audit export --since <when> [--until <when>] --with-checkpoints [--output <file>]

Streams matching events in sequence order, a batch at a time, so any number of
events can be exported without loading them into memory.

With --with-checkpoints: the auditor's kit. One JSON Lines file with the signed
checkpoints covering the events of the range and every event they list, each
as its sealed body; \`audit verify --file <export> --public-key <file>\` checks
it with no database and no Bulkhead secret. No filters but the time range: a
checkpoint is checked whole.

Options:
  --since <when>       required: 2026-11-01, 2026-11-29T10:00Z, or 30d back
  --until <when>       exclusive end (default: now)
  --format jsonl|csv   default jsonl
  --output <file>      write here instead of stdout
  --with-checkpoints   events as sealed, with their signed checkpoints
  --server, --token, --tool, --outcome   filters as in \`audit tail\``,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      ...filterOptions,
      until: { type: 'string' },
      format: { type: 'string', default: 'jsonl' },
      output: { type: 'string' },
      'with-checkpoints': { type: 'boolean', default: false },
    });
    if (!values.since) throw new UsageError('--since is required (e.g. --since 30d or --since 2026-11-01)');
    const format = EXPORT_FORMATS.find((f) => f === values.format);
    if (!format) throw new UsageError(`--format: "${values.format}" is not jsonl or csv`);
    const withCheckpoints = values['with-checkpoints'];
    if (withCheckpoints && format !== 'jsonl')
      throw new UsageError('--with-checkpoints writes JSON Lines: leave out --format csv');
    if (withCheckpoints && (values.server || values.token || values.tool || values.outcome))
      throw new UsageError(
        '--with-checkpoints exports whole checkpoints: only --since and --until, no --server, --token, --tool or --outcome',
      );
    const filter = filterFrom(values);
    return withDatabase(env, io, async ({ sql }) => {
      const out: Writable = values.output ? createWriteStream(values.output) : process.stdout;
      let count = 0;
      let checkpoints: number | undefined;
      if (withCheckpoints) {
        const range = { since: filter.since!, until: filter.until };
        ({ events: count, checkpoints } = await writeCheckpointedExport(sql, range, (c) => write(out, c)));
      } else {
        await write(out, exportHeader(format));
        for await (const e of streamEvents(sql, filter)) {
          await write(out, exportLine(e, format));
          if (++count % 10_000 === 0) io.progress(`exported ${count} events`);
        }
      }
      if (values.output) {
        out.end();
        await once(out, 'finish');
      }
      io.err(
        `Exported ${count} event${count === 1 ? '' : 's'}${checkpoints === undefined ? '' : ` with ${checkpoints} checkpoint${checkpoints === 1 ? '' : 's'}`}${values.output ? ` to ${values.output}` : ''}.`,
      );
      return 0;
    });
  },
};

const seal: Command = {
  name: 'seal',
  summary: 'seal the events written so far with the audit key (once, or --follow)',
  help: `Usage: bulkhead audit seal [--follow] [--interval <ms>] [--json]

Seals every event committed so far: each seal covers a range of event
numbers, holds a keyed digest of every event in it and per-server counts, and
is chained to the seal before it by a MAC with the audit key (BULKHEAD_AUDIT_KEY,
or a key kept in the data dir, created on first use). Server roles never hold
the key. One sealer runs at a time, holding a lease it renews (others exit, or
wait with --follow; a sealer that dies is replaced within 15 s). Sealing waits
only for transactions that write audit events, and for those at most 10 s:
numbers of a writer still running are left open in the seal, and its events
sealed once it ends. With BULKHEAD_AUDIT_SIGNING_KEY_FILE (a PEM Ed25519 private
key, \`audit keys new\`), each seal is also signed as a checkpoint, which
\`audit verify --public-key\` checks without the audit key; with
BULKHEAD_AUDIT_TSA_URL as well, each checkpoint is then timestamped there
(RFC 3161), which \`audit verify --tsa-cert\` checks. With --follow and
BULKHEAD_AUDIT_SYSLOG_URL or BULKHEAD_AUDIT_OCSF_FILE set, sealed events are
also forwarded there, as \`audit forward --follow\` does.
\`pnpm start\` runs a sealer; in production run this as a CronJob, or with --follow.

Options:
  --follow          keep sealing every interval until Ctrl-C
  --interval <ms>   with --follow, how often (default 1000)
  --json            print { elected, seals, events, sealed_through }`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      follow: { type: 'boolean', default: false },
      interval: { type: 'string', default: '1000' },
      json: { type: 'boolean', default: false },
    });
    const interval = followInterval(values.interval);
    const key = await requireKey(env, true);
    const signer = await auditSigner(env);
    const timestamp = auditTimestamper(env, signer, (line) => io.err(`bulkhead audit seal: ${line}`));
    const destinations = values.follow ? await auditDestinations(env) : [];
    return withDatabase(env, io, async ({ sql }) => {
      if (values.follow) {
        const forwarder = destinations.length
          ? startAuditForwarding(sql, destinations, {
              err: (line) => io.err(`bulkhead audit seal: ${line}`),
              progress: io.progress,
            })
          : undefined;
        const sealer = startSealer(sql, key, {
          signer,
          intervalMs: interval,
          onError: (err) =>
            io.err(`bulkhead audit seal: ${err instanceof Error ? err.message : String(err)}`),
          onSeal: (seals) => {
            io.progress(
              `sealed up to event #${seals[seals.length - 1]!.lastSeq} (seal ${seals[seals.length - 1]!.sealNo})`,
            );
            if (timestamp) void timestamp(sql);
            forwarder?.nudge();
          },
        });
        io.err(
          `Sealing${forwarder ? ` and forwarding to ${destinations.map((d) => d.name).join(' and ')}` : ''} until Ctrl-C.`,
        );
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await sealer.stop();
        await forwarder?.stop();
        return 0;
      }
      const pass = await sealLog(sql, key, { signer });
      if (timestamp && pass.seals.length) await timestamp(sql);
      const events = pass.seals.reduce((n, s) => n + s.events, 0);
      const through = pass.seals.length ? pass.seals[pass.seals.length - 1]!.lastSeq : null;
      if (values.json)
        io.out(
          JSON.stringify({
            elected: pass.elected,
            seals: pass.seals.length,
            events,
            sealed_through: through,
          }),
        );
      else if (!pass.elected) io.out('Another sealer is running; it seals the log.');
      else if (!pass.seals.length) io.out('Nothing new to seal.');
      else
        io.out(
          `Sealed ${events} event${events === 1 ? '' : 's'} in ${pass.seals.length} seal${pass.seals.length === 1 ? '' : 's'}, up to event #${through}.`,
        );
      return 0;
    });
  },
};

const prune: Command = {
  name: 'prune',
  summary: 'remove sealed events older than a date, leaving a signed checkpoint',
  help: `Usage: bulkhead audit prune --before <date> [--json]

Removes whole seals sealed before <date>, with their events (never an unsealed
event), and records a checkpoint — the last removed seal's number, MAC and
totals, signed with the audit key (BULKHEAD_AUDIT_KEY, or the key kept in the
data dir) — so that \`audit verify\` still passes on what remains. Needs the
schema owner's connection.`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, { before: { type: 'string' }, json: { type: 'boolean', default: false } });
    if (!values.before)
      throw new UsageError('--before is required (e.g. --before 2026-01-01 or --before 365d)');
    const before = parseInstant(values.before, '--before');
    if (before > new Date())
      throw new UsageError('--before lies in the future; that would remove events not yet old');
    const key = await requireKey(env, false);
    return withDatabase(env, io, async ({ sql }) => {
      const result = await pruneLog(sql, before, key);
      if (values.json)
        io.out(
          JSON.stringify({
            removed_events: result.removedEvents,
            removed_seals: result.removedSeals,
            checkpoint_seal: result.checkpointSeal,
          }),
        );
      else if (!result.removedSeals) io.out(`No seals before ${when(before)} UTC.`);
      else
        io.out(
          `Removed ${result.removedEvents} events in ${result.removedSeals} seals; the log continues from seal ${result.checkpointSeal}.`,
        );
      return 0;
    });
  },
};

export const auditCommand = group(
  'audit',
  'Read, export, seal, forward, verify and prune the audit log; make the key that signs it.',
  [tail, exportCommand, seal, forwardCommand, verifyCommand, prune, keysCommand],
);
