// An e-mail leaves through the outbox (kind `email`) as a payload that a sender turns
// into a message. Its header fields are built from database text (a ticket subject a
// customer wrote, an address someone entered), and a line break in a header field
// ends that field and starts a new one: `Re: [T-5045] Hi\r\nBcc: attacker@…` would
// add a recipient. So header text is flattened to one line here, where the e-mail is
// built, and the outbox refuses a header field that still carries a break.

/** The payload fields a sender puts into the message's header. */
export const EMAIL_HEADER_FIELDS = ['to', 'cc', 'bcc', 'from', 'reply_to', 'subject'] as const;

/** Control characters (CR, LF, tab, NUL, ESC, C1, ...) and Unicode line and paragraph separators. */
const BREAKING = /[\p{Cc}\u2028\u2029]/u;
const BREAKING_RUNS = /[\p{Cc}\u2028\u2029\s]+/gu;

/** The longest subject kept; longer ones end in "…" (a header line may not exceed 998 characters). */
export const MAX_SUBJECT_CHARS = 200;

/**
 * Text for a header field: every run of line breaks, tabs, other control
 * characters and spaces becomes one space, the ends are trimmed, and text over
 * `max` characters is cut with "…" (never inside a surrogate pair).
 */
export function headerText(text: string, max = MAX_SUBJECT_CHARS): string {
  const flat = text.replace(BREAKING_RUNS, ' ').trim();
  if (flat.length <= max) return flat;
  let cut = flat.slice(0, max - 1);
  if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut.trimEnd()}…`;
}

// One mailbox, nothing a header could read as a second one or as a display name:
// no whitespace or controls, none of , ; : < > ( ) [ ] " \ and exactly one @.
const NOT = String.raw`\s\p{Cc}\u2028\u2029,;:<>()[\]"\\@`;
const ADDRESS = new RegExp(`^[^${NOT}]+@[^${NOT}]+\\.[^${NOT}.]{2,}$`, 'u');

/**
 * Why `value` is not one plain e-mail address a header can carry safely, in a
 * few words ("it contains a line break"), or undefined when it is one.
 */
export function addressProblem(value: string): string | undefined {
  if (/[\r\n\u0085\u2028\u2029]/.test(value)) return 'it contains a line break';
  if (BREAKING.test(value)) return 'it contains a control character';
  if (/\s/.test(value)) return 'it contains a space';
  if (!ADDRESS.test(value)) return 'it is not one address of the form name@domain.tld';
  return undefined;
}

/** What an approved action e-mails; other fields (`ticket_key`, ...) go along for the receiver. */
export interface EmailInput {
  to: string;
  subject: string;
  /** The body, plain text; it may have any number of lines. */
  text: string;
  [field: string]: unknown;
}

/**
 * The outbox payload of an e-mail: the subject flattened to one line
 * ({@link headerText}), the recipient checked to be one plain address. A bad
 * recipient is a programming error here: a tool checks it earlier with
 * {@link addressProblem} and tells the model what to fix.
 */
export function emailMessage<T extends EmailInput>(input: T): T {
  const problem = addressProblem(input.to);
  if (problem) throw new Error(`e-mail recipient refused: ${problem}`);
  return { ...input, subject: headerText(input.subject) };
}

/**
 * Throws unless every header field of an `email` payload is on one line and
 * `to` is one plain address: the outbox's last check before a row is written.
 */
export function assertEmailHeaders(payload: Record<string, unknown>): void {
  for (const field of EMAIL_HEADER_FIELDS) {
    const value = payload[field];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new Error(`e-mail header field ${field} is not text`);
    if (BREAKING.test(value))
      throw new Error(`e-mail header field ${field} carries a line break or control character`);
  }
  const problem = typeof payload.to === 'string' ? addressProblem(payload.to) : 'it is missing';
  if (problem) throw new Error(`e-mail recipient refused: ${problem}`);
}
