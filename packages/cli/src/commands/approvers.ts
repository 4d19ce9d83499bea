import {
  DEFAULT_CONSOLE_URL,
  getToken,
  issueToken,
  listTokens,
  revokeToken,
  tokenState,
  type TokenRecord,
} from '@bulkhead/core';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { parseExpiry } from '../duration.ts';
import { table, when } from '../format.ts';
import { CliError, UsageError } from '../io.ts';
import { defaultUrl, discoverServers } from '../servers.ts';
import { escapeJson, visible } from '../visible.ts';

/** Approver tokens open the console only: audience `console`, kind `approver`, never valid on an MCP server. */
const AUDIENCE = 'console';

function consoleUrl(): string {
  const console = discoverServers().find((s) => s.kind === 'console');
  return console ? defaultUrl(console) : DEFAULT_CONSOLE_URL;
}

function json(record: TokenRecord, token?: string) {
  return {
    id: record.id,
    ...(token ? { token } : {}),
    label: record.label,
    expires_at: record.expiresAt?.toISOString() ?? null,
    created_at: record.createdAt.toISOString(),
    created_by: record.createdBy,
    last_used_at: record.lastUsedAt?.toISOString() ?? null,
    revoked_at: record.revokedAt?.toISOString() ?? null,
    state: tokenState(record),
  };
}

const add: Command = {
  name: 'add',
  summary: 'issue an approver token for the console (shown once)',
  help: `Usage: bulkhead approvers add --label <text> [--expires <when>] [--json]

Issues a token with which one person signs in to the approvers' console. It
is printed once (only its hash is kept). It is refused by every MCP server,
just as MCP tokens are refused by the console.

Options:
  --label <text>     who approves with it ("Ana Berg, finance")
  --expires <when>   30d, 12h, 2w, a date (2027-01-31) or never (default 90d)
  --json             print { id, token, label, expires_at, ... }`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      label: { type: 'string' },
      expires: { type: 'string', default: '90d' },
      json: { type: 'boolean', default: false },
    });
    const label = values.label?.trim();
    if (!label) throw new UsageError('--label is required: say who approves with this token');
    if (label.length > 200) throw new UsageError('--label: at most 200 characters');
    const expiresAt = parseExpiry(values.expires!, '--expires');
    return withDatabase(env, io, async ({ sql }) => {
      const { token, record } = await issueToken(sql, {
        kind: 'approver',
        server: AUDIENCE,
        label,
        scopes: ['approvals:decide'],
        expiresAt,
        createdBy: env.operator,
      });
      if (values.json) {
        io.out(escapeJson(JSON.stringify(json(record, token))));
        return 0;
      }
      io.out(`Issued approver token ${record.id} — "${visible(label)}"`);
      io.out('');
      io.out(`  ${token}`);
      io.out('');
      io.out(
        'This is the only time the token is shown: hand it to the approver now (only its hash is kept).',
      );
      io.out(
        `Sign in at ${consoleUrl()}/login. Expires: ${record.expiresAt ? `${when(record.expiresAt)} UTC` : 'never'}.`,
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
          ['ID', 'LABEL', 'EXPIRES', 'LAST USED', 'STATE'],
          tokens.map((t) => [t.id, visible(t.label), when(t.expiresAt), when(t.lastUsedAt), tokenState(t)]),
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
