// souls import, export and sync through real child processes: help, exit codes, --json, dry runs that create
// nothing, byte-identical export, and sync following the database or a server, refusing edits, surviving a kill.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addTrait, closeSoulsDb, getSoulByName, listTraits, openSoulsDb } from '../src/engine/index.ts';
import { cliRunner, expectNoStack } from './support/cli.ts';
import { version } from './support/atomic-writer-child.ts';
import { serverPerTest } from './support/server.ts';
import { trackListeners } from './support/listeners.ts';

const FIXTURES = new URL('./fixtures/soulmd/', import.meta.url).pathname;
const { cli, exited, printed, killAll } = cliRunner();
const startServer = serverPerTest(afterEach);
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'souls-interop-'));
});
afterEach(() => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});

const run = async (args: string[], env: Record<string, string> = {}) => exited(cli(args, env));

/** Polls until `check` holds, at most `ms`: a bound on a wait, so a slow machine fails loudly instead of hanging. */
async function eventually(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function withDb<T>(path: string, work: (db: ReturnType<typeof openSoulsDb>) => Promise<T>): Promise<T> {
  const db = openSoulsDb({ path });
  try {
    return await work(db);
  } finally {
    closeSoulsDb(db);
  }
}

describe('help and exit codes', { timeout: 30_000 }, () => {
  it.each(['import', 'export', 'sync'])('souls %s --help prints usage with examples and exits 0', async (command) => {
    const exit = await run([command, '--help']);
    expect(exit.code).toBe(0);
    expect(exit.stdout).toMatch(new RegExp(`^Usage: souls ${command} `));
    expect(exit.stdout).toContain('Examples:');
    expect(exit.stdout).toContain('Exit codes:');
  });

  it('exits 1 with a message naming the problem, no stack, and creates no database', async () => {
    const db = join(dir, 'nested', 'souls.db');
    const missing = await run(['import', join(dir, 'nowhere'), '--db', db]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('does not exist');
    const noSoul = await run(['export', 'Nobody', '--db', db]);
    expect(noSoul.code).toBe(1);
    expect(noSoul.stderr).toContain(`no database at ${db}`);
    const badFormat = await run(['import', `${FIXTURES}openclaw`, '--format', 'yaml', '--db', db]);
    expect(badFormat.code).toBe(1);
    expect(badFormat.stderr).toContain('--format: must be one of openclaw, soulmd, frontmatter, auto');
    for (const exit of [missing, noSoul, badFormat]) expectNoStack(exit.stderr);
    expect(existsSync(join(dir, 'nested'))).toBe(false);
  });
});

describe('souls import', { timeout: 30_000 }, () => {
  it('plans without writing, applies with --apply, and adds nothing the second time (--json)', async () => {
    const db = join(dir, 'souls.db');
    const dry = await run(['import', `${FIXTURES}openclaw`, '--db', db]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('create "Mira"');
    expect(dry.stdout).toContain('traits   3 to add, 0 already there');
    expect(dry.stdout).toContain('shards   5 to add, 0 already there, from 3 file(s)');
    expect(dry.stdout).toContain('Dry run: nothing written.');
    expect(existsSync(db)).toBe(false);

    const applied = await run(['import', `${FIXTURES}openclaw`, '--apply', '--json', '--db', db]);
    expect(applied.code).toBe(0);
    const first = JSON.parse(applied.stdout);
    expect(first).toMatchObject({ applied: true, plan: { format: 'openclaw', name: 'Mira' }, result: { created: true, traitsAdded: 3, shardsAdded: 5, soul: { name: 'Mira' } } });
    expect(first.plan.shards[0]).toEqual({ content: 'Refused to release winter rations until the ledger was reconciled.', source: 'memory/2026-11-02.md', createdAt: '2026-11-02T09:15:00.000Z', present: false });

    const again = JSON.parse((await run(['import', `${FIXTURES}openclaw`, '--apply', '--json', '--db', db])).stdout);
    expect(again.result).toMatchObject({ created: false, traitsAdded: 0, shardsAdded: 0, soul: { id: first.result.soul.id } });
    const dryJson = JSON.parse((await run(['import', `${FIXTURES}soulmd`, '--json', '--db', db])).stdout);
    expect(dryJson).toMatchObject({ applied: false, plan: { format: 'soulmd', name: 'Relay', existingSoulId: null } });
  });
  it('plans a 1 MiB SOUL.md of repeated headings and padded lines', async () => {
    const workspace = join(dir, 'headings');
    cpSync(`${FIXTURES}openclaw`, workspace, { recursive: true });
    const head = '## Vibe\n\nDry, exact.\n\n## Core Truths\n\n- Count twice, hand out once.\n\n';
    const pad = `## Boundaries\n\n- **Nickname**${' '.repeat(4096)}:${' '.repeat(4096)}Mi\rra\n## Core${' '.repeat(4096)}Notes\n`;
    const unit = '## Core Truths\n';
    writeFileSync(join(workspace, 'SOUL.md'), head + pad + unit.repeat(Math.floor((1024 * 1024 - head.length - pad.length) / unit.length)));
    // A bound on the wait (the plan itself takes well under a second; the child's start is most of it on a loaded machine).
    const exit = await exited(cli(['import', workspace, '--json', '--db', join(dir, 'souls.db')]), 25_000);
    expect(exit.code).toBe(0);
    expect(JSON.parse(exit.stdout)).toMatchObject({ applied: false, plan: { format: 'openclaw', name: 'Mira', essence: 'Dry, exact.', traits: [{ principle: 'Count twice, hand out once.' }] } });
  });

  it('writes a large memory folder in batches, drawing no progress bar when stderr is not a terminal', async () => {
    const db = join(dir, 'souls.db');
    const workspace = join(dir, 'big');
    cpSync(`${FIXTURES}openclaw`, workspace, { recursive: true });
    // 60 days of 25 entries: 1,500 shards, written in batches.
    for (let d = 0; d < 60; d++) {
      const day = new Date(Date.UTC(2026, 7, 1) + d * 86_400_000).toISOString().slice(0, 10);
      writeFileSync(join(workspace, 'memory', `${day}.md`), Array.from({ length: 25 }, (_, i) => `- [${String(8 + (i % 12)).padStart(2, '0')}:${String(i).padStart(2, '0')}] Counted crate ${i} of day ${day} and logged it.`).join('\n') + '\n');
    }
    const exit = await run(['import', workspace, '--apply', '--json', '--db', db]);
    expect(exit.code).toBe(0);
    expect(JSON.parse(exit.stdout).result).toMatchObject({ created: true, shardsAdded: 1505 });
    expect(exit.stderr).toBe('');
  });
});

describe('souls export', { timeout: 30_000 }, () => {
  it('writes over an untouched import without changing a byte, and after a change only the owned region', async () => {
    const db = join(dir, 'souls.db');
    expect((await run(['import', `${FIXTURES}soulmd`, '--apply', '--db', db])).code).toBe(0);
    const workspace = join(dir, 'relay');
    cpSync(`${FIXTURES}soulmd`, workspace, { recursive: true });
    const file = join(workspace, 'SOUL.md');
    const original = readFileSync(file, 'utf8');
    const same = await run(['export', 'Relay', '--out', file, '--db', db]);
    expect(same.code).toBe(0);
    expect(same.stdout).toContain('already shows "Relay" (soulmd)');
    expect(readFileSync(file, 'utf8')).toBe(original);
    expect(existsSync(`${file}.bak`)).toBe(false);

    await withDb(db, async (handle) => {
      const soul = (await getSoulByName(handle, 'Relay'))!;
      await addTrait(handle, soul.id, { principle: 'Ship the smallest change that proves the point.', provenance: 'a test' });
    });
    const changed = await run(['export', 'Relay', '--out', file, '--db', db]);
    expect(changed.code).toBe(0);
    const written = readFileSync(file, 'utf8');
    expect(readFileSync(`${file}.bak`, 'utf8')).toBe(original);
    const worldview = (text: string) => text.replace(/## Worldview\n\n[^]*?\n\n---\n\n## Opinions/, '## Worldview\n\n@@\n\n---\n\n## Opinions');
    expect(worldview(written)).toBe(worldview(original));
    expect(written).toContain('- Ship the smallest change that proves the point.\n<!-- souls:traits:end sha256=');
    // Printed, in another convention.
    const printedOut = await run(['export', 'Relay', '--format', 'openclaw', '--db', db]);
    expect(printedOut.stdout).toMatch(/^# SOUL\.md - Who You Are\n/);
    expect(printedOut.stdout).toContain('**Ship the smallest change that proves the point.**');
  });
});

describe('souls sync', { timeout: 30_000 }, () => {
  async function importedWorkspace() {
    const db = join(dir, 'souls.db');
    expect((await run(['import', `${FIXTURES}openclaw`, '--apply', '--db', db])).code).toBe(0);
    const workspace = join(dir, 'mira');
    cpSync(`${FIXTURES}openclaw`, workspace, { recursive: true });
    return { db, file: join(workspace, 'SOUL.md') };
  }

  it('follows the database: a trait change reaches the file within a second, the old file kept as .bak', async () => {
    const { db, file } = await importedWorkspace();
    const original = readFileSync(file, 'utf8');
    const child = cli(['sync', 'Mira', file, '--db', db, '--interval-ms', '50']);
    await printed(child, /following "Mira" in .* \(openclaw\)/);
    expect(readFileSync(file, 'utf8')).toBe(original);
    await withDb(db, async (handle) => {
      const soul = (await getSoulByName(handle, 'Mira'))!;
      await addTrait(handle, soul.id, { principle: 'Keep a spare sack for the unexpected guest.', provenance: 'a test' });
    });
    await eventually(() => readFileSync(file, 'utf8').includes('**Keep a spare sack for the unexpected guest.**'), 1_000, 'the new trait in SOUL.md');
    expect(readFileSync(`${file}.bak`, 'utf8')).toBe(original);
    expect(readFileSync(file, 'utf8')).toContain('## Boundaries\n\n- The garrison\'s muster rolls stay private. Period.');
    child.process.kill('SIGTERM');
    expect((await exited(child)).code).toBe(0);
  });

  it('refuses to overwrite an edit made inside the owned region, says so and stops; nothing is lost', async () => {
    const { db, file } = await importedWorkspace();
    await withDb(db, async (handle) => {
      const soul = (await getSoulByName(handle, 'Mira'))!;
      await addTrait(handle, soul.id, { principle: 'Keep a spare sack for the unexpected guest.', provenance: 'a test' });
    });
    expect((await run(['sync', 'Mira', file, '--db', db, '--once'])).code).toBe(0);
    const edited = readFileSync(file, 'utf8').replace('**Count twice, hand out once.**', '**Count twice, hand out once, and write it down.**');
    writeFileSync(file, edited);
    const child = cli(['sync', 'Mira', file, '--db', db, '--interval-ms', '50']);
    const exit = await exited(child);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain('the traits region was edited since Souls last wrote it');
    expect(exit.stderr).toContain('nothing was written');
    expectNoStack(exit.stderr);
    expect(readFileSync(file, 'utf8')).toBe(edited);
  });

  it('follows a running server over graphql-ws', async () => {
    const server = await startServer({ start: Date.UTC(2026, 10, 20, 12) });
    const text = readFileSync(`${FIXTURES}frontmatter/brannoc.md`, 'utf8');
    const imported = await server.request(`mutation($text: String!) { importSoulMd(input: { text: $text, fileName: "brannoc.md", apply: true }) { ... on SoulMdImportPayload { soul { id } } } }`, { text });
    const soulId = imported.body.data.importSoulMd.soul.id;
    const file = join(dir, 'brannoc.md');
    writeFileSync(file, text);
    const listeners = trackListeners(server);
    const child = cli(['sync', 'Brannoc', file, '--url', server.url]);
    await printed(child, /following "Brannoc" on http:\/\/.* \(frontmatter\)/);
    await listeners.until('soulChanged', 1, 'the sync subscription');
    expect(readFileSync(file, 'utf8')).toBe(text);
    const [trait] = await listTraits(server.app.db, Number(soulId));
    const revised = await server.request(`mutation($id: ID!) { reviseTrait(id: $id, input: { principle: "Judge a tool by how it fails." }) { __typename } }`, { id: String(trait.id) });
    expect(revised.body.data.reviseTrait.__typename).toBe('TraitPayload');
    await eventually(() => readFileSync(file, 'utf8').includes('- Judge a tool by how it fails.\n'), 1_000, 'the revised trait in brannoc.md');
    const written = readFileSync(file, 'utf8');
    expect(written.slice(0, written.indexOf('## Who You Are'))).toBe(text.slice(0, text.indexOf('## Who You Are')));
    expect(written.endsWith('## Tone\n\nGruff, brief, fair. Few words, all of them meant.\n')).toBe(true);
    child.process.kill('SIGINT');
    expect((await exited(child)).code).toBe(0);
  });

  it('leaves the old file or the new one, never a torn one, when killed mid-write', async () => {
    const file = join(dir, 'SOUL.md');
    const versions = [version(0), version(1)];
    let midWrite = 0;
    for (let round = 0; round < 5; round++) {
      const child = spawn(process.execPath, [new URL('./support/atomic-writer-child.ts', import.meta.url).pathname, file], { stdio: ['ignore', 'pipe', 'inherit'] });
      let seen = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (seen += chunk));
      // Kill after a few writes, at a moment that varies from round to round.
      await eventually(() => (seen.match(/writing/g)?.length ?? 0) >= 3 + round, 10_000, 'the writer to start');
      await new Promise((resolve) => setTimeout(resolve, round * 7));
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('close', resolve));
      // A temporary file left beside it shows the kill landed inside a write.
      if (readdirSync(dir).some((name) => name.endsWith('.tmp'))) midWrite++;
      const now = readFileSync(file, 'utf8');
      expect(versions.includes(now), `round ${round}: the file is neither version (length ${now.length})`).toBe(true);
      if (existsSync(`${file}.bak`)) expect(versions.includes(readFileSync(`${file}.bak`, 'utf8'))).toBe(true);
    }
    expect(midWrite, 'no kill landed inside a write').toBeGreaterThan(0);
  });
});
