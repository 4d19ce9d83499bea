/**
 * The tools of a server an operator has switched off for an incident: until switched on again they do
 * not exist for any client, exactly like a tool outside a token's scopes. Kept in memory by the
 * serving process (`createToolSwitches`), so asking costs no query.
 */
export interface SwitchedOff {
  /** The names switched off now; waits only for the first read at start, never after. */
  names(): ReadonlySet<string> | Promise<ReadonlySet<string>>;
}

/** Nothing switched off: for a kit built without a database watch (tests of the pipeline alone). */
export const NOTHING_SWITCHED_OFF: SwitchedOff = { names: () => new Set<string>() };
