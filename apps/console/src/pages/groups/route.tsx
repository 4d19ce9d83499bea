/** @jsxImportSource hono/jsx */
import { groupRightsProblems } from '@bulkhead/core/operator';
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv, ConsoleRequest } from '../../context.ts';
import { field } from '../../form-field.ts';
import { page } from '../../layout/layout.tsx';
import { operatorAction } from '../../operator/action.tsx';
import { operatorGroups, removeOperatorGroup, setOperatorGroup } from './data.ts';
import { GroupsPage } from './page.tsx';

/** The page, with what a change came to or why it was refused. */
async function groupsPage(
  c: ConsoleRequest,
  ctx: ConsoleContext,
  extra: { notice?: string; error?: string } = {},
  status = 200,
) {
  const approver = c.get('approver');
  const groups = await operatorGroups(ctx.sql, approver.proof);
  return page(
    c,
    <GroupsPage approver={approver} groups={groups} servers={ctx.servers.map((s) => s.name)} {...extra} />,
    status,
  );
}

const words = (v: string | undefined) => [...new Set((v ?? '').split(/[\s,]+/).filter(Boolean))];

/** `POST /operator/groups`: gives a group exactly the rights of the form, audited whatever comes of it. */
async function save(c: ConsoleRequest, ctx: ConsoleContext) {
  const form = await c.req.parseBody();
  const group = (field(form, 'group') ?? '').trim();
  const rights = {
    group,
    approve: words(field(form, 'approve')),
    operate: field(form, 'operate') === 'on',
    tokens: words(field(form, 'tokens')),
  };
  return operatorAction(c, ctx, 'set_group', rights, async () => {
    const problems = groupRightsProblems(rights, ctx.servers);
    if (!group || group.length > 256) problems.unshift('Name the group (1 to 256 characters).');
    if (!rights.approve.length && !rights.operate && !rights.tokens.length)
      problems.push('Give the group at least one right: approve, operate or tokens.');
    if (problems.length)
      return {
        outcome: 'invalid_arguments',
        summary: { problems },
        response: groupsPage(c, ctx, { error: problems.join(' ') }, 400),
      };
    await setOperatorGroup(ctx.sql, c.get('approver').proof, rights);
    return { outcome: 'ok', summary: rights, response: c.redirect('/operator/groups?saved=1', 303) };
  });
}

/** `POST /operator/groups/remove`: takes a group's rights away, audited. */
async function remove(c: ConsoleRequest, ctx: ConsoleContext) {
  const group = field(await c.req.parseBody(), 'group') ?? '';
  return operatorAction(c, ctx, 'remove_group', { group }, async () => {
    const removed = await removeOperatorGroup(ctx.sql, c.get('approver').proof, group);
    return {
      outcome: 'ok',
      summary: { removed },
      response: c.redirect('/operator/groups?removed=1', 303),
    };
  });
}

/** The operators' page of the group mapping (`bulkhead groups` in the console). */
export function mountGroups(app: Hono<ConsoleEnv>, ctx: ConsoleContext): void {
  app.get('/operator/groups', (c) =>
    groupsPage(c, ctx, {
      ...(c.req.query('saved') ? { notice: "The group's rights are saved." } : {}),
      ...(c.req.query('removed') ? { notice: "The group's rights are removed." } : {}),
    }),
  );
  app.post('/operator/groups', (c) => save(c, ctx));
  app.post('/operator/groups/remove', (c) => remove(c, ctx));
}
