// How `npm test` finds the headless Godot 3 that test/godot.test.ts runs: the locator through an injected environment
// and file check, and ensureGodot against real executables that are not a Godot 3.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decideGodotInstall, ensureGodot, GodotVariableError, locateGodot, NO_GODOT_MESSAGE } from '../scripts/godot.ts';
import type { ToolProbe } from '../scripts/tools.ts';

function probe(files: string[], env: Record<string, string> = {}, platform: NodeJS.Platform = 'linux'): ToolProbe & { asked: string[] } {
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

describe('locateGodot', () => {
  it('takes SOULS_GODOT before PATH and the usual places', () => {
    const files = ['/opt/godot/Godot_v3.5.3-stable_linux_server.64', '/usr/bin/godot3-server'];
    const env = { SOULS_GODOT: '/opt/godot/Godot_v3.5.3-stable_linux_server.64', PATH: '/usr/bin' };
    expect(locateGodot(probe(files, env))).toEqual({ path: files[0], from: 'SOULS_GODOT' });
  });

  it('fails naming SOULS_GODOT when it names a missing file, instead of falling through', () => {
    const attempt = () => locateGodot(probe(['/usr/bin/godot3-server'], { SOULS_GODOT: '/nowhere/godot', PATH: '/usr/bin' }));
    expect(attempt).toThrow(GodotVariableError);
    expect(attempt).toThrow(/^SOULS_GODOT names "\/nowhere\/godot", which is not an executable file/);
  });

  it('searches PATH for godot3-server, then godot-server, before any fixed location', () => {
    const found = probe(['/home/u/bin/godot-server', '/usr/bin/godot3-server'], { PATH: '/home/u/bin:/usr/local/bin' });
    expect(locateGodot(found)).toEqual({ path: '/home/u/bin/godot-server', from: 'PATH' });
    expect(found.asked.slice(0, 3)).toEqual(['/home/u/bin/godot3-server', '/usr/local/bin/godot3-server', '/home/u/bin/godot-server']);
  });

  it('falls back to where Debian installs it when PATH lacks it (a PATH without /usr/games, say)', () => {
    expect(locateGodot(probe(['/usr/games/godot3-server'], { PATH: '/bin' }))).toEqual({ path: '/usr/games/godot3-server', from: 'usual location' });
    expect(locateGodot(probe(['/usr/bin/godot3-server'], {}, 'darwin'))).toBeNull();
  });

  it('answers null when the machine has none', () => {
    expect(locateGodot(probe([], { PATH: '/usr/bin:/bin' }))).toBeNull();
  });
});

describe('decideGodotInstall', () => {
  it('installs Debian\'s godot3-server with apt-get when running as root, else explains the ways', () => {
    expect(decideGodotInstall({ isRoot: true, aptGet: '/usr/bin/apt-get' })).toEqual({ install: true, aptGet: '/usr/bin/apt-get', package: 'godot3-server' });
    for (const machine of [{ isRoot: false, aptGet: '/usr/bin/apt-get' }, { isRoot: true, aptGet: null }]) {
      expect(decideGodotInstall(machine)).toEqual({ install: false, message: NO_GODOT_MESSAGE });
    }
    expect(NO_GODOT_MESSAGE).toContain('test/godot.test.ts');
    expect(NO_GODOT_MESSAGE).toContain('apt-get install godot3-server');
    expect(NO_GODOT_MESSAGE).toContain('SOULS_GODOT');
  });
});

describe('ensureGodot', () => {
  let folder = '';
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  /** An executable shell script named `name` (in a folder of its own) that prints `output` and exits `status`, as Godot's --version does. */
  function fakeGodot(output: string, status: number, name = 'godot'): string {
    folder = mkdtempSync(join(tmpdir(), 'souls-fake-godot-'));
    const path = join(folder, name);
    writeFileSync(path, `#!/bin/sh\nprintf '%s\\n' '${output}'\nexit ${status}\n`);
    chmodSync(path, 0o755);
    return path;
  }

  it('takes a Godot 3 even though --version exits 255, as Godot 3 does', async () => {
    const path = fakeGodot('3.5.3.stable.official.6c814135b', 255);
    expect(await ensureGodot(() => {}, { SOULS_GODOT: path })).toEqual({ path, version: '3.5.3.stable.official.6c814135b' });
  });

  it('refuses a SOULS_GODOT that is Godot 4 or no Godot at all, naming the variable', async () => {
    const four = fakeGodot('4.2.1.stable.official.b09f793f5', 0);
    await expect(ensureGodot(() => {}, { SOULS_GODOT: four })).rejects.toThrow(`SOULS_GODOT names "${four}", which is Godot 4.2.1.stable.official.b09f793f5, not 3.x`);
    rmSync(folder, { recursive: true, force: true });
    const silent = fakeGodot('', 0);
    await expect(ensureGodot(() => {}, { SOULS_GODOT: silent })).rejects.toThrow(`SOULS_GODOT names "${silent}", which did not answer --version`);
  });

  it('says why the Godot test will skip when the Godot on PATH is not a 3.x', async () => {
    const four = fakeGodot('4.2.1.stable', 0, 'godot3-server');
    expect(await ensureGodot(() => {}, { PATH: folder })).toEqual({ missing: `${four} (found on PATH) which is Godot 4.2.1.stable, not 3.x.\n${NO_GODOT_MESSAGE}` });
  });
});
