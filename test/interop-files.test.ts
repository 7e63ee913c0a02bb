// souls import, export and sync against the file system, as child processes: the imported document is kept with
// the soul (an untouched import exports anywhere byte for byte, from another process too), links out of a
// workspace are refused, a file's mode is kept, a linked SOUL.md is written through, fenced markers are text.
import { chmodSync, cpSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addTrait, closeSoulsDb, getSoulByName, openSoulsDb } from '../src/engine/index.ts';
import { buildApp } from '../src/server/app.ts';
import { cliRunner, expectNoStack } from './support/cli.ts';

const FIXTURES = new URL('./fixtures/soulmd/', import.meta.url).pathname;
const ORIGINAL = readFileSync(`${FIXTURES}openclaw/SOUL.md`, 'utf8');
const { cli, exited, killAll } = cliRunner();
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'souls-files-'));
});
afterEach(() => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});

const run = async (args: string[]) => exited(cli(args));
const mode = (path: string) => statSync(path).mode & 0o777;

async function withDb<T>(path: string, work: (db: ReturnType<typeof openSoulsDb>) => Promise<T>): Promise<T> {
  const db = openSoulsDb({ path });
  try {
    return await work(db);
  } finally {
    closeSoulsDb(db);
  }
}

async function importedMira(): Promise<string> {
  const db = join(dir, 'souls.db');
  expect((await run(['import', `${FIXTURES}openclaw`, '--apply', '--db', db])).code).toBe(0);
  return db;
}

const addSack = (db: string) =>
  withDb(db, async (handle) => {
    const soul = (await getSoulByName(handle, 'Mira'))!;
    await addTrait(handle, soul.id, { principle: 'Keep a spare sack for the unexpected guest.', provenance: 'a test' });
  });

/** The fixture with the Core Truths section's content replaced by `@@`: what must stay the same around it. */
const outsideCoreTruths = (text: string) => text.replace(/## Core Truths\n\n[^]*?\n\n## Boundaries/, '## Core Truths\n\n@@\n\n## Boundaries');

describe('the imported document is kept with the soul', { timeout: 30_000 }, () => {
  it('an untouched import exports to a new path, and prints, byte for byte; after a change only the owned region differs', async () => {
    const db = await importedMira();
    const fresh = join(dir, 'elsewhere', 'SOUL.md');
    mkdirSync(join(dir, 'elsewhere'));
    const written = await run(['export', 'Mira', '--out', fresh, '--db', db]);
    expect(written.code).toBe(0);
    expect(written.stdout).toContain('(openclaw)');
    expect(readFileSync(fresh, 'utf8')).toBe(ORIGINAL);
    expect((await run(['export', 'Mira', '--db', db])).stdout).toBe(ORIGINAL);

    await addSack(db);
    const folder = join(dir, 'workspace');
    const changed = await run(['export', 'Mira', '--out', `${folder}/`, '--db', db]);
    expect(changed.code).toBe(0);
    const text = readFileSync(join(folder, 'SOUL.md'), 'utf8');
    expect(outsideCoreTruths(text)).toBe(outsideCoreTruths(ORIGINAL));
    expect(text).toContain('**Keep a spare sack for the unexpected guest.**\n<!-- souls:traits:end sha256=');
    expect(text).toContain('_You are not a help desk. You are the keeper of the keep\'s stores._');
    expect(text).toContain('## Continuity\n');
    expect(readFileSync(join(folder, 'IDENTITY.md'), 'utf8')).toContain('- **Name:** Mira');
  });

  it('is in the database: a server on it (another process than the import) exports the same bytes', async () => {
    const db = await importedMira();
    const app = buildApp({ db: openSoulsDb({ path: db }) });
    const { url } = await app.start(0, '127.0.0.1');
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ soulByName(name: "Mira") { soulMd(format: OPENCLAW) } }' }),
      });
      expect((await response.json()).data.soulByName.soulMd).toBe(ORIGINAL);
    } finally {
      await app.stop();
    }
  });

  it('sync writes a missing file over the imported document', async () => {
    const db = await importedMira();
    const file = join(dir, 'synced.md');
    expect((await run(['sync', 'Mira', file, '--once', '--db', db])).code).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(ORIGINAL);
  });
});

describe('files and links', { timeout: 30_000 }, () => {
  it('refuses a workspace whose memory file or folder links out of it, naming the link, and writes nothing', async () => {
    const secret = join(dir, 'private');
    mkdirSync(secret);
    writeFileSync(join(secret, '2026-11-10.md'), '- The vault code is 4711.\n', { mode: 0o600 });
    const workspace = join(dir, 'mira');
    cpSync(`${FIXTURES}openclaw`, workspace, { recursive: true });
    symlinkSync(join(secret, '2026-11-10.md'), join(workspace, 'memory', '2026-11-10.md'));
    const db = join(dir, 'souls.db');
    const linkedFile = await run(['import', workspace, '--apply', '--db', db]);
    expect(linkedFile.code).toBe(1);
    expect(linkedFile.stderr).toContain(`${join(workspace, 'memory', '2026-11-10.md')} is a symbolic link that leads outside the workspace`);
    expect(linkedFile.stderr).not.toContain('4711');
    expectNoStack(linkedFile.stderr);
    expect(() => statSync(db)).toThrow();

    rmSync(join(workspace, 'memory'), { recursive: true });
    symlinkSync(secret, join(workspace, 'memory'));
    const linkedFolder = await run(['import', workspace, '--json', '--db', db]);
    expect(linkedFolder.code).toBe(1);
    expect(linkedFolder.stderr).toContain('is a symbolic link that leads outside the workspace');
  });

  it('follows a link that stays inside the workspace', async () => {
    const workspace = join(dir, 'mira');
    cpSync(`${FIXTURES}openclaw`, workspace, { recursive: true });
    mkdirSync(join(workspace, 'notes'));
    writeFileSync(join(workspace, 'notes', 'day.md'), '- Weighed the salt twice.\n');
    symlinkSync(join(workspace, 'notes', 'day.md'), join(workspace, 'memory', '2026-11-10.md'));
    const plan = await run(['import', workspace, '--json', '--db', join(dir, 'souls.db')]);
    expect(plan.code).toBe(0);
    expect(JSON.parse(plan.stdout).plan.shards.map((s: { content: string }) => s.content)).toContain('Weighed the salt twice.');
  });

  it('keeps the mode of a private SOUL.md and of its .bak, on export and on sync', async () => {
    const db = await importedMira();
    const workspace = join(dir, 'mira');
    cpSync(`${FIXTURES}openclaw`, workspace, { recursive: true });
    const file = join(workspace, 'SOUL.md');
    chmodSync(file, 0o600);
    await addSack(db);
    expect((await run(['export', 'Mira', '--out', file, '--db', db])).code).toBe(0);
    expect(readFileSync(file, 'utf8')).toContain('Keep a spare sack');
    expect(mode(file)).toBe(0o600);
    expect(mode(`${file}.bak`)).toBe(0o600);

    const synced = join(dir, 'synced', 'SOUL.md');
    cpSync(`${FIXTURES}openclaw`, join(dir, 'synced'), { recursive: true });
    chmodSync(synced, 0o640);
    expect((await run(['sync', 'Mira', synced, '--once', '--db', db])).code).toBe(0);
    expect(readFileSync(synced, 'utf8')).toContain('Keep a spare sack');
    expect(mode(synced)).toBe(0o640);
    expect(mode(`${synced}.bak`)).toBe(0o640);
  });

  it('writes through a symlinked SOUL.md: the link stays a link and the file it names changes', async () => {
    const db = await importedMira();
    const real = join(dir, 'real');
    cpSync(`${FIXTURES}openclaw`, real, { recursive: true });
    const workspace = join(dir, 'workspace');
    mkdirSync(workspace);
    const link = join(workspace, 'SOUL.md');
    symlinkSync(join(real, 'SOUL.md'), link);
    await addSack(db);
    expect((await run(['export', 'Mira', '--out', link, '--db', db])).code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(join(real, 'SOUL.md'));
    expect(readFileSync(join(real, 'SOUL.md'), 'utf8')).toContain('**Keep a spare sack for the unexpected guest.**');
    expect(readFileSync(join(real, 'SOUL.md.bak'), 'utf8')).toBe(ORIGINAL);

    await withDb(db, async (handle) => {
      const soul = (await getSoulByName(handle, 'Mira'))!;
      await addTrait(handle, soul.id, { principle: 'Salt keeps; so does a grudge.', provenance: 'a test' });
    });
    expect((await run(['sync', 'Mira', link, '--once', '--db', db])).code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(real, 'SOUL.md'), 'utf8')).toContain('**Salt keeps; so does a grudge.**');
  });

  it('treats markers inside a fenced code block as text: not refused, not rewritten', async () => {
    const db = await importedMira();
    const fenced = '## Notes\n\nSouls marks what it owns like this:\n\n```markdown\n<!-- souls:traits:start -->\n**An example, edited by hand.**\n<!-- souls:traits:end sha256=000000000000 -->\n```\n';
    const file = join(dir, 'SOUL.md');
    writeFileSync(file, `${ORIGINAL}\n${fenced}`);
    await addSack(db);
    const exit = await run(['export', 'Mira', '--out', file, '--db', db]);
    expect(exit.stderr).toBe('');
    expect(exit.code).toBe(0);
    const text = readFileSync(file, 'utf8');
    expect(text.endsWith(`\n${fenced}`)).toBe(true);
    expect(text).toContain('## Core Truths\n\n<!-- souls:traits:start -->\n');
    expect(text).toContain('**Keep a spare sack for the unexpected guest.**\n<!-- souls:traits:end sha256=');
  });
});
