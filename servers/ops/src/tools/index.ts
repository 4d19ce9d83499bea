import type { AnyTool } from '@bulkhead/core';
import { createSilence } from './create-silence.ts';
import { expireSilence } from './expire-silence.ts';
import { getAlert } from './get-alert.ts';
import { listAlerts } from './list-alerts.ts';
import { listSilences } from './list-silences.ts';

/** Every tool of ops, in the order tools/list shows them: alerts, then silences; reads before writes. */
export const tools: AnyTool[] = [listAlerts, getAlert, listSilences, createSilence, expireSilence];
