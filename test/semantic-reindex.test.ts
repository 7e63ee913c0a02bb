import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadParaphraseCorpus } from '../bench/paraphrase.ts';
import { closeSoulsDb, createSoul, dropShards, openSoulsDb, SEMANTIC_DIMENSION } from '../src/engine/index.ts';
import { cliRunner, expectNoStack } from './support/cli.ts';

const { cli, exited, printed, killAll } = cliRunner({ startMs: 30_000, exitMs: 60_000 });
afterEach(() => killAll());

const dir = mkdtempSync(join(tmpdir(), 'souls-reindex-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PROVIDED = 3;

/** A database written in trigram mode (no vectors) with `count` shards, the first PROVIDED of them carrying a caller's 512-number vector. */
async function trigramDatabase(name: string, count: number): Promise<string> {
  const path = join(dir, name);
  const db = openSoulsDb({ path });
  const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
  const texts = loadParaphraseCorpus().records.map((r) => r.text);
  await dropShards(
    db,
    Array.from({ length: count }, (_, i) => ({
      content: `${texts[i % texts.length]} (${i})`,
      source: 'chat',
      soulIds: [soul.id],
      embedding: i < PROVIDED ? Array.from({ length: SEMANTIC_DIMENSION }, (_, k) => (k === i ? 1 : 0)) : undefined,
    })),
  );
  closeSoulsDb(db);
  return path;
}

function vectorRows(path: string): Array<{ id: number; bytes: number | null; first: number | null }> {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return (db.prepare('SELECT id, length(embedding) AS bytes, embedding FROM soul_shards ORDER BY id').all() as Array<{ id: number; bytes: number | null; embedding: Uint8Array | null }>).map(
      (r) => ({ id: Number(r.id), bytes: r.bytes === null ? null : Number(r.bytes), first: r.embedding === null ? null : new DataView(r.embedding.buffer, r.embedding.byteOffset).getFloat32(0, true) }),
    );
  } finally {
    db.close();
  }
}

describe('souls reindex', () => {
  it('killed mid-run keeps the batches it committed; run again, it finishes: one vector per shard, callers\' ones replaced by the model\'s', async () => {
    const count = 160;
    const path = await trigramDatabase('killed.db', count);
    const first = cli(['reindex', '--db', path, '--batch', '16']);
    // Killed once a progress line (on stderr) shows a committed batch (not the 0/… line).
    await printed(first, /Embedding shards \[[#.]+\] [1-9]\d*\/\d+/, 'stderr');
    expect(first.output().stderr).toContain('The database\'s vectors come from "provided": binding it to "use-lite-512"');
    first.process.kill('SIGKILL');
    expect((await exited(first)).signal).toBe('SIGKILL');

    const afterKill = vectorRows(path);
    const embedded = afterKill.filter((r) => r.bytes !== null).length;
    expect(embedded).toBeGreaterThan(0);
    expect(embedded).toBeLessThan(count);
    // Batches are committed whole: the shards with vectors are a prefix of the ids.
    expect(afterKill.findIndex((r) => r.bytes === null)).toBe(embedded);

    const second = await exited(cli(['reindex', '--db', path, '--batch', '16', '--json']));
    expect(second.code).toBe(0);
    const summary = JSON.parse(second.stdout);
    expect(summary).toEqual({ database: path, model: 'use-lite-512', replaced: 0, shardsWithoutVector: count - embedded, stored: count - embedded, skipped: 0, dimension: SEMANTIC_DIMENSION });
    const rows = vectorRows(path);
    expect(rows).toHaveLength(count);
    expect(rows.every((r) => r.bytes === SEMANTIC_DIMENSION * 4)).toBe(true);
    // The callers' vectors (unit vectors along axis i) were another model's: the encoder's replaced them.
    expect(rows.slice(0, PROVIDED).map((r) => r.first)).not.toEqual([1, 0, 0]);
    expect(metaValue(path, 'embedding_model')).toBe('use-lite-512');

    const third = await exited(cli(['reindex', '--db', path, '--json']));
    expect(JSON.parse(third.stdout)).toMatchObject({ shardsWithoutVector: 0, stored: 0 });
  }, 90_000);

  it('refuses a missing database (creating nothing), another similarity and a bad batch, with a message and no stack', async () => {
    const missing = join(dir, 'missing.db');
    const noDb = await exited(cli(['reindex', '--db', missing]));
    expect(noDb.code).toBe(1);
    expect(noDb.stderr).toContain(`no database at ${missing}`);
    expect(vectorRowsExist(missing)).toBe(false);
    const path = await trigramDatabase('refusals.db', 2);
    const lexical = await exited(cli(['reindex', '--db', path, '--similarity', 'lexical']));
    expect(lexical.code).toBe(1);
    expect(lexical.stderr).toContain('--similarity must be semantic, got lexical');
    const batch = await exited(cli(['reindex', '--db', path, '--batch', '0']));
    expect(batch.code).toBe(1);
    expect(batch.stderr).toContain('--batch must be a whole number');
    for (const run of [noDb, lexical, batch]) expectNoStack(run.stderr);
    expect(vectorRows(path).every((r) => r.bytes === null || r.id <= PROVIDED)).toBe(true);
  }, 30_000);
});

function metaValue(path: string, key: string): string | null {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return (db.prepare('SELECT value FROM souls_meta WHERE key = ?').get(key) as { value: string } | undefined)?.value ?? null;
  } finally {
    db.close();
  }
}

function vectorRowsExist(path: string): boolean {
  try {
    new DatabaseSync(path, { readOnly: true }).close();
    return true;
  } catch {
    return false;
  }
}
