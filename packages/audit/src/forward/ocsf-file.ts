import { open } from 'node:fs/promises';
import type { AuditEvent } from '../events.ts';
import type { ForwardDestination } from './destination.ts';
import { ocsfApiActivity } from './ocsf.ts';

/**
 * Forwards to a file of OCSF API Activity events, one JSON object a line, appended. A batch is
 * acknowledged once it is written and flushed to the disk (fdatasync). A line cut short by a crash is
 * ended before the next batch, so that every later line is whole.
 */
export function ocsfFileDestination(path: string, hostname: string): ForwardDestination {
  return {
    name: `ocsf:${path}`,
    async deliver(events: readonly AuditEvent[]) {
      const file = await open(path, 'a+', 0o640);
      try {
        const { size } = await file.stat();
        let text = events.map((e) => `${JSON.stringify(ocsfApiActivity(e, hostname))}\n`).join('');
        if (size > 0) {
          const last = Buffer.alloc(1);
          await file.read(last, 0, 1, size - 1);
          if (last[0] !== 0x0a) text = `\n${text}`;
        }
        await file.appendFile(text, 'utf8');
        await file.datasync();
      } finally {
        await file.close();
      }
    },
  };
}
