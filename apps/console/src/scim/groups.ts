import { scimPatch, type ScimPatchOperation } from 'scim-patch';
import type { Context, Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import { eqFilter, groupResource, listResponse, scimError, scimJson, type GroupRow } from './resources.ts';
import { scimWrite, type Tx } from './write.ts';

type Json = Record<string, unknown>;

/** A group's name and members (person ids) from a request body. */
function groupInput(
  body: Json,
): { displayName: string; externalId: string | null; members: string[] } | string {
  if (typeof body.displayName !== 'string' || !body.displayName.trim()) return 'displayName is required';
  const members = Array.isArray(body.members) ? (body.members as Json[]) : [];
  if (members.some((m) => typeof m.value !== 'string')) return 'each member has a value (the user id)';
  return {
    displayName: body.displayName.trim(),
    externalId: typeof body.externalId === 'string' && body.externalId ? body.externalId : null,
    members: [...new Set(members.map((m) => m.value as string))],
  };
}

function groups(
  tx: Tx | ConsoleContext['sql'],
  token: string,
  id: string | null,
  displayName: string | null,
) {
  return tx<GroupRow[]>`select * from bulkhead_scim_groups(${token}, ${id}, ${displayName})`;
}

/**
 * `/scim/v2/Groups`: an IdP group (its displayName, as `bulkhead groups` maps it to rights) and its
 * members. Creating, replacing, patching (`scim-patch`) or deleting one changes the members' groups, so
 * their rights, at their next use; the persons who joined or left are in the audit event.
 */
export function mountScimGroups(app: Hono<ConsoleEnv>, ctx: ConsoleContext, token: string) {
  const base = () => `${ctx.publicUrl.origin}/scim/v2`;
  const put = (c: Context<ConsoleEnv>, id: string | null, body: Json, action: string) => {
    const input = groupInput(body);
    if (typeof input === 'string') return scimError(c, 400, input, 'invalidValue');
    return scimWrite(c, ctx, action, id ?? input.displayName, async (tx) => {
      const [r] = await tx<{ group_id: string; created: boolean; joined: string[]; left_: string[] }[]>`
        select * from bulkhead_scim_put_group(${token}, ${id}, ${input.displayName}, ${input.externalId},
          ${input.members})`;
      const [g] = await groups(tx, token, r!.group_id, null);
      return {
        summary: { group: r!.group_id, displayName: input.displayName, joined: r!.joined, left: r!.left_ },
        answer: () => scimJson(c, groupResource(g!, base()), r!.created ? 201 : 200),
      };
    });
  };

  app.get('/scim/v2/Groups', async (c) => {
    const name = eqFilter(c.req.query('filter'), 'displayName');
    if (name instanceof Error) return scimError(c, 400, name.message, 'invalidFilter');
    const rows = await groups(ctx.sql, token, null, name);
    return listResponse(
      c,
      rows.map((g) => groupResource(g, base())),
    );
  });
  app.get('/scim/v2/Groups/:id', async (c) => {
    const [g] = await groups(ctx.sql, token, c.req.param('id'), null);
    return g ? scimJson(c, groupResource(g, base())) : scimError(c, 404, `no group ${c.req.param('id')}`);
  });
  app.post('/scim/v2/Groups', async (c) =>
    put(c, null, (await c.req.json().catch(() => ({}))) as Json, 'create_group'),
  );
  app.put('/scim/v2/Groups/:id', async (c) =>
    put(c, c.req.param('id'), (await c.req.json().catch(() => ({}))) as Json, 'replace_group'),
  );
  app.patch('/scim/v2/Groups/:id', async (c) => {
    const [g] = await groups(ctx.sql, token, c.req.param('id'), null);
    if (!g) return scimError(c, 404, `no group ${c.req.param('id')}`);
    const body = (await c.req.json().catch(() => ({}))) as { Operations?: ScimPatchOperation[] };
    try {
      return await put(
        c,
        g.id,
        scimPatch(groupResource(g, base()) as never, body.Operations ?? []) as Json,
        'patch_group',
      );
    } catch (err) {
      if ((err as { code?: string }).code) throw err;
      return scimError(c, 400, (err as Error).message, 'invalidSyntax');
    }
  });
  app.delete('/scim/v2/Groups/:id', (c) =>
    scimWrite(c, ctx, 'delete_group', c.req.param('id'), async (tx) => {
      const [r] = await tx<{ left_: string[] }[]>`
        select bulkhead_scim_delete_group(${token}, ${c.req.param('id')}) as left_`;
      return { summary: { group: c.req.param('id'), left: r!.left_ }, answer: () => c.body(null, 204) };
    }),
  );
}
