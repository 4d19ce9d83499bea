import { existsSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Layers point one way: a package imports only the layers below it, nothing imports a server or an
// app such as the console (the cross-server tests in test/ aside), and another package is imported by its name, never by a path
// into its folder. The kit (core) knows no business words: those are in domain, the demo data in demo.
// The database layer knows no repository: finding the deployables by their folders is deployables'
// work, above it. Its test helper, which sets up every deployable's role, takes the roles as handed over
// (by the test global setup), so it is held to the layer's rule like the layer's code; its tests are not.
const LAYERS = ['db', 'deployables', 'audit', 'core', 'domain', 'demo', 'servers', 'apps', 'cli'];
/** The layers that are folders of deployables, not packages imported by name. */
const DEPLOYABLE_LAYERS = ['servers', 'apps'];
const scoped = (names) => names.flatMap((n) => [`@bulkhead/${n}`, `@bulkhead/${n}/*`]);
/** What only tests use: test helpers and the demo data set. */
const TEST_ONLY = ['@bulkhead/db/testing', '@bulkhead/core/testing', ...scoped(['demo'])];
/**
 * The sources of the MCP servers, and the templates `bulkhead new server` makes them from (which are
 * linted as what they become, not as the CLI).
 */
const SERVER_SOURCES = ['servers/*/src/**', 'packages/cli/templates/*/src/**'];
const TESTS = [
  '**/*.test.ts',
  '**/*.test.tsx',
  '**/test-client.ts',
  '**/fixtures/**',
  // A server's test support: what the cross-server tests start for its upstreams (test/upstreams.ts).
  'servers/*/src/testing/**',
  'packages/cli/templates/*/src/testing/**',
  'packages/core/src/testing/**',
];

/** Production code: what the shape and promise rules below hold (tests and their helpers are free). */
const PRODUCTION = [
  'packages/*/src/**/*.{ts,tsx}',
  'servers/*/src/**/*.{ts,tsx}',
  'apps/*/src/**/*.{ts,tsx}',
];
const NOT_PRODUCTION = [...TESTS, 'packages/*/src/testing/**', '**/testing.ts'];

/** The folder of the package.json nearest above `path`. */
function packageRoot(path) {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if (existsSync(resolve(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return null;
  }
}

/** A relative import that leaves its package reaches into another one's folder, past its entry points. */
const noRelativePackages = {
  meta: {
    type: 'problem',
    schema: [{ type: 'object', properties: { servers: { type: 'boolean' } }, additionalProperties: false }],
    messages: {
      out: '{{source}} leaves this package for {{target}}: import a package by its name (@bulkhead/…); a server, not at all.',
    },
  },
  create(context) {
    const own = packageRoot(context.filename);
    const serversAllowed = context.options[0]?.servers === true;
    const check = (node) => {
      const source = node.source?.value;
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      const target = packageRoot(resolve(dirname(context.filename), source));
      const targetPath = target && relative(context.cwd, target);
      if (serversAllowed && targetPath && DEPLOYABLE_LAYERS.some((l) => targetPath.startsWith(`${l}/`)))
        return;
      if (target && own && target !== own)
        context.report({
          node,
          messageId: 'out',
          data: { source, target: relative(context.cwd, target) || '.' },
        });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

// Inside core, layers point one way too, and each is a folder: the call pipeline (what a tool is and
// how one call runs) at the bottom, approvals and the MCP tasks that show them built on it, the
// assembly that serves both (HTTP, MCP, stdio, run) on top, and the entry points (index.ts,
// operator.ts) above all. testing/ is for tests only: no production file imports it.
const ROOT = dirname(fileURLToPath(import.meta.url));
const CORE_SRC = resolve(ROOT, 'packages/core/src');
const CORE_LAYERS = [
  { name: 'the call pipeline', paths: ['pipeline/'] },
  { name: 'approvals', paths: ['approvals/', 'tasks/'] },
  { name: 'the assembly', paths: ['serve/'] },
  { name: 'the entry points', paths: [''] },
  { name: 'the test helpers', paths: ['testing/'] },
];

/** The index in CORE_LAYERS of a file in core/src (by its folder; '' is a file at the top), or -1 outside it. */
function coreLayer(path) {
  const rel = relative(CORE_SRC, path);
  if (rel.startsWith('..')) return -1;
  const folder = rel.includes('/') ? `${rel.slice(0, rel.indexOf('/'))}/` : '';
  const found = CORE_LAYERS.findIndex((l) => l.paths.includes(folder));
  if (found === -1)
    throw new Error(`packages/core/src/${folder} is in no layer: add it to CORE_LAYERS in eslint.config.js`);
  return found;
}

/**
 * A relative import inside core/src that reaches a layer above the importing file's. A rule of its
 * own, not no-restricted-imports: that one sees an import as written (`./x.ts`, `../x.ts`), not the
 * file it names, and setting it again for these files would replace the package layer rule above.
 */
const coreLayers = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      up: '{{from}} may not import {{source}}, which is {{to}}: inside core, layers import only those below them ({{order}}, lowest first; each layer is a folder).',
    },
  },
  create(context) {
    const own = coreLayer(context.filename);
    if (own === -1) return {};
    const check = (node) => {
      const source = node.source?.value;
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      const target = coreLayer(resolve(dirname(context.filename), source));
      if (target > own)
        context.report({
          node,
          messageId: 'up',
          data: {
            from: CORE_LAYERS[own].name,
            source,
            to: CORE_LAYERS[target].name,
            order: CORE_LAYERS.map((l) => l.name).join(' → '),
          },
        });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

// A server reaches other systems only through the kit (`ctx.upstream('<name>')`, declared in its
// manifest): no HTTP client of its own, no bare fetch, outside its tests (which start local servers).
const HTTP_CLIENTS = [
  'node:http',
  'node:https',
  'node:http2',
  'node:net',
  'node:tls',
  'node:dgram',
  'http',
  'https',
  'http2',
  'net',
  'tls',
  'dgram',
  'undici',
  'axios',
  'got',
  'ky',
  'node-fetch',
  'cross-fetch',
  'superagent',
  'request',
  'ws',
];
const NO_HTTP_CLIENT = {
  paths: HTTP_CLIENTS.map((name) => ({
    name,
    message:
      "A server reaches another system only through ctx.upstream('<name>'), declared in bulkhead.upstreams of its package.json.",
  })),
};
const BARE_FETCH =
  "A server reaches another system only through ctx.upstream('<name>'), declared in bulkhead.upstreams of its package.json.";

/** The import rules of one layer: its own files, and its tests (which may also use the test helpers and demo data). */
function layer(name, dir) {
  const above = LAYERS.slice(LAYERS.indexOf(name) + 1).filter((n) => !DEPLOYABLE_LAYERS.includes(n));
  const rule = (forbidden) => [
    'error',
    {
      patterns: [
        ...(forbidden.length
          ? [
              {
                group: [...new Set(forbidden)],
                message: `${name} may not import this: layers import only those below them (${LAYERS.join(' → ')}, lowest first; demo and the testing entry points are for tests).`,
              },
            ]
          : []),
        {
          group: ['**/servers/**', '**/apps/**'],
          message:
            'Nothing imports a server or an app: each is a compartment of its own (cross-server tests live in test/).',
        },
      ],
    },
  ];
  // The CLI loads the demo data itself (`pnpm start`, `db seed --demo`).
  const own = TEST_ONLY.filter(
    (t) => !t.startsWith(`@bulkhead/${name}`) && !(name === 'cli' && t.startsWith('@bulkhead/demo')),
  );
  const ownRule = rule([...scoped(above), ...own]);
  // The MCP servers' sources (not the apps: the console is a web app, no MCP server) also import no HTTP client.
  const mcpServers =
    name === 'servers'
      ? [
          {
            files: SERVER_SOURCES,
            ignores: TESTS,
            rules: { 'no-restricted-imports': [ownRule[0], { ...ownRule[1], paths: NO_HTTP_CLIENT.paths }] },
          },
        ]
      : [];
  return [
    { files: [dir], ignores: TESTS, rules: { 'no-restricted-imports': ownRule } },
    ...mcpServers,
    {
      files: TESTS.map((t) => [dir, t]),
      rules: {
        'no-restricted-imports': rule(scoped(above.filter((n) => n !== 'demo' && n !== 'deployables'))),
      },
    },
  ];
}

// A regular expression from outside (a model's argument, an upstream's text) runs only through the
// kit's compileModelPattern (RE2 semantics, linear time, size limits): V8's RegExp backtracks, and one
// pattern such as `((.*)*)*é` holds the event loop for minutes. A server builds a RegExp only from a
// literal, and gives match/matchAll/search (which turn a string into a RegExp) only a regex literal.
const STRING_TO_REGEXP = new Set(['match', 'matchAll', 'search']);

/** A literal whose text is fixed where it is written: a string, a regex, or a template without `${}`. */
const fixedLiteral = (node) =>
  (node.type === 'Literal' && (typeof node.value === 'string' || 'regex' in node)) ||
  (node.type === 'TemplateLiteral' && node.expressions.length === 0);

const noDynamicRegexp = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      constructed:
        "A RegExp built from a value that is not a literal: a pattern from outside runs only through compileModelPattern (@bulkhead/core: RE2, linear time), never V8's backtracking engine.",
      converted:
        '.{{method}}() turns a string into a RegExp: pass a regex literal, or for a pattern from outside use compileModelPattern (@bulkhead/core).',
    },
  },
  create(context) {
    const isRegExp = (callee) =>
      (callee.type === 'Identifier' && callee.name === 'RegExp') ||
      (callee.type === 'MemberExpression' && !callee.computed && callee.property.name === 'RegExp');
    const construct = (node) => {
      if (!isRegExp(node.callee) || node.arguments.length === 0) return;
      if (!node.arguments.slice(0, 2).every(fixedLiteral)) context.report({ node, messageId: 'constructed' });
    };
    return {
      NewExpression: construct,
      CallExpression(node) {
        construct(node);
        const callee = node.callee;
        if (
          callee.type !== 'MemberExpression' ||
          callee.computed ||
          !STRING_TO_REGEXP.has(callee.property.name)
        )
          return;
        const [arg] = node.arguments;
        if (arg && !(arg.type === 'Literal' && 'regex' in arg))
          context.report({ node, messageId: 'converted', data: { method: callee.property.name } });
      },
    };
  },
};

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      '**/.bulkhead/**',
      '**/.turbo/**',
      'test/bench/.build/**',
      'docs/.vitepress/cache/**',
    ],
  },
  js.configs.recommended,
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: { URL: 'readonly', console: 'readonly', process: 'readonly' } },
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // Closures that run before the single assignment (e.g. an audit helper reading the caller) need `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    plugins: {
      bulkhead: {
        rules: {
          'no-relative-packages': noRelativePackages,
          'core-layers': coreLayers,
          'no-dynamic-regexp': noDynamicRegexp,
        },
      },
    },
  },
  { files: ['**/*.{ts,tsx,js,mjs}'], rules: { 'bulkhead/no-relative-packages': 'error' } },
  // The cross-server tests are the one place that imports servers (by path: they are no packages).
  { files: ['test/**'], rules: { 'bulkhead/no-relative-packages': ['error', { servers: true }] } },
  ...layer('db', 'packages/db/**'),
  ...layer('deployables', 'packages/deployables/**'),
  ...layer('audit', 'packages/audit/**'),
  ...layer('core', 'packages/core/**'),
  // Tests may use any layer of core: they build servers to exercise approvals and the pipeline.
  { files: ['packages/core/src/**'], ignores: TESTS, rules: { 'bulkhead/core-layers': 'error' } },
  ...layer('domain', 'packages/domain/**'),
  ...layer('demo', 'packages/demo/**'),
  // The CLI before the servers: the templates in packages/cli/templates/ take the servers' rules.
  ...layer('cli', 'packages/cli/**'),
  ...layer('servers', 'servers/**'),
  ...layer('apps', 'apps/**'),
  {
    files: SERVER_SOURCES,
    ignores: TESTS,
    rules: {
      'bulkhead/no-dynamic-regexp': 'error',
      'no-restricted-globals': [
        'error',
        ...['fetch', 'XMLHttpRequest', 'WebSocket', 'EventSource'].map((name) => ({
          name,
          message: BARE_FETCH,
        })),
      ],
      'no-restricted-properties': [
        'error',
        ...['globalThis', 'global', 'window', 'self'].map((object) => ({
          object,
          property: 'fetch',
          message: BARE_FETCH,
        })),
      ],
    },
  },
  // The shape of production code. A function over 100 lines is several functions, a file over 400
  // lines several files: split by meaning (a helper named for its one idea, a file for one concept),
  // not at the line limit. One that must stay longer says why in the comment that switches the rule
  // off for it (`// eslint-disable-next-line max-lines-per-function -- <why>`). Blank lines and
  // comments do not count: a reason written down is never what pushes code over.
  {
    files: [...PRODUCTION, 'packages/cli/templates/*/src/**/*.ts'],
    ignores: NOT_PRODUCTION,
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': [
        'error',
        { max: 100, skipBlankLines: true, skipComments: true, IIFEs: true },
      ],
    },
  },
  // A promise nobody awaits loses its rejection (an unhandled rejection ends the process), and one
  // handed to a caller that expects a plain function (an event listener, setTimeout, forEach) is
  // never awaited at all. Production code says which it means: `await`, `return`, or `void p` with a
  // `.catch` beside it. These rules need the types, so only production code pays for them.
  // One program for all of it, the root tsconfig.json (every package's tsconfig extends the same
  // base and includes only its src/, so the root one compiles the same files the same way), rather
  // than `projectService: true`: that builds a program per package, each holding most of the
  // repository again, and made `eslint .` about four times slower than this (measured, 2 cores).
  {
    files: PRODUCTION,
    ignores: NOT_PRODUCTION,
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: ROOT } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
);
