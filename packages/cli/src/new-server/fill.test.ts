import { describe, expect, it } from 'vitest';
import { fillTemplate, fillText } from './fill.ts';

// The rules of the templates (packages/cli/templates/README.md), each on a template written inline. That
// the real templates give a new server exactly its files is written-files.test.ts's work.

describe('fillText', () => {
  it('replaces a quoted placeholder by its value as a quoted string, a bare one by its text', () => {
    const template = "export const __SERVER__ = { title: '__TITLE__', doc: 'The __NAME__ server' };\n";
    expect(fillText(template, { __SERVER__: 'deskServer', __TITLE__: "Ana's desk", __NAME__: 'desk' })).toBe(
      "export const deskServer = { title: 'Ana\\'s desk', doc: 'The desk server' };\n",
    );
  });

  it('drops an empty argument with its comma, and keeps a given one', () => {
    const template = 'issueTestToken(db.sql, server, __TOKEN_OPTIONS__);';
    expect(fillText(template, { __TOKEN_OPTIONS__: '' })).toBe('issueTestToken(db.sql, server);');
    expect(fillText(template, { __TOKEN_OPTIONS__: "{ customerId: 'C-1001' }" })).toBe(
      "issueTestToken(db.sql, server, { customerId: 'C-1001' });",
    );
  });

  it('never reads a value for placeholders', () => {
    expect(fillText("title: '__TITLE__', x: __X__", { __TITLE__: '__X__', __X__: '__TITLE__' })).toBe(
      "title: '__X__', x: __TITLE__",
    );
  });

  it('keeps the lines whose @if holds, block or line, and drops the markers', () => {
    const template = [
      'try {',
      '  // @if upstream',
      '  const env = loadEnv();',
      '  // @else',
      '  run(loadEnv());',
      '  // @end',
      '  close(); // @if !upstream',
      '  quoted, // eslint-disable-line no-unused-vars -- @if textArgs: the preview quotes free text',
      '}',
    ].join('\n');
    expect(fillText(template, {}, { upstream: true, textArgs: true })).toBe(
      ['try {', '  const env = loadEnv();', '  quoted,', '}'].join('\n'),
    );
    expect(fillText(template, {}, { upstream: false })).toBe(
      ['try {', '  run(loadEnv());', '  close();', '}'].join('\n'),
    );
  });

  it('drops the imports of the stand-ins, on one line or several', () => {
    const template = [
      "import { z } from 'zod';",
      "import { __INPUT__ } from '../stand-ins.ts';",
      'import {',
      '  __ANNOTATIONS__,',
      '  __INPUT__,',
      "} from './stand-ins.ts';",
      'export const input = __INPUT__;',
    ].join('\n');
    expect(fillText(template, { __INPUT__: 'z.strictObject({})' })).toBe(
      "import { z } from 'zod';\nexport const input = z.strictObject({});",
    );
  });

  it('refuses a placeholder it has no value for, naming it', () => {
    expect(() => fillText("name: '__NAME__'", {})).toThrow('no value for __NAME__');
  });
});

describe('fillTemplate', () => {
  it('reads the template from packages/cli/templates/server/, and names it in an error', () => {
    expect(
      fillTemplate('src/server.test.ts', { __SERVER__: 'deskServer', __SERVER_NAME__: 'desk' }),
    ).toContain(
      "import { deskServer as def } from './server.ts';\n\ndescribe('what the model sees of desk', () => {",
    );
    expect(() => fillTemplate('src/server.ts', {})).toThrow(
      /packages\/cli\/templates\/server\/src\/server\.ts: no value for __SERVER_DOC__$/,
    );
  });
});
