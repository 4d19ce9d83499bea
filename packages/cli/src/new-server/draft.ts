import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ServerDefinition } from '@bulkhead/core';

/**
 * The definition a new server's files build, before they are written to servers/: its package.json,
 * pins.json (which a server in front of an MCP server builds in) and src/ are written to `scratch` (a
 * folder under packages/cli/node_modules, so that the kit resolves from the CLI's own dependencies; the
 * caller removes it) and its `src/server.ts` loaded through tsx, whether this CLI runs from source or
 * from its bundle.
 */
export async function loadDraft(files: Record<string, string>, scratch: string): Promise<ServerDefinition> {
  for (const [path, text] of Object.entries(files)) {
    if (path !== 'package.json' && path !== 'pins.json' && !path.startsWith('src/')) continue;
    await mkdir(dirname(join(scratch, path)), { recursive: true });
    await writeFile(join(scratch, path), text);
  }
  const { tsImport } = await import('tsx/esm/api');
  const module = (await tsImport(
    pathToFileURL(join(scratch, 'src', 'server.ts')).href,
    import.meta.url,
  )) as Record<string, unknown>;
  const def = Object.values(module).find(
    (v): v is ServerDefinition => typeof v === 'object' && v !== null && 'catalog' in v,
  );
  if (!def) throw new Error(`${join(scratch, 'src', 'server.ts')} exports no server definition`);
  return def;
}
