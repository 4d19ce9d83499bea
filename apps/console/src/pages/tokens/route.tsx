/** @jsxImportSource hono/jsx */
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv, ConsoleRequest } from '../../context.ts';
import { field } from '../../form-field.ts';
import { page } from '../../layout/layout.tsx';
import { operatorAction, operatorPage } from '../../operator/action.tsx';
import { notFound, pathName } from '../../operator/path-names.tsx';
import {
  operatorGrants,
  operatorToken,
  operatorTokens,
  revokeGrantAsOperator,
  revokeTokenAsOperator,
} from './data.ts';
import { backWith, filterFrom, noticeFrom, pageAddress } from './list-params.ts';
import { TokensPage, type ListScope } from './page.tsx';

/** A list page: every token and grant, one person's or one server's, filtered by the query. */
function listPage(c: ConsoleRequest, ctx: ConsoleContext, scope: ListScope) {
  return operatorPage(c, ctx, async () => {
    const query = c.req.query();
    const filter = filterFrom(query, scope);
    // The tokens first: their function checks the operator before the grants are read.
    const tokens = await operatorTokens(ctx.sql, c.var.approver.proof, filter);
    const grants = await operatorGrants(ctx.sql, filter);
    const mcp = ctx.servers.map((s) => s.name);
    return page(
      c,
      <TokensPage
        approver={c.var.approver}
        scope={scope}
        filter={filter}
        here={{ path: new URL(c.req.url).pathname, back: pageAddress(c.req.url) }}
        tokens={tokens}
        grants={grants}
        servers={[...new Set([...mcp, 'console'])].sort()}
        canIssue={scope.kind === 'server' ? mcp.includes(scope.server) : mcp.length > 0}
        notice={noticeFrom(query)}
      />,
    );
  });
}

/** `POST /operator/tokens/:id/revoke`: one token (MCP or approver); a grant's token ends its grant. */
async function revokeToken(c: ConsoleRequest, ctx: ConsoleContext) {
  const id = c.req.param('id')!;
  const back = field(await c.req.parseBody(), 'back');
  const operator = c.var.approver.proof;
  return operatorAction(c, ctx, 'revoke_token', { token_id: id }, async () => {
    const token = await operatorToken(ctx.sql, operator, id);
    const revoked = token ? await revokeTokenAsOperator(ctx.sql, operator, id) : false;
    if (revoked) ctx.logger.info({ tokenId: id, by: c.var.approver.label }, 'token revoked by an operator');
    return {
      outcome: token ? 'ok' : 'bad_request',
      summary: token
        ? { revoked, kind: token.kind, server: token.server, label: token.label, owner: token.owner }
        : { revoked, reason: 'unknown_token' },
      response: c.redirect(
        backWith(back, { notice: revoked ? 'token-revoked' : 'token-unchanged', id }),
        303,
      ),
    };
  });
}

/** `POST /operator/grants/:id/revoke`: one OAuth grant, with its access and refresh tokens. */
async function revokeGrant(c: ConsoleRequest, ctx: ConsoleContext) {
  const id = c.req.param('id')!;
  const back = field(await c.req.parseBody(), 'back');
  return operatorAction(c, ctx, 'revoke_grant', { grant_id: id }, async () => {
    const revoked = await revokeGrantAsOperator(ctx.sql, c.var.approver.proof, id);
    if (revoked) ctx.logger.info({ grantId: id, by: c.var.approver.label }, 'grant revoked by an operator');
    return {
      outcome: 'ok',
      summary: { revoked },
      response: c.redirect(
        backWith(back, { notice: revoked ? 'grant-revoked' : 'grant-unchanged', id }),
        303,
      ),
    };
  });
}

/** Tokens and grants (operators only): the lists, each person's and each server's, and revoking one. */
export function mountTokens(app: Hono<ConsoleEnv>, ctx: ConsoleContext) {
  app.get('/operator/tokens', (c) => listPage(c, ctx, { kind: 'all' }));
  app.get('/operator/persons/:person', (c) => {
    const person = pathName(c, 'person');
    return person ? listPage(c, ctx, { kind: 'person', person }) : notFound(c, 'person');
  });
  app.get('/operator/servers/:server', (c) => {
    const server = pathName(c, 'server');
    return server ? listPage(c, ctx, { kind: 'server', server }) : notFound(c, 'server');
  });
  app.post('/operator/tokens/:id/revoke', (c) => revokeToken(c, ctx));
  app.post('/operator/grants/:id/revoke', (c) => revokeGrant(c, ctx));
}
