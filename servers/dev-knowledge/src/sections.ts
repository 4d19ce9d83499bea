/** The longest section get_doc returns, in characters. */
export const SECTION_MAX_CHARS = 6000;

/**
 * Cuts a document body into sections of at most `max` characters that
 * concatenate back to exactly the body. Cuts go before a heading where one
 * falls in the second three quarters of the window, else at a paragraph
 * break, else at a line break, else (one enormous line) at `max`. Headings
 * inside code fences do not count.
 */
export function splitSections(body: string, max = SECTION_MAX_CHARS): string[] {
  if (body.length <= max) return [body];
  const headings: number[] = [];
  const paragraphs: number[] = [];
  const lines: number[] = [];
  let inFence = false;
  let previousBlank = false;
  let offset = 0;
  for (const line of body.split('\n')) {
    const blank = line.trim() === '';
    if (offset > 0) {
      lines.push(offset);
      if (!inFence && /^#{1,6}\s/.test(line)) headings.push(offset);
      else if (!inFence && previousBlank && !blank) paragraphs.push(offset);
    }
    if (/^(```|~~~)/.test(line)) inFence = !inFence;
    previousBlank = blank;
    offset += line.length + 1;
  }

  const cuts = [0];
  let start = 0;
  while (body.length - start > max) {
    const end = start + max;
    const last = (list: number[], from: number) => list.findLast((o) => o > from && o <= end);
    let cut =
      last(headings, start + max / 4) ??
      last(paragraphs, start) ??
      last(headings, start) ??
      last(lines, start) ??
      end;
    // Never split a surrogate pair when cutting in the middle of a line.
    if (cut === end && /[\uDC00-\uDFFF]/.test(body[cut] ?? '')) cut--;
    cuts.push(cut);
    start = cut;
  }
  return cuts.map((from, i) => body.slice(from, cuts[i + 1] ?? body.length));
}
