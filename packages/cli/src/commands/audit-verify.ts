import { readFile, writeFile } from 'node:fs/promises';
import { verifyExport, verifyLog, verifyLogWithPublicKey, type LogReport } from '@bulkhead/audit';
import { visible } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { readPublicKey, readTsaCertificate, requireKey } from '../audit-key.ts';
import { parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { CliError, UsageError, type Io } from '../io.ts';

// `bulkhead audit verify`: the check, its report (as JSON and as lines) and the anchor file that
// carries the newest seal from one run to the next.

function ago(d: Date | null): string {
  if (!d) return 'never';
  const s = Math.max(0, Math.round((Date.now() - d.getTime()) / 1000));
  return s < 120
    ? `${s} s ago`
    : s < 7200
      ? `${Math.round(s / 60)} min ago`
      : `${Math.round(s / 3600)} h ago`;
}

/** How far signed checkpoints cover the log, for `--json`. */
function coverageJson(c: NonNullable<LogReport['coverage']>) {
  return {
    checkpoints: c.checkpoints,
    first_seal: c.firstSeal,
    last_seal: c.lastSeal,
    from: c.from,
    through: c.through,
    gaps: c.gaps,
    key_fingerprint: c.keyId,
    timestamped: c.timestamped,
  };
}

/** The JSON of a verify report; `chains` keeps the per-server shape scripts read before the log was sealed. */
function reportJson(report: LogReport, server?: string) {
  const breaks = report.breaks.filter((b) => !server || b.server === server || b.server === null);
  const servers = report.servers.filter((t) => !server || t.server === server);
  return {
    ok: report.ok,
    seals: report.seals,
    sealed_through: report.sealedThrough,
    newest_seal_at: report.newestSealAt?.toISOString() ?? null,
    checkpoint: report.checkpoint,
    servers,
    breaks,
    more_breaks: report.moreBreaks,
    unsealed: { count: report.unsealed.count, oldest_at: report.unsealed.oldestAt?.toISOString() ?? null },
    warnings: report.warnings,
    ...(report.coverage ? { coverage: coverageJson(report.coverage) } : {}),
    chains: servers.map((t) => {
      const first =
        breaks.find((b) => b.server === t.server) ?? (t.present < t.sealed ? breaks[0] : undefined);
      return {
        server: t.server,
        events: t.present,
        checkpoint: report.checkpoint?.sealNo ?? null,
        break: first ? { seq: first.seq, reason: first.reason } : null,
      };
    }),
  };
}

/**
 * Records the newest seal in the anchor file after every run, with the run's breaks, so that the next
 * run has something to compare with even after a broken one. After an anchor mismatch the recorded
 * seal is kept: recording the log's new end would let the next run pass over the same deletion.
 */
async function writeAnchor(
  sql: Sql,
  file: string,
  report: LogReport,
  previous: { sealNo: number; mac: string } | undefined,
): Promise<void> {
  const [newest] = await sql<{ sealNo: string; mac: string }[]>`
    select seal_no as "sealNo", mac from audit_seals order by seal_no desc limit 1`;
  const mismatch = report.breaks.some((b) => b.kind === 'anchor_mismatch');
  const seal =
    mismatch && previous ? previous : newest ? { sealNo: Number(newest.sealNo), mac: newest.mac } : previous;
  if (!seal) return;
  const anchor = {
    seal_no: seal.sealNo,
    mac: seal.mac,
    verified_at: new Date().toISOString(),
    ok: report.ok,
    breaks: report.breaks.slice(0, 100).map((b) => ({ kind: b.kind, seal_no: b.sealNo, seq: b.seq })),
    more_breaks: report.moreBreaks + Math.max(0, report.breaks.length - 100),
  };
  await writeFile(file, `${JSON.stringify(anchor)}\n`, { mode: 0o600 });
}

/** Prints the report: as JSON, or as lines (the coverage by checkpoints, when checked with the public key). */
function printReport(io: Io, report: LogReport, server: string | undefined, asJson: boolean) {
  const json = reportJson(report, server);
  if (asJson) {
    io.out(JSON.stringify(json));
    return json;
  }
  const c = report.coverage;
  if (c)
    io.out(
      c.checkpoints
        ? `Signed checkpoints: ${c.checkpoints} (seals ${c.firstSeal}–${c.lastSeal}), covering events #${c.from}–#${c.through}${c.gaps.length ? ` except ${c.gaps.map(([f, t]) => `#${f}–#${t}`).join(', ')}` : ''}; key ${c.keyId}${c.timestamped === null ? '' : `; ${c.timestamped} timestamped by the TSA`}; newest ${ago(report.newestSealAt)}.`
        : `Signed checkpoints: none (key ${c.keyId}).`,
    );
  else
    io.out(
      `Sealed log: ${report.seals} seal${report.seals === 1 ? '' : 's'} up to event #${report.sealedThrough}` +
        `${report.checkpoint ? ` (after the prune checkpoint at seal ${report.checkpoint.sealNo})` : ''}; newest seal ${ago(report.newestSealAt)}.`,
    );
  if (!json.servers.length) io.out(c ? 'No events covered by a checkpoint.' : 'No sealed events yet.');
  for (const t of json.servers)
    io.out(
      t.present === t.sealed
        ? `${t.server}: ok, ${t.sealed} sealed events present`
        : `${t.server}: BROKEN, ${t.sealed} sealed events, ${t.present} present`,
    );
  for (const b of json.breaks)
    io.out(visible(`BROKEN${b.sealNo === null ? '' : ` seal ${b.sealNo}`}: ${b.reason}`));
  if (json.more_breaks) io.out(`… and ${json.more_breaks} more breaks (see --json)`);
  for (const w of report.warnings) io.out(visible(`WARNING: ${w.reason}`));
  const what = c ? 'Not covered by a checkpoint' : 'Unsealed tail';
  io.out(
    report.unsealed.count
      ? `${what}: ${report.unsealed.count} event${report.unsealed.count === 1 ? '' : 's'}, oldest ${ago(report.unsealed.oldestAt)}.`
      : `${what}: none.`,
  );
  return json;
}

/** `verify --public-key [--file]`: the checkpoints checked with the public key alone, no audit key asked for. */
async function verifyWithPublicKey(
  publicKeyFile: string,
  values: {
    file?: string | undefined;
    'tsa-cert'?: string | undefined;
    server?: string | undefined;
    json: boolean;
  },
  { env, io }: Parameters<Command['run']>[1],
): Promise<number> {
  const publicKey = await readPublicKey(publicKeyFile);
  const tsaFile = values['tsa-cert'];
  const tsa = tsaFile ? await readTsaCertificate(tsaFile) : undefined;
  if (values.file) {
    const text = await readFile(values.file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new CliError(`--file: cannot read ${values.file} (${err.code ?? err.message})`);
    });
    const report = await verifyExport(text, publicKey, tsa).catch((err: unknown) => {
      throw new CliError(`--file: ${values.file}: ${err instanceof Error ? err.message : String(err)}`);
    });
    printReport(io, report, values.server, values.json);
    return report.ok ? 0 : 1;
  }
  return withDatabase(env, io, async ({ sql }) => {
    const report = await verifyLogWithPublicKey(sql, {
      publicKey,
      tsa,
      onProgress: (checkpoints, events) => {
        if (checkpoints % 100 === 0) io.progress(`${checkpoints} checkpoints, ${events} events verified`);
      },
    });
    printReport(io, report, values.server, values.json);
    return report.ok ? 0 : 1;
  });
}

export const verifyCommand: Command = {
  name: 'verify',
  summary: 'check the sealed log with the key; non-zero exit on any break',
  help: `Usage: bulkhead audit verify [--server <name>] [--anchor <file>] [--json]
       bulkhead audit verify --public-key <file> [--tsa-cert <file>] [--server <name>] [--json]
       bulkhead audit verify --file <export> --public-key <file> [--tsa-cert <file>] [--json]

Checks every seal with the audit key (BULKHEAD_AUDIT_KEY, or the key kept in
the data dir): each seal's MAC and its link to the one before, the digest of
every sealed event, events inside a sealed range that no seal covers, events
left in a pruned range, and per server the sealed count against the events
still there (a server whose whole history was deleted shows 0 present), seals
made and gone (from the end, or made again over a deleted one), and approvals
that ran without their decision event. Every break is reported with its seal
and event number, not only the first. Events after the newest seal are
reported as the unsealed tail, with count and age; a tail older than 10
minutes is a break: the sealer is stopped or fails on every round.

With --public-key (the sealer signs checkpoints with
BULKHEAD_AUDIT_SIGNING_KEY_FILE): checks the signed checkpoints instead of the
seals, with no audit key — each checkpoint's signature and its link to the one
before, the SHA-256 of every event it lists — and names the same breaks, plus
checkpoint_signature and checkpoint_chain. Says which events the checkpoints
cover; the events after the newest one are reported as the unsealed tail is.
With --file as well: checks an \`audit export --with-checkpoints\` file the
same way, with no database. With --tsa-cert, the checkpoints' timestamps
(BULKHEAD_AUDIT_TSA_URL) are checked too (checkpoint_timestamp).

Options:
  --server <name>   report only this server's lines (the whole log is checked)
  --anchor <file>   compare with the seal a previous verify recorded there, and
                    record the newest one (with this run's breaks) after every
                    run: a tail of seals deleted since then is caught (keep the
                    file off the database host). After an anchor mismatch the
                    file keeps the seal it recorded, so the mismatch stays.
  --public-key <file>  check the signed checkpoints with this Ed25519 public
                    key (PEM, from \`audit keys new\`), without the audit key
  --file <export>   with --public-key: check this export, not the database
  --tsa-cert <file>  with --public-key: check the checkpoints' RFC 3161
                    timestamps with this TSA certificate (PEM): one by another
                    TSA, or later than the checkpoint's own time, is a break
  --json            the report as JSON

Exit code 0 when everything holds, 1 on any break.`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      server: { type: 'string' },
      anchor: { type: 'string' },
      'public-key': { type: 'string' },
      'tsa-cert': { type: 'string' },
      file: { type: 'string' },
      json: { type: 'boolean', default: false },
    });
    const publicKeyFile = values['public-key'];
    if (values['tsa-cert'] && !publicKeyFile)
      throw new UsageError('--tsa-cert needs --public-key: it checks the timestamps of signed checkpoints');
    if (values.file && !publicKeyFile)
      throw new UsageError('--file needs --public-key: an export is checked against its signed checkpoints');
    if (publicKeyFile) {
      if (values.anchor)
        throw new UsageError('--anchor records seals, checked with the audit key: leave out --public-key');
      return verifyWithPublicKey(publicKeyFile, values, { env, io });
    }
    const key = await requireKey(env, false);
    let anchor: { sealNo: number; mac: string } | undefined;
    if (values.anchor) {
      const text = await readFile(values.anchor, 'utf8').catch(() => undefined);
      if (text) {
        const parsed = JSON.parse(text) as { seal_no?: unknown; mac?: unknown; breaks?: unknown };
        if (typeof parsed.seal_no !== 'number' || typeof parsed.mac !== 'string')
          throw new CliError(`${values.anchor} is not an anchor file ({ "seal_no": …, "mac": … })`);
        anchor = { sealNo: parsed.seal_no, mac: parsed.mac };
      }
    }
    return withDatabase(env, io, async ({ sql }) => {
      const report = await verifyLog(sql, {
        key,
        anchor,
        onProgress: (seals, events) => {
          if (seals % 100 === 0) io.progress(`${seals} seals, ${events} events verified`);
        },
      });
      printReport(io, report, values.server, values.json);
      if (values.anchor) await writeAnchor(sql, values.anchor, report, anchor);
      return report.ok ? 0 : 1;
    });
  },
};
