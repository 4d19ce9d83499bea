// Where serve/run.ts still imports from: that file is being edited on another branch, so its imports
// move once both are merged (to ./observability/logger.ts); then this file goes.
export { createLogger, type Logger } from './observability/logger.ts';
