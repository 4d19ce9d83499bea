/** @jsxImportSource hono/jsx */
import type { Outcome } from '@bulkhead/audit';
import { clientConfigs, issueTokenAsPerson } from '@bulkhead/core/operator';
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv, ConsoleRequest } from '../../context.ts';
import { page } from '../../layout/layout.tsx';
import { MessagePage } from '../../layout/message-page.tsx';
import { customerChoices, customerExists } from '../../oauth/store.ts';
import { sourceAddress } from '../../source.ts';
import { IssuedTokenPage } from '../issue-token/page.tsx';
import { holdableServers, myRights, myTokens, revokeMyToken } from './data.ts';
import { checkMyTokenFields, postedFields, type MyTokenFields } from './form.ts';
import { MyTokensPage } from './page.tsx';

const TOKEN_ID = /^[a-z2-9]{12}$/;

/** The database refused: the session proves no live person (signed out, deactivated) or the right is missing. */
function refusedByDatabase(err: unknown): err is Error {
  return (err as { code?: string } | null)?.code === '42501';
}

/** My tokens belong to persons: an approver token signed in by hand is nobody's. */
function notAPerson(c: ConsoleRequest) {
  return page(
    c,
    <MessagePage
      title="My tokens"
      message="My tokens is for people signed in with their company account (OpenID Connect): an approver token is no person's, and holds no tokens of its own. An operator issues tokens on the Tokens page or with `bulkhead tokens issue`."
      approver={c.var.approver}
    />,
    403,
  );
}

/** The page, as the database reads the person's rights and tokens now. */
async function myTokensPage(
  c: ConsoleRequest,
  ctx: ConsoleContext,
  extra: { notice?: string; error?: string; fields?: MyTokenFields } = {},
  status = 200,
) {
  const session = c.var.approver.proof;
  const rights = await myRights(ctx.sql, session);
  const tokens = await myTokens(ctx.sql, session);
  const holdable = await Promise.all(
    holdableServers(ctx.servers, rights.tokens).map(async (h) => ({
      ...h,
      customers: h.server.customerBound ? await customerChoices(ctx.sql) : null,
    })),
  );
  return page(
    c,
    <MyTokensPage
      approver={c.var.approver}
      rights={rights}
      tokens={tokens}
      holdable={holdable}
      groupsClaim={ctx.oidc?.settings.groupsClaim ?? 'groups'}
      {...extra}
    />,
    status,
  );
}

/** What a person's action came to: its audit outcome and summary, and the answer. */
interface PersonResult {
  outcome: Outcome;
  summary: Record<string, unknown>;
  response: Response | Promise<Response>;
}

/**
 * Runs one action of a person on their own tokens and writes its audit event whatever it comes to
 * (method `console/my-tokens`, the action as the tool, under the person's console identity, with the
 * person — id, name, e-mail — and the source address among the arguments): its own outcome,
 * `forbidden` when the database refuses the person, `internal_error` (and the error rethrown) when it fails.
 */
async function personAction(
  c: ConsoleRequest,
  ctx: ConsoleContext,
  action: 'issue_token' | 'revoke_token',
  args: Record<string, unknown>,
  run: () => Promise<PersonResult>,
): Promise<Response> {
  const started = performance.now();
  const approver = c.var.approver;
  const write = (outcome: Outcome, summary: Record<string, unknown>) =>
    c.get('audit').append({
      method: 'console/my-tokens',
      tool: action,
      outcome,
      since: started,
      arguments: {
        person: { id: approver.personId, name: approver.label, email: approver.email },
        source: sourceAddress(c, ctx.proxyHops),
        path: c.req.path,
        ...args,
      },
      resultSummary: summary,
    });
  let result: PersonResult;
  try {
    result = await run();
  } catch (err) {
    if (!refusedByDatabase(err)) {
      await write('internal_error', { reason: 'error' });
      throw err;
    }
    await write('forbidden', { reason: 'refused_by_database', detail: err.message });
    return page(
      c,
      <MessagePage
        title="Refused"
        message={`The database refused: ${err.message}.`}
        approver={c.var.approver}
      />,
      403,
    );
  }
  await write(result.outcome, result.summary);
  return result.response;
}

/**
 * `POST /my-tokens`: checks the form against the server's manifest and issues the token through the
 * database's function, which derives the person from the session and refuses a server or scopes their
 * groups do not allow; shows it once, with the client configuration.
 */
async function issue(c: ConsoleRequest, ctx: ConsoleContext) {
  const fields = postedFields(await c.req.parseBody({ all: true }));
  const args = {
    server: fields.server || null,
    label: fields.label,
    scopes: fields.scopes,
    customer_id: fields.customer || null,
    expires: fields.expires,
  };
  return personAction(c, ctx, 'issue_token', args, async () => {
    const again = (outcome: Outcome, error: string, status: 400 | 403) => ({
      outcome,
      summary: { reason: error },
      response: myTokensPage(c, ctx, { error, fields }, status),
    });
    const server = ctx.servers.find((s) => s.name === fields.server);
    if (!server)
      return again('bad_request', `${fields.server || 'No server'}: not an MCP server of this console.`, 400);
    const checked = checkMyTokenFields(server, fields);
    if (!checked.ok) return again('invalid_arguments', checked.error, 400);
    const t = checked.token;
    if (t.customerId && !(await customerExists(ctx.sql, t.customerId)))
      return again(
        'invalid_arguments',
        `Customer ${t.customerId} does not exist: check the customer number (e.g. C-1001).`,
        400,
      );
    let issued;
    try {
      issued = await issueTokenAsPerson(ctx.sql, c.var.approver.proof, { server: server.name, ...t });
    } catch (err) {
      // A right the person lacks (their groups, as the database reads them now): the form again, saying so.
      if (refusedByDatabase(err) && / may not hold a token /.test(err.message))
        return {
          outcome: 'forbidden',
          summary: { reason: 'no_right', detail: err.message },
          response: myTokensPage(c, ctx, { error: `The database refused: ${err.message}.`, fields }, 403),
        };
      throw err;
    }
    ctx.logger.info(
      { tokenId: issued.id, server: server.name, person: c.var.approver.personId },
      'token issued to its person',
    );
    // The secret is in this answer and nowhere else: no cache may keep it.
    c.header('Cache-Control', 'no-store');
    return {
      outcome: 'ok',
      summary: {
        token_id: issued.id,
        server: server.name,
        scopes: t.scopes,
        expires_at: issued.expiresAt.toISOString(),
      },
      response: page(
        c,
        <IssuedTokenPage
          approver={c.var.approver}
          id={issued.id}
          token={issued.token}
          server={server.name}
          label={t.label}
          person={c.var.approver.label}
          scopes={t.scopes}
          customerId={t.customerId}
          expiresAt={issued.expiresAt}
          configs={clientConfigs(server.name, server.resource, issued.token)}
          current="my-tokens"
          back={{ href: '/my-tokens', words: 'Back to my tokens' }}
        />,
      ),
    };
  });
}

/** `POST /my-tokens/:id/revoke`: one of the person's own tokens; any other id changes nothing. */
async function revoke(c: ConsoleRequest, ctx: ConsoleContext) {
  const id = c.req.param('id')!;
  return personAction(c, ctx, 'revoke_token', { token_id: id }, async () => {
    const token = await revokeMyToken(ctx.sql, c.var.approver.proof, id);
    if (!token)
      return {
        outcome: 'bad_request',
        summary: { reason: 'not_own_token' },
        response: myTokensPage(
          c,
          ctx,
          { error: `No token of yours has the id ${id}: you revoke your own tokens only.` },
          404,
        ),
      };
    if (token.revoked)
      ctx.logger.info({ tokenId: id, person: c.var.approver.personId }, 'token revoked by its person');
    return {
      outcome: 'ok',
      summary: { revoked: token.revoked, server: token.server, label: token.label },
      response: c.redirect(`/my-tokens?revoked=${id}`, 303),
    };
  });
}

/** "My tokens": a person's own MCP tokens, issued within their groups' rights, and revoked. */
export function mountMyTokens(app: Hono<ConsoleEnv>, ctx: ConsoleContext) {
  app.use('/my-tokens', async (c, next) => (c.var.approver.personId ? next() : notAPerson(c)));
  app.use('/my-tokens/*', async (c, next) => (c.var.approver.personId ? next() : notAPerson(c)));
  app.get('/my-tokens', async (c) => {
    const revoked = c.req.query('revoked');
    try {
      return await myTokensPage(
        c,
        ctx,
        revoked && TOKEN_ID.test(revoked)
          ? { notice: `Token ${revoked} is revoked: its server refuses it from now on.` }
          : {},
      );
    } catch (err) {
      if (refusedByDatabase(err)) return notAPerson(c);
      throw err;
    }
  });
  app.post('/my-tokens', (c) => issue(c, ctx));
  app.post('/my-tokens/:id/revoke', (c) => revoke(c, ctx));
}
