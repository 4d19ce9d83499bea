import { ESLint } from 'eslint';
import { root } from './helpers.ts';

/**
 * eslint.config.js as `pnpm lint` runs it, minus the rules that need type information. Those read
 * the TypeScript program, which knows only files on disk, and the tests that use this lint code as
 * if it were a file that does not exist (`packages/core/src/misc/x.ts`): a rule about imports or
 * lengths needs no types. test/lint-promises.test.ts covers the typed rules on real files.
 */
export const eslintWithoutTypes = new ESLint({
  cwd: root,
  overrideConfig: {
    files: ['**/*.{ts,tsx}'],
    languageOptions: { parserOptions: { project: null, projectService: false } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'off',
      '@typescript-eslint/no-misused-promises': 'off',
    },
  },
});

/** The messages for `code` as if it were the file at `path`; a file that does not parse is an error, not "no findings". */
export async function lintAs(path: string, code: string): Promise<ESLint.LintResult['messages']> {
  const [result] = await eslintWithoutTypes.lintText(code, { filePath: `${root}${path}` });
  const fatal = result!.messages.find((m) => m.fatal);
  if (fatal) throw new Error(`${path} did not parse: ${fatal.message}`);
  return result!.messages;
}
