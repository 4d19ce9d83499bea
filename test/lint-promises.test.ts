import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';
import { root } from './helpers.ts';

// Under CI=true typescript-eslint assumes a one-off run and types each file as it is on disk, not
// as the text handed to lintText: told it is not one, it types the text given.
const eslint = new ESLint({
  cwd: root,
  overrideConfig: { languageOptions: { parserOptions: { disallowAutomaticSingleRunInference: true } } },
});
/** A real production file: the typed rules read the TypeScript program, which knows only files on disk. */
const PRODUCTION = 'servers/ops/src/server.ts';
const SEND = 'async function send(): Promise<void> {}\n';

/** What the promise rules report for `code` as if it were the file at `path`, as `rule line`. */
async function findings(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}${path}` });
  const fatal = result!.messages.find((m) => m.fatal);
  if (fatal) throw new Error(`${path} did not parse: ${fatal.message}`);
  return result!.messages.filter((m) => m.ruleId?.endsWith('-promises')).map((m) => `${m.ruleId} ${m.line}`);
}

describe('eslint.config.js: a promise is awaited, returned, or let go on purpose', () => {
  // The first typed lint builds the TypeScript program of the whole repository (a tsc run's worth
  // of work): here, under the hook's time limit rather than the first test's.
  beforeAll(() => findings(PRODUCTION, 'export {};\n'));

  it('reports a promise nobody awaits, and one handed to what expects a plain function', async () => {
    const code = `${SEND}export function start(): void {\n  send();\n  setTimeout(send, 10);\n}\n`;
    expect(await findings(PRODUCTION, code)).toEqual([
      '@typescript-eslint/no-floating-promises 3',
      '@typescript-eslint/no-misused-promises 4',
    ]);
  });

  it('lets through a promise awaited, returned, or let go with void', async () => {
    const code =
      `${SEND}export async function a(): Promise<void> {\n  await send();\n}\n` +
      `export function b(): Promise<void> {\n  return send();\n}\n` +
      `export function c(): void {\n  void send().catch(() => {});\n  setTimeout(() => void send(), 10);\n}\n`;
    expect(await findings(PRODUCTION, code)).toEqual([]);
  });

  it('leaves tests alone', async () => {
    const code = `${SEND}export function start(): void {\n  send();\n}\n`;
    expect(await findings('servers/ops/src/server.test.ts', code)).toEqual([]);
  });
});
