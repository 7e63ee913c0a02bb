import { copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeSoulsDb, createSoul, dropShards, listShards, listSouls, openSoulsDb } from '../src/engine/index.ts';
import { cliRunner, expectNoStack } from './support/cli.ts';
import { mountSmallFilesystem } from './support/filesystem.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'souls-files-'));
});

const { cli, exited, printed, killAll } = cliRunner();
const mounts: Array<{ unmount(): void }> = [];
afterEach(() => {
  killAll();
  for (const mount of mounts.splice(0)) mount.unmount();
  rmSync(dir, { recursive: true, force: true });
});

function smallFilesystem(name: string, sizeKiB: number) {
  const mount = mountSmallFilesystem(join(dir, name), sizeKiB);
  mounts.push(mount);
  return { path: join(dir, name), ...mount };
}

async function graphql(url: string, query: string, variables?: unknown): Promise<any> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  return response.json();
}

async function databaseWithSoul(name: string): Promise<string> {
  const path = join(dir, `${name}.db`);
  const db = openSoulsDb({ path });
  await createSoul(db, { name, essence: 'Keeps the records.' });
  closeSoulsDb(db);
  return path;
}

/** Every entry under dir, recursively, so a test sees anything a command created. */
function entries(): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).sort();
}

describe('souls backup refuses what it cannot copy faithfully', { timeout: 30_000 }, () => {
  it('refuses a source database that does not exist, and creates nothing', async () => {
    const result = await exited(cli(['backup', join(dir, 'out.db'), '--db', join(dir, 'typo', 'typo.db')]));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`souls: no database at ${join(dir, 'typo', 'typo.db')} (--db): backup only reads an existing one; \`souls serve\` or \`souls seed-demo\` creates it\n`);
    expect(entries()).toEqual([]);
  });

  it('refuses an in-memory source or target: there is nothing to copy, or nowhere it would stay', async () => {
    const source = await databaseWithSoul('Ada');
    const before = entries();
    const toMemory = await exited(cli(['backup', ':memory:', '--db', source]));
    expect(toMemory.code).toBe(1);
    expect(toMemory.stderr).toBe('souls: backup target :memory: is not a file: name a file to write the copy to\n');
    const fromMemory = await exited(cli(['backup', join(dir, 'out.db'), '--db', ':memory:']));
    expect(fromMemory.code).toBe(1);
    expect(fromMemory.stderr).toBe('souls: an in-memory database (:memory:) has nothing to back up: give --db FILE\n');
    expect(entries()).toEqual(before);
  });

  it('refuses a symlinked target, dangling or not, and writes nothing through it', async () => {
    const source = await databaseWithSoul('Ada');
    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(elsewhere);
    const dangling = join(dir, 'dangling.db');
    symlinkSync(join(elsewhere, 'victim.db'), dangling);
    const result = await exited(cli(['backup', dangling, '--db', source]));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`souls: backup target ${dangling} is a symbolic link: name a new file\n`);
    expect(readdirSync(elsewhere)).toEqual([]);

    writeFileSync(join(elsewhere, 'existing.db'), 'keep me');
    const linked = join(dir, 'linked.db');
    symlinkSync(join(elsewhere, 'existing.db'), linked);
    const again = await exited(cli(['backup', linked, '--db', source]));
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`souls: backup target ${linked} is a symbolic link: name a new file\n`);
    expect(readdirSync(elsewhere)).toEqual(['existing.db']);
  });

  it('refuses a target whose folder does not exist, naming it', async () => {
    const source = await databaseWithSoul('Ada');
    const target = join(dir, 'missing', 'out.db');
    const result = await exited(cli(['backup', target, '--db', source]));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`souls: backup target folder ${join(dir, 'missing')} does not exist: create it first\n`);
    expectNoStack(result.stderr);
  });

  it('still copies an existing database without writing to it', async () => {
    const source = await databaseWithSoul('Ada');
    const before = entries();
    const target = join(dir, 'copy.db');
    const result = await exited(cli(['backup', target, '--db', source]));
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(entries()).toEqual([...before, 'copy.db'].sort());
    const copy = openSoulsDb({ path: target });
    expect((await listSouls(copy)).map((s) => s.name)).toEqual(['Ada']);
    closeSoulsDb(copy);
  });
});

describe('souls serve and unusable database files', { timeout: 60_000 }, () => {
  it('refuses a file with damaged pages at start, naming it and what quick_check found', async () => {
    const path = join(dir, 'damaged.db');
    const db = openSoulsDb({ path });
    const soul = await createSoul(db, { name: 'Ada', essence: 'Keeps the records.' });
    await dropShards(db, Array.from({ length: 300 }, (_, i) => ({ content: `Observation ${i} about the ledger`, source: 'review', soulIds: [soul.id] })));
    closeSoulsDb(db);
    // Garbage in the middle of every other page, the header left intact: SQLite opens the file and reads page 1 fine.
    const fd = openSync(path, 'r+');
    for (let page = 2; page < statSync(path).size / 4096; page += 2) writeSync(fd, Buffer.alloc(512, 0x5a), 0, 512, page * 4096 + 100);
    closeSync(fd);

    const result = await exited(cli(['serve', '--db', path, '--port', '0']));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`^souls: database ${path} is damaged \\(quick_check: .*page.*\\): restore it from a backup\n$`));
    expect(result.stdout).not.toMatch(/Souls API on/);
  });

  it('refuses a directory as the database, naming it', async () => {
    const result = await exited(cli(['serve', '--db', dir, '--port', '0']));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`souls: database ${dir} is a directory, not a file\n`);
  });

  it('refuses a database in a read-only location, naming the file and the reason', async () => {
    const disk = smallFilesystem('readonly', 1024);
    const existing = await (async () => {
      const path = join(disk.path, 'souls.db');
      const db = openSoulsDb({ path });
      await createSoul(db, { name: 'Ada', essence: 'Keeps the records.' });
      closeSoulsDb(db);
      return path;
    })();
    disk.remountReadOnly();
    const result = await exited(cli(['serve', '--db', existing, '--port', '0']));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`souls: database ${existing} cannot be written: the file is a read-only file system (EROFS)\n`);
    const fresh = join(disk.path, 'new.db');
    const again = await exited(cli(['serve', '--db', fresh, '--port', '0']));
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`souls: database ${fresh} cannot be written: its folder ${disk.path} is a read-only file system (EROFS)\n`);
  });

  it('answers STORAGE_FULL on a full disk, exits cleanly on SIGTERM saying the checkpoint was deferred, and loses no acknowledged write', async () => {
    const disk = smallFilesystem('tiny', 1024);
    const path = join(disk.path, 'souls.db');
    const server = cli(['serve', '--db', path, '--port', '0']);
    const url = (await printed(server, /Souls API on (http:\/\/\S+)/))[1];
    const created = await graphql(url, 'mutation { createSoul(input: { name: "Ada", essence: "Keeps the records." }) { ... on SoulPayload { soul { id } } } }');
    const soulId = created.data.createSoul.soul.id;
    const drop = 'mutation Drop($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { ... on DropShardsPayload { shards { id } } } }';
    const acknowledged: string[] = [];
    let refusal: any = null;
    for (let batch = 0; batch < 200 && refusal === null; batch++) {
      const inputs = Array.from({ length: 10 }, (_, k) => ({ content: `Batch ${batch} shard ${k}: ${'ledger '.repeat(300)}`, source: 'review', soulIds: [soulId] }));
      const result = await graphql(url, drop, { inputs });
      if (result.errors) refusal = result;
      else acknowledged.push(...result.data.dropShards.shards.map((s: { id: string }) => s.id));
    }
    expect(acknowledged.length).toBeGreaterThan(0);
    expect(refusal.errors).toEqual([
      expect.objectContaining({ message: 'the storage is full: nothing was written; retry once space has been freed', extensions: { code: 'STORAGE_FULL' } }),
    ]);
    // Reads still work on a full disk.
    const read = await graphql(url, `{ soul(id: "${soulId}") { shards { totalCount } } }`);
    expect(read.data.soul.shards.totalCount).toBe(acknowledged.length);

    server.process.kill('SIGTERM');
    const exit = await exited(server);
    expect(exit.code).toBe(0);
    expect(exit.stdout).toMatch(/Checkpoint deferred \(.*full.*\): the -wal file beside .* keeps every write and is applied on the next start\./);
    expect(exit.stderr).toMatch(new RegExp(`^STORAGE_FULL: database ${path}: the storage is full`));
    expectNoStack(exit.stderr);

    // The files as they are on the full disk, opened where there is room: every acknowledged shard is there.
    const copy = join(dir, 'copy');
    mkdirSync(copy);
    for (const file of readdirSync(disk.path)) copyFileSync(join(disk.path, file), join(copy, file));
    expect(existsSync(join(copy, 'souls.db-wal'))).toBe(true);
    const reopened = openSoulsDb({ path: join(copy, 'souls.db') });
    const page = await listShards(reopened, { first: 500 });
    expect(page.items.map((s) => String(s.id)).sort()).toEqual([...acknowledged].sort());
    closeSoulsDb(reopened);
  });
});
