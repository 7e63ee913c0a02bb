// Issue 32 item 16: the evidence report says how many of its shards have vectors of the model the similarity compares,
// how many wait for theirs, and what the rest were compared with, naming `souls reindex` when some will never get
// one. Through the engine (JSON and markdown) and GraphQL over HTTP, with an embedder the test holds back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { awaitEmbeddings, closeSoulsDb, createSoul, DAY_MS, dropShard, formatEvidence, manualClock, openSoulsDb, reindexEmbeddings, type Embedder } from '../src/engine/index.ts';
import { startServer, type LiveServer } from './support/server.ts';

const T0 = Date.UTC(2026, 5, 1);
const MODEL = 'held-8';
const TEXTS = ['Counted the ledger twice before closing', 'Cooked a spicy curry for the whole crew', 'Sketched a floor plan for the library'];

/** An embedder whose calls wait until `release()`: 8-dimensional unit vectors drawn from each text's letters. */
function heldEmbedder(): Embedder & { release(): void } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const vector = (text: string) => {
    const v = new Float32Array(8);
    for (let i = 0; i < text.length; i++) v[i % 8] += text.charCodeAt(i);
    const norm = Math.hypot(...v);
    return new Uint8Array(v.map((x) => x / norm).buffer);
  };
  return { model: MODEL, batchSize: 8, concurrency: 1, release, embed: async (texts) => (await released, texts.map(vector)) };
}

const dirs: string[] = [];
const servers: LiveServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A database file whose soul got two shards while its similarity was lexical: they have no vector. */
async function writtenBeforeVectors(): Promise<{ path: string; soulId: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'souls-vectors-'));
  dirs.push(dir);
  const path = join(dir, 'souls.db');
  const clock = manualClock(T0);
  const db = openSoulsDb({ path, clock, settings: { similarity: 'lexical' } });
  const soul = await createSoul(db, { name: 'Vela', essence: 'Keeps the ledger.' });
  for (const [i, text] of TEXTS.slice(0, 2).entries()) await dropShard(db, text, i === 0 ? 'chat' : 'journal', [soul.id], { createdAt: T0 - (2 - i) * DAY_MS });
  closeSoulsDb(db);
  return { path, soulId: soul.id };
}

const reindex = 'are compared lexically and will get none until `souls reindex` (written before vectors were configured, or their embedding failed)';

describe('the report says what its clusters were compared with', () => {
  it('counts the shards with vectors, those waiting, and those that will get none until souls reindex', async () => {
    const { path, soulId } = await writtenBeforeVectors();
    const embedder = heldEmbedder();
    const db = openSoulsDb({ path, clock: manualClock(T0), settings: { similarity: 'semantic' }, embedder });
    try {
      const before = await formatEvidence(db, soulId);
      expect(before.similarity.vectors).toEqual({ model: MODEL, withVectors: 0, pending: 0, without: 2, reindexNeeded: true, message: `0 of the 2 clustered shards have vectors of ${MODEL}; 2 ${reindex}` });
      expect(before.markdown).toContain(`\nVectors (similarity semantic): 0 of the 2 clustered shards have vectors of ${MODEL}; 2 ${reindex}\n`);

      // A shard written now waits for its vector: it will land, no reindex needed for it.
      await dropShard(db, TEXTS[2], 'email', [soulId]);
      expect((await formatEvidence(db, soulId)).similarity.vectors).toMatchObject({ withVectors: 0, pending: 1, without: 2, reindexNeeded: true });
      expect((await formatEvidence(db, soulId)).markdown).toContain('; 1 waits for its vector (compared lexically until it lands); 2 are compared lexically');
      embedder.release();
      await awaitEmbeddings(db);
      expect((await formatEvidence(db, soulId)).similarity.vectors).toMatchObject({ withVectors: 1, pending: 0, without: 2, reindexNeeded: true });

      await reindexEmbeddings(db);
      const after = await formatEvidence(db, soulId);
      expect(after.similarity.vectors).toEqual({ model: MODEL, withVectors: 3, pending: 0, without: 0, reindexNeeded: false, message: `3 of the 3 clustered shards have vectors of ${MODEL}` });
    } finally {
      closeSoulsDb(db);
    }
  });

  it("in provided mode names callers' vectors and the shards that came without one; in trigram and lexical, no vectors and no line", async () => {
    const clock = manualClock(T0);
    const provided = openSoulsDb({ clock, settings: { similarity: 'provided' } });
    const soul = await createSoul(provided, { name: 'Pell', essence: 'e' });
    await dropShard(provided, TEXTS[0], 'chat', [soul.id], { embedding: [1, 0, 0] });
    await dropShard(provided, TEXTS[1], 'journal', [soul.id]);
    const report = await formatEvidence(provided, soul.id);
    expect(report.similarity.vectors).toEqual({ model: 'provided', withVectors: 1, pending: 0, without: 1, reindexNeeded: false, message: "1 of the 2 clustered shards has callers' vectors; 1 came without one and is compared lexically" });
    expect(report.markdown).toContain("\nVectors (similarity provided): 1 of the 2 clustered shards has callers' vectors; 1 came without one and is compared lexically\n");
    closeSoulsDb(provided);
    for (const mode of ['trigram', 'lexical'] as const) {
      const db = openSoulsDb({ clock, settings: { similarity: mode } });
      const id = (await createSoul(db, { name: 'Tam', essence: 'e' })).id;
      await dropShard(db, TEXTS[0], 'chat', [id]);
      const plain = await formatEvidence(db, id);
      expect(plain.similarity.vectors).toMatchObject({ model: null, withVectors: 0, without: 1, reindexNeeded: false });
      expect(plain.markdown).not.toContain('Vectors');
      closeSoulsDb(db);
    }
  });

  it('answers the same over GraphQL: EvidenceSimilarity carries the counts, the model, reindexNeeded and the words', async () => {
    const { path, soulId } = await writtenBeforeVectors();
    const embedder = heldEmbedder();
    embedder.release();
    const server = await startServer({ path, start: T0, settings: { similarity: 'semantic' }, embedder });
    servers.push(server);
    const similarity = async () =>
      (await server.data(`query($id: ID!) { soul(id: $id) { evidence { similarity { mode vectorModel shardsWithVectors vectorsPending shardsWithoutVectors reindexNeeded vectors } } } }`, { id: String(soulId) }))
        .soul.evidence.similarity;
    expect(await similarity()).toEqual({
      mode: 'SEMANTIC',
      vectorModel: MODEL,
      shardsWithVectors: 0,
      vectorsPending: 0,
      shardsWithoutVectors: 2,
      reindexNeeded: true,
      vectors: `0 of the 2 clustered shards have vectors of ${MODEL}; 2 ${reindex}`,
    });
  });
});
