import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { sourceAddress, sourceKey } from './source.ts';

describe('sourceKey', () => {
  it('counts IPv4 addresses one by one, IPv6 per /64, IPv4-mapped as IPv4', () => {
    expect(
      [
        '198.51.100.7',
        '::ffff:127.0.0.1',
        '::1',
        '2001:db8:abcd:12:1:2:3:4',
        '2001:db8:abcd:12:ffff::9',
        '[2001:db8::1]',
        'fe80::1%eth0',
        '2001:db8:0:0:0:0:1.2.3.4',
        'not an address',
        '',
      ].map(sourceKey),
    ).toEqual([
      '198.51.100.7',
      '127.0.0.1',
      '::1',
      '2001:db8:abcd:12::/64',
      '2001:db8:abcd:12::/64',
      '2001:db8:0:0::/64',
      'fe80:0:0:0::/64',
      '2001:db8:0:0::/64',
      'not an address',
      'unknown',
    ]);
  });
});

describe('sourceAddress', () => {
  const app = (hops: number) => new Hono().get('/', (c) => c.text(sourceAddress(c, hops)));
  const from = async (hops: number, xff?: string) => {
    const headers: Record<string, string> = xff ? { 'x-forwarded-for': xff } : {};
    const res = await app(hops).request(
      '/',
      { headers },
      { incoming: { socket: { remoteAddress: '10.0.0.2' } } },
    );
    return res.text();
  };

  it('takes the socket without proxies, and the entry the outermost trusted proxy wrote with them', async () => {
    expect(await from(0, '203.0.113.5')).toBe('10.0.0.2');
    expect(await from(1, '1.1.1.1, 203.0.113.5')).toBe('203.0.113.5');
    expect(await from(2, '1.1.1.1, 203.0.113.5, 10.0.0.1')).toBe('203.0.113.5');
    expect(await from(2, '203.0.113.5')).toBe('203.0.113.5');
    expect(await from(1)).toBe('10.0.0.2');
    expect(await (await app(0).request('/')).text()).toBe('unknown');
  });
});
