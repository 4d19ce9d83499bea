import { createServer } from 'node:net';
import { CliError } from '../io.ts';

/** True when nothing listens on `port` at 127.0.0.1 (where the servers listen by default). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** The smallest offset above `offset`, in steps of 100, at which every port in `ports` (offset included) is free. */
async function freeOffset(ports: readonly number[], offset: number): Promise<number | undefined> {
  for (let next = offset + 100; next <= offset + 2_000 && next <= 60_000; next += 100) {
    const free = await Promise.all(ports.map((p) => portIsFree(p - offset + next)));
    if (free.every(Boolean)) return next;
  }
  return undefined;
}

/**
 * Stops the start, before anything runs, when a port a server would listen on is taken (another
 * `pnpm start`, another program): one sentence naming the ports and how to start beside them with
 * BULKHEAD_PORT_OFFSET. Without it a server would die of EADDRINUSE while the other answered its
 * health check in its place.
 */
export async function checkPorts(servers: readonly { name: string; port: number }[], offset: number) {
  const free = await Promise.all(servers.map((s) => portIsFree(s.port)));
  const taken = servers.filter((_, i) => !free[i]);
  if (!taken.length) return;
  const ports = taken.map((s) => `${s.port} (${s.name})`).join(', ');
  const next = await freeOffset(
    servers.map((s) => s.port),
    offset,
  );
  const example = next ?? offset + 1_000;
  throw new CliError(
    `${taken.length === 1 ? 'port' : 'ports'} ${ports} ${taken.length === 1 ? 'is' : 'are'} in use, by another ` +
      `\`pnpm start\` or another program: stop it, or start beside it with other ports, ` +
      `e.g. BULKHEAD_PORT_OFFSET=${example} pnpm start (or --port-offset ${example}; the offset is now ${offset})`,
  );
}
