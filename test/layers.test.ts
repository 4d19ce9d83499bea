import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { root } from './helpers.ts';

const eslint = new ESLint({ cwd: root });

/** The layer findings eslint.config.js reports for `code` as if it were the file at `path`. */
async function layerFindings(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${code}\nexport const used = x;\n`, { filePath: `${root}${path}` });
  return result!.messages
    .filter((m) => m.ruleId === 'bulkhead/core-layers' || m.ruleId === 'no-restricted-imports')
    .map((m) => `${m.ruleId}: ${m.message.slice(0, m.message.indexOf(':'))}`);
}

describe('eslint.config.js: layers point one way', () => {
  it('between packages: core imports no package above it', async () => {
    expect(
      await layerFindings('packages/core/src/call-tool.ts', `import { x } from '@bulkhead/domain';`),
    ).toEqual([
      "no-restricted-imports: '@bulkhead/domain' import is restricted from being used by a pattern. core may not import this",
    ]);
  });

  it('inside core: the call pipeline imports neither approvals/, tasks/ nor the assembly', async () => {
    const path = 'packages/core/src/call-tool.ts';
    expect(await layerFindings(path, `import { x } from './approvals/store.ts';`)).toEqual([
      'bulkhead/core-layers: the call pipeline may not import ./approvals/store.ts, which is approvals',
    ]);
    expect(await layerFindings(path, `import { x } from './tasks/task-state.ts';`)).toEqual([
      'bulkhead/core-layers: the call pipeline may not import ./tasks/task-state.ts, which is approvals',
    ]);
    expect(await layerFindings(path, `import type { x } from './create-server.ts';`)).toEqual([
      'bulkhead/core-layers: the call pipeline may not import ./create-server.ts, which is the assembly',
    ]);
    expect(await layerFindings(path, `const x = () => import('./http-app.ts');`)).toEqual([
      'bulkhead/core-layers: the call pipeline may not import ./http-app.ts, which is the assembly',
    ]);
    expect(await layerFindings(path, `import { x } from './server-definition.ts';`)).toEqual([]);
  });

  it('inside core: approvals/ and tasks/ import the pipeline, not the assembly', async () => {
    expect(
      await layerFindings(
        'packages/core/src/approvals/requester.ts',
        `import { x } from '../create-server.ts';`,
      ),
    ).toEqual(['bulkhead/core-layers: approvals may not import ../create-server.ts, which is the assembly']);
    expect(
      await layerFindings('packages/core/src/tasks/task-store.ts', `export { x } from '../mcp-server.ts';`),
    ).toEqual(['bulkhead/core-layers: approvals may not import ../mcp-server.ts, which is the assembly']);
    expect(
      await layerFindings(
        'packages/core/src/approvals/executor.ts',
        `import { x } from '../call-tool.ts';\nimport { y } from './store.ts';\nconsole.log(y);`,
      ),
    ).toEqual([]);
  });

  it('inside core: the assembly imports every layer, and tests import anything', async () => {
    expect(
      await layerFindings(
        'packages/core/src/create-server.ts',
        `import { x } from './approvals/get-approval-status.ts';`,
      ),
    ).toEqual([]);
    expect(
      await layerFindings(
        'packages/core/src/approvals/approvals.test.ts',
        `import { x } from '../testing.ts';`,
      ),
    ).toEqual([]);
  });
});
