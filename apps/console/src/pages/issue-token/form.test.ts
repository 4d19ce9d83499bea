import { describe, expect, it } from 'vitest';
import type { OAuthServer } from '../../oauth/context.ts';
import { checkIssueFields, freshFields } from './form.ts';

const admin: OAuthServer = {
  name: 'admin',
  description: 'Back office.',
  resource: 'https://admin.example.com/mcp',
  scopes: ['tickets:read', 'billing:write'],
  customerBound: false,
};
const now = new Date('2026-12-01T00:00:00Z');

describe('the issue form’s person', () => {
  it('is stored in its tidy spelling: no invisible characters, one space between words', () => {
    const fields = { ...freshFields(admin), label: 'laptop', person: 'B\u200bob\u00a0\u00a0Lima\u3000' };
    const checked = checkIssueFields(admin, fields, now);
    expect(checked.ok && checked.issue.owner).toBe('Bob Lima');
  });

  it('is refused, with the reason, when it mixes scripts or has no letter', () => {
    const mixed = checkIssueFields(
      admin,
      { ...freshFields(admin), label: 'laptop', person: 'B\u043eb' },
      now,
    );
    expect(mixed).toEqual({
      ok: false,
      error:
        'The person\'s name: "B\u043eb" mixes Latin and Cyrillic letters ("\u043e" (U+043E) is Cyrillic): a name that mixes scripts can pass for someone else\'s, so write it in one script.',
    });
    const blank = checkIssueFields(admin, { ...freshFields(admin), label: 'laptop', person: '\u200b' }, now);
    expect(blank).toEqual({
      ok: false,
      error: "The person's name: a person is named with letters or digits, and this name has none.",
    });
  });
});
