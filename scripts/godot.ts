// Finds the headless Godot 3 that test/godot.test.ts runs examples/godot with, and, run as a script before
// `npm test`, installs Debian's `godot3-server` when none is found on a machine that can.
//
//   node scripts/godot.ts   # silent when Godot is found; installs with apt-get as root; else says why the Godot test will skip
//
// Order: SOULS_GODOT (naming a missing file, or a Godot that is not 3.x, is an error, never a fall-through); then
// godot3-server, godot-server on PATH; then the usual install locations. Only a headless (server) build runs without
// a display, and the example uses the Godot 3 API: Godot 4 cannot open the project.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { aptInstall, findOnPath, systemProbe, type ToolProbe } from './tools.ts';

export const GODOT_VARIABLE = 'SOULS_GODOT';
export const GODOT_COMMANDS = ['godot3-server', 'godot-server'] as const;
export const GODOT_PACKAGE = 'godot3-server';
const FIXED_LOCATIONS = ['/usr/bin/godot3-server', '/usr/games/godot3-server', '/usr/local/bin/godot3-server', '/usr/bin/godot-server', '/usr/games/godot-server'];

export type GodotLocation = { path: string; from: string };

export class GodotVariableError extends Error {
  constructor(path: string, why: string) {
    super(`${GODOT_VARIABLE} names ${JSON.stringify(path)}, ${why}: point it at a headless Godot 3 (godot3-server), or unset it`);
    this.name = 'GodotVariableError';
  }
}

/** The Godot to run, or null when the machine has none; throws GodotVariableError for a variable naming no file. */
export function locateGodot(probe: ToolProbe): GodotLocation | null {
  const named = probe.env[GODOT_VARIABLE]?.trim();
  if (named) {
    if (!probe.isExecutable(named)) throw new GodotVariableError(named, 'which is not an executable file');
    return { path: named, from: GODOT_VARIABLE };
  }
  for (const command of GODOT_COMMANDS) {
    const found = findOnPath(command, probe);
    if (found) return { path: found, from: 'PATH' };
  }
  if (probe.platform !== 'linux') return null;
  for (const path of FIXED_LOCATIONS) if (probe.isExecutable(path)) return { path, from: 'usual location' };
  return null;
}

export type GodotInstallDecision = { install: true; aptGet: string; package: string } | { install: false; message: string };

/** With no Godot found: install Debian's godot3-server where apt-get can run as root, else explain the ways. */
export function decideGodotInstall(machine: { isRoot: boolean; aptGet: string | null }): GodotInstallDecision {
  if (machine.isRoot && machine.aptGet) return { install: true, aptGet: machine.aptGet, package: GODOT_PACKAGE };
  return { install: false, message: NO_GODOT_MESSAGE };
}

export const NO_GODOT_MESSAGE = [
  'No headless Godot 3 was found, so test/godot.test.ts (examples/godot against a live server) is skipped. To run it:',
  `  1. install it: \`sudo apt-get install ${GODOT_PACKAGE}\` (Debian, Ubuntu);`,
  `  2. or point ${GODOT_VARIABLE} at a Godot 3 server build (Godot_v3.x-stable_linux_server.64 from godotengine.org).`,
  `As root with apt-get (containers, CI), \`npm test\` installs Debian's ${GODOT_PACKAGE} by itself.`,
].join('\n');

/** The version a Godot binary prints ("3.2.3.stable.custom_build"), or null when it prints none. */
export function godotVersion(path: string): string | null {
  // Godot 3 exits 255 after printing its version: the output is the answer, not the status.
  const result = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return /^\d+\.\d+\S*/m.exec(result.stdout ?? '')?.[0] ?? null;
}

/** A Godot that runs the example, or why there is none. */
export type GodotAvailability = { path: string; version: string } | { missing: string };

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const APT_LOG = join(ROOT, 'test-results', 'apt-godot.log');

function checked(location: GodotLocation): GodotAvailability {
  const version = godotVersion(location.path);
  if (version?.startsWith('3.')) return { path: location.path, version };
  const why = version ? `which is Godot ${version}, not 3.x` : 'which did not answer --version';
  if (location.from === GODOT_VARIABLE) throw new GodotVariableError(location.path, why);
  return { missing: `${location.path} (found on ${location.from}) ${why}.\n${NO_GODOT_MESSAGE}` };
}

/**
 * Godot found, or installed (as root, with apt-get, telling `say`), or the reason there is none. Throws
 * GodotVariableError when SOULS_GODOT names something that is not a Godot 3.
 */
export async function ensureGodot(say: (line: string) => void, env: Record<string, string | undefined> = process.env): Promise<GodotAvailability> {
  const probe = systemProbe(env);
  const found = locateGodot(probe);
  if (found) return checked(found);
  const decision = decideGodotInstall({ isRoot: process.getuid?.() === 0, aptGet: findOnPath('apt-get', probe) });
  if (!decision.install) return { missing: decision.message };
  say(`No Godot 3 found: installing Debian's ${decision.package} with apt-get (output in ${APT_LOG})`);
  const installed = await aptInstall(decision.aptGet, decision.package, APT_LOG, say);
  if (!installed.ok) return { missing: `${installed.message}.\n${NO_GODOT_MESSAGE}` };
  const afterwards = locateGodot(probe);
  if (afterwards) return checked(afterwards);
  return { missing: `apt-get installed ${decision.package} but no Godot was found afterwards (see ${APT_LOG}).\n${NO_GODOT_MESSAGE}` };
}

/** `npm test`'s step: Godot found or installed; when neither, a note (the Godot test skips), never a stop. */
async function main(): Promise<number> {
  try {
    const godot = await ensureGodot((line) => console.log(line));
    if ('missing' in godot) console.log(godot.missing);
    return 0;
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = await main();
