import { z } from 'zod';

/**
 * Text that came from users or documents: data, never instructions. In
 * structured content it is `{ text, source, untrusted: true }`; in text
 * content it becomes a delimited block that the text itself cannot close.
 */
export interface UntrustedText {
  text: string;
  source: string;
  untrusted: true;
  injection_suspected?: string[];
}

/** Wraps database text for a result. `source` names where it came from (`ticket T-1001 message 2`). */
export function untrusted(text: string, options: { source: string }): UntrustedText {
  return { text, source: options.source, untrusted: true };
}

/** True for a value made by {@link untrusted}. */
export function isUntrusted(value: unknown): value is UntrustedText {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as UntrustedText).untrusted === true &&
    typeof (value as UntrustedText).text === 'string' &&
    typeof (value as UntrustedText).source === 'string'
  );
}

/** The output-schema shape of an {@link untrusted} value; use it for every database text field. */
export const untrustedTextSchema = z.object({
  text: z.string(),
  source: z.string(),
  untrusted: z.literal(true),
  injection_suspected: z.array(z.string()).optional(),
});
