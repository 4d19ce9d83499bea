/** @jsxImportSource hono/jsx */
import { clientConfigs, issueTokenAsOperator } from '@bulkhead/core/operator';
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv, ConsoleRequest } from '../../context.ts';
import { field } from '../../form-field.ts';
import { page } from '../../layout/layout.tsx';
import type { OAuthServer } from '../../oauth/context.ts';
import { customerChoices, customerExists } from '../../oauth/store.ts';
import { operatorAction } from '../../operator/action.tsx';
import { checkIssueFields, freshFields, postedFields, type IssueFields } from './form.ts';
import { ChooseServerPage, IssuedTokenPage, IssueTokenPage } from './page.tsx';

async function form(
  c: ConsoleRequest,
  ctx: ConsoleContext,
  server: OAuthServer,
  fields: IssueFields,
  error?: string,
) {
  return page(
    c,
    <IssueTokenPage
      approver={c.var.approver}
      server={server}
      customers={server.customerBound ? await customerChoices(ctx.sql) : null}
      fields={fields}
      error={error}
    />,
    error ? 400 : 200,
  );
}

/**
 * `POST /operator/tokens`: checks the form as the CLI checks its options, issues the token through
 * the database's operator function and shows it once, with the client configuration.
 */
async function issue(c: ConsoleRequest, ctx: ConsoleContext) {
  const body = await c.req.parseBody({ all: true });
  const name = field(body, 'server');
  const server = ctx.servers.find((s) => s.name === name);
  const fields = postedFields(body);
  const args = {
    server: name ?? null,
    label: fields.label,
    owner: fields.person,
    scopes: fields.scopes,
    customer_id: fields.customer || null,
    expires: fields.expires,
  };
  return operatorAction(c, ctx, 'issue_token', args, async () => {
    const refuse = (reason: string, response: Response | Promise<Response>) => ({
      outcome: 'bad_request' as const,
      summary: { reason },
      response,
    });
    if (!server)
      return refuse(
        'unknown_server',
        page(c, <ChooseServerPage approver={c.var.approver} servers={ctx.servers} />, 400),
      );
    const checked = checkIssueFields(server, fields);
    if (!checked.ok) return refuse(checked.error, form(c, ctx, server, fields, checked.error));
    const { issue: o } = checked;
    if (o.customerId && !(await customerExists(ctx.sql, o.customerId))) {
      const error = `Customer ${o.customerId} does not exist: check the customer number (e.g. C-1001).`;
      return refuse(error, form(c, ctx, server, fields, error));
    }
    const approver = c.var.approver;
    // Recorded as created by `console: <label>`, the operator the proof names.
    const issued = await issueTokenAsOperator(ctx.sql, approver.proof, { server: server.name, ...o });
    ctx.logger.info(
      { tokenId: issued.id, server: server.name, by: approver.label },
      'token issued by an operator',
    );
    // The secret is in this answer and nowhere else: no cache may keep it.
    c.header('Cache-Control', 'no-store');
    return {
      outcome: 'ok',
      summary: { token_id: issued.id, expires_at: issued.expiresAt?.toISOString() ?? null },
      response: page(
        c,
        <IssuedTokenPage
          approver={approver}
          id={issued.id}
          token={issued.token}
          server={server.name}
          label={o.label}
          person={o.owner}
          scopes={o.scopes}
          customerId={o.customerId}
          expiresAt={issued.expiresAt}
          configs={clientConfigs(server.name, server.resource, issued.token)}
        />,
      ),
    };
  });
}

/** Issuing a token: the server first (`?server=`), then the form for it, then the token once. */
export function mountIssueToken(app: Hono<ConsoleEnv>, ctx: ConsoleContext) {
  app.get('/operator/tokens/new', (c) => {
    const server = ctx.servers.find((s) => s.name === c.req.query('server'));
    // Coming from a person's page: the form names them already.
    const person = c.req.query('person')?.trim().slice(0, 200) ?? '';
    if (!server)
      return page(c, <ChooseServerPage approver={c.var.approver} servers={ctx.servers} person={person} />);
    return form(c, ctx, server, { ...freshFields(server), person });
  });
  app.post('/operator/tokens', (c) => issue(c, ctx));
}
