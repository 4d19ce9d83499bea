/** @jsxImportSource hono/jsx */
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv, ConsoleRequest } from '../../context.ts';
import { field } from '../../form-field.ts';
import { page } from '../../layout/layout.tsx';
import { operatorAction, operatorPage } from '../../operator/action.tsx';
import { notFound, pathName } from '../../operator/path-names.tsx';
import { operatorGrants, operatorTokens, revokePersonAsOperator, shownFingerprint } from '../tokens/data.ts';
import { backWith } from '../tokens/list-params.ts';
import { personPath } from '../tokens/tables.tsx';
import { RevokePersonPage } from './page.tsx';

/** The person's live tokens and grants: what their revocation stops. */
async function live(c: ConsoleRequest, ctx: ConsoleContext, person: string) {
  const filter = { person, state: 'active' as const };
  const tokens = await operatorTokens(ctx.sql, c.var.approver.proof, filter);
  const grants = await operatorGrants(ctx.sql, filter);
  return { tokens, grants, fingerprint: shownFingerprint(tokens, grants) };
}

async function confirmation(c: ConsoleRequest, ctx: ConsoleContext, person: string, error?: string) {
  const found = await live(c, ctx, person);
  return page(
    c,
    <RevokePersonPage
      approver={c.var.approver}
      person={person}
      {...found}
      includesOwn={found.tokens.some((t) => t.id === c.var.approver.tokenId)}
      error={error}
    />,
    error ? 409 : 200,
  );
}

/**
 * `POST /operator/persons/:person/revoke`: every live token and grant of the person, if they are
 * still those the confirmation page named; otherwise that page again, with what changed.
 */
async function revokePerson(c: ConsoleRequest, ctx: ConsoleContext, person: string) {
  const shown = field(await c.req.parseBody(), 'shown');
  return operatorAction(c, ctx, 'revoke_person', { owner: person }, async () => {
    const now = await live(c, ctx, person);
    if (shown !== now.fingerprint)
      return {
        outcome: 'bad_request',
        summary: { reason: 'changed_since_shown' },
        response: confirmation(
          c,
          ctx,
          person,
          'The tokens and grants of this person changed since the page was drawn: nothing was revoked. Check the list below and confirm again.',
        ),
      };
    const revoked = await revokePersonAsOperator(ctx.sql, c.var.approver.proof, person);
    ctx.logger.info({ ...revoked, by: c.var.approver.label }, 'person revoked by an operator');
    return {
      outcome: 'ok',
      summary: {
        ...revoked,
        token_ids: now.tokens.map((t) => t.id),
        grant_ids: now.grants.map((g) => g.id),
      },
      response: c.redirect(
        backWith(personPath(person), {
          notice: 'person-revoked',
          tokens: String(revoked.tokens),
          grants: String(revoked.grants),
        }),
        303,
      ),
    };
  });
}

/** Offboarding a person: the confirmation page that names what stops working, and the revocation. */
export function mountRevokePerson(app: Hono<ConsoleEnv>, ctx: ConsoleContext) {
  app.get('/operator/persons/:person/revoke', (c) => {
    const person = pathName(c, 'person');
    return person ? operatorPage(c, ctx, () => confirmation(c, ctx, person)) : notFound(c, 'person');
  });
  app.post('/operator/persons/:person/revoke', (c) => {
    const person = pathName(c, 'person');
    return person ? revokePerson(c, ctx, person) : notFound(c, 'person');
  });
}
