// `pnpm test:scale`: runs test/scale (PgBouncer, HAProxy, Patroni failover, capacity — each file sets
// up its own instances from the system packages on loopback and tears them down), one file at a
// time, then prints the figures every scenario recorded (test/scale/figures.ts) as one table.
// Arguments go to vitest (a file filter, -t). Exits with vitest's code.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from '../helpers.ts';
import type { ScaleFigures } from './figures.ts';

const args = process.argv.slice(2).filter((a) => a !== '--');
if (args.includes('--help') || args.includes('-h')) {
  console.log(
    [
      'Usage: pnpm test:scale [vitest arguments]',
      '',
      'Runs test/scale/*.test.ts (PgBouncer, HAProxy, Patroni failover, capacity) one file at a time',
      'against DATABASE_URL (or the embedded PostgreSQL), then prints a table of what each scenario',
      'measured: calls attempted, served, refused with a clear error, hung, effects without their',
      'audit event, double executions, seconds to recover. Needs pgbouncer, haproxy, patroni and',
      'etcd-server from the system packages (.ci/run installs them when absent).',
      '',
      'Examples:',
      '  pnpm test:scale',
      '  pnpm test:scale test/scale/haproxy.test.ts',
    ].join('\n'),
  );
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), 'bulkhead-scale-'));
const figuresFile = join(dir, 'figures.jsonl');
const started = performance.now();
const code = await new Promise<number>((resolve) => {
  const child = spawn(
    process.execPath,
    [join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.scale.config.ts', ...args],
    { cwd: root, stdio: 'inherit', env: { ...process.env, BULKHEAD_SCALE_FIGURES: figuresFile } },
  );
  child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
});
const seconds = (performance.now() - started) / 1000;

const rows: ScaleFigures[] = existsSync(figuresFile)
  ? readFileSync(figuresFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as ScaleFigures)
  : [];
rmSync(dir, { recursive: true, force: true });

const columns: [string, (r: ScaleFigures) => string][] = [
  ['scenario', (r) => r.scenario],
  ['attempted', (r) => show(r.attempted)],
  ['served', (r) => show(r.served)],
  ['refused (clear error)', (r) => show(r.refused)],
  ['hung', (r) => show(r.hung)],
  ['effects without events', (r) => show(r.effectsWithoutEvents)],
  ['double executions', (r) => show(r.doubleExecutions)],
  ['s to recover', (r) => show(r.recoverSeconds)],
  [
    'other',
    (r) =>
      Object.entries(r.other ?? {})
        .map(([k, v]) => `${k}: ${v}`)
        .join('; '),
  ],
];
function show(v: number | undefined): string {
  return v === undefined ? '—' : String(v);
}
const cells = rows.map((r) => columns.map(([, f]) => f(r)));
const widths = columns.map(([h], i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
const line = (c: string[]) => `| ${c.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
console.log(`\nscale figures (${rows.length} scenarios, ${seconds.toFixed(0)} s):`);
console.log(line(columns.map(([h]) => h)));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const c of cells) console.log(line(c));
process.exit(code);
