import type { Command } from '../command.ts';
import { approvalsCommand } from './approvals.ts';
import { approversCommand } from './approvers.ts';
import { auditCommand } from './audit.ts';
import { dbCommand } from './db.ts';
import { demoStartHook } from './demo-start.ts';
import { kbStartHook } from './kb-start.ts';
import { kbCommand } from './kb.ts';
import { lintToolsCommand } from './lint-tools.ts';
import { newCommand } from './new.ts';
import { startCommand, startHooks } from './start.ts';
import { tokensCommand } from './tokens.ts';

/** Every top-level command, in the order `--help` lists them. */
export const commands: Command[] = [
  startCommand,
  tokensCommand,
  approvalsCommand,
  approversCommand,
  auditCommand,
  kbCommand,
  lintToolsCommand,
  newCommand,
  dbCommand(),
];

startHooks.push(kbStartHook);
startHooks.push(demoStartHook);
