import { join } from 'node:path';
import { upstreamDeployments, type UpstreamDeployment } from '@bulkhead/cli/deployment';
import { discoverDeployables, type Deployable } from '@bulkhead/deployables';

/** The repository root (infra/ci → ../..). */
export const ROOT = join(import.meta.dirname, '..', '..');

export type { Deployable };

/** Every deployable under servers/ and apps/, found by its manifest, by name: nothing here lists them by name. */
export function deployables(root = ROOT): Deployable[] {
  return discoverDeployables(root).sort((a, b) => a.name.localeCompare(b.name));
}

/** The systems a deployable reaches (`bulkhead.upstreams` in its manifest), as its deployment entries take them. */
export function upstreamsOf(server: Deployable): UpstreamDeployment[] {
  return upstreamDeployments(server.manifest.upstreams);
}

/** Collects named checks and prints one line each; `failed` says whether any failed. */
export function createReport(label: string) {
  let passed = 0;
  let failed = 0;
  return {
    check(name: string, ok: boolean, detail = ''): boolean {
      if (ok) passed += 1;
      else failed += 1;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${label}: ${name}${!ok && detail ? ` — ${detail}` : ''}`);
      return ok;
    },
    summary(): { passed: number; failed: number } {
      console.log(`${label}: ${passed} passed, ${failed} failed`);
      return { passed, failed };
    },
  };
}
