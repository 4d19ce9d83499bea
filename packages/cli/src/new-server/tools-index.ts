/** `src/tools/index.ts` of a new server: every tool's import, then the list in the order tools/list shows them. */
export function toolsIndexTs(name: string, tools: { exportName: string; file: string }[]): string {
  return `import type { AnyTool } from '@bulkhead/core';
${tools.map((t) => `import { ${t.exportName} } from './${t.file}.ts';`).join('\n')}

/** Every tool of ${name}, in the order tools/list shows them. */
export const tools: AnyTool[] = [${tools.map((t) => t.exportName).join(', ')}];
`;
}
