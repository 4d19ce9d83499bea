import { describe, expect, it } from 'vitest';
import { defaultUrl, discoverServers, portOffsetOption, publicUrl, type ServerManifest } from './servers.ts';

const admin = discoverServers().find((s) => s.name === 'admin')!;
const console_ = discoverServers().find((s) => s.name === 'console')!;

describe('discoverServers', () => {
  it('finds the servers from the CLI’s own folder, whatever the working directory', () => {
    const here = process.cwd();
    process.chdir('/');
    try {
      const shipped = ['console', 'admin', 'customer', 'dev-knowledge'];
      const found = discoverServers().filter((s: ServerManifest) => shipped.includes(s.name));
      expect(found.map((s) => [s.name, s.kind, s.port])).toEqual([
        ['console', 'console', 3100],
        ['admin', 'mcp', 3101],
        ['customer', 'mcp', 3102],
        ['dev-knowledge', 'mcp', 3103],
      ]);
    } finally {
      process.chdir(here);
    }
  });
});

describe('publicUrl', () => {
  it('decides as the server does: --url, BULKHEAD_PUBLIC_URL, then HOST and PORT or the manifest port plus the offset', () => {
    expect(publicUrl(admin)).toBe('http://127.0.0.1:3101/mcp');
    expect(publicUrl(admin, { portOffset: 1000 })).toBe('http://127.0.0.1:4101/mcp');
    expect(publicUrl(admin, { PORT: 8080, portOffset: 1000 })).toBe('http://127.0.0.1:8080/mcp');
    expect(publicUrl(admin, { HOST: 'mcp.internal', portOffset: 5 })).toBe('http://mcp.internal:3106/mcp');
    expect(publicUrl(admin, { HOST: '0.0.0.0' })).toBe('http://127.0.0.1:3101/mcp');
    expect(publicUrl(admin, { HOST: '::1' })).toBe('http://[::1]:3101/mcp');
    expect(publicUrl(admin, { BULKHEAD_PUBLIC_URL: 'https://mcp.example.com/admin/', PORT: 1 })).toBe(
      'https://mcp.example.com/admin/mcp',
    );
    expect(
      publicUrl(admin, { url: 'https://x.example/mcp', BULKHEAD_PUBLIC_URL: 'https://mcp.example.com' }),
    ).toBe('https://x.example/mcp');
    expect(publicUrl(console_, { portOffset: 1000 })).toBe('http://127.0.0.1:4100');
  });

  it('defaultUrl: the manifest port plus the offset, /mcp for an MCP server', () => {
    expect(defaultUrl(admin)).toBe('http://127.0.0.1:3101/mcp');
    expect(defaultUrl(admin, 1000)).toBe('http://127.0.0.1:4101/mcp');
    expect(defaultUrl(console_, 1000)).toBe('http://127.0.0.1:4100');
    expect(defaultUrl({ kind: 'mcp', port: 3105 }, 7)).toBe('http://127.0.0.1:3112/mcp');
  });

  it('checks --port-offset, and falls back to BULKHEAD_PORT_OFFSET', () => {
    expect(portOffsetOption(undefined, 7)).toBe(7);
    expect(portOffsetOption('1000', 7)).toBe(1000);
    for (const bad of ['-1', '1.5', 'x', '60001', ''])
      expect(() => portOffsetOption(bad, 0)).toThrow('--port-offset: a whole number from 0 to 60000');
  });
});
