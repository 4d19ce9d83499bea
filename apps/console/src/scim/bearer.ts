import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import { scimError } from './resources.ts';
import { auditScim } from './write.ts';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * The SCIM guard: with no SCIM token configured, /scim/v2 does not exist (404); otherwise the request
 * must present that token as its bearer (compared in constant time, as hashes), and the database must
 * hold that token's hash (set by its owner), else 401, audited.
 */
export function scimBearer(ctx: ConsoleContext, token: string | undefined): MiddlewareHandler<ConsoleEnv> {
  const expected = token ? digest(token) : undefined;
  return async (c, next) => {
    if (!expected) return c.text('Not found.', 404);
    const started = performance.now();
    const m = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '');
    let refused =
      !m || !timingSafeEqual(digest(m[1]!), expected) ? 'A valid SCIM bearer token is required.' : undefined;
    if (!refused) {
      const [row] = await ctx.sql<{ ok: boolean }[]>`select bulkhead_scim_check(${token!}) as ok`;
      if (!row!.ok)
        refused =
          'The database holds no hash of this SCIM token: its owner sets it with `bulkhead scim set-token`.';
    }
    if (refused) {
      await auditScim(c, ctx, undefined, {
        action: 'bearer',
        outcome: 'unauthorized',
        started,
        summary: { refused },
      });
      c.header('WWW-Authenticate', 'Bearer realm="scim"');
      return scimError(c, 401, refused);
    }
    await next();
  };
}
