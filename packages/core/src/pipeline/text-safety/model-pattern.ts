import { RE2JS } from 're2js';

// A regular expression a model wrote runs here only through RE2's semantics (re2js, a port of RE2 in
// plain JavaScript): its matching time grows with the input, never exponentially, so a pattern such as
// `((.*)*)*é` cannot hold the event loop the way V8's backtracking RegExp does (the ops server froze
// for 11 s on ten of them). RE2's syntax is also what Go's regexp and so Alertmanager and Prometheus
// accept: lookaround and backreferences are refused here as they are there. The eslint rule
// `bulkhead/no-dynamic-regexp` keeps servers from building a RegExp out of anything but a literal.
// re2js rather than the native `re2` addon: the addon compiles with node-gyp on every fresh install
// (minutes, and it needs the Node headers' location passed by hand under pnpm), this installs as is.

/** The longest pattern compiled by default: longer ones are refused before parsing. */
export const MODEL_PATTERN_MAX_LENGTH = 200;
/** The deepest nesting of groups by default. */
export const MODEL_PATTERN_MAX_NESTING = 5;
/** The largest bound of a counted repetition (`{n}`, `{n,m}`) by default; RE2's own limit is 1000. */
export const MODEL_PATTERN_MAX_REPEAT = 100;

/** Limits of `compileModelPattern`; each has a default above. */
export interface ModelPatternOptions {
  maxLength?: number;
  maxNesting?: number;
  maxRepeat?: number;
}

/** A pattern that was refused: `reason` says why in words a model can act on ("nested deeper than 5 groups"). */
export class ModelPatternError extends Error {
  override readonly name = 'ModelPatternError';
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** A model's pattern, compiled for a linear-time engine. */
export interface ModelPattern {
  readonly source: string;
  /** Whether the pattern matches the whole of `value` (as Alertmanager anchors a matcher's regex). */
  matchesWhole(value: string): boolean;
  /** Whether the pattern matches anywhere in `value`. */
  matchesSomewhere(value: string): boolean;
}

/** The deepest group nesting of `source` and its largest repetition bound, read past escapes and classes. */
function shape(source: string): { nesting: number; repeat: number } {
  let depth = 0;
  let nesting = 0;
  let repeat = 0;
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === '[' && source[i + 1] === ':') i = Math.max(i, source.indexOf(':]', i + 2) + 1);
      else if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
      if (source[i + 1] === '^') i++;
      if (source[i + 1] === ']') i++;
    } else if (c === '(') nesting = Math.max(nesting, ++depth);
    else if (c === ')') depth--;
    else if (c === '{') {
      const bound = /^\{(\d+)(?:,(\d*))?\}/.exec(source.slice(i, i + 24));
      if (bound) repeat = Math.max(repeat, Number(bound[1]), Number(bound[2] || 0));
    }
  }
  return { nesting, repeat };
}

/**
 * The one way a tool uses a regular expression that came from a model (or anyone outside): checked
 * against length, nesting and repetition limits, then compiled with RE2's syntax. Throws
 * `ModelPatternError` with the reason when the pattern is too large or not valid RE2 syntax.
 */
export function compileModelPattern(source: string, options: ModelPatternOptions = {}): ModelPattern {
  const maxLength = options.maxLength ?? MODEL_PATTERN_MAX_LENGTH;
  const maxNesting = options.maxNesting ?? MODEL_PATTERN_MAX_NESTING;
  const maxRepeat = options.maxRepeat ?? MODEL_PATTERN_MAX_REPEAT;
  if (source.length > maxLength)
    throw new ModelPatternError(`longer than ${maxLength} characters (${source.length})`);
  const { nesting, repeat } = shape(source);
  if (nesting > maxNesting) throw new ModelPatternError(`groups nested deeper than ${maxNesting}`);
  if (repeat > maxRepeat) throw new ModelPatternError(`a counted repetition over ${maxRepeat}`);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(source);
  } catch (err) {
    const why = err instanceof Error ? err.message.replace(/^error parsing regexp: /, '') : String(err);
    throw new ModelPatternError(`not a valid RE2 regex: ${why}`);
  }
  return {
    source,
    matchesWhole: (value) => compiled.testExact(value),
    matchesSomewhere: (value) => compiled.test(value),
  };
}
