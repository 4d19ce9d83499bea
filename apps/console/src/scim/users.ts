import { scimPatch, type ScimPatchOperation } from 'scim-patch';
import type { Context, Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import {
  eqFilter,
  listResponse,
  scimBoolean,
  scimError,
  scimJson,
  userResource,
  type UserRow,
} from './resources.ts';
import { scimWrite, type Tx } from './write.ts';

/** The attributes of a SCIM User Bulkhead keeps, read from a request body. */
interface UserInput {
  userName: string;
  externalId: string | null;
  name: string | null;
  email: string | null;
  active: boolean;
}

type Json = Record<string, unknown>;

function userInput(body: Json): UserInput | string {
  if (typeof body.userName !== 'string' || !body.userName.trim()) return 'userName is required';
  const name = (body.name ?? {}) as Json;
  const given = [name.givenName, name.familyName].filter((x) => typeof x === 'string').join(' ');
  const emails = Array.isArray(body.emails) ? (body.emails as Json[]) : [];
  const email = emails.find((e) => scimBoolean(e.primary)) ?? emails[0];
  const active = body.active === undefined ? true : scimBoolean(body.active);
  if (active === undefined) return 'active is true or false';
  const shown = [name.formatted, body.displayName, given].find((x) => typeof x === 'string' && x.trim());
  return {
    userName: body.userName.trim(),
    externalId: typeof body.externalId === 'string' && body.externalId ? body.externalId : null,
    name: (shown as string | undefined) ?? null,
    email: typeof email?.value === 'string' ? email.value : null,
    active,
  };
}

/** The audit action of a change from `was` to `is` active. */
function actionOf(was: boolean, is: boolean, otherwise: string): string {
  if (was && !is) return 'deactivate_user';
  return !was && is ? 'reactivate_user' : otherwise;
}

/** Users as the database lists them for the SCIM token. */
function users(tx: Tx | ConsoleContext['sql'], token: string, id: string | null, userName: string | null) {
  return tx<UserRow[]>`select * from bulkhead_scim_users(${token}, ${id}, ${userName})`;
}

/**
 * `/scim/v2/Users` (RFC 7644 §3): create, read (by id, or filtered `userName eq "…"`), replace, PATCH
 * (RFC 7644 §3.5.2, applied by `scim-patch`) and delete. Going inactive or being deleted revokes all the
 * person holds in the same transaction as the audit event that lists it.
 */
export function mountScimUsers(
  app: Hono<ConsoleEnv>,
  ctx: ConsoleContext,
  token: string,
  issuer: string | null,
) {
  const base = () => `${ctx.publicUrl.origin}/scim/v2`;
  const reason = (method: string, path: string) => `the person was offboarded by SCIM (${method} ${path})`;

  /** Creates or replaces, then answers with the stored resource. */
  const put = (c: Context<ConsoleEnv>, id: string | null, input: UserInput, action: string) =>
    scimWrite(c, ctx, action, id ?? input.userName, async (tx) => {
      const [r] = await tx<{ person_id: string; created: boolean; revoked: Json | null }[]>`
        select * from bulkhead_scim_put_user(${token}, ${id}, ${issuer}, ${input.userName}, ${input.externalId},
          ${input.name}, ${input.email}, ${input.active}, ${reason(c.req.method, c.req.path)})`;
      const [u] = await users(tx, token, r!.person_id, null);
      return {
        summary: {
          person: r!.person_id,
          created: r!.created,
          userName: input.userName,
          active: input.active,
          ...(r!.revoked ? { revoked: r!.revoked } : {}),
        },
        answer: () => scimJson(c, userResource(u!, base()), id === null ? 201 : 200),
      };
    });

  app.get('/scim/v2/Users', async (c) => {
    const userName = eqFilter(c.req.query('filter'), 'userName');
    if (userName instanceof Error) return scimError(c, 400, userName.message, 'invalidFilter');
    const rows = await users(ctx.sql, token, null, userName);
    return listResponse(
      c,
      rows.map((u) => userResource(u, base())),
    );
  });
  app.get('/scim/v2/Users/:id', async (c) => {
    const [u] = await users(ctx.sql, token, c.req.param('id'), null);
    return u ? scimJson(c, userResource(u, base())) : scimError(c, 404, `no user ${c.req.param('id')}`);
  });
  app.post('/scim/v2/Users', async (c) => {
    const input = userInput((await c.req.json().catch(() => ({}))) as Json);
    if (typeof input === 'string') return scimError(c, 400, input, 'invalidValue');
    return put(c, null, input, 'create_user');
  });
  app.put('/scim/v2/Users/:id', async (c) => {
    const input = userInput((await c.req.json().catch(() => ({}))) as Json);
    if (typeof input === 'string') return scimError(c, 400, input, 'invalidValue');
    const [u] = await users(ctx.sql, token, c.req.param('id'), null);
    if (!u) return scimError(c, 404, `no user ${c.req.param('id')}`);
    return put(c, u.id, input, actionOf(u.active, input.active, 'replace_user'));
  });
  app.patch('/scim/v2/Users/:id', async (c) => {
    const [u] = await users(ctx.sql, token, c.req.param('id'), null);
    if (!u) return scimError(c, 404, `no user ${c.req.param('id')}`);
    const body = (await c.req.json().catch(() => ({}))) as { Operations?: ScimPatchOperation[] };
    let patched: Json;
    try {
      patched = scimPatch(userResource(u, base()) as never, body.Operations ?? []) as Json;
    } catch (err) {
      return scimError(c, 400, (err as Error).message, 'invalidSyntax');
    }
    const input = userInput(patched);
    if (typeof input === 'string') return scimError(c, 400, input, 'invalidValue');
    return put(c, u.id, input, actionOf(u.active, input.active, 'update_user'));
  });
  app.delete('/scim/v2/Users/:id', (c) =>
    scimWrite(c, ctx, 'delete_user', c.req.param('id'), async (tx) => {
      const [r] = await tx<{ revoked: Json }[]>`
        select bulkhead_scim_delete_user(${token}, ${c.req.param('id')}, ${reason('DELETE', c.req.path)}) as revoked`;
      return { summary: { person: c.req.param('id'), revoked: r!.revoked }, answer: () => c.body(null, 204) };
    }),
  );
}
