/** How many clients one source address may register in a sliding window. */
export interface RegistrationPolicy {
  registrations: number;
  windowSeconds: number;
}

/**
 * 30 registrations per source in any 10 minutes: a client registers once per server it connects to,
 * and anyone may call the endpoint, so without a limit it would write rows for whoever asks.
 */
export const REGISTRATION_POLICY: RegistrationPolicy = { registrations: 30, windowSeconds: 600 };

/** Sources the registration limit remembers at most; the longest-quiet ones are forgotten first. */
const MAX_SOURCES = 10_000;

/** The registration limit of one console process: its policy and its count. */
export interface RegistrationLimiter {
  policy: RegistrationPolicy;
  /**
   * How many seconds the source must wait, or 0 when the registration may go ahead (and is
   * counted), and whether this is the first refusal of the window (the one worth an audit event).
   */
  check(source: string, now?: number): { wait: number; firstRefusal: boolean };
}

/**
 * A sliding-window count of registrations per source, in this process (each console replica counts
 * its own, so n replicas let through at most n times the limit).
 */
export function createRegistrationLimiter(policy: RegistrationPolicy): RegistrationLimiter {
  const seen = new Map<string, { at: number[]; refusedAt: number }>();
  const check = (source: string, now = Date.now()): { wait: number; firstRefusal: boolean } => {
    const windowMs = policy.windowSeconds * 1000;
    const entry = seen.get(source) ?? { at: [], refusedAt: 0 };
    entry.at = entry.at.filter((t) => t > now - windowMs);
    seen.delete(source); // re-inserted last: the map stays ordered by last activity
    seen.set(source, entry);
    if (seen.size > MAX_SOURCES) seen.delete(seen.keys().next().value!);
    if (entry.at.length < policy.registrations) {
      entry.at.push(now);
      return { wait: 0, firstRefusal: false };
    }
    const firstRefusal = entry.refusedAt <= now - windowMs || entry.refusedAt < entry.at[0]!;
    if (firstRefusal) entry.refusedAt = now;
    return { wait: Math.max(1, Math.ceil((entry.at[0]! + windowMs - now) / 1000)), firstRefusal };
  };
  return { policy, check };
}
