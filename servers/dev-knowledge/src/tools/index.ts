import type { AnyTool } from '@bulkhead/core';
import { getDoc } from './get-doc.ts';
import { listDocs } from './list-docs.ts';
import { searchDocs } from './search-docs.ts';

/** Every tool of dev-knowledge, in the order tools/list shows them. */
export const tools: AnyTool[] = [searchDocs, getDoc, listDocs];
