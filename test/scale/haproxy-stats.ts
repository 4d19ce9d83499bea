/** One row of HAProxy's stats CSV (`/stats;csv`), by column name: `pxname`, `svname`, `status`, `stot`, … */
export type HaproxyRow = Record<string, string>;

/** The rows HAProxy's stats page on `statsPort` reports now. */
export async function haproxyStats(statsPort: number): Promise<HaproxyRow[]> {
  const csv = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`)).text();
  const [head, ...rows] = csv
    .replace(/^# /, '')
    .trim()
    .split('\n')
    .map((l) => l.split(','));
  return rows.map((r) => Object.fromEntries(head!.map((name, i) => [name, r[i] ?? ''])));
}
