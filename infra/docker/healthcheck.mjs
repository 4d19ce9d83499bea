// The image's HEALTHCHECK: GET /healthz on this container's own port (PORT, else the port in
// the server's manifest), exit 0 on a 200. Node's fetch, so the image needs no curl.
/* global fetch, AbortSignal */
import { readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const port = process.env.PORT || manifest.bulkhead?.port;
try {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(4000) });
  process.exit(res.status === 200 ? 0 : 1);
} catch {
  process.exit(1);
}
