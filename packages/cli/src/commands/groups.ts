import {
  escapeJson,
  groupRightsProblems,
  listGroups,
  removeGroup,
  setGroup,
  visible,
  type GroupRights,
} from '@bulkhead/core/operator';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { table, when } from '../format.ts';
import { CliError, UsageError } from '../io.ts';
import { discoverServers } from '../servers.ts';

function json(g: GroupRights) {
  return {
    group: g.group,
    approve: g.approve,
    operate: g.operate,
    tokens: g.tokens,
    updated_at: g.updatedAt.toISOString(),
    updated_by: g.updatedBy,
  };
}

/** A group's rights in one line: `approve admin, operate, tokens customer:account:read`. */
function rightsLine(g: Pick<GroupRights, 'approve' | 'operate' | 'tokens'>): string {
  return [
    ...(g.approve.length ? [`approve ${g.approve.join(' ')}`] : []),
    ...(g.operate ? ['operate'] : []),
    ...(g.tokens.length ? [`tokens ${g.tokens.join(' ')}`] : []),
  ].join(', ');
}

/** The group name a command was given: one positional, 1 to 256 characters. */
function groupName(positionals: string[], usage: string): string {
  const name = positionals[0]?.trim();
  if (!name || positionals.length > 1) throw new UsageError(`give exactly one IdP group: ${usage}`);
  if (name.length > 256) throw new UsageError('an IdP group name has at most 256 characters');
  return name;
}

const add: Command = {
  name: 'add',
  summary: "give an identity provider's group rights (replaces what it had)",
  help: `Usage: bulkhead groups add <idp-group> [--approve <server>]... [--operate] [--tokens <server>[:<scope>]]... [--json]

Maps a group of the company's identity provider (as the ID token's groups claim
names it; Entra ID: the group's object id) to rights in Bulkhead. People who sign
in to the console by OpenID Connect have the rights of all their mapped groups;
a person in no mapped group is refused at sign-in. A group already mapped gets
exactly the rights given here. Audited (method groups/change) with
BULKHEAD_OPERATOR as who changed it. Rights are read again at every sign-in and
every decision: a change holds from the members' next step on.

Options:
  --approve <server>          decide the approval requests of this MCP server
                              (repeat for several)
  --operate                   operate in the console: tokens, grants, the whole
                              audit log, tools, groups
  --tokens <server>[:<scope>] hold tokens for this server, or only this scope of
                              it (repeat for several); members grant MCP clients
                              access by OAuth within these
  --json                      print the group's rights as JSON`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(
      argv,
      {
        approve: { type: 'string', multiple: true, default: [] },
        operate: { type: 'boolean', default: false },
        tokens: { type: 'string', multiple: true, default: [] },
        json: { type: 'boolean', default: false },
      },
      true,
    );
    const name = groupName(positionals, 'bulkhead groups add <idp-group> --approve <server>');
    const approve = [...new Set(values.approve!.map((s) => s.trim()))];
    const tokens = [...new Set(values.tokens!.map((s) => s.trim()))];
    if (!approve.length && !values.operate && !tokens.length)
      throw new UsageError(
        'give the group at least one right: --approve <server>, --operate or --tokens <server>',
      );
    const servers = discoverServers().filter((s) => s.kind === 'mcp');
    const problems = groupRightsProblems({ approve, tokens }, servers);
    if (problems.length) throw new UsageError(problems.join('\n'));
    return withDatabase(env, io, async ({ sql }) => {
      const { rights, before } = await setGroup(sql, {
        group: name,
        approve,
        operate: values.operate!,
        tokens,
        operator: env.operator,
      });
      if (values.json) io.out(escapeJson(JSON.stringify(json(rights))));
      else
        io.out(
          before
            ? `Group "${visible(name)}" now gives: ${rightsLine(rights)} (it gave: ${rightsLine(before)}).`
            : `Group "${visible(name)}" gives: ${rightsLine(rights)}. Its members have these rights from their next sign-in on.`,
        );
      return 0;
    });
  },
};

const list: Command = {
  name: 'list',
  summary: 'list the groups with rights',
  help: `Usage: bulkhead groups list [--json]

Lists the identity provider's groups mapped to rights, with who changed each last.

Options:
  --json   one JSON array of { group, approve, operate, tokens, updated_at, updated_by }`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, { json: { type: 'boolean', default: false } });
    return withDatabase(env, io, async ({ sql }) => {
      const groups = await listGroups(sql);
      if (values.json) {
        io.out(escapeJson(JSON.stringify(groups.map(json))));
        return 0;
      }
      if (!groups.length) {
        io.out(
          'No groups have rights: people who sign in by OpenID Connect are refused. Map one with `bulkhead groups add <idp-group> --approve <server>`.',
        );
        return 0;
      }
      io.out(
        table(
          ['GROUP', 'RIGHTS', 'UPDATED', 'BY'],
          groups.map((g) => [visible(g.group), rightsLine(g), when(g.updatedAt), visible(g.updatedBy)]),
        ),
      );
      return 0;
    });
  },
};

const remove: Command = {
  name: 'remove',
  summary: "take an identity provider's group's rights away",
  help: `Usage: bulkhead groups remove <idp-group>

Removes a group's rights: its members lose them at their next decision or
page (and are refused at sign-in if no other group of theirs has rights).
Audited (method groups/change).`,
  async run(argv, { env, io }) {
    const { positionals } = parse(argv, {}, true);
    const name = groupName(positionals, 'bulkhead groups remove <idp-group>');
    return withDatabase(env, io, async ({ sql }) => {
      const removed = await removeGroup(sql, { group: name, operator: env.operator });
      if (!removed)
        throw new CliError(`group "${visible(name)}" has no rights — see \`bulkhead groups list\``);
      io.out(`Group "${visible(name)}" gives no rights any more (it gave: ${rightsLine(removed)}).`);
      return 0;
    });
  },
};

export const groupsCommand = group(
  'groups',
  "Map the identity provider's groups to rights: approve, operate, hold tokens.",
  [add, list, remove],
);
