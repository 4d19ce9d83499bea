import type { AnyTool, ToolIcon } from './define-tool.ts';
import type { ToolCatalog } from './catalog.ts';

/** What a server is, independent of how it is served. */
export interface ServerOptions {
  /** The server's name, also the audience of its tokens (`admin`, `customer`, `dev-knowledge`). */
  name: string;
  version: string;
  title?: string;
  description: string;
  icons?: ToolIcon[];
  tools: readonly AnyTool[];
  /** The budget of the part a model reads: name, title, description, input schema (default 6,000). */
  modelBudgetChars?: number;
}

/**
 * A server ready to be served over HTTP (`createHttpApp`) or stdio (`serveStdio`). Built by
 * `createServer`; declared here, with the call pipeline, because the approvals that run a server's
 * gated tools read it too, and they may not import the assembly above them.
 */
export interface ServerDefinition extends Readonly<Omit<ServerOptions, 'tools'>> {
  title: string;
  catalog: ToolCatalog;
  modelBudgetChars: number;
}

/** True when some approved action of the server sends e-mail (`approval.sends` names `email`). */
export function sendsEmail(def: Pick<ServerDefinition, 'catalog'>): boolean {
  return def.catalog.tools.some((t) => t.approval?.sends?.includes('email'));
}

/** True when some tool of the server stops at an approval gate. */
export function hasGatedTools(def: Pick<ServerDefinition, 'catalog'>): boolean {
  return def.catalog.tools.some((t) => t.approval);
}
