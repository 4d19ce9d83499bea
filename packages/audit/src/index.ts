export {
  OUTCOMES,
  SUCCESSFUL_OUTCOMES,
  NOT_REFUSED_OUTCOMES,
  type Outcome,
  type AuditEvent,
  type AuditEventInput,
  type StoredEventFields,
} from './events.ts';
export {
  AUDIT_COLUMNS,
  AUDIT_COLUMN_NAMES,
  SEALED_WHEN_SET,
  eventRow,
  type AuditColumn,
  type AuditEventRow,
} from './columns.ts';
export { canonicalJson } from './hash.ts';
export {
  cleanField,
  cleanJson,
  normaliseEvent,
  FIELD_LIMITS,
  MAX_DEPTH,
  MAX_JSON_CHARS,
} from './normalise.ts';
export { createAuditWriter, type AuditWriter, type AuditWriterOptions } from './writer.ts';
export {
  readBatch,
  readEvent,
  readNewest,
  readRecent,
  streamEvents,
  EVENT_COLUMNS,
  type AuditFilter,
} from './reader.ts';
export { eventJson, exportHeader, exportLine, EXPORT_FORMATS, type ExportFormat } from './export-format.ts';
export { eventSealStatus, type EventSealStatus, type SealCheck } from './event-seal.ts';
export {
  sealLog,
  sealUpTo,
  startSealer,
  sealHead,
  GENESIS_MAC,
  SETTLE_MS,
  UNSEALED_LIMIT_MS,
  type Seal,
  type SealHead,
  type SealPass,
  type Sealer,
} from './seal.ts';
export { horizon, settled, type Horizon } from './horizon.ts';
export { verifyLog, type LogBreak, type LogReport, type LogWarning, type ServerTally } from './verify.ts';
export {
  checkpointPublicKey,
  checkpointSigner,
  keyFingerprint,
  type CheckpointSigner,
  type SignedCheckpoint,
} from './checkpoint.ts';
export { verifyLogWithPublicKey } from './verify-public.ts';
export { timestampCheckpoints, TIMESTAMP_LATE_MS } from './checkpoint-timestamps.ts';
export type { CheckpointCoverage } from './checkpoint-walk.ts';
export { verifyExport, writeCheckpointedExport, CHECKPOINTED_EXPORT } from './checkpoint-export.ts';
export { LEASE_MS } from './lease.ts';
export { pruneLog, type PruneResult } from './prune.ts';
export type { ForwardDestination } from './forward/destination.ts';
export { syslogDestination, type SyslogTarget } from './forward/syslog-tls.ts';
export { ocsfFileDestination } from './forward/ocsf-file.ts';
export { ocsfApiActivity, OCSF_API_ACTIVITY, OCSF_VERSION } from './forward/ocsf.ts';
export { syslogMessage, octetFrame } from './forward/syslog.ts';
export {
  forwardAll,
  forwardBatch,
  startForwarder,
  FORWARD_BATCH,
  type Forwarder,
  type ForwarderOptions,
  type ForwardPass,
} from './forward/forwarder.ts';
export { readForwardLag, type ForwardLag, type ForwardPosition } from './forward/position.ts';
