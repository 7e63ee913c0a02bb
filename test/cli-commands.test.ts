// The `souls` program as a person or a script meets it: help, exit codes, --json, read-only. What a command prints is
// checked in this process (runInProcess, the dispatcher the program runs); what the process does (its exit code, the
// files it leaves, the terminal it writes to, the installed program) through real child processes.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { commands } from '../src/cli/index.ts';
import {
  addTrait,
  closeSoulsDb,
  createSoul,
  DAY_MS,
  dropShard,
  getCrystallization,
  getLevelHistory,
  levelUp,
  listDormantSouls,
  listSouls,
  listTraits,
  manualClock,
  openSoulsDb,
  retireSoul,
  revertLevelUp,
  reviseTrait,
  revertTrait,
  stampAttuned,
  type Soul,
} from '../src/engine/index.ts';
import { cleanEnv, cliRunner, expectNoStack, runInProcess } from './support/cli.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// Bounds for a hang only: the machine may be busy, and a child that is merely slow must not fail a test.
const { cli, exited, killAll } = cliRunner({ exitMs: 45_000 });
const run = async (args: string[], env: Record<string, string> = {}) => exited(cli(args, env));

/** Runs each command line in this process, one after another, results in the order given. */
async function runAll(lines: readonly string[][]): Promise<Awaited<ReturnType<typeof run>>[]> {
  const results: Awaited<ReturnType<typeof run>>[] = [];
  for (const args of lines) results.push(await runInProcess(args));
  return results;
}

let dir: string;
let db: string;
/** Every write's time, so history's timeline can be checked to the millisecond. */
const at: Record<string, number> = {};

/**
 * A small world written through the engine on a hand-moved clock that ends a day ago: Ada levels up, reverts,
 * loses and revises traits and is attuned; Bram is ready for refinement; Cyra is dormant.
 */
async function seedWorld(path: string): Promise<void> {
  const start = Math.floor((Date.now() - 20 * DAY_MS) / 60_000) * 60_000;
  const clock = manualClock(start);
  const engine = openSoulsDb({ path, clock });
  const step = (name: string, days: number) => {
    clock.advance(days * DAY_MS);
    at[name] = clock.now();
  };
  try {
    at.adaCreated = clock.now();
    const ada = await createSoul(engine, { name: 'Ada', essence: 'Calm under pressure.', description: 'Careful engineer' });
    step('bramCreated', 0.5);
    const bram = await createSoul(engine, { name: 'Bram', essence: 'Curious about everything.' });
    step('cyraCreated', 0.5);
    const cyra = await createSoul(engine, { name: 'Cyra', essence: 'Keeps the old maps.' });
    step('traitsAdded', 1);
    const tests = await addTrait(engine, ada.id, { principle: 'Runs the tests before pushing', provenance: 'Seen in three reviews' });
    const review = await addTrait(engine, ada.id, { principle: 'Runs the whole test suite before a review', provenance: 'Pairing notes, week two' });
    const notes = await addTrait(engine, ada.id, { principle: 'Writes down why, not what', provenance: 'Commit messages' });
    await addTrait(engine, bram.id, { principle: 'Asks one more question', provenance: 'Standups' });
    step('levelUp', 2);
    await levelUp(engine, ada.id, {
      newEssence: 'Calm under pressure; proves a change before sharing it.',
      consolidations: [{ sourceTraitIds: [tests.id, review.id], mergedPrinciple: 'Proves a change with the tests before sharing it', mergedProvenance: 'Two testing habits' }],
      promotedTraitIds: [],
      carriedTraitIds: [notes.id],
    });
    step('levelUpReverted', 1);
    await revertLevelUp(engine, ada.id);
    step('traitReverted', 1);
    await revertTrait(engine, review.id);
    step('traitRevised', 1);
    await reviseTrait(engine, notes.id, { principle: 'Writes down why, not only what' });
    step('attuned', 1);
    await stampAttuned(engine, ada.id);
    // Bram: three shards from two sources over four days, in two clusters: ready, and never attuned.
    step('bramShards', 1);
    await dropShard(engine, 'Asked the vendor three follow-up questions about licensing', 'standup', [bram.id]);
    clock.advance(2 * DAY_MS);
    await dropShard(engine, 'Opened a ticket to understand the flaky deploy', 'tracker', [bram.id]);
    clock.advance(2 * DAY_MS);
    await dropShard(engine, 'Read the whole RFC before the meeting and brought notes', 'standup', [bram.id]);
    step('cyraRetired', 1);
    await retireSoul(engine, cyra.id);
  } finally {
    closeSoulsDb(engine);
  }
}

/** The database read back in this process through the engine, as the commands must read it. */
async function engineView<T>(body: (engine: ReturnType<typeof openSoulsDb>) => Promise<T>): Promise<T> {
  const engine = openSoulsDb({ path: db, mode: 'read-only' });
  try {
    return await body(engine);
  } finally {
    closeSoulsDb(engine);
  }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const fingerprint = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const entries = (folder: string) => readdirSync(folder, { recursive: true }).map(String).sort();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'souls-commands-'));
  db = join(dir, 'world.db');
  await seedWorld(db);
});
afterEach(() => killAll());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('help', { timeout: 240_000 }, () => {
  it('`souls --help` lists every command with its summary, and the exit codes', async () => {
    for (const flag of ['--help', '-h', 'help']) {
      const result = await run([flag]);
      expect(result, flag).toMatchObject({ code: 0, stderr: '' });
      for (const command of commands) expect(result.stdout).toMatch(new RegExp(`^  ${command.name} +${command.summary.replace(/[()]/g, '\\$&')}$`, 'm'));
      expect(result.stdout).toContain('Exit codes: 0 success');
      expect(result.stdout).toContain('souls --version');
    }
  });

  it('every command prints its own help with usage, options and examples, exits 0 and touches nothing', async () => {
    const names = commands.map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(['serve', 'list', 'show', 'history', 'render', 'backup', 'seed-demo']));
    const before = entries(dir);
    for (const command of commands) {
      const lines = [[command.name, '--help'], [command.name, '-h'], ['help', command.name], [command.name, 'whatever', '--no-such-option', '--help']];
      const results = await runAll(lines.map((args) => [...args, '--db', join(dir, 'not-there', 'x.db')]));
      results.forEach((result, i) => {
        expect(result.code, lines[i].join(' ')).toBe(0);
        expect(result.stderr, lines[i].join(' ')).toBe('');
        expect(result.stdout, lines[i].join(' ')).toBe(command.help);
      });
      expect(command.help).toMatch(new RegExp(`^Usage: souls ${command.name}\\b`));
      expect(command.help).toMatch(/\nExamples:\n {2}souls /);
      expect(command.help).toContain('Exit codes: 0 success');
    }
    // The program prints the same help, and exits 0, as a process.
    const child = await run(['show', '--help', '--db', join(dir, 'not-there', 'x.db')]);
    expect(child).toMatchObject({ code: 0, stderr: '', stdout: commands.find((c) => c.name === 'show')!.help });
    expect(entries(dir)).toEqual(before);
  });

  it('docs/cli.md names every command', () => {
    const section = readFileSync(join(ROOT, 'docs/cli.md'), 'utf8');
    for (const command of commands) expect(section, command.name).toContain(`| \`souls ${command.name}`);
    expect(section).toContain('**Exit codes.**');
  });

  it('help for the commands that open a database lists the shared options once, from one source', async () => {
    for (const name of ['list', 'show', 'history', 'render', 'backup', 'seed-demo', 'serve']) {
      const help = commands.find((c) => c.name === name)!.help;
      expect(help.match(/--db PATH/g), name).toHaveLength(1);
      expect(help, name).toContain('--trait-limit N');
    }
    expect(commands.find((c) => c.name === 'serve')!.help).toContain('--tokens-file FILE');
    expect(commands.find((c) => c.name === 'list')!.help).not.toContain('--tokens-file');
  });
});

describe('exit codes and messages', { timeout: 240_000 }, () => {
  it('exits 2 with a clear message for an unknown command, option or a wrong number of arguments', async () => {
    const cases: Array<[string[], string]> = [
      [['lst'], `souls: unknown command "lst" (did you mean list?)\nCommands: ${commands.map((c) => c.name).join(', ')}`],
      [['frobnicate'], 'souls: unknown command "frobnicate"\nCommands:'],
      [['list', '--bogus'], 'souls: list has no option --bogus\nRun `souls list --help` for its usage.\n'],
      [['show'], 'souls: show needs <soul>\nRun `souls show --help` for its usage.\n'],
      [['history', 'Ada', 'Bram'], 'souls: history takes <soul>; unexpected "Bram"\n'],
      [['list', 'Ada'], 'souls: list takes no arguments; unexpected "Ada"\n'],
      [['list', '--db'], 'souls: --db needs a value\n'],
      [['list', '--json=yes'], 'souls: --json takes no value\n'],
      [['list', '--order', 'height'], 'souls: --order must be one of readiness, name, level, updated, got "height"\n'],
      [['--bogus'], 'souls: serve has no option --bogus\n'],
      [['help', 'nothing'], 'souls: unknown command "nothing"'],
    ];
    const lines = cases.map(([args]) => (args.includes('--db') ? args : [...args, '--db', db]));
    const results = await runAll(lines);
    // The process exits with the code the dispatcher returns: an unknown command and an unknown option, as children.
    const children = await Promise.all([run(lines[0]), run(lines[2])]);
    expect(children).toEqual([results[0], results[2]]);
    for (const [i, [args, message]] of cases.entries()) {
      const result = results[i];
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toContain(message);
      expect(result.stdout, args.join(' ')).toBe('');
      expectNoStack(result.stderr);
    }
  });

  it('exits 1 for a value the engine refuses, a missing soul or a missing database; 0 on success', async () => {
    const refused = await run(['list', '--db', db, '--trait-limit', '-1']);
    expect(refused).toMatchObject({ code: 1, stdout: '', stderr: 'souls: --trait-limit: must be >= 1 and <= 1000, got -1\n' });
    expect((await run(['show', 'Ada', '--db', db])).code).toBe(0);
    const fromEnv = await runInProcess(['show', 'Ada', '--db', db], { SOULS_STALE_DAYS: '0' });
    expect(fromEnv).toMatchObject({ code: 1, stderr: 'souls: SOULS_STALE_DAYS: must be >= 1 and <= 1000000000, got 0\n' });
    for (const name of ['show', 'history', 'render']) {
      const missing = await runInProcess([name, 'Nobody', '--db', db]);
      expect(missing, name).toMatchObject({ code: 1, stdout: '', stderr: 'souls: no soul Nobody\n' });
      expect((await runInProcess([name, 'Ada', '--db', db])).code, name).toBe(0);
    }
    expect((await runInProcess(['list', '--db', db])).code).toBe(0);
    // The server's own settings are the server's: a bad one does not stop a command that never listens.
    expect((await runInProcess(['list', '--db', db], { SOULS_PORT: 'many', SOULS_TOKENS_FILE: join(dir, 'none.json') })).code).toBe(0);
    expect((await runInProcess(['list', '--db', db, '--port', '4000'])).stderr).toContain('souls: list has no option --port');
  });

  it('serve on a port in use exits 1 with one line that says what to do', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const { port } = busy.address() as AddressInfo;
    try {
      const result = await run(['serve', '--host', '127.0.0.1', '--port', String(port), '--db', join(dir, 'serve.db')]);
      expect(result).toMatchObject({
        code: 1,
        stdout: '',
        stderr: `souls: port ${port} on 127.0.0.1 is in use: stop what listens there, or give another --port (0 picks a free one)\n`,
      });
    } finally {
      busy.close();
    }
  });

  it('never prints a stack trace, and SOULS_DEBUG=1 shows the whole error', async () => {
    const plain = await run(['show', 'Nobody', '--db', db]);
    expectNoStack(plain.stderr);
    const debug = await run(['show', 'Nobody', '--db', db], { SOULS_DEBUG: '1' });
    expect(debug.code).toBe(1);
    expect(debug.stderr).toMatch(/SoulsError: no soul Nobody\n\s+at /);
  });
});

describe('--json output matches the engine', { timeout: 240_000 }, () => {
  it('list --json: every awake soul with level, trait count and readiness; --all adds the dormant', async () => {
    const result = await runInProcess(['list', '--json', '--db', db]);
    expect(result.code, result.stderr).toBe(0);
    const listed = JSON.parse(result.stdout) as Array<Record<string, any>>;
    const expected = await engineView(async (engine) => {
      const souls = await listSouls(engine);
      const verdicts = await getCrystallization(engine, souls.map((s) => s.id));
      return Promise.all(
        souls.map(async (soul) => ({
          id: String(soul.id),
          name: soul.name,
          level: soul.level,
          dormant: false,
          activeTraitCount: (await listTraits(engine, soul.id, { status: 'active' })).length,
          traitLimit: 10,
          crystallization: { ...verdicts.get(soul.id)!, soulId: undefined, clusteredShardCount: undefined },
        })),
      );
    });
    expect(listed.map((s) => s.name)).toEqual(['Ada', 'Bram']);
    for (const [i, soul] of listed.entries()) {
      const { crystallization, ...rest } = expected[i];
      expect(soul).toMatchObject(rest);
      // Priority falls with time since the last attunement: Ada's is measured when the command ran.
      const { soulId: _, clusteredShardCount: __, priority, ...verdict } = crystallization;
      expect(soul.crystallization).toMatchObject(verdict);
      if (soul.name === 'Bram') expect(soul.crystallization.priority).toBe(priority);
    }
    const bram = listed.find((s) => s.name === 'Bram')!;
    expect(bram.crystallization).toMatchObject({ ready: true, pendingCount: 3, distinctSources: 2, ageSpreadDays: 4, unmet: [] });
    expect(bram.pendingShardCount).toBe(3);
    expect(listed.find((s) => s.name === 'Ada')!).toMatchObject({ activeTraitCount: 2, createdAt: iso(at.adaCreated), lastAttunedAt: iso(at.attuned) });

    const all = JSON.parse((await runInProcess(['list', '--all', '--json', '--db', db])).stdout) as Array<Record<string, any>>;
    const dormant = await engineView((engine) => listDormantSouls(engine));
    expect(all.map((s) => s.name)).toEqual(['Ada', 'Bram', 'Cyra']);
    expect(all[2]).toMatchObject({ name: dormant[0].name, dormant: true, deletedAt: iso(at.cyraRetired), crystallization: { ready: false, unmet: expect.arrayContaining(['DORMANT']) } });
    const empty = join(dir, 'empty.db');
    closeSoulsDb(openSoulsDb({ path: empty }));
    expect(await runAll([['list', '--db', empty], ['list', '--json', '--db', empty]])).toMatchObject([
      { code: 0, stdout: `No awake souls in ${empty}.\n` },
      { code: 0, stdout: '[]\n' },
    ]);
    const byReadiness = JSON.parse((await runInProcess(['list', '--order', 'readiness', '--json', '--db', db])).stdout) as Array<{ name: string }>;
    expect(byReadiness.map((s) => s.name)).toEqual(['Bram', 'Ada']);
  });

  it('show --json: the soul, its traits with provenance (every status with --all), readiness', async () => {
    const result = await runInProcess(['show', 'ada', '--json', '--db', db]);
    expect(result.code, result.stderr).toBe(0);
    const shown = JSON.parse(result.stdout);
    const { soul, active, all } = await engineView(async (engine) => {
      const soul = (await listSouls(engine)).find((s) => s.name === 'Ada')!;
      return { soul, active: await listTraits(engine, soul.id, { status: 'active' }), all: await listTraits(engine, soul.id) };
    });
    const traitJson = (t: (typeof all)[number]) => ({
      id: String(t.id),
      principle: t.principle,
      provenance: t.provenance,
      generation: t.generation,
      status: t.status,
      mergedInto: t.mergedInto === null ? null : String(t.mergedInto),
      createdAt: iso(t.createdAt),
      updatedAt: iso(t.updatedAt),
    });
    expect(shown.soul).toEqual({
      id: String(soul.id),
      name: 'Ada',
      slug: soul.slug,
      description: 'Careful engineer',
      essence: 'Calm under pressure.',
      level: 0,
      dormant: false,
      createdAt: iso(soul.createdAt),
      updatedAt: iso(soul.updatedAt),
      lastAttunedAt: iso(at.attuned),
      deletedAt: null,
    });
    expect(shown.traits).toEqual(active.map((t) => ({ ...traitJson(t), citationCount: 0, stale: false })));
    expect(shown.traits.map((t: { principle: string }) => t.principle)).toEqual(['Runs the tests before pushing', 'Writes down why, not only what']);
    expect(shown).toMatchObject({ activeTraitCount: 2, traitLimit: 10, pendingShardCount: 0, shardCountsBySource: [] });
    expect(shown.crystallization).toMatchObject({ ready: false, pendingCount: 0, unmet: expect.arrayContaining(['MIN_SHARDS', 'SOURCE_DIVERSITY']) });
    expect(shown.crystallization.needs).toContainEqual({
      condition: 'RECENCY',
      message: `a shard recorded or revealed after the last attunement (${iso(at.attuned)}): any shard recorded since counts, whatever its createdAt`,
    });

    const every = JSON.parse((await runInProcess(['show', String(soul.id), '--all', '--json', '--db', db])).stdout);
    expect(every.traits.map((t: { id: string; status: string }) => [t.id, t.status])).toEqual(all.toSorted((a, b) => a.id - b.id).map((t) => [String(t.id), t.status]));
    expect(every.activeTraitCount).toBe(2);

    const bram = JSON.parse((await runInProcess(['show', 'Bram', '--json', '--db', db])).stdout);
    expect(bram.shardCountsBySource).toEqual([
      { source: 'standup', count: 2 },
      { source: 'tracker', count: 1 },
    ]);
    const verdict = await engineView(async (engine) => (await getCrystallization(engine, [Number(bram.soul.id)])).get(Number(bram.soul.id))!);
    const { soulId: _, clusteredShardCount: __, ...apiFields } = verdict;
    // Bram was never attuned, so its priority does not move with the clock: the whole verdict matches.
    expect(bram.crystallization).toEqual({ ...apiFields, needs: [] });
    expect(bram.crystallization).toMatchObject({ ready: true, clusterCount: 3 });
  });

  it('history --json: level events and trait changes in order, with the level events as the engine keeps them', async () => {
    const result = await runInProcess(['history', 'Ada', '--json', '--db', db]);
    expect(result.code, result.stderr).toBe(0);
    const history = JSON.parse(result.stdout);
    const { soul, levels } = await engineView(async (engine) => {
      const soul = (await listSouls(engine)).find((s) => s.name === 'Ada')! as Soul;
      return { soul, levels: await getLevelHistory(engine, soul.id) };
    });
    expect(history.soul).toEqual({ id: String(soul.id), name: 'Ada', level: 0, dormant: false });
    const timeline = history.events.map((e: { at: string; kind: string; trait?: { principle: string; statusNow: string } }) => [e.at, e.kind, e.trait?.principle, e.trait?.statusNow]);
    expect(timeline).toEqual([
      [iso(at.adaCreated), 'CREATED', undefined, undefined],
      [iso(at.traitsAdded), 'TRAIT_ADDED', 'Runs the tests before pushing', 'active'],
      [iso(at.traitsAdded), 'TRAIT_ADDED', 'Runs the whole test suite before a review', 'reverted'],
      [iso(at.traitsAdded), 'TRAIT_ADDED', 'Writes down why, not only what', 'active'],
      [iso(at.levelUp), 'LEVEL_UP', undefined, undefined],
      [iso(at.levelUpReverted), 'LEVEL_UP_REVERTED', undefined, undefined],
      [iso(at.traitReverted), 'TRAIT_REVERTED', 'Runs the whole test suite before a review', 'reverted'],
      [iso(at.traitRevised), 'TRAIT_REVISED_OR_REACTIVATED', 'Writes down why, not only what', 'active'],
      [iso(at.attuned), 'ATTUNED', undefined, undefined],
    ]);
    expect(levels).toHaveLength(1);
    const [event] = levels;
    const levelEvent = {
      id: String(event.id),
      level: 1,
      essenceBefore: 'Calm under pressure.',
      essenceAfter: 'Calm under pressure; proves a change before sharing it.',
      consolidated: event.consolidated.map(String),
      merged: event.merged.map(String),
      promoted: [],
      carried: event.carried.map((c) => String(c.id)),
      createdAt: iso(event.createdAt),
      revertedAt: iso(event.revertedAt),
    };
    expect(history.events[4].levelEvent).toEqual(levelEvent);
    expect(history.events[5].levelEvent).toEqual(levelEvent);
    expect(event.consolidated).toHaveLength(2);

    const cyra = JSON.parse((await runInProcess(['history', 'Cyra', '--json', '--db', db])).stdout);
    expect(cyra.events.map((e: { kind: string; at: string }) => [e.kind, e.at])).toEqual([
      ['CREATED', iso(at.cyraCreated)],
      ['RETIRED', iso(at.cyraRetired)],
    ]);
    expect(cyra.soul.dormant).toBe(true);
  });
});

describe('output for people', { timeout: 240_000 }, () => {
  it('list, show and history print readable text, with no colour codes when not on a terminal', async () => {
    const list = await runInProcess(['list', '--db', db]);
    expect(list.stdout.split('\n')[0]).toMatch(/^ID +NAME +LEVEL +TRAITS +PENDING +READINESS$/);
    expect(list.stdout).toMatch(
      /^\d+ +Ada +0 +2\/10 +0 +not ready: needs 3 more shards \(0 of the 3 needed\); shards from 2 more sources \(0 of the 2 needed\); shards observed more than a day apart \(one shard spans no time\); a shard recorded or revealed after the last attunement \(.+Z\): any shard recorded since counts, whatever its createdAt$/m,
    );
    expect(list.stdout).toMatch(/^\d+ +Bram +0 +1\/10 +3 +ready \(priority 24\)$/m);
    const show = await runInProcess(['show', 'Ada', '--db', db]);
    expect(show.stdout).toContain(`Ada (#1, ada) · level 0 · awake · since ${iso(at.adaCreated)!.slice(0, 16).replace('T', ' ')} UTC\nCareful engineer\n\nEssence\n  Calm under pressure.\n`);
    expect(show.stdout).toContain('  #1 Runs the tests before pushing\n      provenance: Seen in three reviews\n');
    const history = await runInProcess(['history', 'Ada', '--db', db]);
    expect(history.stdout).toMatch(/level-up to 1 \(reverted later\)\n +essence: Calm under pressure; proves a change before sharing it\.\n +consolidated: #1, #2\n +merged: #\d+ \(removed by the revert\)\n +carried: #3\n/);
    expect(history.stdout).toContain('trait reverted #2 "Runs the whole test suite before a review"');
    for (const output of [list, show, history]) {
      expect(output.code).toBe(0);
      expect(output.stdout).not.toContain('\u001b[');
    }
  });

  it('colours on a terminal, unless NO_COLOR is set', async () => {
    // `script` gives the command a pseudo-terminal, as a person's shell would.
    const onTty = (env: Record<string, string>) =>
      promisify(execFile)('script', ['-qec', `"${process.execPath}" src/cli/index.ts list --db "${db}"`, '/dev/null'], { cwd: ROOT, env: cleanEnv(env) });
    const coloured = await onTty({});
    expect(coloured.stdout).toContain('\u001b[1mAda\u001b[22m');
    expect(coloured.stdout).toContain('\u001b[32mready (priority 24)\u001b[39m');
    const plain = await onTty({ NO_COLOR: '1' });
    expect(plain.stdout).toContain('Bram');
    expect(plain.stdout).not.toContain('\u001b[');
  });
});

describe('read-only commands create nothing', { timeout: 240_000 }, () => {
  it('list, show and history with a missing database: exit 1, a clear message, no file or folder', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'souls-readonly-'));
    try {
      for (const args of [['list'], ['show', 'Ada'], ['history', 'Ada']]) {
        const targets = ['missing/dir/x.db', 'x.db'].map((target) => join(empty, target));
        const results = await runAll(targets.map((path) => [...args, '--db', path]));
        for (const [i, result] of results.entries()) {
          expect(result.code, args.join(' ')).toBe(1);
          expect(result.stderr).toBe(`souls: no database at ${targets[i]} (--db): ${args[0]} only reads an existing one; \`souls serve\` or \`souls seed-demo\` creates it\n`);
        }
        const fromEnv = await run(args, { SOULS_DB: join(empty, 'env', 'souls.db') });
        expect(fromEnv.code).toBe(1);
        expect(fromEnv.stderr).toContain('(SOULS_DB)');
        expect(entries(empty), args.join(' ')).toEqual([]);
      }
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('list, show and history leave an existing database byte for byte, with nothing beside it', async () => {
    const folder = dirname(db);
    const before = { files: entries(folder), hash: fingerprint(db), mtime: statSync(db).mtimeMs };
    for (const args of [['list', '--all'], ['list', '--json'], ['show', 'Ada', '--all'], ['show', 'Bram', '--json'], ['history', 'Ada'], ['history', 'Cyra', '--json']]) {
      const result = await run([...args, '--db', db]);
      expect(result.code, result.stderr).toBe(0);
      expect(entries(folder), args.join(' ')).toEqual(before.files);
    }
    expect(fingerprint(db)).toBe(before.hash);
    expect(statSync(db).mtimeMs).toBe(before.mtime);
  });

  it('beside a running writer, list, show and history leave its commits in the WAL: no checkpoint into the main file', async () => {
    const path = join(dir, 'busy.db');
    await seedWorld(path);
    const writer = openSoulsDb({ path });
    try {
      const bram = (await listSouls(writer)).find((s) => s.name === 'Bram')!;
      const shown = async () => JSON.parse((await run(['show', 'Bram', '--json', '--db', path])).stdout).pendingShardCount as number;
      const pending = await shown();
      await dropShard(writer, 'Paired with the new hire on the release checklist', 'standup', [bram.id]);
      const before = { main: fingerprint(path), wal: fingerprint(`${path}-wal`) };
      for (const args of [['list'], ['show', 'Bram'], ['history', 'Ada']]) {
        const result = await run([...args, '--db', path]);
        expect(result.code, result.stderr).toBe(0);
        expect({ main: fingerprint(path), wal: fingerprint(`${path}-wal`) }, args.join(' ')).toEqual(before);
      }
      // The readers saw the commit from the WAL.
      expect(await shown()).toBe(pending + 1);
    } finally {
      closeSoulsDb(writer);
    }
  });
});

describe('the souls program as installed', { timeout: 240_000 }, () => {
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };

  it('`npm run souls -- …` runs the program', async () => {
    const { stdout } = await promisify(execFile)('npm', ['run', '--silent', 'souls', '--', '--version'], { cwd: ROOT, env: cleanEnv() });
    expect(stdout).toBe(`souls ${version}\n`);
    const list = await promisify(execFile)('npm', ['run', '--silent', 'souls', '--', 'list', '--db', db], { cwd: ROOT, env: cleanEnv() });
    expect(list.stdout).toContain('Bram');
  });

  it('the package bin runs as npm links it: a symbolic link to an executable file with a shebang', async () => {
    const { bin } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    const target = join(ROOT, bin.souls);
    expect(readFileSync(target, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
    const binDir = join(dir, 'node_modules', '.bin');
    mkdirSync(binDir, { recursive: true });
    const link = join(binDir, 'souls');
    symlinkSync(target, link);
    expect(statSync(target).mode & 0o111, 'executable').not.toBe(0);
    // The shebang finds `node` on PATH: this Node first, as npm puts the pinned one first.
    const env = cleanEnv({ PATH: [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter) });
    const { stdout } = await promisify(execFile)(link, ['--version'], { cwd: dir, env });
    expect(stdout).toBe(`souls ${version}\n`);
    const shown = await promisify(execFile)(link, ['show', 'Bram', '--json', '--db', db], { cwd: dir, env });
    expect(JSON.parse(shown.stdout).soul.name).toBe('Bram');
  });
});
