import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chromiumLaunchOptions, SYSTEM_CHROMIUM } from './browser.ts';

describe('chromiumLaunchOptions', () => {
  it('unpacks the Chromium of the npm package @sparticuz/chromium when asked for it, and it runs', () => {
    const launch = chromiumLaunchOptions('registry');
    expect(launch.executablePath).toBe(join(tmpdir(), 'bulkhead-chromium-147.0.0', 'chromium'));
    expect(() => accessSync(launch.executablePath, constants.X_OK)).not.toThrow();
    expect(launch.env).toMatchObject({
      LD_LIBRARY_PATH: join(tmpdir(), 'bulkhead-chromium-147.0.0', 'lib'),
      FONTCONFIG_PATH: join(tmpdir(), 'bulkhead-chromium-147.0.0'),
    });
    // A second call finds the unpacked folder and does not unpack again.
    expect(chromiumLaunchOptions('registry')).toEqual(launch);
    const version = spawnSync(launch.executablePath, ['--version'], { env: launch.env, encoding: 'utf8' });
    expect(version.stdout).toMatch(/^Chromium 147\./);
  });

  it('prefers a system Chromium where there is one, and takes a path as given', () => {
    const system = SYSTEM_CHROMIUM.find((p) => {
      try {
        accessSync(p, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
    expect(chromiumLaunchOptions('').executablePath).toBe(
      system ?? join(tmpdir(), 'bulkhead-chromium-147.0.0', 'chromium'),
    );
    expect(chromiumLaunchOptions('/opt/chrome/chrome')).toEqual({
      executablePath: '/opt/chrome/chrome',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
      ],
    });
  });
});
