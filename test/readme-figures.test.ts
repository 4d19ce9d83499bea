import { readFileSync } from 'node:fs';
import { lintServer, type ServerDefinition } from '@bulkhead/core';
import { describe, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { customerServer } from '../servers/customer/src/server.ts';
import { devKnowledgeServer } from '../servers/dev-knowledge/src/server.ts';
import { root } from './helpers.ts';

const fmt = (n: number) => n.toLocaleString('en-US');

/** The README's tools tables show the tools/list figures; this keeps them true when a tool changes. */
describe.each([adminServer, customerServer, devKnowledgeServer] as ServerDefinition[])(
  'README figures of $name',
  (def) => {
    const readme = readFileSync(`${root}servers/${def.name}/README.md`, 'utf8');

    it('lists every tool with its measured size', () => {
      for (const listing of def.catalog.listings.values()) {
        const row = readme.split('\n').find((line) => line.startsWith(`| \`${listing.name}\``));
        expect(row, `README row for ${listing.name}`).toBeDefined();
        expect(
          row!.trim().endsWith(`| ${fmt(JSON.stringify(listing).length)} |`),
          `size of ${listing.name} in: ${row}`,
        ).toBe(true);
      }
    });

    it('appears in the main README with the same figures', () => {
      const { size } = lintServer(def);
      const main = readFileSync(`${root}README.md`, 'utf8');
      expect(main).toContain(
        `| ${fmt(size.chars)} chars (~${fmt(size.tokens)} tokens), budget ${fmt(def.toolsBudgetChars)} |`,
      );
    });

    it('states the whole list and its budget', () => {
      const { size } = lintServer(def);
      expect(readme.replace(/\s+/g, ' ')).toContain(`${fmt(size.chars)} characters`);
      expect(readme.replace(/\s+/g, ' ')).toContain(fmt(def.toolsBudgetChars));
    });
  },
);
