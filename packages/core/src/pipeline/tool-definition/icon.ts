import type { ToolIcon } from './define-tool.ts';

// RFC 3986 lets these stand in a URI's path as they are; everything else (space, <, >, #,
// %, quotes, braces, non-ASCII) must be percent-encoded, or a client that checks the
// spec's `format: uri` refuses the listing that carries the icon.
const NOT_IN_URI = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/?]/g;

// In these attributes a comma separates numbers as well as a space does, and costs one
// character where an encoded space costs three.
const NUMBER_LISTS = /\b(d|points|viewBox)='([^']*)'/g;

/** `text` percent-encoded where RFC 3986 requires it, and nowhere else (shorter than base64 or encodeURIComponent). */
export function encodeUriText(text: string): string {
  return text.replace(NOT_IN_URI, encodeURIComponent);
}

/**
 * A tool or server icon as an inline SVG data URI: no request leaves the
 * client, and the URI is valid (`format: uri`). `body` is the SVG's content in
 * a `size`×`size` view box; use single quotes for attributes. The icon states
 * its type and, being a vector, that it fits any size (`sizes: ['any']`).
 */
export function svgIcon(body: string, size = 16): ToolIcon[] {
  const markup =
    `<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 ${size} ${size}'>${body}</svg>`.replace(
      NUMBER_LISTS,
      (_, name: string, value: string) => `${name}='${value.trim().replace(/\s*,\s*|\s+/g, ',')}'`,
    );
  return [{ src: `data:image/svg+xml,${encodeUriText(markup)}`, mimeType: 'image/svg+xml', sizes: ['any'] }];
}
