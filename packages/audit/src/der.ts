// Just enough DER (ITU-T X.690) to ask a time-stamping authority for a timestamp and to read its
// answer (RFC 3161): no dependency for a few dozen lines.

/** One DER element: its tag byte, its content, and the whole encoding (tag and length included). */
export interface Der {
  tag: number;
  content: Buffer;
  raw: Buffer;
}

/** The element at `offset` of `buf`. */
export function readDer(buf: Buffer, offset = 0): Der {
  const tag = buf[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new Error('DER: multi-byte tags are not used here');
  let length = buf[offset + 1]!;
  let start = offset + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4) throw new Error('DER: indefinite or oversized length');
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + buf[start + i]!;
    start += bytes;
  }
  if (start + length > buf.length) throw new Error('DER: element runs past its end');
  return { tag, content: buf.subarray(start, start + length), raw: buf.subarray(offset, start + length) };
}

/** The elements inside a constructed element, in order. */
export function children(der: Der): Der[] {
  const out: Der[] = [];
  for (let at = 0; at < der.content.length;) {
    const child = readDer(der.content, at);
    out.push(child);
    at += child.raw.length;
  }
  return out;
}

/** An element of `tag` around `content`. */
export function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const length =
    n < 0x80
      ? Buffer.from([n])
      : n < 0x100
        ? Buffer.from([0x81, n])
        : n < 0x10000
          ? Buffer.from([0x82, n >> 8, n & 0xff])
          : Buffer.from([0x83, n >> 16, (n >> 8) & 0xff, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
}

/** An OBJECT IDENTIFIER from its dotted form. */
export function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const bytes = [a! * 40 + b!];
  for (const n of rest) {
    const groups = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) groups.unshift((v & 0x7f) | 0x80);
    bytes.push(...groups);
  }
  return der(0x06, Buffer.from(bytes));
}

/** The dotted form of an OBJECT IDENTIFIER element. */
export function oidText(element: Der): string {
  const bytes = [...element.content];
  const parts = [Math.floor(bytes[0]! / 40), bytes[0]! % 40];
  let value = 0;
  for (const byte of bytes.slice(1)) {
    value = value * 128 + (byte & 0x7f);
    if (!(byte & 0x80)) {
      parts.push(value);
      value = 0;
    }
  }
  return parts.join('.');
}

/** A GeneralizedTime element (`YYYYMMDDhhmmss[.fff]Z`) as a Date. */
export function generalizedTime(element: Der): Date {
  const text = element.content.toString('ascii');
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\.\d+)?Z$/.exec(text);
  if (!m) throw new Error(`DER: not a GeneralizedTime in UTC: ${text}`);
  const ms = m[7] ? Math.round(Number(`0${m[7]}`) * 1000) : 0;
  return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, ms));
}
