// What the test tools' locators share (scripts/browser.ts: Chromium; scripts/godot.ts: Godot 3 headless): how an
// executable is looked for, and how a Debian package is installed when `npm test` runs as root.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, mkdirSync, openSync, statSync, writeSync } from 'node:fs';
import { dirname, posix, win32 } from 'node:path';

/** What a locator may look at: the environment, the platform and one question about a path. */
export type ToolProbe = {
  env: Record<string, string | undefined>;
  platform: NodeJS.Platform;
  /** true when `path` is an existing file that can be run */
  isExecutable(path: string): boolean;
};

/** The full path of `command` in the first PATH directory that has it. */
export function findOnPath(command: string, probe: ToolProbe): string | null {
  const paths = probe.platform === 'win32' ? win32 : posix;
  const extensions = probe.platform === 'win32' ? (probe.env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';') : [''];
  for (const directory of (probe.env.PATH ?? '').split(paths.delimiter)) {
    if (!directory) continue;
    for (const extension of extensions) {
      const candidate = paths.join(directory, command + extension);
      if (probe.isExecutable(candidate)) return candidate;
    }
  }
  return null;
}

/** `~/…` and `%NAME%` expanded from the probe's environment; null when a variable it needs is unset. */
export function expandLocation(location: string, probe: ToolProbe): string | null {
  let unknown = false;
  const expanded = location
    .replace(/^~(?=\/)/, () => probe.env.HOME ?? ((unknown = true), ''))
    .replace(/%([^%]+)%/g, (_, name: string) => probe.env[name] ?? ((unknown = true), ''));
  return unknown ? null : expanded;
}

export function systemProbe(env: Record<string, string | undefined> = process.env): ToolProbe {
  return {
    env,
    platform: process.platform,
    isExecutable(path) {
      try {
        if (!statSync(path).isFile()) return false;
        accessSync(path, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    },
  };
}

/** How long apt-get waits for another apt or dpkg run to release its lock before giving up. */
export const APT_LOCK_TIMEOUT_S = 300;

export type AptResult = { ok: true } | { ok: false; message: string };

const LOCK_MESSAGE = /Could not get lock|Waiting for cache lock/;

/** One apt-get run, its output appended to `log`; tells `say` once when it waits for another run's lock. */
function runApt(args: string[], log: number, say: (line: string) => void): Promise<{ status: number | null; lockHeld: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(args[0], args.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    let lockHeld = false;
    const take = (chunk: Buffer) => {
      writeSync(log, chunk);
      if (!lockHeld && LOCK_MESSAGE.test(chunk.toString())) {
        lockHeld = true;
        say(`another apt-get or dpkg holds the package lock: waiting for it (at most ${APT_LOCK_TIMEOUT_S} s)`);
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.once('error', () => resolve({ status: null, lockHeld }));
    child.once('close', (status) => resolve({ status, lockHeld }));
  });
}

/** Whether apt already knows an installable version of `name` (then no `apt-get update` is needed). */
function aptKnows(name: string): boolean {
  const policy = spawnSync('apt-cache', ['policy', name], { encoding: 'utf8' });
  return policy.status === 0 && /Candidate: (?!\(none\))\S+/.test(policy.stdout);
}

/**
 * Installs Debian package `name` with apt-get (as root), its output in `logPath`. Package lists are refreshed only
 * when apt does not know the package. apt-get itself waits up to APT_LOCK_TIMEOUT_S for the dpkg lock; the lists
 * lock has no such wait, so a refresh that meets it is retried until that same deadline.
 */
export async function aptInstall(aptGet: string, name: string, logPath: string, say: (line: string) => void): Promise<AptResult> {
  mkdirSync(dirname(logPath), { recursive: true });
  const log = openSync(logPath, 'w');
  const lockWait = ['-o', `DPkg::Lock::Timeout=${APT_LOCK_TIMEOUT_S}`];
  const deadline = Date.now() + APT_LOCK_TIMEOUT_S * 1000;
  try {
    if (!aptKnows(name)) {
      for (;;) {
        const update = await runApt([aptGet, ...lockWait, 'update', '-q'], log, say);
        if (update.status === 0) break;
        if (!update.lockHeld || Date.now() > deadline) return { ok: false, message: `\`apt-get update\` failed (see ${logPath})` };
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
    const install = await runApt([aptGet, ...lockWait, 'install', '-y', '-q', name], log, say);
    if (install.status !== 0) return { ok: false, message: `\`apt-get install ${name}\` failed${install.lockHeld ? ' (the package lock stayed held)' : ''} (see ${logPath})` };
    return { ok: true };
  } finally {
    closeSync(log);
  }
}
