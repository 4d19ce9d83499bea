// Prints `<deployable> <tool>` for every tool of every MCP server, read from the servers' own
// tool lists (src/tools/index.ts), so the image grep checks exactly what each server exposes.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { deployables, ROOT } from './deployables.ts';

for (const server of deployables().filter((d) => d.kind === 'mcp')) {
  const { tools } = (await import(
    pathToFileURL(join(ROOT, 'servers', server.name, 'src/tools/index.ts')).href
  )) as {
    tools: { name: string }[];
  };
  for (const tool of tools) console.log(`${server.name} ${tool.name}`);
}
