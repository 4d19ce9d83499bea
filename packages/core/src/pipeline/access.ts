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
}
