import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { maskSecrets, redactArguments, secret, secretHash } from './secret.ts';

const input = z.object({ iban: secret(z.string().min(8)), note: z.string().optional() });

describe('redactArguments and maskSecrets', () => {
  it('replace a secret field (and one derived from it) by its hash, or by a word', () => {
    const args = { iban: 'DE89370400440532013000', note: 'rent' };
    expect(redactArguments(input, args)).toEqual({
      iban: secretHash('DE89370400440532013000'),
      note: 'rent',
    });
    expect(maskSecrets(input, args)).toEqual({ iban: '(secret value, not shown)', note: 'rent' });
  });

  it('treat keys named like Object.prototype members as plain unknown arguments', () => {
    // JSON.parse makes `constructor` and `__proto__` own keys; neither is a field of the schema.
    const args = JSON.parse(
      '{"constructor":{"prototype":{"admin":true}},"__proto__":{"x":1},"toString":"y","iban":"DE89370400440532013000"}',
    ) as Record<string, unknown>;
    const redacted = redactArguments(input, args) as Record<string, unknown>;
    expect(redacted.constructor).toEqual({ prototype: { admin: true } });
    expect(redacted.toString).toBe('y');
    expect(redacted.iban).toBe(secretHash('DE89370400440532013000'));
  });
});
