import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AnyTool } from '@bulkhead/core';
import {
  cedarSchema,
  createCatalog,
  loadPolicySet,
  policyTools,
  PolicySetInvalid,
  type PolicySet,
} from '@bulkhead/core/operator';
import { CliError } from '../io.ts';
import { discoverServers } from '../servers.ts';

/**
 * Every MCP server's tools, from each `src/tools/index.ts` (the list its server is built from), loaded
 * through tsx as `bulkhead tools` does: what a policy set is checked against, and fixtures validated by.
 */
export async function serverTools(): Promise<Record<string, AnyTool[]>> {
  const { tsImport } = await import('tsx/esm/api');
  const servers = discoverServers().filter((s) => s.kind === 'mcp');
  const files = servers.map((s) => join(s.dir, 'src', 'tools', 'index.ts'));
  // One module that imports them all: loaded once, the kit they share is compiled once, not per server.
  const dir = await mkdtemp(join(tmpdir(), 'bulkhead-policy-'));
  const entry = join(dir, 'tools.ts');
  await writeFile(
    entry,
    files
      .map((f, i) => `export { tools as t${i} } from ${JSON.stringify(pathToFileURL(f).href)};\n`)
      .join(''),
  );
  try {
    const module = (await tsImport(pathToFileURL(entry).href, import.meta.url)) as Record<string, unknown>;
    const out: Record<string, AnyTool[]> = {};
    for (const [i, server] of servers.entries()) {
      if (!Array.isArray(module[`t${i}`])) throw new CliError(`${files[i]} exports no \`tools\` list`);
      out[server.name] = module[`t${i}`] as AnyTool[];
    }
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The Cedar schema of `tools`, by server. */
export function schemaOf(tools: Record<string, AnyTool[]>): ReturnType<typeof cedarSchema> {
  return cedarSchema(
    Object.fromEntries(Object.entries(tools).map(([name, list]) => [name, policyTools(createCatalog(list))])),
  );
}

/** The policy text of `file`, checked against every server's tools: the set, or every finding. */
export async function checkedPolicy(
  text: string,
  source: string,
  tools?: Record<string, AnyTool[]>,
): Promise<PolicySet> {
  try {
    return await loadPolicySet(text, schemaOf(tools ?? (await serverTools())));
  } catch (err) {
    if (err instanceof PolicySetInvalid)
      throw new CliError(
        `${source} is not a valid policy set:\n${err.findings.map((f) => `  - ${f}`).join('\n')}`,
      );
    throw err;
  }
}
