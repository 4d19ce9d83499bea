import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import {
  OUTCOMES,
  pruneEvents,
  readRecent,
  streamEvents,
  verifyChains,
  type AuditEvent,
  type AuditFilter,
  type Outcome,
} from '@bulkhead/audit';
import { auditKey } from '../audit-key.ts';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { parseInstant } from '../duration.ts';
import { when } from '../format.ts';
import { CliError, UsageError } from '../io.ts';
import { escapeJson, visible } from '../visible.ts';

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

/** The JSON form of an event for scripts (snake_case, ISO time). */
export function eventJson(e: AuditEvent) {
  return {
    seq: e.seq,
    id: e.id,
    at: e.at.toISOString(),
    server: e.server,
    chain_seq: e.chainSeq,
    token_id: e.tokenId,
    token_label: e.tokenLabel,
    client_name: e.clientName,
    client_version: e.clientVersion,
    method: e.method,
    tool: e.tool,
    arguments: e.arguments,
    outcome: e.outcome,
    result_summary: e.resultSummary,
    duration_ms: e.durationMs,
    request_id: e.requestId,
    approval_id: e.approvalId,
    injection_suspected: e.injectionSuspected,
    prev_hash: e.prevHash,
    hash: e.hash,
  };
}

/** One readable line; everything a client chose (tool name, client name, arguments) is shown, never sent raw. */
function line(e: AuditEvent): string {
  const who = e.tokenId ? `${e.tokenId} "${e.tokenLabel ?? ''}"` : 'no token';
  const client = e.clientName ? ` via ${e.clientName}${e.clientVersion ? `/${e.clientVersion}` : ''}` : '';
  const args = e.arguments === null ? '' : ` ${JSON.stringify(e.arguments)}`;
  const extra = e.approvalId ? ` approval ${e.approvalId}` : '';
  const flag = e.injectionSuspected ? ' [injection suspected]' : '';
  return visible(
    `${when(e.at)}  #${e.seq}  ${e.server}  ${e.tool ?? e.method}  ${e.outcome}  ${e.durationMs}ms  ${who}${client}${extra}${flag}${args}`,
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
    const print = (e: AuditEvent) => io.out(values.json ? escapeJson(JSON.stringify(eventJson(e))) : line(e));
    return withDatabase(env, io, async ({ sql }) => {
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
      let running = true;
      process.once('SIGINT', () => (running = false));
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

const CSV_COLUMNS = [
  'seq',
  'id',
  'at',
  'server',
  'chain_seq',
  'token_id',
  'token_label',
  'client_name',
  'client_version',
  'method',
  'tool',
  'arguments',
  'outcome',
  'result_summary',
  'duration_ms',
  'request_id',
  'approval_id',
  'injection_suspected',
  'prev_hash',
  'hash',
] as const;

function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

async function write(out: Writable, chunk: string): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

const exportCommand: Command = {
  name: 'export',
  summary: 'stream events to a file or stdout as JSON Lines or CSV',
  help: `Usage: bulkhead audit export --since <when> [--until <when>] [--format jsonl|csv] [--output <file>] [filters]

Streams matching events in sequence order, a batch at a time, so any number of
events can be exported without loading them into memory.

Options:
  --since <when>       required: 2026-11-01, 2026-11-29T10:00Z, or 30d back
  --until <when>       exclusive end (default: now)
  --format jsonl|csv   default jsonl
  --output <file>      write here instead of stdout
  --server, --token, --tool, --outcome   filters as in \`audit tail\``,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      ...filterOptions,
      until: { type: 'string' },
      format: { type: 'string', default: 'jsonl' },
      output: { type: 'string' },
    });
    if (!values.since) throw new UsageError('--since is required (e.g. --since 30d or --since 2026-11-01)');
    if (values.format !== 'jsonl' && values.format !== 'csv')
      throw new UsageError(`--format: "${values.format}" is not jsonl or csv`);
    const filter = filterFrom(values);
    return withDatabase(env, io, async ({ sql }) => {
      const out: Writable = values.output ? createWriteStream(values.output) : process.stdout;
      if (values.format === 'csv') await write(out, `${CSV_COLUMNS.join(',')}\n`);
      let count = 0;
      for await (const e of streamEvents(sql, filter)) {
        const row = eventJson(e);
        await write(
          out,
          values.format === 'csv'
            ? `${CSV_COLUMNS.map((c) => csvCell(row[c])).join(',')}\n`
            : `${JSON.stringify(row)}\n`,
        );
        if (++count % 10_000 === 0) io.progress(`exported ${count} events`);
      }
      if (values.output) {
        out.end();
        await once(out, 'finish');
      }
      io.err(
        `Exported ${count} event${count === 1 ? '' : 's'}${values.output ? ` to ${values.output}` : ''}.`,
      );
      return 0;
    });
  },
};

const verify: Command = {
  name: 'verify',
  summary: 'recompute the hash chain; non-zero exit on a break',
  help: `Usage: bulkhead audit verify [--server <name>] [--json]

Recomputes every event's hash, server by server, from the start of its chain
(or its signed prune checkpoint) and reports the first broken link: a changed
event, a removed event, or a checkpoint whose signature does not match.
Exit code 0 when every chain holds, 1 on a break.`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, { server: { type: 'string' }, json: { type: 'boolean', default: false } });
    const key = await auditKey(env, false);
    return withDatabase(env, io, async ({ sql }) => {
      const reports = await verifyChains(sql, {
        ...(values.server ? { server: values.server } : {}),
        ...(key ? { key } : {}),
        onProgress: (server, n) => io.progress(`${server}: ${n} events verified`),
      });
      const broken = reports.filter((r) => r.break);
      if (values.json) io.out(JSON.stringify({ ok: broken.length === 0, chains: reports }));
      else {
        if (!reports.length) io.out('No audit events yet.');
        for (const r of reports) {
          const from = r.checkpoint === null ? '' : ` (after checkpoint at position ${r.checkpoint})`;
          io.out(
            r.break
              ? `${r.server}: BROKEN at chain position ${r.break.chainSeq}${r.break.seq === null ? '' : ` (event #${r.break.seq})`}: ${r.break.reason}`
              : `${r.server}: ok, ${r.events} events${from}`,
          );
        }
      }
      return broken.length ? 1 : 0;
    });
  },
};

const prune: Command = {
  name: 'prune',
  summary: 'remove events older than a date, leaving a signed checkpoint',
  help: `Usage: bulkhead audit prune --before <date> [--json]

Removes each server's events older than <date> (a prefix of its chain) and
records a checkpoint — the hash of the last removed event, signed with the
audit key (BULKHEAD_AUDIT_KEY, or a key kept in the data dir) — so that
\`audit verify\` still passes on what remains.`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, { before: { type: 'string' }, json: { type: 'boolean', default: false } });
    if (!values.before)
      throw new UsageError('--before is required (e.g. --before 2026-01-01 or --before 365d)');
    const before = parseInstant(values.before, '--before');
    if (before > new Date())
      throw new UsageError('--before lies in the future; that would remove events not yet old');
    const key = await auditKey(env, true);
    if (!key) throw new CliError('no audit key');
    return withDatabase(env, io, async ({ sql }) => {
      const results = await pruneEvents(sql, before, key);
      if (values.json) io.out(JSON.stringify(results));
      else if (!results.length) io.out(`No events before ${when(before)} UTC.`);
      else
        for (const r of results)
          io.out(`${r.server}: removed ${r.removed} events; checkpoint at chain position ${r.checkpoint}.`);
      return 0;
    });
  },
};

export const auditCommand = group('audit', 'Read, export, verify and prune the audit log.', [
  tail,
  exportCommand,
  verify,
  prune,
]);
