// What the command line says, as child processes: readiness of a never-attuned soul, ids in --json as the API has
// them, the progress bar only on a terminal, importing into a database that has the soul, and the demo beside a
// running server.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeSoulsDb, createSoul, openSoulsDb } from '../src/engine/index.ts';
import { cleanEnv, cliRunner, expectNoStack } from './support/cli.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FIXTURES = new URL('./fixtures/soulmd/', import.meta.url).pathname;
const { cli, exited, printed, killAll } = cliRunner();
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'souls-output-'));
});
afterEach(() => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});

const run = async (args: string[]) => exited(cli(args));

describe('readiness in words', { timeout: 30_000 }, () => {
  it('never tells a soul that was never attuned that nothing is new since attuned', async () => {
    const db = join(dir, 'souls.db');
    const handle = openSoulsDb({ path: db });
    await createSoul(handle, { name: 'Nova', essence: 'New here.' });
    closeSoulsDb(handle);
    const list = await run(['list', '--db', db]);
    expect(list.stdout).toMatch(/^\d+ +Nova +0 +0\/10 +0 +not ready: needs 3 more shards \(0 of the 3 needed\); shards from 2 more sources \(0 of the 2 needed\); shards observed more than a day apart \(one shard spans no time\)$/m);
    const show = await run(['show', 'Nova', '--db', db]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('Readiness: not ready: needs 3 more shards (0 of the 3 needed);');
    expect(`${list.stdout}${show.stdout}`).not.toContain('attune');
  });
});

describe('--json', { timeout: 30_000 }, () => {
  it('gives ids as the GraphQL API does, decimal strings, in import, list, show and history alike', async () => {
    const db = join(dir, 'souls.db');
    const imported = JSON.parse((await run(['import', `${FIXTURES}openclaw`, '--apply', '--json', '--db', db])).stdout);
    const id = imported.result.soul.id;
    expect(id).toBe('1');
    const [listed] = JSON.parse((await run(['list', '--json', '--db', db])).stdout);
    expect(listed.id).toBe(id);
    const shown = JSON.parse((await run(['show', 'Mira', '--json', '--db', db])).stdout);
    expect(shown.soul.id).toBe(id);
    expect(shown.traits.every((t: { id: unknown }) => typeof t.id === 'string')).toBe(true);
    const history = JSON.parse((await run(['history', 'Mira', '--json', '--db', db])).stdout);
    expect(history.soul.id).toBe(id);
    expect(history.events.find((e: { kind: string }) => e.kind === 'TRAIT_ADDED').trait.id).toBe(shown.traits[0].id);
    const again = JSON.parse((await run(['import', `${FIXTURES}openclaw`, '--json', '--db', db])).stdout);
    expect(again.plan.existingSoulId).toBe(id);
    expect(again.plan).not.toHaveProperty('document');
  });
});

describe('the progress bar', { timeout: 30_000 }, () => {
  async function bigWorkspace(): Promise<string> {
    const workspace = join(dir, 'big');
    cpSync(`${FIXTURES}openclaw`, workspace, { recursive: true });
    for (let d = 0; d < 4; d++) {
      const day = new Date(Date.UTC(2026, 7, 1) + d * 86_400_000).toISOString().slice(0, 10);
      writeFileSync(join(workspace, 'memory', `${day}.md`), Array.from({ length: 10 }, (_, i) => `- Counted crate ${i} of day ${day}.`).join('\n') + '\n');
    }
    return workspace;
  }

  it('is drawn on a terminal only', async () => {
    const workspace = await bigWorkspace();
    const piped = await run(['import', workspace, '--apply', '--db', join(dir, 'piped.db')]);
    expect(piped.code).toBe(0);
    expect(piped.stderr).toBe('');
    // `script` gives the command a pseudo-terminal, as a person's shell would.
    const onTty = await promisify(execFile)('script', ['-qec', `"${process.execPath}" src/cli/index.ts import "${workspace}" --apply --db "${join(dir, 'tty.db')}"`, '/dev/null'], { cwd: ROOT, env: cleanEnv() });
    expect(onTty.stdout).toContain('shards [########################] 45/45 (100%)');
  });
});

describe('importing into a database that has the soul', { timeout: 60_000 }, () => {
  it('says it merges by name, and with too many traits shows the plan and says how many the soul has', async () => {
    const db = join(dir, 'souls.db');
    expect((await run(['seed-demo', '--db', db])).code).toBe(0);
    const exit = await run(['import', `${FIXTURES}frontmatter/brannoc.md`, '--apply', '--db', db]);
    expect(exit.code).toBe(1);
    expect(exit.stdout).toMatch(/soul {5}merge: the import merges into the existing soul "Brannoc" \(id \d+\), found by name: it keeps its name, description and essence and its 10 active traits/);
    expect(exit.stdout).toContain('+ Judge a tool by how it fails, not by how it shines.');
    expect(exit.stdout).toContain('Nothing written.');
    expect(exit.stderr).toContain('"Brannoc" already has 10 active traits and brannoc.md adds 2 new ones: 12 in all, over the trait limit of 10');
    expect(exit.stderr).not.toContain('would give');
    expectNoStack(exit.stderr);

    const json = await run(['import', `${FIXTURES}frontmatter/brannoc.md`, '--json', '--db', db]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).plan.problems).toEqual([{ field: 'traits', message: expect.stringContaining('already has 10 active traits') }]);
  });

  it('lists a new principle that nearly repeats an existing one beside it', async () => {
    const db = join(dir, 'souls.db');
    expect((await run(['import', `${FIXTURES}openclaw`, '--apply', '--db', db])).code).toBe(0);
    const workspace = join(dir, 'mira');
    cpSync(`${FIXTURES}openclaw`, workspace, { recursive: true });
    const file = join(workspace, 'SOUL.md');
    writeFileSync(file, readFileSync(file, 'utf8').replace('**Count twice, hand out once.**', '**Count twice, hand out once.**\n\n**Count it twice, then hand it out once.**'));
    const plan = await run(['import', workspace, '--db', db]);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toMatch(/\+ Count it twice, then hand it out once\. .*\n +~ near trait 3 \(similarity 0\.\d\d\): Count twice, hand out once\.\n/);
    expect(plan.stdout).toContain('1 new principle(s) nearly repeat one the soul has (~)');
    const json = JSON.parse((await run(['import', workspace, '--json', '--db', db])).stdout);
    const added = json.plan.traits.find((t: { present: boolean }) => !t.present);
    expect(added.nearDuplicates).toEqual([{ traitId: '3', principle: 'Count twice, hand out once.', similarity: expect.any(Number) }]);
  });
});

describe('the demo beside a running server', { timeout: 60_000 }, () => {
  it('says to reload the page, not to start the server', async () => {
    const db = join(dir, 'souls.db');
    const server = cli(['serve', '--db', db, '--port', '0']);
    await printed(server, /Database: /);
    const demo = await promisify(execFile)(process.execPath, ['scripts/demo.ts', '--db', db], { cwd: ROOT, env: cleanEnv() });
    expect(demo.stdout).toContain('is open in another program, a running server most likely: it sees the souls at once, so reload the character sheet');
    expect(demo.stdout).not.toContain('Start the server');
    server.process.kill('SIGTERM');
    await exited(server);

    const alone = join(dir, 'alone.db');
    const seeded = await run(['seed-demo', '--db', alone]);
    expect(seeded.stdout).toContain(`Start the server on it (souls serve --db ${alone})`);
  });
});
