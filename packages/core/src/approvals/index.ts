export {
  APPROVAL_COLUMNS,
  APPROVAL_ID,
  APPROVAL_STATUSES,
  approvalDeliveries,
  approvalEvents,
  approvalFacets,
  argumentsHash,
  effectiveStatus,
  getApproval,
  listApprovals,
  newApprovalId,
  type ApprovalDelivery,
  type ApprovalEvent,
  type ApprovalFailure,
  type ApprovalFilter,
  type ApprovalRecord,
  type ApprovalStatus,
} from './store.ts';
export { APPROVAL_METHODS, decisionEvent, executionEvent, expiryEvent } from './audit-trail.ts';
export { ApprovalDecisionError, decideApproval, expireOverdue, type Decision } from './decide.ts';
export { createApprovalRequester, DEFAULT_EXPIRY_HOURS, type ApprovalRequesterOptions } from './requester.ts';
export { startApprovalExecutor, type ApprovalExecutor, type ApprovalExecutorOptions } from './executor.ts';
export {
  backoff,
  createOutbox,
  DEFAULT_RETRY,
  DeliveryError,
  dispatchOutbox,
  type Deliverer,
  type OutboxItem,
  type RetryPolicy,
} from './outbox.ts';
export {
  APPROVAL_WEBHOOK,
  approvalWebhookPayload,
  consoleLink,
  DEFAULT_CONSOLE_URL,
  webhookDeliverer,
} from './webhook.ts';
export {
  addressProblem,
  EMAIL_HEADER_FIELDS,
  emailMessage,
  headerText,
  MAX_SUBJECT_CHARS,
  type EmailInput,
} from './email.ts';
export {
  APPROVAL_HEADER,
  messageId,
  OUTBOX_HEADER,
  parseSmtpUrl,
  smtpDeliverer,
  type SmtpOptions,
} from './smtp.ts';
export { getApprovalStatus } from './get-approval-status.ts';
