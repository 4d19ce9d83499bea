import { describe, expect, it } from 'vitest';
import { commands } from './index.ts';

describe('the command list --help shows before loading any command', () => {
  it.each(commands.map((c) => [c.name, c]))(
    '%s: the summary and name are the loaded command’s own',
    async (_, entry) => {
      const command = await entry.load();
      expect({ name: command.name, summary: command.summary }).toEqual({
        name: entry.name,
        summary: entry.summary,
      });
    },
  );
});
