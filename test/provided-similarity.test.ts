import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadParaphraseCorpus } from '../bench/paraphrase.ts';
import {
  clusterBy,
  closeSoulsDb,
  createSoul,
  DAY_MS,
  defaultClusteringThresholds,
  dropShard,
  dropShards,
  formatEvidence,
  getCrystallization,
  getEmbeddingDimension,
  getShardEmbeddings,
  listShards,
  manualClock,
  openSoulsDb,
  ValidationError,
  VECTOR_WEIGHT,
  type SoulsDb,
} from '../src/engine/index.ts';
import { encodeEmbedding, fallbackSimilarity, mixSimilarity } from '../src/engine/provided.ts';
import { lexicalSimilarity } from '../src/engine/lexical.ts';
import { freshDb, rejection } from './support/engine.ts';
import { serverPerTest } from './support/server.ts';

const T0 = Date.UTC(2026, 3, 1);
const THRESHOLD = defaultClusteringThresholds.provided;

/** A unit vector in the plane of the first two axes, at `degrees`, padded to `dimension`. */
function at(degrees: number, dimension = 8): number[] {
  const v = new Array(dimension).fill(0);
  v[0] = Math.cos((degrees * Math.PI) / 180);
  v[1] = Math.sin((degrees * Math.PI) / 180);
  return v;
}
const stored = (values: number[]) => {
  const bytes = encodeEmbedding('embedding', values);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4).slice();
};

async function soulIn(db: SoulsDb): Promise<number> {
  return (await createSoul(db, { name: 'Sable', essence: 'A coding agent.' })).id;
}

describe('embeddings on shards: validation', () => {
  it('refuses a vector of another dimension than the first stored one, naming the field, nothing written', async () => {
    const { db } = freshDb(T0, { similarity: 'provided' });
    const soul = await soulIn(db);
    expect(await getEmbeddingDimension(db)).toBeNull();
    await dropShard(db, 'Plain text, no vector.', 'chat', [soul]);
    await dropShard(db, 'The first vector fixes the dimension.', 'chat', [soul], { embedding: [1, 2, 3] });
    expect(await getEmbeddingDimension(db)).toBe(3);
    const error = await rejection(dropShard(db, 'Four numbers.', 'chat', [soul], { embedding: [1, 2, 3, 4] }), ValidationError);
    expect([error.field, error.message]).toEqual(['embedding', "must have 3 numbers, the dimension of this database's embeddings, got 4"]);
    expect((await listShards(db)).totalCount).toBe(2);
  });

  it('refuses a batch whose item has another dimension, naming the item, nothing written', async () => {
    const { db } = freshDb(T0);
    const soul = await soulIn(db);
    // The database has no dimension yet: the batch's first vector fixes it for the rest of the batch.
    const mixed = [
      { content: 'no vector', source: 'chat', soulIds: [soul] },
      { content: 'three', source: 'chat', soulIds: [soul], embedding: [0, 1, 0] },
      { content: 'two', source: 'chat', soulIds: [soul], embedding: [1, 0] },
    ];
    expect((await rejection(dropShards(db, mixed), ValidationError)).field).toBe('shards[2].embedding');
    expect((await rejection(dropShards(db, mixed, { field: 'inputs' }), ValidationError)).field).toBe('inputs[2].embedding');
    expect((await listShards(db)).totalCount).toBe(0);
    expect(await getEmbeddingDimension(db)).toBeNull();
    await dropShards(db, mixed.slice(0, 2));
    expect(await getEmbeddingDimension(db)).toBe(3);
    const later = [{ content: 'two again', source: 'chat', soulIds: [soul], embedding: [1, 0] }];
    expect((await rejection(dropShards(db, later), ValidationError)).field).toBe('shards[0].embedding');
    expect((await listShards(db)).totalCount).toBe(2);
  });

  it.each([
    ['NaN', [1, Number.NaN, 0], /finite numbers only; position 1/],
    ['Infinity', [Number.POSITIVE_INFINITY, 0], /finite numbers only; position 0/],
    ['a string', [1, '2' as unknown as number], /finite numbers only; position 1/],
    ['all zeros', [0, 0, 0], /must not be all zeros/],
    ['empty', [], /must not be empty/],
    ['too long', new Array(4097).fill(1), /at most 4096 numbers \(maxEmbeddingDimension\)/],
    ['not a list', 'vector' as unknown as number[], /must be a list of numbers/],
  ])('refuses %s, naming embedding, nothing written', async (_, embedding, message) => {
    const { db } = freshDb(T0);
    const soul = await soulIn(db);
    const error = await rejection(dropShard(db, 'An observation.', 'chat', [soul], { embedding }), ValidationError);
    expect(error.field).toBe('embedding');
    expect(error.message).toMatch(message);
    expect((await listShards(db)).totalCount).toBe(0);
    expect(await getEmbeddingDimension(db)).toBeNull();
  });

  it('bounds the dimension by the maxEmbeddingDimension setting', async () => {
    const { db } = freshDb(T0, { maxEmbeddingDimension: 2 });
    const soul = await soulIn(db);
    const error = await rejection(dropShard(db, 'Three numbers.', 'chat', [soul], { embedding: [1, 2, 3] }), ValidationError);
    expect([error.field, error.message]).toEqual(['embedding', 'must have at most 2 numbers (maxEmbeddingDimension), got 3']);
    await dropShard(db, 'Two numbers.', 'chat', [soul], { embedding: [1, 2] });
    expect(await getEmbeddingDimension(db)).toBe(2);
  });

  it('accepts the largest dimension and extreme but finite magnitudes', async () => {
    const { db } = freshDb(T0);
    const soul = await soulIn(db);
    const { shardId } = await dropShard(db, 'Wide.', 'chat', [soul], { embedding: new Array(4096).fill(1e300) });
    const vector = (await getShardEmbeddings(db, [shardId])).get(shardId)!;
    expect(vector).toHaveLength(db.settings.maxEmbeddingDimension);
    expect(vector[0]).toBeCloseTo(1 / 64, 7);
    expect([...stored([1e-300, 0, 1e-300])]).toEqual([...stored([1, 0, 1])]);
  });
});

describe('embeddings in the store', () => {
  const dir = mkdtempSync(join(tmpdir(), 'souls-provided-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('are stored L2-normalized as little-endian Float32, the same bytes every time, and round-trip through a file', async () => {
    const path = join(dir, 'round-trip.db');
    const clock = manualClock(T0);
    const db = openSoulsDb({ path, clock, settings: { similarity: 'provided' } });
    const soul = await soulIn(db);
    const a = await dropShard(db, 'Scaled.', 'chat', [soul], { embedding: [3, 0, 4] });
    const b = await dropShard(db, 'Scaled again.', 'chat', [soul], { embedding: [30, 0, 40] });
    const none = await dropShard(db, 'Without.', 'chat', [soul]);
    const raw = (db.store as unknown as { db: DatabaseSync }).db;
    const blob = (id: number) => (raw.prepare('SELECT embedding FROM soul_shards WHERE id = ?').get(id) as { embedding: Uint8Array | null }).embedding;
    const bytes = Buffer.from(blob(a.shardId)!);
    expect(bytes.equals(Buffer.from(blob(b.shardId)!))).toBe(true);
    expect(blob(none.shardId)).toBeNull();
    expect([bytes.readFloatLE(0), bytes.readFloatLE(4), bytes.readFloatLE(8)]).toEqual([Math.fround(0.6), 0, Math.fround(0.8)]);
    expect(Buffer.from(encodeEmbedding('embedding', [3, 0, 4])).equals(bytes)).toBe(true);
    closeSoulsDb(db);

    const again = openSoulsDb({ path, clock });
    const vectors = await getShardEmbeddings(again, [a.shardId, b.shardId, none.shardId]);
    expect([...vectors.keys()]).toEqual([a.shardId, b.shardId]);
    expect([...vectors.get(a.shardId)!]).toEqual([Math.fround(0.6), 0, Math.fround(0.8)]);
    expect(await getEmbeddingDimension(again)).toBe(3);
    closeSoulsDb(again);
  });
});

describe('the provided similarity', () => {
  const corpusTexts = loadParaphraseCorpus().records.map((r) => r.text);

  it('mixes the vectors’ cosine with lexical, and compares a pair lexically (on its scale) when a vector is missing', () => {
    const a = stored(at(0));
    const b = stored(at(60));
    expect(mixSimilarity(0.1, a, b)).toBeCloseTo(VECTOR_WEIGHT * 0.5 + (1 - VECTOR_WEIGHT) * 0.1, 6);
    // Opposite vectors count as unrelated, not as negative evidence.
    expect(mixSimilarity(0, a, stored(at(180)))).toBe(0);
    expect(mixSimilarity(0.1, a, null)).toBe(fallbackSimilarity(0.1));
    expect(fallbackSimilarity(defaultClusteringThresholds.lexical)).toBeCloseTo(THRESHOLD, 12);
  });

  it('puts a paraphrase with close vectors in one cluster though it shares no words, and a hard negative with distant vectors in two', () => {
    const texts = [
      'Greets every villager by name at the market.',
      'Knows what each townsperson is called and says hello.',
      'Writes far too many tests for every small change.',
      'Merged the change with no tests at all.',
    ];
    expect(lexicalSimilarity(texts[0], texts[1])).toBe(0);
    expect(lexicalSimilarity(texts[2], texts[3])).toBeGreaterThan(0.1);
    const vectors = [at(0), at(15), at(90), at(180)].map((v) => stored(v));
    expect(clusterBy('provided', texts, THRESHOLD, vectors)).toEqual([[0, 1], [2], [3]]);
    expect(clusterBy('lexical', texts, defaultClusteringThresholds.lexical)).not.toContainEqual([0, 1]);
  });

  it('resists chaining: A~B~C~D with A and D unrelated stay two clusters', () => {
    const texts = ['Lantern oil counted twice', 'Quarrelled with the ferryman', 'Sang during the harvest', 'Repaired every broken wheel'];
    const vectors = [0, 40, 95, 135].map((d) => stored(at(d)));
    const s = (i: number, j: number) => mixSimilarity(lexicalSimilarity(texts[i], texts[j]), vectors[i], vectors[j]);
    // Every link of the chain meets the threshold, so single linkage would make one cluster of all four.
    for (let i = 0; i + 1 < 4; i++) expect(s(i, i + 1)).toBeGreaterThanOrEqual(THRESHOLD);
    expect(Math.max(s(0, 2), s(1, 3), s(0, 3))).toBeLessThan(0.05);
    expect(clusterBy('provided', texts, THRESHOLD, vectors)).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });

  it('clusters shards without vectors exactly as lexical does (the whole corpus)', () => {
    expect(clusterBy('provided', corpusTexts, THRESHOLD)).toEqual(clusterBy('lexical', corpusTexts, defaultClusteringThresholds.lexical));
    expect(clusterBy('provided', corpusTexts, THRESHOLD, corpusTexts.map(() => null))).toEqual(clusterBy('lexical', corpusTexts, defaultClusteringThresholds.lexical));
  });

  it('is deterministic: the same shards and vectors give the same report, byte for byte', async () => {
    const reports: string[] = [];
    for (let run = 0; run < 2; run++) {
      const { db, clock } = freshDb(T0, { similarity: 'provided' });
      const soul = await soulIn(db);
      for (const [i, text] of corpusTexts.slice(0, 40).entries()) {
        // Every third shard without a vector: old and new shards mixed.
        const embedding = i % 3 === 0 ? undefined : at((i * 37) % 360, 16).map((v, k) => v + ((i * 7 + k) % 5) / 50);
        await dropShard(db, text, i % 2 ? 'chat' : 'review', [soul], { createdAt: T0 - (40 - i) * 3_600_000, embedding });
      }
      clock.advance(DAY_MS);
      reports.push(JSON.stringify(await formatEvidence(db, soul)));
    }
    expect(reports[0]).toBe(reports[1]);
    expect(JSON.parse(reports[0]).similarity).toMatchObject({ mode: 'provided', threshold: THRESHOLD, vectors: { model: 'provided' } });
  });

  it('drives the gate and the report: old shards without vectors and new ones with them, the gate’s count equal to clustering afresh', async () => {
    const { db, clock } = freshDb(T0, { similarity: 'provided' });
    const soul = await soulIn(db);
    const shards: Array<{ text: string; embedding?: number[] }> = [
      { text: 'Merged the pull request without running the test suite.' },
      { text: 'Skipped the tests and merged the pull request anyway.' },
      { text: 'Greets every villager by name at the market.', embedding: at(0) },
      { text: 'Knows what each townsperson is called and says hello.', embedding: at(10) },
      { text: 'Hums while sorting the ledgers at night.', embedding: at(90) },
    ];
    const ids: number[] = [];
    for (const [i, s] of shards.entries()) {
      ids.push((await dropShard(db, s.text, i % 2 ? 'chat' : 'review', [soul], { embedding: s.embedding })).shardId);
      clock.advance(DAY_MS);
      const crystallization = (await getCrystallization(db, [soul])).get(soul)!;
      if (crystallization.clusterCount === null) continue;
      const vectors = await getShardEmbeddings(db, ids);
      const expected = clusterBy('provided', shards.slice(0, i + 1).map((x) => x.text), THRESHOLD, ids.map((id) => vectors.get(id) ?? null));
      expect(crystallization.clusterCount).toBe(expected.length);
    }
    const report = await formatEvidence(db, soul);
    expect(report.clusters.map((c) => c.memberIds).sort()).toEqual([[ids[0], ids[1]], [ids[2], ids[3]], [ids[4]]].sort());
    expect(report.crystallization.ready).toBe(true);
  });
});

describe('provided through GraphQL', () => {
  const server = serverPerTest(afterEach);
  const DROP = `mutation($input: DropShardInput!) { dropShard(input: $input) { __typename ... on ValidationError { field message } } }`;
  const DROP_MANY = `mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on ValidationError { field message } } }`;

  it('takes embeddings on DropShardInput, refuses another dimension single and in a batch, and reports mode PROVIDED', async () => {
    const live = await server({ settings: { similarity: 'provided' }, start: T0 });
    const data = async (query: string, variables: Record<string, unknown> = {}) => {
      const { body } = await live.request(query, variables);
      expect(body.errors).toBeUndefined();
      return body.data;
    };
    const soulId = (await data('mutation { createSoul(input: { name: "Sable", essence: "A coding agent." }) { ... on SoulPayload { soul { id } } } }')).createSoul.soul.id;
    const texts = ['Greets every villager by name at the market.', 'Knows what each townsperson is called and says hello.', 'Hums while sorting the ledgers at night.'];
    const angles = [0, 10, 90];
    for (const [i, content] of texts.entries()) {
      expect((await data(DROP, { input: { content, source: i ? 'chat' : 'review', soulIds: [soulId], embedding: at(angles[i]) } })).dropShard.__typename).toBe('DropShardPayload');
      live.clock.advance(DAY_MS);
    }
    const message = "must have 8 numbers, the dimension of this database's embeddings, got 3";
    expect((await data(DROP, { input: { content: 'Short vector.', source: 'chat', soulIds: [soulId], embedding: [1, 0, 0] } })).dropShard).toEqual({
      __typename: 'ValidationError',
      field: 'input.embedding',
      message,
    });
    const batch = [
      { content: 'Fine.', source: 'chat', soulIds: [soulId], embedding: at(45) },
      { content: 'Short vector.', source: 'chat', soulIds: [soulId], embedding: [1, 0, 0] },
    ];
    expect((await data(DROP_MANY, { inputs: batch })).dropShards).toEqual({ __typename: 'ValidationError', field: 'inputs[1].embedding', message });
    expect((await data(DROP_MANY, { inputs: [{ ...batch[0], embedding: [0, 0, 0, 0, 0, 0, 0, 0] }] })).dropShards).toMatchObject({ field: 'inputs[0].embedding' });
    const result = await data(
      'query($id: ID!) { settings { similarity clusteringThreshold } shards { totalCount } soul(id: $id) { evidence { similarity { mode threshold } clusters { memberCount } } } }',
      { id: soulId },
    );
    expect(result.settings).toEqual({ similarity: 'PROVIDED', clusteringThreshold: THRESHOLD });
    expect(result.shards.totalCount).toBe(3);
    expect(result.soul.evidence.similarity).toEqual({ mode: 'PROVIDED', threshold: THRESHOLD });
    expect(result.soul.evidence.clusters.map((c: { memberCount: number }) => c.memberCount).sort()).toEqual([1, 2]);
  });
});
