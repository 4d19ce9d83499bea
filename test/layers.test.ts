import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { lintAs } from './eslint-without-types.ts';
import { root } from './helpers.ts';

/** The layer findings eslint.config.js reports for `code` as if it were the file at `path`. */
async function layerFindings(path: string, code: string): Promise<string[]> {
  return (await lintAs(path, `${code}\nexport const used = x;\n`))
    .filter((m) => m.ruleId === 'bulkhead/core-layers' || m.ruleId === 'no-restricted-imports')
    .map((m) => `${m.ruleId}: ${m.message.slice(0, m.message.indexOf(':'))}`);
}

describe('eslint.config.js: layers point one way', () => {
  it('between packages: core imports no package above it', async () => {
    expect(
      await layerFindings(
        'packages/core/src/pipeline/call/call-tool.ts',
        `import { x } from '@bulkhead/domain';`,
      ),
    ).toEqual([
      "no-restricted-imports: '@bulkhead/domain' import is restricted from being used by a pattern. core may not import this",
    ]);
  });

  it('between packages: the database layer does not find the deployables, nor does its test helper', async () => {
    const finding =
      "no-restricted-imports: '@bulkhead/deployables' import is restricted from being used by a pattern. db may not import this";
    expect(
      await layerFindings('packages/db/src/open.ts', `import { x } from '@bulkhead/deployables';`),
    ).toEqual([finding]);
    // It takes the deployables' roles as the test global setup hands them over.
    expect(
      await layerFindings('packages/db/src/test-database.ts', `import { x } from '@bulkhead/deployables';`),
    ).toEqual([finding]);
    // The database layer's own tests may read the repository, as every test may.
    expect(
      await layerFindings('packages/db/src/logins.test.ts', `import { x } from '@bulkhead/deployables';`),
    ).toEqual([]);
  });

  it('the console (an app, not an MCP server) imports neither the CLI nor a server', async () => {
    const path = 'apps/console/src/main.ts';
    expect(await layerFindings(path, `import { x } from '@bulkhead/cli/deployment';`)).toEqual([
      "no-restricted-imports: '@bulkhead/cli/deployment' import is restricted from being used by a pattern. apps may not import this",
    ]);
    expect(await layerFindings(path, `import { x } from '../../../servers/admin/src/server.ts';`)).toEqual([
      "no-restricted-imports: '../../../servers/admin/src/server.ts' import is restricted from being used by a pattern. Nothing imports a server or an app",
    ]);
  });

  it('inside core: the call pipeline imports neither approvals/, tasks/ nor the assembly', async () => {
    const path = 'packages/core/src/pipeline/call/call-tool.ts';
    expect(await layerFindings(path, `import { x } from '../../approvals/store.ts';`)).toEqual([
      'bulkhead/core-layers: the call pipeline may not import ../../approvals/store.ts, which is approvals',
    ]);
    expect(await layerFindings(path, `import { x } from '../../tasks/task-state.ts';`)).toEqual([
      'bulkhead/core-layers: the call pipeline may not import ../../tasks/task-state.ts, which is approvals',
    ]);
    expect(await layerFindings(path, `import type { x } from '../../serve/create-server.ts';`)).toEqual([
      'bulkhead/core-layers: the call pipeline may not import ../../serve/create-server.ts, which is the assembly',
    ]);
    expect(await layerFindings(path, `const x = () => import('../../serve/http-app.ts');`)).toEqual([
      'bulkhead/core-layers: the call pipeline may not import ../../serve/http-app.ts, which is the assembly',
    ]);
    expect(await layerFindings(path, `import { x } from '../tool-definition/server-definition.ts';`)).toEqual(
      [],
    );
  });

  it('inside core: approvals/ and tasks/ import the pipeline, not the assembly', async () => {
    expect(
      await layerFindings(
        'packages/core/src/approvals/requester.ts',
        `import { x } from '../serve/create-server.ts';`,
      ),
    ).toEqual([
      'bulkhead/core-layers: approvals may not import ../serve/create-server.ts, which is the assembly',
    ]);
    expect(
      await layerFindings(
        'packages/core/src/tasks/task-store.ts',
        `export { x } from '../serve/mcp-server.ts';`,
      ),
    ).toEqual([
      'bulkhead/core-layers: approvals may not import ../serve/mcp-server.ts, which is the assembly',
    ]);
    expect(
      await layerFindings(
        'packages/core/src/approvals/executor.ts',
        `import { x } from '../pipeline/call/call-tool.ts';\nimport { y } from './store.ts';\nconsole.log(y);`,
      ),
    ).toEqual([]);
  });

  it('inside core: the assembly imports every layer, and tests import anything', async () => {
    expect(
      await layerFindings(
        'packages/core/src/serve/create-server.ts',
        `import { x } from '../approvals/get-approval-status.ts';`,
      ),
    ).toEqual([]);
    expect(
      await layerFindings(
        'packages/core/src/approvals/approvals.test.ts',
        `import { x } from '../testing/index.ts';`,
      ),
    ).toEqual([]);
  });

  it('inside core: no production file imports the test helpers, and every folder is a layer', async () => {
    expect(
      await layerFindings('packages/core/src/serve/run.ts', `import { x } from '../testing/index.ts';`),
    ).toEqual([
      'bulkhead/core-layers: the assembly may not import ../testing/index.ts, which is the test helpers',
    ]);
    expect(await layerFindings('packages/core/src/index.ts', `import { x } from './serve/run.ts';`)).toEqual(
      [],
    );
    await expect(
      layerFindings('packages/core/src/misc/x.ts', `import { x } from '../serve/run.ts';`),
    ).rejects.toThrow('packages/core/src/misc/ is in no layer');
  });
});

describe('eslint.config.js: no function over 100 lines, no file over 400, without a reason', () => {
  const statements = (lines: number, name = 'v') =>
    Array.from({ length: lines }, (_, i) => `  const ${name}${i} = ${i};`).join('\n');
  const longFunction = (lines: number) => `export function long() {\n${statements(lines - 2)}\n}\n`;
  /** A file of `lines` lines of code in functions of 50 lines each (under the function limit). */
  const longFile = (lines: number, extra = '') =>
    Array.from(
      { length: lines / 50 },
      (_, f) => `export function f${f}() {\n${statements(48, `v${f}_`)}\n}${extra}`,
    ).join('\n');
  const findings = async (path: string, code: string) =>
    (await lintAs(path, code))
      .filter((m) => m.ruleId === 'max-lines-per-function' || m.ruleId === 'max-lines')
      .map((m) => m.message);

  it('reports a function of 101 lines in production code, not one of 100', async () => {
    expect(await findings('packages/core/src/pipeline/x.ts', longFunction(101))).toEqual([
      "Function 'long' has too many lines (101). Maximum allowed is 100.",
    ]);
    expect(await findings('servers/admin/src/x.ts', longFunction(100))).toEqual([]);
  });

  it('reports a file of 401 lines of code, not one of 400 however many blank lines and comments it has', async () => {
    expect(await findings('packages/audit/src/x.ts', `${longFile(400)}\nexport const one = 1;\n`)).toEqual([
      'File has too many lines (401). Maximum allowed is 400.',
    ]);
    expect(await findings('apps/console/src/x.ts', `${longFile(400, '\n\n// why it is so\n')}\n`)).toEqual(
      [],
    );
  });

  it('does not count blank lines and comments in a function', async () => {
    const commented = longFunction(100).replace('{\n', '{\n  // why it is so\n\n');
    expect(await findings('packages/core/src/pipeline/x.ts', commented)).toEqual([]);
  });

  it('lets tests be long, and a function or a file whose comment says why it must be', async () => {
    expect(await findings('packages/core/src/pipeline/x.test.ts', longFunction(200))).toEqual([]);
    expect(await findings('packages/core/src/testing/x.ts', longFile(500))).toEqual([]);
    const reasoned = `// eslint-disable-next-line max-lines-per-function -- one table, read top to bottom\n${longFunction(200)}`;
    expect(await findings('packages/core/src/pipeline/x.ts', reasoned)).toEqual([]);
  });
});

describe('ARCHITECTURE.md stays true', () => {
  const page = readFileSync(`${root}ARCHITECTURE.md`, 'utf8');

  it('draws every package, every deployable and every folder of the kit', () => {
    for (const dir of ['packages', 'servers', 'apps'])
      for (const name of readdirSync(`${root}${dir}`, { withFileTypes: true }))
        if (name.isDirectory() && existsSync(`${root}${dir}/${name.name}/package.json`))
          expect(page, `${dir}/${name.name}`).toContain(`${dir}/${name.name}`);
    for (const name of readdirSync(`${root}packages/core/src`, { withFileTypes: true }))
      if (name.isDirectory()) expect(page, name.name).toContain(`\`${name.name}/\``);
  });

  it('names only files that exist where it says', () => {
    const paths = [...page.matchAll(/`((?:packages|servers|apps|test)\/[\w./-]+)`/g)].map((m) => m[1]!);
    expect(paths.length).toBeGreaterThan(10);
    expect(paths.filter((p) => !existsSync(`${root}${p}`))).toEqual([]);
  });
});
