// One process of the audit-path measurement of `pnpm bench`: appends events under a server's own
// role as fast as the writer takes them, for BENCH_SECONDS, then prints how many were committed.
import { createAuditWriter } from '@bulkhead/audit';
import { createSql } from '@bulkhead/db';

const { BENCH_DATABASE_URL: url, BENCH_SECONDS: seconds, BENCH_IN_FLIGHT: inFlight } = process.env;
if (!url || !seconds) throw new Error('BENCH_DATABASE_URL and BENCH_SECONDS are required');
const sql = createSql(url, { max: 10, applicationName: 'bench-audit' });
const audit = createAuditWriter(sql);
const until = Date.now() + Number(seconds) * 1000;
let committed = 0;
const worker = async (n: number) => {
  while (Date.now() < until) {
    await audit.append({
      server: 'customer',
      method: 'tools/call',
      tool: 'get_account_balance',
      outcome: 'ok',
      requestId: `bench-${process.pid}-${n}-${committed}`,
      durationMs: 1,
      tokenId: 'bench',
      tokenLabel: 'bench',
      arguments: {},
      resultSummary: { balances_count: 1 },
    });
    committed++;
  }
};
const started = performance.now();
await Promise.all(Array.from({ length: Number(inFlight ?? 200) }, (_, i) => worker(i)));
const elapsed = (performance.now() - started) / 1000;
await sql.end({ timeout: 5 });
process.stdout.write(`${JSON.stringify({ committed, seconds: elapsed })}\n`);
