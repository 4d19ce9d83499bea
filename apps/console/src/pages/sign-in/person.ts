/** A person as `bulkhead_console_oidc_sign_in` answers for them. */
export interface SignedInPerson {
  outcome: 'ok' | 'no_rights' | 'deactivated';
  personId: string;
  /** Their console identity (null when refused). */
  tokenId: string | null;
  /** How they are shown: name, else e-mail, else `sub`. */
  label: string;
  issuer: string;
  subject: string;
  name: string | null;
  email: string | null;
  groups: string[];
  /** Their rights now, as approver scopes (`approvals:decide`, `grants:issue`, `tokens:manage`). */
  scopes: string[];
}

/** The sentence that tells a person refused at sign-in what is missing, and who can change it. */
export function personRefusal(p: SignedInPerson, groupsClaim: string): string {
  const who = [p.name, p.email && `(${p.email})`].filter(Boolean).join(' ') || p.subject;
  if (p.outcome === 'deactivated')
    return `Your identity provider signed you in as ${who}, but this person is deactivated in Bulkhead.`;
  const groups = p.groups.length
    ? `none of your groups (${p.groups.join(', ')}) is mapped to a right in Bulkhead`
    : `your identity provider sent no groups (the "${groupsClaim}" claim of the ID token is missing or empty), so no group of yours is mapped to a right in Bulkhead`;
  return `Your identity provider signed you in as ${who}, but ${groups}. An operator gives a group rights with \`bulkhead groups add <group> --approve <server>\` (or on the console's Groups page); then sign in again.`;
}
