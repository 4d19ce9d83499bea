// Where upstream/client.ts still imports ToolError from: that file is being edited on another branch,
// so its imports move once both are merged (to ../tool-definition/errors.ts); then this file goes.
export { ToolError } from './tool-definition/errors.ts';
