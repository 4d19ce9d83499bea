// Where serve/run.ts still imports from: that file is being edited on another branch, so its imports
// move once both are merged (to ./tool-definition/server-definition.ts); then this file goes.
export { hasGatedTools, sendsEmail, type ServerDefinition } from './tool-definition/server-definition.ts';
