// Where upstream/client.ts still imports `untrusted` from: that file is being edited on another branch,
// so its imports move once both are merged (to ../text-safety/untrusted/wrap.ts); then this file goes.
export { untrusted, type UntrustedText } from '../text-safety/untrusted/wrap.ts';
