/** @jsxImportSource hono/jsx */
import {
  codePointLabel,
  hiddenCodePointName,
  isHiddenCodePoint,
  mixedScriptWords,
  secretHash,
  visible,
  type MixedScriptWord,
} from '@bulkhead/core/operator';
import { isDeepStrictEqual } from 'node:util';
import type { Child } from 'hono/jsx';

// Everything from outside (previews, arguments, labels, reasons, errors) is rendered through this file:
// hidden characters become a marked `[U+202E]`, never applied, and a letter from another script than the
// rest of its word is marked, with a note under the text that says what each mark means.

/** What a text holds that a reader would not see by looking at it. */
export interface TextFindings {
  /** Hidden code points with how often each occurs, in order of first appearance. */
  hidden: Map<number, number>;
  mixed: MixedScriptWord[];
}

/** Whether line breaks in a text are meant (an e-mail body) or would be a trick (a one-line value). */
export interface ShowOptions {
  lineBreaks?: boolean;
}

function keptBreak(text: string, i: number, cp: number, options: ShowOptions): boolean {
  return options.lineBreaks === true && (cp === 0x0a || (cp === 0x0d && text.charCodeAt(i + 1) === 0x0a));
}

/** Hidden characters and mixed-script words of `text`. */
export function findings(text: string, options: ShowOptions = {}): TextFindings {
  const hidden = new Map<number, number>();
  let i = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (isHiddenCodePoint(cp) && !keptBreak(text, i, cp, options)) hidden.set(cp, (hidden.get(cp) ?? 0) + 1);
    i += ch.length;
  }
  return { hidden, mixed: mixedScriptWords(text) };
}

/** The findings of several texts together. */
export function mergeFindings(all: TextFindings[]): TextFindings {
  const hidden = new Map<number, number>();
  for (const f of all) for (const [cp, n] of f.hidden) hidden.set(cp, (hidden.get(cp) ?? 0) + n);
  return { hidden, mixed: all.flatMap((f) => f.mixed) };
}

/** True when a text needs a second look. */
export function anyFindings(f: TextFindings): boolean {
  return f.hidden.size > 0 || f.mixed.length > 0;
}

/**
 * `text` as HTML that shows every character for what it is: hidden ones as a
 * marked `[U+202E]`, mixed-script words marked with their odd letters
 * highlighted. Isolated (`<bdi>`), so that right-to-left letters inside cannot
 * reorder the page around it.
 */
export function Shown(props: { text: string; lineBreaks?: boolean }) {
  const { text } = props;
  const options = { lineBreaks: props.lineBreaks ?? false };
  const words = mixedScriptWords(text);
  const odd = new Set(words.flatMap((w) => w.odd.map((l) => l.index)));
  const out: Child[] = [];
  let word: { end: number; nodes: Child[] } | undefined;
  let run = '';
  const flush = () => {
    if (run) (word ? word.nodes : out).push(run);
    run = '';
  };
  let w = 0;
  let i = 0;
  for (const ch of text) {
    if (word && i >= word.end) {
      flush();
      out.push(<mark class="mixed">{word.nodes}</mark>);
      word = undefined;
    }
    if (!word && words[w] && words[w]!.index === i) {
      flush();
      word = { end: i + words[w]!.word.length, nodes: [] };
      w++;
    }
    const cp = ch.codePointAt(0)!;
    if (isHiddenCodePoint(cp) && !keptBreak(text, i, cp, options)) {
      flush();
      (word ? word.nodes : out).push(<mark class="hidden">[{codePointLabel(cp)}]</mark>);
    } else if (odd.has(i)) {
      flush();
      word!.nodes.push(<span class="odd">{ch}</span>);
    } else run += ch;
    i += ch.length;
  }
  flush();
  if (word) out.push(<mark class="mixed">{word.nodes}</mark>);
  return <bdi>{out}</bdi>;
}

const MAX_NOTES = 20;

function oddLetters(word: MixedScriptWord): string {
  const byScript = new Map<string, string[]>();
  for (const l of word.odd) {
    const shown = `${l.char} (${codePointLabel(l.codePoint)})`;
    const list = byScript.get(l.script) ?? [];
    if (!list.includes(shown)) list.push(shown);
    byScript.set(l.script, list);
  }
  return [...byScript]
    .map(([script, letters]) => `${letters.join(', ')} ${letters.length === 1 ? 'is' : 'are'} ${script}`)
    .join('; ');
}

function short(text: string, max = 60): string {
  const cps = [...text];
  return cps.length <= max ? text : `${cps.slice(0, max).join('')}…`;
}

/** Notes under a text: what each hidden character does, and which letters of a mixed-script word are odd. */
export function Findings(props: { of: TextFindings }) {
  const { hidden, mixed } = props.of;
  if (!hidden.size && !mixed.length) return null;
  return (
    <ul class="findings">
      {[...hidden].map(([cp, n]) => (
        <li>
          <mark class="hidden">[{codePointLabel(cp)}]</mark> is a hidden character — {hiddenCodePointName(cp)}
          . Shown here, not applied{n > 1 ? ` (${n} times)` : ''}.
        </li>
      ))}
      {mixed.slice(0, MAX_NOTES).map((word) => (
        <li>
          <mark class="mixed">“{visible(short(word.word))}”</mark> mixes {word.scripts.join(' and ')} letters:{' '}
          {oddLetters(word)}. Letters of different scripts can look alike; this is not the {word.main} word it
          may look like.
        </li>
      ))}
      {mixed.length > MAX_NOTES && (
        <li>{mixed.length - MAX_NOTES} more mixed-script words are marked above.</li>
      )}
    </ul>
  );
}

/** One field of the stored arguments, flattened: `body`, `lines[0].amount`. */
export interface ArgumentRow {
  path: string;
  /** `text` for strings (shown in full), `value` for numbers, booleans, null and empty lists/objects. */
  kind: 'text' | 'value' | 'secret';
  value: string;
  /** The audit copy (arguments_redacted) differs from the arguments at this field: the row was changed. */
  mismatch: boolean;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The arguments that will run, one row per field, read from the stored
 * `arguments`; `redacted` (the stored audit copy) tells which fields are
 * secret: those show only their hash, and only when the hash is that of the
 * value that will run. Any other difference between the two is reported.
 */
export function argumentRows(args: unknown, redacted: unknown): ArgumentRow[] {
  const rows: ArgumentRow[] = [];
  const walk = (path: string, v: unknown, r: unknown) => {
    if (typeof r === 'string' && !isDeepStrictEqual(v, r) && r === secretHash(v)) {
      rows.push({ path, kind: 'secret', value: r, mismatch: false });
      return;
    }
    const children = Array.isArray(v)
      ? v.map((item, i) => [`${path}[${i}]`, item, Array.isArray(r) ? r[i] : undefined] as const)
      : isObject(v)
        ? Object.entries(v).map(
            ([k, item]) => [path ? `${path}.${k}` : k, item, isObject(r) ? r[k] : undefined] as const,
          )
        : undefined;
    if (children?.length) {
      for (const [p, item, rItem] of children) walk(p, item, rItem);
      // What only the audit copy has would not run, yet a reader of the audit log would believe it did.
      const extra = Array.isArray(r)
        ? r.slice((v as unknown[]).length).map((_, i) => `${path}[${(v as unknown[]).length + i}]`)
        : isObject(r)
          ? Object.keys(r)
              .filter((k) => !(k in (v as object)))
              .map((k) => (path ? `${path}.${k}` : k))
          : [];
      for (const p of extra)
        rows.push({ path: p, kind: 'value', value: '(not in the arguments that run)', mismatch: true });
      return;
    }
    rows.push({
      path: path || '(arguments)',
      kind: typeof v === 'string' ? 'text' : 'value',
      value: typeof v === 'string' ? v : (JSON.stringify(v) ?? 'undefined'),
      mismatch: !isDeepStrictEqual(v, r),
    });
  };
  walk('', args, redacted);
  return rows;
}

/** The findings of every text field of the arguments. */
export function argumentFindings(rows: ArgumentRow[]): TextFindings {
  return mergeFindings(
    rows.flatMap((r) => [
      findings(r.path),
      ...(r.kind === 'text' ? [findings(r.value, { lineBreaks: true })] : []),
    ]),
  );
}

const LIST_CUT = 160;

/**
 * The arguments as a table of fields. In full on the detail page (`full`),
 * cut to 160 characters a field in lists, saying how long each is.
 */
export function ArgumentTable(props: { rows: ArgumentRow[]; full: boolean; caption: string }) {
  return (
    <table class="args">
      <caption>{props.caption}</caption>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Value</th>
        </tr>
      </thead>
      <tbody>
        {props.rows.map((row) => {
          const cps = row.kind === 'text' ? [...row.value] : [];
          const cut = !props.full && cps.length > LIST_CUT;
          const text = cut ? cps.slice(0, LIST_CUT).join('') : row.value;
          return (
            <tr>
              <th scope="row">
                <code>
                  <Shown text={row.path} />
                </code>
              </th>
              <td>
                {row.mismatch && (
                  <p class="error">
                    The audit copy of this request differs here: the stored request was changed after it was
                    made. Reject it.
                  </p>
                )}
                {row.kind === 'secret' ? (
                  <span class="hint">
                    secret value, not shown (<code>{row.value}</code>)
                  </span>
                ) : row.kind === 'text' ? (
                  <>
                    <div class="text">
                      <Shown text={text} lineBreaks />
                      {cut && '…'}
                    </div>
                    {cut ? (
                      <p class="hint">
                        Text, {row.value.length.toLocaleString('en')} characters; the first {LIST_CUT} are
                        shown, the detail page shows all.
                      </p>
                    ) : (
                      props.full && (
                        <p class="hint">
                          Text, {row.value.length.toLocaleString('en')} character
                          {row.value.length === 1 ? '' : 's'}, in full.
                        </p>
                      )
                    )}
                    {props.full && <Findings of={findings(row.value, { lineBreaks: true })} />}
                  </>
                ) : (
                  <code>{row.value}</code>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
