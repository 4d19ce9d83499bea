import { parsePinFile, pinnedTool, type AnyTool } from '@bulkhead/core';
import pins from '../../pins.json' with { type: 'json' };
import { MCP_UPSTREAM } from '../env.ts';

/**
 * What the upstream said of each tool chosen, as reviewed (pins.json: `bulkhead pins update` rewrites it;
 * an edit for the model goes into a tool's `served.description`). Built into the server, so that what
 * runs is what was reviewed; a tool the upstream later describes otherwise is withheld until accepted.
 */
export const PINS = parsePinFile(JSON.stringify(pins), 'pins.json');

/** Every tool of __SERVER_NAME__: the pinned tools, each the upstream does not mark read-only gated. */
export const tools: AnyTool[] = PINS.tools.map((pin) =>
  pinnedTool(pin, {
    upstream: MCP_UPSTREAM.name,
    readScope: '__READ_SCOPE__',
    writeScope: '__WRITE_SCOPE__',
  }),
);
