// The browser locator behind `npm test`'s first step and every browser test, through its public functions with an
// injected environment and file check: nothing here looks at the machine.
import { describe, expect, it } from 'vitest';
import {
  BrowserVariableError,
  decideBrowserInstall,
  locateBrowser,
  NO_BROWSER_MESSAGE,
  type BrowserProbe,
} from '../scripts/browser.ts';

function probe(files: string[], env: Record<string, string> = {}, platform: NodeJS.Platform = 'linux'): BrowserProbe & { asked: string[] } {
  const asked: string[] = [];
  return {
    env,
    platform,
    asked,
    isExecutable(path) {
      asked.push(path);
      return files.includes(path);
    },
  };
}

describe('locateBrowser', () => {
  it('takes SOULS_CHROMIUM before CHROME_PATH, PATH and the usual places', () => {
    const files = ['/opt/mine/chrome', '/opt/other/chrome', '/usr/local/bin/chromium', '/usr/bin/chromium'];
    const env = { SOULS_CHROMIUM: '/opt/mine/chrome', CHROME_PATH: '/opt/other/chrome', PATH: '/usr/local/bin:/usr/bin' };
    expect(locateBrowser(probe(files, env))).toEqual({ path: '/opt/mine/chrome', from: 'SOULS_CHROMIUM' });
  });

  it('takes CHROME_PATH when SOULS_CHROMIUM is unset or empty', () => {
    const files = ['/opt/other/chrome', '/usr/bin/chromium'];
    expect(locateBrowser(probe(files, { CHROME_PATH: '/opt/other/chrome', PATH: '/usr/bin' }))).toEqual({ path: '/opt/other/chrome', from: 'CHROME_PATH' });
    expect(locateBrowser(probe(files, { SOULS_CHROMIUM: '  ', CHROME_PATH: '/opt/other/chrome' }))?.from).toBe('CHROME_PATH');
  });

  it('fails with the variable\'s name when it names a missing file, instead of falling through', () => {
    const files = ['/usr/bin/chromium'];
    for (const variable of ['SOULS_CHROMIUM', 'CHROME_PATH']) {
      const attempt = () => locateBrowser(probe(files, { [variable]: '/nowhere/chrome', PATH: '/usr/bin' }));
      expect(attempt).toThrow(BrowserVariableError);
      expect(attempt).toThrow(new RegExp(`^${variable} names "/nowhere/chrome"`));
    }
  });

  it('searches PATH in order, for each command name in turn, before any fixed location', () => {
    const files = ['/usr/bin/chromium', '/home/u/bin/google-chrome', '/snap/bin/chromium'];
    const found = probe(files, { PATH: '/home/u/bin:/usr/local/bin' });
    // chromium is not on this PATH (only at the fixed /usr/bin/chromium), google-chrome is: PATH wins.
    expect(locateBrowser(found)).toEqual({ path: '/home/u/bin/google-chrome', from: 'PATH' });
    expect(found.asked.slice(0, 4)).toEqual(['/home/u/bin/chromium', '/usr/local/bin/chromium', '/home/u/bin/chromium-browser', '/usr/local/bin/chromium-browser']);
    expect(locateBrowser(probe(['/home/u/bin/chromium-browser', '/usr/local/bin/chromium'], { PATH: '/home/u/bin:/usr/local/bin' }))?.path).toBe('/usr/local/bin/chromium');
  });

  it('falls back to the usual places when PATH has none', () => {
    expect(locateBrowser(probe(['/usr/bin/chromium'], { PATH: '/bin' }))).toEqual({ path: '/usr/bin/chromium', from: 'usual location' });
    expect(locateBrowser(probe(['/opt/google/chrome/chrome'], {}))).toEqual({ path: '/opt/google/chrome/chrome', from: 'usual location' });
  });

  it('finds the macOS application bundles, the user\'s own Applications folder included', () => {
    const chrome = '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome';
    expect(locateBrowser(probe([chrome], { PATH: '/usr/bin' }, 'darwin'))?.path).toBe(chrome);
    const chromium = '/Users/ana/Applications/Chromium.app/Contents/MacOS/Chromium';
    expect(locateBrowser(probe([chromium], { HOME: '/Users/ana' }, 'darwin'))?.path).toBe(chromium);
    expect(locateBrowser(probe(['/usr/bin/chromium'], {}, 'darwin'))).toBeNull();
  });

  it('finds chrome.exe on Windows through PATHEXT and Program Files', () => {
    expect(locateBrowser(probe(['C:\\Tools\\chromium.EXE'], { PATH: 'C:\\Windows;C:\\Tools' }, 'win32'))?.path).toBe('C:\\Tools\\chromium.EXE');
    const programFiles = 'C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe';
    expect(locateBrowser(probe([programFiles], { PROGRAMFILES: 'C:\\Program Files' }, 'win32'))?.path).toBe(programFiles);
  });

  it('answers null when the machine has no browser', () => {
    expect(locateBrowser(probe([], { PATH: '/usr/bin:/bin', HOME: '/root' }))).toBeNull();
  });
});

describe('decideBrowserInstall', () => {
  it('installs Debian\'s chromium with apt-get when running as root', () => {
    expect(decideBrowserInstall({ isRoot: true, aptGet: '/usr/bin/apt-get' })).toEqual({ install: true, aptGet: '/usr/bin/apt-get', package: 'chromium' });
  });

  it('explains the three ways to get a browser otherwise', () => {
    for (const machine of [{ isRoot: false, aptGet: '/usr/bin/apt-get' }, { isRoot: true, aptGet: null }, { isRoot: false, aptGet: null }]) {
      expect(decideBrowserInstall(machine)).toEqual({ install: false, message: NO_BROWSER_MESSAGE });
    }
    expect(NO_BROWSER_MESSAGE).toContain('SOULS_CHROMIUM');
    expect(NO_BROWSER_MESSAGE).toContain('apt-get install chromium');
    expect(NO_BROWSER_MESSAGE).toContain('Google Chrome');
  });
});
