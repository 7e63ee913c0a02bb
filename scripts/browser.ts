// Finds the Chromium or Chrome that the browser tests drive (through playwright-core, which never downloads one),
// and, run as a script before `npm test`, installs Debian's `chromium` when none is found on a machine that can.
//
//   node scripts/browser.ts   # silent when a browser is found; installs with apt-get as root; else explains and exits 1
//
// Order: SOULS_CHROMIUM, then CHROME_PATH (a variable naming a missing file is an error, never a fall-through);
// then chromium, chromium-browser, google-chrome, google-chrome-stable on PATH; then the usual install locations.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { aptInstall, expandLocation, findOnPath, systemProbe, type ToolProbe } from './tools.ts';

export const BROWSER_VARIABLES = ['SOULS_CHROMIUM', 'CHROME_PATH'] as const;
export const BROWSER_COMMANDS = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'] as const;

const FIXED_LOCATIONS: Record<string, string[]> = {
  linux: ['/usr/bin/chromium', '/usr/lib/chromium/chromium', '/snap/bin/chromium', '/opt/google/chrome/chrome', '/usr/bin/google-chrome'],
  darwin: [
    '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
    '/Applications/Chromium.app/Contents/MacOS/Chromium',
    '~/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
    '~/Applications/Chromium.app/Contents/MacOS/Chromium',
  ],
  win32: [
    '%PROGRAMFILES%\\Google\\Chrome\\Application\\chrome.exe',
    '%PROGRAMFILES(X86)%\\Google\\Chrome\\Application\\chrome.exe',
    '%LOCALAPPDATA%\\Google\\Chrome\\Application\\chrome.exe',
    '%LOCALAPPDATA%\\Chromium\\Application\\chrome.exe',
  ],
};

export type BrowserProbe = ToolProbe;

export type BrowserLocation = { path: string; from: string };

export class BrowserVariableError extends Error {
  readonly variable: string;
  constructor(variable: string, path: string) {
    super(`${variable} names ${JSON.stringify(path)}, which is not an executable file: point it at Chromium or Chrome, or unset it`);
    this.name = 'BrowserVariableError';
    this.variable = variable;
  }
}

/** The browser to drive, or null when the machine has none; throws BrowserVariableError for a variable naming no file. */
export function locateBrowser(probe: BrowserProbe): BrowserLocation | null {
  for (const variable of BROWSER_VARIABLES) {
    const value = probe.env[variable]?.trim();
    if (!value) continue;
    if (!probe.isExecutable(value)) throw new BrowserVariableError(variable, value);
    return { path: value, from: variable };
  }
  for (const command of BROWSER_COMMANDS) {
    const found = findOnPath(command, probe);
    if (found) return { path: found, from: 'PATH' };
  }
  for (const location of FIXED_LOCATIONS[probe.platform] ?? []) {
    const path = expandLocation(location, probe);
    if (path && probe.isExecutable(path)) return { path, from: 'usual location' };
  }
  return null;
}

export type InstallDecision = { install: true; aptGet: string; package: string } | { install: false; message: string };

/** With no browser found: install Debian's chromium where apt-get can run as root, else explain the three ways. */
export function decideBrowserInstall(machine: { isRoot: boolean; aptGet: string | null }): InstallDecision {
  if (machine.isRoot && machine.aptGet) return { install: true, aptGet: machine.aptGet, package: 'chromium' };
  return { install: false, message: NO_BROWSER_MESSAGE };
}

export const NO_BROWSER_MESSAGE = [
  'The browser tests need Chromium or Chrome, and none was found. Any one of these will do:',
  '  1. point SOULS_CHROMIUM (or CHROME_PATH) at a Chromium or Chrome executable;',
  '  2. install it with your package manager: `sudo apt-get install chromium` (Debian, Ubuntu), `sudo dnf install chromium`, `brew install --cask chromium`;',
  '  3. install Google Chrome (found in its usual place, or as google-chrome on PATH).',
  'As root with apt-get (containers, CI), `npm test` installs Debian\'s chromium by itself.',
].join('\n');

/** The browser for this machine; throws with the ways to get one when there is none. Used by test/web. */
export function requireBrowser(env: Record<string, string | undefined> = process.env): string {
  const found = locateBrowser(systemProbe(env));
  if (!found) throw new Error(NO_BROWSER_MESSAGE);
  return found.path;
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const APT_LOG = join(ROOT, 'test-results', 'apt-chromium.log');

/** `npm test`'s first step: a browser found, or installed, or a clear stop before anything runs. */
async function ensureBrowser(): Promise<number> {
  const probe = systemProbe();
  let found: BrowserLocation | null;
  try {
    found = locateBrowser(probe);
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  }
  if (found) return 0;
  const decision = decideBrowserInstall({ isRoot: process.getuid?.() === 0, aptGet: findOnPath('apt-get', probe) });
  if (!decision.install) {
    console.error(decision.message);
    return 1;
  }
  console.log(`No Chromium found: installing Debian's chromium with apt-get (output in ${APT_LOG})`);
  const installed = await aptInstall(decision.aptGet, decision.package, APT_LOG, (line) => console.log(line));
  if (!installed.ok) {
    console.error(`${installed.message}.\n\n${NO_BROWSER_MESSAGE}`);
    return 1;
  }
  if (locateBrowser(probe)) return 0;
  console.error(`apt-get installed chromium but no browser was found afterwards (see ${APT_LOG}).\n\n${NO_BROWSER_MESSAGE}`);
  return 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = await ensureBrowser();
