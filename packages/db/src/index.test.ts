import { readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));

/** The relative modules `file` loads when it is loaded: static imports and re-exports, not `import type`, not `import()`. */
function staticImports(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  const found = source.matchAll(/^\s*(?:import|export)(?!\s+type\s)(?:[^'";]*?\sfrom)?\s*'(\.[^']+)'/gm);
  return [...found].map((m) => resolve(dirname(file), m[1]!));
}

/** The names of the files in this package that loading `entry` loads, `entry` included. */
function loadedBy(entry: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    staticImports(file).forEach(visit);
  };
  visit(resolve(here, entry));
  return [...seen].map((file) => basename(file)).sort();
}

describe('@bulkhead/db: the production entry loads no embedded database', () => {
  it('the main entry reaches openDatabase without any embedded*.ts module', () => {
    const files = loadedBy('index.ts');
    expect(files).toContain('open.ts');
    expect(files.filter((f) => f.startsWith('embedded'))).toEqual([]);
  });

  it('the embedded entry, which the development tools import, does load them', () => {
    expect(loadedBy('embedded-entry.ts').filter((f) => f.startsWith('embedded'))).toEqual([
      'embedded-entry.ts',
      'embedded-placement.ts',
      'embedded-roles.ts',
      'embedded-supervisor.ts',
      'embedded.ts',
    ]);
  });
});
