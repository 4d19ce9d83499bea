import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';

/** Where a system Chromium is usually installed (Debian's `chromium` package first). */
export const SYSTEM_CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** What `chromium.launch()` of playwright-core needs to start the browser the tests found. */
export interface ChromiumLaunch {
  executablePath: string;
  args: string[];
  env?: Record<string, string>;
}

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The entries of a ustar archive (regular files and folders are all the packaged archives hold). */
function* untar(
  archive: Buffer,
): Generator<{ name: string; type: 'file' | 'dir'; mode: number; data: Buffer }> {
  for (let at = 0; at + 512 <= archive.length;) {
    const header = archive.subarray(at, at + 512);
    if (header.every((b) => b === 0)) return;
    const text = (from: number, length: number) =>
      header
        .subarray(from, from + length)
        .toString('utf8')
        .replace(/\0.*$/s, '');
    const size = parseInt(text(124, 12).trim() || '0', 8);
    const prefix = text(345, 155);
    const name = (prefix ? `${prefix}/` : '') + text(0, 100);
    const flag = String.fromCharCode(header[156]!);
    const data = archive.subarray(at + 512, at + 512 + size);
    if (flag === '5') yield { name, type: 'dir', mode: 0o755, data };
    else if (flag === '0' || flag === '\0')
      yield { name, type: 'file', mode: parseInt(text(100, 8), 8), data };
    at += 512 + Math.ceil(size / 512) * 512;
  }
}

/**
 * Unpacks the headless Chromium that the npm package `@sparticuz/chromium` ships
 * (brotli files: the browser, the NSS libraries it links, fonts) into a folder of
 * its own under the temp dir, once per version. The folder appears whole or not
 * at all (unpacked beside it, then renamed), so test files starting in parallel,
 * or a run killed half-way, never see half a browser.
 */
function registryChromium(): ChromiumLaunch {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(
      `no Chromium for the browser tests: none at ${SYSTEM_CHROMIUM.join(', ')}, and @sparticuz/chromium ships one for Linux x64 only — install Chromium or set BULKHEAD_TEST_CHROMIUM to its path`,
    );
  const require = createRequire(import.meta.url);
  // The package exports no package.json; its folder is the one above build/ of its entry.
  const pkg = require.resolve('@sparticuz/chromium').replace(/[\\/]build[\\/].*$/, '');
  const { version } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version: string };
  const dir = join(tmpdir(), `bulkhead-chromium-${version}`);
  if (!existsSync(join(dir, 'chromium'))) {
    const partial = `${dir}.${process.pid}-${Date.now()}`;
    mkdirSync(partial, { recursive: true });
    const bin = (file: string) => brotliDecompressSync(readFileSync(join(pkg, 'bin', file)));
    writeFileSync(join(partial, 'chromium'), bin('chromium.br'), { mode: 0o755 });
    for (const archive of ['al2023.tar.br', 'fonts.tar.br'])
      for (const entry of untar(bin(archive))) {
        const target = join(partial, entry.name);
        if (entry.type === 'dir') mkdirSync(target, { recursive: true });
        else {
          mkdirSync(dirname(target), { recursive: true });
          writeFileSync(target, entry.data, { mode: entry.mode });
        }
      }
    // The package's fonts.conf names Lambda's folders; this one names the fonts unpacked here.
    writeFileSync(
      join(partial, 'fonts.conf'),
      `<?xml version="1.0"?>\n<fontconfig><dir>${join(dir, 'fonts')}</dir></fontconfig>\n`,
    );
    try {
      renameSync(partial, dir);
    } catch {
      rmSync(partial, { recursive: true, force: true }); // another process unpacked it first
    }
  }
  return {
    executablePath: join(dir, 'chromium'),
    args: ARGS,
    env: {
      ...(process.env as Record<string, string>),
      LD_LIBRARY_PATH: join(dir, 'lib'),
      FONTCONFIG_PATH: dir,
    },
  };
}

/**
 * How browser tests start Chromium with playwright-core: the system's Chromium
 * where there is one, else the one in the npm package `@sparticuz/chromium`, so
 * `pnpm test` needs nothing but the registry. Headless, and quiet on a machine
 * without outside network (no background or update traffic).
 * `BULKHEAD_TEST_CHROMIUM` overrides the choice for a check: a path, or
 * `registry` to take the packaged one even where a system Chromium exists.
 */
export function chromiumLaunchOptions(choice = process.env.BULKHEAD_TEST_CHROMIUM): ChromiumLaunch {
  if (choice && choice !== 'registry') return { executablePath: choice, args: ARGS };
  const system = choice === 'registry' ? undefined : SYSTEM_CHROMIUM.find(executable);
  return system ? { executablePath: system, args: ARGS } : registryChromium();
}
