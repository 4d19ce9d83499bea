import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { pinnedTool, servedName } from './pinned-tool.ts';
import { canonicalJson, diffPin, formatPinFile, parsePinFile, pinHash, pinTool } from './pins.ts';

const listing = {
  name: 'get-sum',
  title: 'Get Sum',
  description: 'Returns the sum of a and b.',
  inputSchema: {
    type: 'object',
    properties: { b: { type: 'number' }, a: { type: 'number' } },
    required: ['a', 'b'],
  },
  annotations: { readOnlyHint: true },
  execution: { taskSupport: 'forbidden' },
};

describe('a pin', () => {
  it('hashes the canonical JSON of name, title, description, schemas and annotations, and nothing else', () => {
    const pin = pinTool(listing);
    expect(pin).not.toHaveProperty('execution');
    const canonical =
      '{"annotations":{"readOnlyHint":true},"description":"Returns the sum of a and b.","inputSchema":{"properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"type":"object"},"name":"get-sum","title":"Get Sum"}';
    expect(canonicalJson({ ...pin, sha256: undefined })).toBe(canonical);
    expect(pin.sha256).toBe(createHash('sha256').update(canonical).digest('hex'));
    // Key order is no difference; a word is.
    expect(
      pinHash({
        ...pin,
        inputSchema: { required: ['a', 'b'], type: 'object', properties: listing.inputSchema.properties },
      }),
    ).toBe(pin.sha256);
    expect(pinHash({ ...pin, description: 'Returns the sum of a and b. Always.' })).not.toBe(pin.sha256);
  });

  it('refuses a pin file whose upstream text was edited, and takes the author’s text in served', () => {
    const pin = pinTool(listing);
    const file = { upstream: 'everything', tools: [pin], others: [] };
    expect(parsePinFile(formatPinFile(file)).tools[0]).toEqual(pin);
    const edited = { ...file, tools: [{ ...pin, description: 'Adds numbers.' }] };
    expect(() => parsePinFile(formatPinFile(edited), 'servers/x/pins.json')).toThrow(
      "servers/x/pins.json: the pin of get-sum does not match its sha256; edit served.description, not the upstream's text",
    );
    const served = {
      ...file,
      tools: [{ ...pin, served: { description: 'Adds a and b; returns the sum.' } }],
    };
    expect(parsePinFile(formatPinFile(served)).tools[0]!.served).toEqual({
      description: 'Adds a and b; returns the sum.',
    });
  });

  it('tells what changed, field by field', () => {
    const pin = pinTool(listing);
    expect(diffPin(pin, { ...pin, description: 'New.' })).toEqual([
      { field: 'description', pinned: listing.description, live: 'New.' },
    ]);
  });

  it('is served under the kit’s snake_case name', () => {
    expect(['get-sum', 'trigger-long-running-operation', 'readFile', 'x.y', '2fa'].map(servedName)).toEqual([
      'get_sum',
      'trigger_long_running_operation',
      'read_file',
      'x_y',
      't_2fa',
    ]);
  });
});

describe('a pinned schema’s patterns', () => {
  it('are matched by the linear-time engine: a pattern that backtracks badly cannot freeze the process', () => {
    const tool = pinnedTool(
      pinTool({
        name: 'find',
        description: 'Finds things by their code, which must be letters a.',
        inputSchema: {
          type: 'object',
          properties: {
            code: { type: 'string', pattern: '^(a+)+$' },
            tags: { type: 'array', items: { type: 'string', pattern: '^[a-z]+$' } },
          },
          required: ['code'],
        },
        annotations: { readOnlyHint: true },
      }),
      { upstream: 'u', readScope: 'u:read', writeScope: 'u:write' },
    );
    // 40 a's and a !: JavaScript's engine would take longer than the age of the universe here.
    const bad = tool.input.safeParse({ code: `${'a'.repeat(40)}!` });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toBe('code does not match the pattern ^(a+)+$');
    expect(tool.input.safeParse({ code: 'aaa', tags: ['x', 'Y'] }).error?.issues[0]?.message).toBe(
      'tags item 1 does not match the pattern ^[a-z]+$',
    );
    expect(tool.input.safeParse({ code: 'aaa', tags: ['x'] }).success).toBe(true);
  });
});
