// The browser lookup of the test setup, without touching the machine: found, installed as root
// with apt, or one line saying what to install.
import { describe, expect, it } from 'vitest';
import { BrowserNotFound, resolveChromium } from '../../helpers/browser.js';

describe('resolveChromium', () => {
  const none = () => false;
  it('takes the first usual path that is executable', () => {
    expect(resolveChromium({ configured: '', candidates: ['/a', '/b'], executable: (p) => p === '/b' })).toBe('/b');
  });
  it('CHROMIUM_PATH wins, and must be executable', () => {
    expect(resolveChromium({ configured: '/opt/chrome', executable: (p) => p === '/opt/chrome' })).toBe('/opt/chrome');
    expect(() => resolveChromium({ configured: '/nope', executable: none })).toThrow(/CHROMIUM_PATH=\/nope is not an executable file/);
  });
  it('as root with apt: installs it, then finds it', () => {
    let installed = false;
    const lines: string[] = [];
    const path = resolveChromium({ configured: '', candidates: ['/usr/bin/chromium'], executable: () => installed, isRoot: true, hasApt: true, install: () => void (installed = true), log: (l) => lines.push(l) });
    expect(path).toBe('/usr/bin/chromium');
    expect(lines).toEqual([expect.stringContaining('installing it with apt-get (chromium)')]);
  });
  it('otherwise: one line naming what to install', () => {
    let error: unknown;
    try {
      resolveChromium({ configured: '', candidates: ['/usr/bin/chromium'], executable: none, isRoot: false, hasApt: true, install: () => expect.fail('must not install') });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BrowserNotFound);
    expect((error as Error).message).toMatch(/^Chromium was not found \(looked at \/usr\/bin\/chromium\); .*apt-get install chromium.*CHROMIUM_PATH/);
    expect((error as Error).message).not.toContain('\n');
  });
});
