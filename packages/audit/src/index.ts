export { OUTCOMES, type Outcome, type AuditEvent, type AuditEventInput } from './events.ts';
export { canonicalJson, eventHash, GENESIS } from './hash.ts';
export { createAuditWriter, type AuditWriter } from './writer.ts';
export { readRecent, streamEvents, streamChain, type AuditFilter } from './reader.ts';
export { verifyChains, signCheckpoint, type ChainReport, type ChainBreak } from './verify.ts';
export { pruneEvents, type PruneResult } from './prune.ts';
