import {
  escapeJson,
  getToken,
  issueToken,
  listTokens,
  revokeToken,
  samePerson,
  tokenPersons,
  tokenState,
  visible,
  type TokenRecord,
} from '@bulkhead/core/operator';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { parseExpiry } from '../duration.ts';
import { table, when } from '../format.ts';
import { CliError, UsageError } from '../io.ts';
import { personOption } from '../person-option.ts';
import { defaultUrl, discoverServers } from '../servers.ts';
import type { CliEnv } from '../env.ts';

/** Approver tokens open the console only: audience `console`, kind `approver`, never valid on an MCP server. */
const AUDIENCE = 'console';

/**
 * Where an approver signs in: BULKHEAD_CONSOLE_URL as `start` hands it to the servers, else the console
 * deployable on its port plus the offset; null when there is neither.
 */
function consoleUrl(env: CliEnv): string | null {
  const console = discoverServers().find((s) => s.kind === 'console');
  if (env.BULKHEAD_CONSOLE_URL) return env.BULKHEAD_CONSOLE_URL.replace(/\/+$/, '');
  return console ? defaultUrl(console, env.BULKHEAD_PORT_OFFSET) : null;
}

function json(record: TokenRecord, token?: string) {
  return {
    id: record.id,
    ...(token ? { token } : {}),
    label: record.label,
    person: record.owner,
    can_grant: record.scopes.includes('grants:issue'),
    can_manage_tokens: record.scopes.includes('tokens:manage'),
    expires_at: record.expiresAt?.toISOString() ?? null,
    created_at: record.createdAt.toISOString(),
    created_by: record.createdBy,
    last_used_at: record.lastUsedAt?.toISOString() ?? null,
    revoked_at: record.revokedAt?.toISOString() ?? null,
    state: tokenState(record),
  };
}

/** What an approver token may do besides deciding: `approve`, `+grant`, `+operate`. */
function rights(token: TokenRecord): string {
  return [
    'approve',
    ...(token.scopes.includes('grants:issue') ? ['grant'] : []),
    ...(token.scopes.includes('tokens:manage') ? ['operate'] : []),
  ].join('+');
}

const add: Command = {
  name: 'add',
  summary: 'issue an approver token for the console (shown once)',
  help: `Usage: bulkhead approvers add --person <person> [--label <text>] [--group <group>…] [--expires <when>] [--can-grant] [--can-manage-tokens] [--json]

Issues a token with which one person signs in to the approvers' console and
decides with the CLI. It is printed once (only its hash is kept). It is refused
by every MCP server, just as MCP tokens are refused by the console. An approver
is a person: they may not approve a request filed with a token issued to the
same person (\`tokens issue --owner\`).

Options:
  --person <person>    the person who approves with it ("ana@example.com"); the
                       same name as \`tokens issue --owner\` for that person
  --label <text>       how it is shown ("Ana Berg, finance"; default: the person)
  --group <group>      a group the person is in, for the company's policy
                       (\`@groups("finance")\`: who may approve what); repeat for
                       several. A person signing in by the identity provider
                       has the IdP's groups instead
  --expires <when>     30d, 12h, 2w, a date (2027-01-31) or never (default 90d)
  --can-grant          may also grant MCP clients access by OAuth on the
                       console's consent page (scope grants:issue)
  --can-manage-tokens  may also operate in the console (scope tokens:manage):
                       see and revoke every person's tokens and OAuth grants,
                       issue tokens, search and export the whole audit log,
                       switch tools off and on
  --json               print { id, token, label, expires_at, ... }`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      person: { type: 'string' },
      label: { type: 'string' },
      expires: { type: 'string', default: '90d' },
      'can-grant': { type: 'boolean', default: false },
      'can-manage-tokens': { type: 'boolean', default: false },
      group: { type: 'string', multiple: true, default: [] },
      json: { type: 'boolean', default: false },
    });
    const groups = [...new Set(values.group.map((g) => g.trim()))];
    for (const g of groups)
      if (!/^[^\s,][^,]{0,99}$/.test(g) || /\s$/.test(g))
        throw new UsageError(`--group "${g}": a group name of 1 to 100 characters, without commas`);
    const person = personOption(values.person, '--person');
    if (!person)
      throw new UsageError(
        '--person is required: an approver is a person (the same name as `tokens issue --owner` uses for them)',
      );
    const label = values.label?.trim() || person;
    if (label.length > 200) throw new UsageError('--label: at most 200 characters');
    const expiresAt = parseExpiry(values.expires!, '--expires');
    return withDatabase(env, io, async ({ sql }) => {
      // Separation of duties compares persons case- and Unicode-insensitively: say so when a name is
      // another spelling of one already known, before it is taken for someone else.
      const near = (await tokenPersons(sql)).filter((p) => p !== person && samePerson(p, person));
      if (near.length)
        io.err(
          `Note: "${visible(person)}" is the same person as ${near.map((p) => `"${visible(p)}"`).join(', ')} already named on a token: decisions treat them as one person (use that spelling to avoid confusion).`,
        );
      const { token, record } = await issueToken(sql, {
        kind: 'approver',
        server: AUDIENCE,
        label,
        scopes: [
          'approvals:decide',
          ...(values['can-grant'] ? ['grants:issue'] : []),
          ...(values['can-manage-tokens'] ? ['tokens:manage'] : []),
        ],
        expiresAt,
        createdBy: env.operator,
        owner: person,
      });
      if (groups.length) await sql`update bulkhead_tokens set groups = ${groups} where id = ${record.id}`;
      if (values.json) {
        io.out(escapeJson(JSON.stringify({ ...json(record, token), groups })));
        return 0;
      }
      io.out(
        `Issued approver token ${record.id} for ${visible(person)} — "${visible(label)}"${groups.length ? ` in ${groups.map((g) => visible(g)).join(', ')}` : ''}`,
      );
      io.out('');
      io.out(`  ${token}`);
      io.out('');
      io.out(
        'This is the only time the token is shown: hand it to the approver now (only its hash is kept).',
      );
      const signIn = consoleUrl(env);
      io.out(
        `Sign in at ${signIn ? `${signIn}/login` : "the approvers' console (/login)"}. Expires: ${record.expiresAt ? `${when(record.expiresAt)} UTC` : 'never'}.`,
      );
      return 0;
    });
  },
};

const list: Command = {
  name: 'list',
  summary: 'list approver tokens (never their secrets)',
  help: `Usage: bulkhead approvers list [--all] [--json]

Lists approver tokens with label, expiry, last use and state.

Options:
  --all    include revoked and expired tokens
  --json   one JSON array`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      all: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    });
    return withDatabase(env, io, async ({ sql }) => {
      const tokens = await listTokens(sql, { kind: 'approver', server: AUDIENCE, all: values.all });
      if (values.json) {
        io.out(escapeJson(JSON.stringify(tokens.map((t) => json(t)))));
        return 0;
      }
      if (!tokens.length) {
        io.out(
          values.all
            ? 'No approver tokens.'
            : 'No active approver tokens (--all shows revoked and expired ones).',
        );
        return 0;
      }
      io.out(
        table(
          ['ID', 'LABEL', 'RIGHTS', 'EXPIRES', 'LAST USED', 'STATE'],
          tokens.map((t) => [
            t.id,
            visible(t.label),
            rights(t),
            when(t.expiresAt),
            when(t.lastUsedAt),
            tokenState(t),
          ]),
        ),
      );
      return 0;
    });
  },
};

const revoke: Command = {
  name: 'revoke',
  summary: 'revoke an approver token and end its console sessions',
  help: `Usage: bulkhead approvers revoke <id> [--json]

Revokes one approver token: it can no longer sign in, and its open console
sessions end at their next request.`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(argv, { json: { type: 'boolean', default: false } }, true);
    const id = positionals[0];
    if (!id || positionals.length > 1)
      throw new UsageError('give exactly one approver token id (see `bulkhead approvers list`)');
    return withDatabase(env, io, async ({ sql }) => {
      const existing = await getToken(sql, id);
      if (!existing || existing.kind !== 'approver')
        throw new CliError(`approver token ${id} does not exist — see \`bulkhead approvers list --all\``);
      const done = await revokeToken(sql, id);
      await sql`delete from bulkhead_console_sessions where token_id = ${id}`;
      const after = (await getToken(sql, id))!;
      if (values.json) io.out(escapeJson(JSON.stringify(json(after))));
      else
        io.out(
          done
            ? `Revoked approver token ${id} ("${visible(after.label)}"); its console sessions are closed.`
            : `Approver token ${id} was already revoked on ${when(after.revokedAt)} UTC.`,
        );
      return 0;
    });
  },
};

export const approversCommand = group(
  'approvers',
  'Issue, list and revoke approver tokens for the console.',
  [add, list, revoke],
);
