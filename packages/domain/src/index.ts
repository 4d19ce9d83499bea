// The business vocabulary the servers share, kept out of the kit: customer, invoice, ticket and
// document arguments, the helpdesk's words, thread query and thread output shape, the knowledge base's documents.
export { customerIdArg, docIdArg, invoiceNumberArg, messageArg, ticketKeyArg } from './arguments.ts';
export {
  getTicketThread,
  MESSAGE_BODY_CHARS,
  THREAD_BODY_CHARS,
  TICKET_AUTHOR_KINDS,
  TICKET_CATEGORIES,
  TICKET_STATUSES,
  type TicketAuthorKind,
  type TicketCategory,
  type ThreadPage,
  type ThreadSelection,
  type TicketMessage,
  type TicketStatus,
} from './helpdesk.ts';
export {
  ticketMessageOutput,
  ticketThreadOutput,
  ticketThreadResult,
  type TicketThreadResult,
} from './ticket-thread.ts';
export {
  DOC_ID_PATTERN,
  DOC_KINDS,
  DOC_TAG_PATTERN,
  countDocuments,
  deleteDocuments,
  listDocumentStates,
  lockKnowledgeIngest,
  upsertDocument,
  type DocKind,
  type KbDocumentInput,
  type KbDocumentState,
} from './knowledge/documents.ts';
export {
  ingestFolder,
  IngestError,
  type IngestChange,
  type IngestOptions,
  type IngestProblem,
  type IngestReport,
} from './knowledge/ingest.ts';
