import { createHash } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { randomToken, sameSecret } from '../../sessions.ts';

/** How long a sign-in form can be used. */
export const SIGN_IN_FORM_SECONDS = 3600;
/** Open forms kept per source address; minting one more drops the oldest. */
const FORMS_PER_SOURCE = 20;

function hash(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** A minted sign-in form: the nonce goes into the form, the binding into the sign-in cookie. */
export interface SignInForm {
  nonce: string;
  binding: string;
}

/**
 * Mints a sign-in form for `source`: a random nonce for the form and a random
 * binding for the cookie, both stored only as hashes, for an hour.
 */
export async function mintSignInForm(sql: Sql, source: string): Promise<SignInForm> {
  const form = { nonce: randomToken(), binding: randomToken() };
  await sql`delete from bulkhead_console_sign_in_forms where expires_at <= now()`;
  await sql`
    insert into bulkhead_console_sign_in_forms (nonce_hash, binding_hash, source, expires_at)
    values (${hash(form.nonce)}, ${hash(form.binding)}, ${source}, now() + ${SIGN_IN_FORM_SECONDS} * interval '1 second')`;
  await sql`
    delete from bulkhead_console_sign_in_forms where source = ${source} and nonce_hash not in (
      select nonce_hash from bulkhead_console_sign_in_forms where source = ${source}
      order by expires_at desc limit ${FORMS_PER_SOURCE})`;
  return form;
}

/**
 * Uses up the form with this nonce (whatever the outcome: a nonce works once)
 * and says whether it was minted here, is unexpired, and belongs to one of the
 * sign-in cookies the browser sent (a planted cookie may shadow the console's
 * own, so each is tried).
 */
export async function redeemSignInForm(sql: Sql, nonce: string, bindings: string[]): Promise<boolean> {
  if (!nonce) return false;
  const [row] = await sql<{ bindingHash: Buffer; fresh: boolean }[]>`
    delete from bulkhead_console_sign_in_forms where nonce_hash = ${hash(nonce)}
    returning binding_hash as "bindingHash", expires_at > now() as fresh`;
  if (!row?.fresh) return false;
  const expected = row.bindingHash.toString('hex');
  return bindings.some((b) => sameSecret(hash(b).toString('hex'), expected));
}
