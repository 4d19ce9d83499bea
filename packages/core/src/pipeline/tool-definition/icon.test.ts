import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { encodeUriText, svgIcon } from './icon.ts';

const uri = addFormats(new Ajv()).compile({ type: 'string', format: 'uri' });

describe('svgIcon', () => {
  it('makes a data URI that is a valid URI, with spaces, brackets and # percent-encoded and number lists comma-separated', () => {
    const [icon] = svgIcon("<path d='M1 8l14-6 -4 13' fill='#fff'/>");
    expect(icon).toEqual({
      src: "data:image/svg+xml,%3Csvg%20xmlns='http://www.w3.org/2000/svg'%20viewBox='0,0,16,16'%3E%3Cpath%20d='M1,8l14-6,-4,13'%20fill='%23fff'/%3E%3C/svg%3E",
      mimeType: 'image/svg+xml',
      sizes: ['any'],
    });
    expect(uri(icon!.src)).toBe(true);
  });

  it('decodes back to the SVG markup', () => {
    const [icon] = svgIcon("<circle cx='8' cy='5' r='3'/>", 24);
    expect(decodeURIComponent(icon!.src.slice('data:image/svg+xml,'.length))).toBe(
      "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0,0,24,24'><circle cx='8' cy='5' r='3'/></svg>",
    );
  });

  it('is needed: the same markup with raw spaces is not a valid URI', () => {
    expect(uri("data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'%3E%3C/svg%3E")).toBe(false);
  });
});

describe('encodeUriText', () => {
  it('encodes what RFC 3986 does not allow in a path, and leaves the rest', () => {
    expect(encodeUriText(`a b<c>#d%e"f{g}|h\\i^j\`k ä€`)).toBe(
      'a%20b%3Cc%3E%23d%25e%22f%7Bg%7D%7Ch%5Ci%5Ej%60k%20%C3%A4%E2%82%AC',
    );
    expect(encodeUriText("A-z0_9.~!$&'()*+,;=:@/?")).toBe("A-z0_9.~!$&'()*+,;=:@/?");
  });
});
