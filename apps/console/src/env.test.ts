import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@bulkhead/core';
import { expect, it } from 'vitest';
import { loadEnv } from './env.ts';

const OIDC = {
  BULKHEAD_OIDC_ISSUER: 'https://login.example.com/realms/staff',
  BULKHEAD_OIDC_CLIENT_ID: 'bulkhead-console',
};

function problems(env: Record<string, string>): string[] {
  try {
    loadEnv(env);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems;
  }
}

it('reads the OpenID Provider settings, the secret from its file, and the groups claim with its default', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bulkhead-oidc-'));
  writeFileSync(join(dir, 'secret'), 's3cret-from-file\n');
  const env = loadEnv({ ...OIDC, BULKHEAD_OIDC_CLIENT_SECRET_FILE: join(dir, 'secret') });
  expect(env.oidc).toEqual({ ...toSettings(OIDC), clientSecret: 's3cret-from-file', groupsClaim: 'groups' });
  expect(env.tokenSignIn).toBe(true);
  const other = loadEnv({
    ...OIDC,
    BULKHEAD_OIDC_CLIENT_SECRET: 'x',
    BULKHEAD_OIDC_GROUPS_CLAIM: 'roles',
    BULKHEAD_CONSOLE_TOKEN_SIGN_IN: 'off',
  });
  expect(other.oidc?.groupsClaim).toBe('roles');
  expect(other.tokenSignIn).toBe(false);
  expect(loadEnv({}).oidc).toBeUndefined();
});

it('names each missing or conflicting OpenID Connect setting, and refuses token sign-in off without an IdP', () => {
  expect(problems({ BULKHEAD_OIDC_ISSUER: OIDC.BULKHEAD_OIDC_ISSUER })).toEqual([
    'BULKHEAD_OIDC_CLIENT_ID: required for sign-in by OpenID Connect',
    'BULKHEAD_OIDC_CLIENT_SECRET: required (or BULKHEAD_OIDC_CLIENT_SECRET_FILE) for sign-in by OpenID Connect',
  ]);
  expect(
    problems({ ...OIDC, BULKHEAD_OIDC_CLIENT_SECRET: 'x', BULKHEAD_OIDC_CLIENT_SECRET_FILE: '/x' }),
  ).toEqual([
    'BULKHEAD_OIDC_CLIENT_SECRET_FILE: set BULKHEAD_OIDC_CLIENT_SECRET or BULKHEAD_OIDC_CLIENT_SECRET_FILE, not both (got a value of 2 characters, not shown)',
  ]);
  expect(problems({ BULKHEAD_CONSOLE_TOKEN_SIGN_IN: 'off' })).toEqual([
    'BULKHEAD_CONSOLE_TOKEN_SIGN_IN: off needs BULKHEAD_OIDC_ISSUER: nobody could sign in (got a value of 3 characters, not shown)',
  ]);
  expect(problems({ ...OIDC, BULKHEAD_OIDC_CLIENT_SECRET_FILE: '/nonexistent/secret' })[0]).toMatch(
    /^BULKHEAD_OIDC_CLIENT_SECRET_FILE: cannot be read: ENOENT/,
  );
});

function toSettings(o: typeof OIDC) {
  return { issuer: o.BULKHEAD_OIDC_ISSUER, clientId: o.BULKHEAD_OIDC_CLIENT_ID };
}

it('reads the SCIM bearer from the variable or its file, and refuses both, a short one or an unreadable file', () => {
  const token = 'x'.repeat(40);
  expect(loadEnv({}).scimToken).toBeUndefined();
  expect(loadEnv({ BULKHEAD_SCIM_TOKEN: token }).scimToken).toBe(token);
  const dir = mkdtempSync(join(tmpdir(), 'bulkhead-scim-'));
  writeFileSync(join(dir, 'token'), `${token}\n`);
  writeFileSync(join(dir, 'short'), 'short\n');
  expect(loadEnv({ BULKHEAD_SCIM_TOKEN_FILE: join(dir, 'token') }).scimToken).toBe(token);
  expect(problems({ BULKHEAD_SCIM_TOKEN_FILE: join(dir, 'short') })).toEqual([
    expect.stringMatching(/^BULKHEAD_SCIM_TOKEN_FILE: holds fewer than 32 characters/),
  ]);
  expect(problems({ BULKHEAD_SCIM_TOKEN: token, BULKHEAD_SCIM_TOKEN_FILE: join(dir, 'token') })[0]).toMatch(
    /^BULKHEAD_SCIM_TOKEN_FILE: set BULKHEAD_SCIM_TOKEN or BULKHEAD_SCIM_TOKEN_FILE, not both/,
  );
  expect(problems({ BULKHEAD_SCIM_TOKEN: 'short' })[0]).toMatch(/^BULKHEAD_SCIM_TOKEN: /);
  expect(problems({ BULKHEAD_SCIM_TOKEN_FILE: '/nonexistent/scim' })[0]).toMatch(
    /^BULKHEAD_SCIM_TOKEN_FILE: cannot be read: ENOENT/,
  );
});
