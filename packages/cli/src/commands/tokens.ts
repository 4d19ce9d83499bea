import {
  clientConfigs,
  getToken,
  issueToken,
  listTokens,
  revokeToken,
  rotateToken,
  tokenState,
  type TokenRecord,
} from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { parseExpiry } from '../duration.ts';
import { table, when } from '../format.ts';
import { CliError, UsageError, type Io } from '../io.ts';
import { personOption } from '../person-option.ts';
import { discoverServers, portOffsetOption, publicUrl, type ServerManifest } from '../servers.ts';
import type { CliEnv } from '../env.ts';

const SCOPE = /^[a-z][a-z0-9-]*:[a-z][a-z0-9-]*$/;

/** Where clients reach `server`, from the options and the environment (see `publicUrl`). */
function serverUrl(server: ServerManifest, env: CliEnv, url: string | undefined, offset: string | undefined) {
  return publicUrl(server, {
    url,
    BULKHEAD_PUBLIC_URL: env.BULKHEAD_PUBLIC_URL,
    HOST: env.HOST,
    PORT: env.PORT,
    portOffset: portOffsetOption(offset, env.BULKHEAD_PORT_OFFSET),
  });
}

function mcpServer(name: string | undefined): ServerManifest {
  const servers = discoverServers().filter((s) => s.kind === 'mcp');
  if (!name) throw new UsageError(`--server is required; one of: ${servers.map((s) => s.name).join(', ')}`);
  const server = servers.find((s) => s.name === name);
  if (!server)
    throw new UsageError(
      `--server: unknown server "${name}"; one of: ${servers.map((s) => s.name).join(', ')}`,
    );
  return server;
}

async function customerExists(sql: Sql, id: string): Promise<boolean> {
  try {
    const rows = await sql`select 1 from customers where id = ${id}`;
    return rows.length === 1;
  } catch (err) {
    if ((err as { code?: string }).code === '42P01') return false;
    throw err;
  }
}

function json(record: TokenRecord, token?: string) {
  return {
    id: record.id,
    ...(token ? { token } : {}),
    server: record.server,
    label: record.label,
    scopes: record.scopes,
    customer_id: record.customerId,
    expires_at: record.expiresAt?.toISOString() ?? null,
    owner: record.owner,
    ...(record.grantId ? { grant_id: record.grantId } : {}),
    ...(token
      ? {}
      : {
          created_at: record.createdAt.toISOString(),
          created_by: record.createdBy,
          last_used_at: record.lastUsedAt?.toISOString() ?? null,
          revoked_at: record.revokedAt?.toISOString() ?? null,
          state: tokenState(record),
        }),
  };
}

function printIssued(io: Io, record: TokenRecord, token: string, url: string, verb: string) {
  io.out(
    `${verb} token ${record.id} for ${record.server} — "${record.label}"${record.customerId ? `, customer ${record.customerId}` : ''}`,
  );
  io.out('');
  io.out(`  ${token}`);
  io.out('');
  io.out('This is the only time the token is shown: store it now (only its hash is kept).');
  io.out(
    `Scopes: ${record.scopes.join(', ')}. Expires: ${record.expiresAt ? when(record.expiresAt) + ' UTC' : 'never'}.`,
  );
  for (const c of clientConfigs(record.server, url, token)) {
    io.out('');
    io.out(`${c.client} — ${c.where}:`);
    io.out(c.text.replace(/^/gm, '  '));
  }
}

const issue: Command = {
  name: 'issue',
  summary: 'issue a token for one server and one client',
  help: `Usage: bulkhead tokens issue --server <name> --label <text> [options]

Issues an access token bound to one server. The token is printed once, with
ready-to-paste configuration for Claude Code, Claude Desktop, Cursor and VS Code.

Options:
  --server <name>      the server the token opens (one of the MCP servers under
                       servers/; an unknown name is answered with the list)
  --label <text>       who or what uses it ("Claude Code on Ana's laptop")
  --owner <person>     the person it is issued to ("ana@example.com"): that
                       person may not also approve what this token asks for
  --customer <id>      the one customer the token sees: required for a server whose
                       manifest says customerBound, refused elsewhere; e.g. C-1001
  --scopes <a,b>       fewer scopes than the server's all (the default)
  --expires <when>     30d, 12h, 2w, a date (2027-01-31) or never (default 90d)
  --url <url>          the server's MCP URL for the client configuration
  --port-offset <n>    the offset the server was started with (pnpm start
                       --port-offset; default BULKHEAD_PORT_OFFSET, else 0)
  --json               print { id, token, server, label, scopes, customer_id, expires_at, owner }

The URL in the client configuration is the one the server itself uses: --url
if given, else BULKHEAD_PUBLIC_URL + /mcp, else http://HOST:PORT/mcp with HOST
127.0.0.1 and PORT the server's port (from its package.json) plus the offset — set them
as for the server.`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      server: { type: 'string' },
      label: { type: 'string' },
      owner: { type: 'string' },
      customer: { type: 'string' },
      scopes: { type: 'string' },
      expires: { type: 'string', default: '90d' },
      url: { type: 'string' },
      'port-offset': { type: 'string' },
      json: { type: 'boolean', default: false },
    });
    const server = mcpServer(values.server);
    const label = values.label?.trim();
    if (!label) throw new UsageError('--label is required: say which client or person will use the token');
    if (label.length > 200) throw new UsageError('--label: at most 200 characters');
    const owner = personOption(values.owner, '--owner');
    if (server.customerBound && !values.customer) {
      throw new UsageError(
        `--customer is required for the ${server.name} server: a ${server.name} token is bound to one customer`,
      );
    }
    if (!server.customerBound && values.customer) {
      throw new UsageError(
        `--customer is only for customer-bound servers; ${server.name} tokens are not bound to a customer`,
      );
    }
    let scopes = [...server.scopes];
    if (values.scopes !== undefined) {
      scopes = [
        ...new Set(
          values.scopes
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        ),
      ];
      const unknown = scopes.filter((s) => !SCOPE.test(s) || !server.scopes.includes(s));
      if (!scopes.length) throw new UsageError('--scopes: give at least one scope');
      if (unknown.length)
        throw new UsageError(
          `--scopes: ${unknown.join(', ')} not a scope of ${server.name}; its scopes: ${server.scopes.join(', ')}`,
        );
    }
    const expiresAt = parseExpiry(values.expires!, '--expires');
    const url = serverUrl(server, env, values.url, values['port-offset']);
    return withDatabase(env, io, async ({ sql }) => {
      if (values.customer && !(await customerExists(sql, values.customer))) {
        throw new CliError(
          `customer ${values.customer} does not exist — check the customer number (e.g. C-1001)`,
        );
      }
      const { token, record } = await issueToken(sql, {
        server: server.name,
        label,
        scopes,
        customerId: values.customer ?? null,
        expiresAt,
        createdBy: env.operator,
        owner,
      });
      if (values.json) io.out(JSON.stringify(json(record, token)));
      else printIssued(io, record, token, url, 'Issued');
      return 0;
    });
  },
};

const list: Command = {
  name: 'list',
  summary: 'list tokens (never their secrets)',
  help: `Usage: bulkhead tokens list [--server <name>] [--all] [--json]

Lists tokens with label, scopes, customer, expiry, last use and state.
Secrets are never stored, so never shown.

Options:
  --server <name>   only tokens of this server
  --all             include revoked and expired tokens
  --json            one JSON array`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      server: { type: 'string' },
      all: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    });
    if (values.server) mcpServer(values.server);
    return withDatabase(env, io, async ({ sql }) => {
      const tokens = await listTokens(sql, {
        kind: 'mcp',
        all: values.all,
        ...(values.server ? { server: values.server } : {}),
      });
      if (values.json) {
        io.out(JSON.stringify(tokens.map((t) => json(t))));
        return 0;
      }
      if (!tokens.length) {
        io.out(values.all ? 'No tokens.' : 'No active tokens (--all shows revoked and expired ones).');
        return 0;
      }
      io.out(
        table(
          ['ID', 'SERVER', 'LABEL', 'OWNER', 'SCOPES', 'CUSTOMER', 'EXPIRES', 'LAST USED', 'STATE'],
          tokens.map((t) => [
            t.id,
            t.server,
            t.label,
            t.owner ?? '-',
            t.scopes.join(','),
            t.customerId ?? '-',
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

function oneId(positionals: string[]): string {
  const [id] = positionals;
  if (!id || positionals.length > 1)
    throw new UsageError('give exactly one token id (see `bulkhead tokens list`)');
  return id;
}

async function existingToken(sql: Sql, id: string): Promise<TokenRecord> {
  const token = await getToken(sql, id);
  if (!token || token.kind !== 'mcp')
    throw new CliError(`token ${id} does not exist — see \`bulkhead tokens list --all\``);
  return token;
}

const revoke: Command = {
  name: 'revoke',
  summary: 'revoke a token; it is refused from the next request on',
  help: `Usage: bulkhead tokens revoke <id> [--json]

Revokes one token. Every server refuses it from its next request (within a
second, on every replica). Other tokens, even for the same client, keep working.`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(argv, { json: { type: 'boolean', default: false } }, true);
    const id = oneId(positionals);
    return withDatabase(env, io, async ({ sql }) => {
      await existingToken(sql, id);
      const done = await revokeToken(sql, id);
      const after = (await getToken(sql, id))!;
      if (values.json) io.out(JSON.stringify(json(after)));
      else
        io.out(
          done
            ? `Revoked token ${id} (${after.server}, "${after.label}").`
            : `Token ${id} was already revoked on ${when(after.revokedAt)} UTC.`,
        );
      return 0;
    });
  },
};

const rotate: Command = {
  name: 'rotate',
  summary: 'replace a token’s secret; the old one is revoked',
  help: `Usage: bulkhead tokens rotate <id> [--url <url>] [--port-offset <n>] [--json]

Issues a new token with the same server, label, scopes, customer and lifetime,
prints it once, and revokes the old one. The client configuration names the
server's URL as \`tokens issue\` does (--url, BULKHEAD_PUBLIC_URL, HOST, PORT,
--port-offset).`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(
      argv,
      {
        json: { type: 'boolean', default: false },
        url: { type: 'string' },
        'port-offset': { type: 'string' },
      },
      true,
    );
    const id = oneId(positionals);
    return withDatabase(env, io, async ({ sql }) => {
      const existing = await existingToken(sql, id);
      if (existing.revokedAt)
        throw new CliError(`token ${id} is revoked; issue a new one with \`bulkhead tokens issue\``);
      if (existing.grantId)
        throw new CliError(
          `token ${id} belongs to OAuth grant ${existing.grantId}: its client renews it with its refresh token; revoke it to end the grant`,
        );
      const rotated = await rotateToken(sql, id, env.operator);
      if (!rotated) throw new CliError(`token ${id} was revoked meanwhile`);
      const server = discoverServers().find((s) => s.name === rotated.record.server);
      const url = server
        ? serverUrl(server, env, values.url, values['port-offset'])
        : (values.url ?? '<server url>');
      if (values.json) io.out(JSON.stringify({ ...json(rotated.record, rotated.token), rotated_from: id }));
      else printIssued(io, rotated.record, rotated.token, url, `Rotated ${id} into`);
      return 0;
    });
  },
};

export const tokensCommand = group('tokens', 'Issue, list, rotate and revoke per-client access tokens.', [
  issue,
  list,
  revoke,
  rotate,
]);
