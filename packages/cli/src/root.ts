import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { workspaceRoot } from '@bulkhead/core';

/**
 * The repository this CLI belongs to, found from this file rather than from the
 * working directory: `pnpm --dir <repo> bulkhead …` and `node …/main.ts` run from
 * anywhere, and the servers, the sample documents and the data dir are still found.
 */
export const repoRoot = workspaceRoot(dirname(fileURLToPath(import.meta.url)));
