/** Why the CLI's bundle must be (re)built, or null when it is current. */
export function staleness(): Promise<string | null>;
/** Builds packages/cli/dist/cli.mjs from src/main.ts. */
export function buildBundle(): Promise<void>;
/** The bundle's path, built first when absent or older than a source it was built from. */
export function ensureBundle(options?: { quiet?: boolean }): Promise<string>;
export const bundlePath: string;
