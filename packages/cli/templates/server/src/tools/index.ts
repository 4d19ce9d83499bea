import type { AnyTool } from '@bulkhead/core';
import { countWeekdays } from './count-weekdays.ts';
import { __TOOL__ as gatedOperation } from './gated-operation.ts';
import { __UPSTREAM_TOOL__ } from './get-upstream-status.ts';
import { __TOOL__ as readOperation } from './read-operation.ts';

/**
 * Not a template: the generator writes a new server's list of tools itself (src/new-server/tools-index.ts).
 * This one lists the templates' tools, so that src/server.ts type-checks.
 */
export const tools: AnyTool[] = [countWeekdays, __UPSTREAM_TOOL__, readOperation, gatedOperation];
