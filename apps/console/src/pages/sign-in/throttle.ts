import type { Sql } from '@bulkhead/db';

/** How many refused sign-ins one source may have in a sliding window before it is turned away. */
export interface SignInPolicy {
  failures: number;
  windowSeconds: number;
}

/** 10 refused sign-ins per source address in any 60 seconds; the 11th attempt gets 429 until the oldest leaves the window. */
export const SIGN_IN_POLICY: SignInPolicy = { failures: 10, windowSeconds: 60 };

/**
 * An attempt that may go ahead holds a `slot` (counted as a refusal unless
 * released); one turned away says when to retry and whether this is the first
 * refusal of the window (the one worth an audit event).
 */
export type Reservation =
  { ok: true; slot: string } | { ok: false; retryAfterSeconds: number; firstInWindow: boolean };

/** Counts refused sign-ins per source in Postgres, so the limit holds across console replicas. */
export interface SignInThrottle {
  readonly policy: SignInPolicy;
  /** Reserves an attempt for `source` before its token is looked at, or turns it away. */
  reserve(source: string): Promise<Reservation>;
  /** Gives a slot back: a sign-in that succeeded is not a refusal. */
  release(source: string, slot: string): Promise<void>;
}

/**
 * A sliding-window throttle. Each attempt is counted before it is checked
 * (and given back when it succeeds), under the row lock of its source, so
 * that concurrent attempts on several replicas cannot slip past the limit
 * together: at most `failures` tokens from one source are ever checked and
 * refused within any window.
 */
export function createSignInThrottle(sql: Sql, policy: SignInPolicy = SIGN_IN_POLICY): SignInThrottle {
  const window = policy.windowSeconds;
  return {
    policy,
    async reserve(source) {
      const reservation = await sql.begin(async (tx): Promise<Reservation> => {
        const [row] = await tx<{ recent: number; retryAfter: number | null; reported: boolean }[]>`
          insert into bulkhead_console_sign_in_failures as t (source) values (${source})
          on conflict (source) do update set source = excluded.source
          returning
            (select count(*) from unnest(t.failures) f where f > now() - ${window} * interval '1 second')::int as recent,
            ceil(extract(epoch from
              (select min(f) from unnest(t.failures) f where f > now() - ${window} * interval '1 second')
              + ${window} * interval '1 second' - now()))::int as "retryAfter",
            coalesce(t.reported_at > now() - ${window} * interval '1 second', false) as reported`;
        if (row!.recent >= policy.failures) {
          if (!row!.reported)
            await tx`update bulkhead_console_sign_in_failures set reported_at = now() where source = ${source}`;
          return {
            ok: false,
            retryAfterSeconds: Math.max(1, row!.retryAfter ?? 1),
            firstInWindow: !row!.reported,
          };
        }
        const [slot] = await tx<{ slot: string }[]>`
          update bulkhead_console_sign_in_failures
          set failures = array(select f from unnest(failures) f where f > now() - ${window} * interval '1 second')
              || now(),
            updated_at = now()
          where source = ${source}
          returning now()::text as slot`;
        return { ok: true, slot: slot!.slot };
      });
      // Sources quiet for ten windows are forgotten.
      await sql`
        delete from bulkhead_console_sign_in_failures where updated_at < now() - ${window * 10} * interval '1 second'`;
      return reservation;
    },
    async release(source, slot) {
      // As text: a timestamptz parameter would go through a JavaScript Date and lose its microseconds.
      await sql`
        update bulkhead_console_sign_in_failures set failures = array_remove(failures, ${slot}::text::timestamptz)
        where source = ${source}`;
    },
  };
}
