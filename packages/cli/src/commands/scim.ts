import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { CliError } from '../io.ts';

const setToken: Command = {
  name: 'set-token',
  summary: "store the SCIM bearer's hash in the database (the owner's step)",
  help: `Usage: bulkhead scim set-token [--file <path>]

Stores the SHA-256 of the bearer token the identity provider's SCIM client
presents at the console's /scim/v2. The database checks every SCIM call against
it, so the console's own login cannot deactivate, reactivate or regroup people
without that token. Run as the database's owner (DATABASE_URL, or the embedded
default). Give the console the same token (BULKHEAD_SCIM_TOKEN or
BULKHEAD_SCIM_TOKEN_FILE) and the IdP too.

Options:
  --file <path>   the token: the first line of this file (at least 32 characters).
                  Without it a new token is made and printed once.`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, { file: { type: 'string' } });
    let token: string;
    if (values.file) {
      try {
        token = readFileSync(values.file, 'utf8').split('\n')[0]!.trim();
      } catch (err) {
        throw new CliError(`cannot read ${values.file}: ${(err as Error).message}`);
      }
      if (token.length < 32) throw new CliError('a SCIM token has at least 32 characters');
    } else token = `bh_scim_${randomBytes(32).toString('base64url')}`;
    return withDatabase(env, io, async ({ sql }) => {
      await sql`select bulkhead_scim_set_token_hash(sha256(convert_to(${token}, 'UTF8')))`;
      io.out(
        values.file
          ? 'The SCIM token from that file is set: the console accepts it as BULKHEAD_SCIM_TOKEN.'
          : `SCIM token (shown once; give it to the console as BULKHEAD_SCIM_TOKEN and to the IdP):\n${token}`,
      );
      return 0;
    });
  },
};

export const scimCommand = group('scim', "Set up SCIM provisioning: the identity provider's bearer token.", [
  setToken,
]);
