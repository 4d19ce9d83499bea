import { alive, ensureEmbedded, postmasterPid, type EmbeddedDatabase } from './embedded.ts';

/** Options for {@link superviseEmbedded}. */
export interface SupervisorOptions {
  /** The data dir the cluster was started from (`BULKHEAD_DATA_DIR`). */
  dataDir: string;
  /** Told one sentence each time the cluster stops, is restarted, or fails to restart. */
  report: (line: string) => void;
}

/** How often the postmaster is looked for: a lost cluster is noticed within this. */
const WATCH_MS = 1_000;
/** The first wait before a restart, doubled after each failed one up to {@link MAX_DELAY_MS}. */
const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 30_000;
/** A cluster that stayed up this long after a restart is healthy again: the next loss waits the first delay. */
const STABLE_MS = 60_000;

/**
 * Keeps the embedded cluster of `dataDir` running for as long as this process uses it (`pnpm start`):
 * when its postmaster is gone (killed, out of memory, a crash), it is started again on the same port
 * (the servers' pools know only that one, and reconnect by themselves), waiting 1 s, then twice as long
 * after each failed try, up to 30 s. Returns the database to use in place of `server`: its `stop` ends
 * the watch first, then stops the cluster as `server.stop` would.
 */
export async function superviseEmbedded(
  server: EmbeddedDatabase,
  options: SupervisorOptions,
): Promise<EmbeddedDatabase> {
  const { dataDir, report } = options;
  const port = Number(new URL(server.adminUrl).port);
  let current = server;
  let pid = await postmasterPid(dataDir);
  let stopped = false;
  let restarting: Promise<void> | undefined;
  let retry: NodeJS.Timeout | undefined;
  let failures = 0;
  let upSince = Date.now();

  const wait = () => Math.min(FIRST_DELAY_MS * 2 ** failures, MAX_DELAY_MS);
  const schedule = (why: string) => {
    const ms = wait();
    report(`${why}; restarting it in ${ms / 1000} s.`);
    // restart() catches its own failures (it schedules the next try); stop() awaits `restarting`.
    retry = setTimeout(() => {
      restarting = restart();
    }, ms);
  };
  const restart = async () => {
    if (stopped) return;
    try {
      current = await ensureEmbedded({ dataDir, port });
      pid = await postmasterPid(dataDir);
      upSince = Date.now();
      retry = undefined;
      report(`The embedded PostgreSQL runs again on 127.0.0.1:${port}; the servers reconnect by themselves.`);
    } catch (err) {
      failures++;
      const why = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ');
      if (!stopped) schedule(`The embedded PostgreSQL did not restart: ${why}`);
    }
  };
  const watch = setInterval(() => {
    if (stopped || retry || (pid && alive(pid))) return;
    if (Date.now() - upSince >= STABLE_MS) failures = 0;
    schedule(
      `The embedded PostgreSQL stopped (its process ${pid ?? '?'} is gone); calls answer 503 until it is back`,
    );
  }, WATCH_MS);
  watch.unref();

  return {
    ...server,
    get url() {
      return current.url;
    },
    get owned() {
      return current.owned;
    },
    stop: async () => {
      stopped = true;
      clearInterval(watch);
      clearTimeout(retry);
      await restarting;
      return current.stop();
    },
  };
}
