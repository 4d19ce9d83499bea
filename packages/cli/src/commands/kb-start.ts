import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { countDocuments } from '@bulkhead/domain';
import { ingestFolder } from '@bulkhead/domain';
import { repoRoot } from '../root.ts';
import { printDetails, summary } from './kb.ts';
import type { StartHook } from './start.ts';

/** The sample documents dev-knowledge serves: Bulkhead's own handbook, the pages of the docs site. */
export const demoDocsFolder = (root = repoRoot) => join(root, 'docs', 'handbook');

/**
 * On a start with an empty knowledge base, loads the shipped sample documents
 * so that dev-knowledge has something to search. A knowledge base that has
 * documents is left alone: it is the operator's, not the demo's.
 */
export const kbStartHook: StartHook = async ({ sql, env, io }) => {
  const folder = demoDocsFolder();
  if (!existsSync(folder) || (await countDocuments(sql)) > 0) return;
  io.err('Loading the sample engineering documents for dev-knowledge...');
  const report = await ingestFolder(sql, folder, {
    onProgress: ({ index, total, file }) => io.progress(`[${index}/${total}] ${file}`),
  });
  io.err(summary(report, env.cwd));
  printDetails(io, report);
};
