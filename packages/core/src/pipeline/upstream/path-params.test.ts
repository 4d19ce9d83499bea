import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUpstreams, resolveUpstreams, UpstreamError } from '../../index.ts';
import { createUpstreamClient } from './client.ts';
import { isDotSegment } from './request-url.ts';
import type { UpstreamRecord, Upstreams } from './upstreams.ts';

// Issue 43 item 4: `{param}` was filled with encodeURIComponent, which leaves `.` and `..`, and the
// URL parser resolves them: `DELETE /projects/{p}/members/{id}` with id `..` was sent as
// `DELETE /projects/P-1`. A real HTTP upstream on loopback records what reaches it.

let upstream: Server;
let upstreams: Upstreams;
const seen: string[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.end('{}');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/api/v2`;
  upstreams = createUpstreams(
    resolveUpstreams(
      { projects: { baseUrlEnv: 'PROJECTS_URL', title: 'the project system' } },
      { PROJECTS_URL: url },
    ),
  );
});

afterAll(async () => {
  await upstreams.close();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

const client = (records: UpstreamRecord[] = []) =>
  createUpstreamClient(upstreams, 'projects', {
    signal: new AbortController().signal,
    records,
    readOnly: false,
  });

/** What a DELETE of member `id` of project P-1 sends, or the sentence it is refused with. */
async function removeMember(id: string): Promise<string> {
  const before = seen.length;
  try {
    await client().delete('/projects/{p}/members/{id}', { params: { p: 'P-1', id } });
  } catch (err) {
    expect(err).toBeInstanceOf(UpstreamError);
    expect(seen.length).toBe(before);
    return (err as Error).message;
  }
  expect(seen.length).toBe(before + 1);
  return seen.at(-1)!;
}

describe('path parameters are path segments', () => {
  it('refuses . and .. and their encoded forms as whole values, sending nothing', async () => {
    for (const id of ['..', '.', '%2e', '%2E%2e', '.%2E', '%2e.', '%252e%252e', '%25252E'])
      expect(await removeMember(id), id).toBe(
        `id ${JSON.stringify(id)} is not a valid value: in /projects/{p}/members/{id} it would be read as a step in the path, not as {id} itself. Nothing was sent.`,
      );
  });

  it('sends every other value as one encoded segment, dots inside a value included', async () => {
    expect(await removeMember('M-7')).toBe('DELETE /api/v2/projects/P-1/members/M-7');
    expect(await removeMember('...')).toBe('DELETE /api/v2/projects/P-1/members/...');
    expect(await removeMember('a..b')).toBe('DELETE /api/v2/projects/P-1/members/a..b');
    expect(await removeMember('../x')).toBe('DELETE /api/v2/projects/P-1/members/..%2Fx');
    expect(await removeMember('%2e%2')).toBe('DELETE /api/v2/projects/P-1/members/%252e%252');
  });

  it('isDotSegment: exact values only', () => {
    expect(['.', '..', '%2e', '%2E', '%2e%2E', '%252E.'].map(isDotSegment)).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['', '...', ' ..', '.. ', '%2e%2e%2e', '%', 'x'].map(isDotSegment)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
