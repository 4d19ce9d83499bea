/** Who is calling: the token presented, resolved. Handlers read the customer scope from here, never from arguments. */
export interface Access {
  tokenId: string;
  label: string;
  /** The server the token was issued for (its audience). */
  server: string;
  scopes: readonly string[];
  /** Set only for tokens of the customer server: the one customer this client may see. */
  customerId: string | null;
  /** The person the token was issued to, when recorded (separation of duties). */
  owner?: string | null;
  /**
   * What the call shows the database to prove its token, so that the database derives the customer
   * its row policies fence on itself (`bulkhead_fenced_customer()`); absent for an access no token
   * presented (an approved call run later).
   */
  proof?: TokenProof;
}

/**
 * A presented token as the database checks it: its id and its secret's SHA-256, the proof
 * `bulkhead_verify_token` takes too. Kept in a private field and written as `[token proof]` by
 * JSON and loggers, so that an access logged or audited whole never carries it.
 */
export class TokenProof {
  readonly #setting: string;

  constructor(tokenId: string, secretHash: Uint8Array) {
    this.#setting = `${tokenId}:${Buffer.from(secretHash).toString('hex')}`;
  }

  /** The value of `bulkhead.customer_token`: only for the statement that sets it. */
  get setting(): string {
    return this.#setting;
  }

  toJSON(): string {
    return '[token proof]';
  }
}
