import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { loadParaphraseCorpus } from '../bench/paraphrase.ts';
import {
  addTrait,
  awaitEmbeddings,
  closeSoulsDb,
  clusterBy,
  createSoul,
  DAY_MS,
  defaultClusteringThresholds,
  dropShard,
  dropShards,
  formatEvidence,
  getCrystallization,
  getEmbeddingDimension,
  getShardEmbeddings,
  getShards,
  lexicalSimilarity,
  manualClock,
  openSoulsDb,
  resolveSettings,
  SEMANTIC_DIMENSION,
  stopSentenceEncoder,
  ValidationError,
  type SoulsDb,
} from '../src/engine/index.ts';
import { encodeEmbedding, decodeEmbedding } from '../src/engine/provided.ts';
import { sentenceEncoder } from '../src/engine/semantic.ts';
import { semanticSimilarity } from '../src/engine/semantic-similarity.ts';
import { freshDb, rejection } from './support/engine.ts';
import { serverPerTest } from './support/server.ts';
import { trackListeners } from './support/listeners.ts';
import { buildApp } from '../src/server/app.ts';

const T0 = Date.UTC(2026, 3, 1);
const THRESHOLD = defaultClusteringThresholds.semantic;

// Loading the model takes seconds on a busy machine.
vi.setConfig({ testTimeout: 30_000 });

// The encoder's worker runs while a semantic database is open: this one, open for the whole file, makes one
// loaded model serve every test (the last test closes it and checks the worker stops).
const keeper = freshDb(T0, { similarity: 'semantic' }).db;
afterAll(async () => {
  closeSoulsDb(keeper);
  await stopSentenceEncoder();
});

const open: SoulsDb[] = [];
function semanticDb(settings: Record<string, unknown> = {}) {
  const made = freshDb(T0, { similarity: 'semantic', ...settings });
  open.push(made.db);
  return made;
}
afterEach(() => {
  for (const db of open.splice(0)) closeSoulsDb(db);
});

/** Two texts sharing words ("dropped", "table") that mean different things, and a paraphrase of the first. */
const TABLE = 'The agent dropped the production table without a backup';
const TABLE_PARAPHRASE = 'The agent deleted the production database table with no backup first';
const INNKEEPER = 'The innkeeper dropped the table he was carrying';

/** Drops the texts for one soul, a day apart, from alternating sources; returns the soul and shard ids. */
/** A file database whose three shards were written under lexical (no vectors), reopened under semantic. */
async function writtenLexicallyThenSemantic() {
  const dir = mkdtempSync(join(tmpdir(), 'souls-semantic-'));
  const path = join(dir, 'souls.db');
  const clock = manualClock(T0);
  const lexical = openSoulsDb({ path, clock, settings: { similarity: 'lexical' } });
  const { soulId, shardIds } = await dropDaysApart(lexical, clock, [TABLE, INNKEEPER, TABLE_PARAPHRASE]);
  closeSoulsDb(lexical);
  return { dir, db: openSoulsDb({ path, clock, settings: { similarity: 'semantic' } }), soulId, shardIds };
}

async function dropDaysApart(db: SoulsDb, clock: ReturnType<typeof freshDb>['clock'], texts: readonly string[]) {
  const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
  const { shardIds } = await dropShards(
    db,
    texts.map((content, i) => ({ content, source: i % 2 ? 'chat' : 'review', soulIds: [soul.id], createdAt: clock.now() - (texts.length - i) * DAY_MS })),
  );
  return { soulId: soul.id, shardIds };
}

describe('semantic vectors', () => {
  it('are computed after the write, one normalized 512-number vector per shard, and fix the dimension', async () => {
    const { db, clock } = semanticDb();
    const { shardIds } = await dropDaysApart(db, clock, [TABLE, INNKEEPER]);
    const { shardId } = await dropShard(db, TABLE_PARAPHRASE, 'chat', [1]);
    await awaitEmbeddings(db);
    const vectors = await getShardEmbeddings(db, [...shardIds, shardId]);
    expect(vectors.size).toBe(3);
    for (const v of vectors.values()) {
      expect(v.length).toBe(SEMANTIC_DIMENSION);
      expect(Math.abs(Math.hypot(...v) - 1)).toBeLessThan(1e-5);
    }
    expect(await getEmbeddingDimension(db)).toBe(SEMANTIC_DIMENSION);
  });

  it('refuses a caller\'s embedding (another model\'s vector would be compared with the encoder\'s), writing nothing', async () => {
    const { db } = semanticDb();
    const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
    const single = await rejection(dropShard(db, TABLE, 'chat', [soul.id], { embedding: [1, 0, 0] }), ValidationError);
    expect(single.field).toBe('embedding');
    expect(single.message).toMatch(/similarity provided/);
    const batch = await rejection(dropShards(db, [{ content: TABLE, source: 'chat', soulIds: [soul.id] }, { content: INNKEEPER, source: 'chat', soulIds: [soul.id], embedding: [1] }]), ValidationError);
    expect(batch.field).toBe('shards[1].embedding');
    expect(await getShards(db, [1, 2])).toEqual(new Map());
  });

  it('is deterministic: two fresh databases, the same drops (one batch, or one by one), the same vectors and report bytes', async () => {
    const corpus = loadParaphraseCorpus();
    const records = corpus.records.filter((r) => ['no-tests', 'over-tests', 'too-verbose'].includes(r.theme ?? '')).concat(corpus.records.filter((r) => r.theme === null).slice(0, 6));
    // One by one, each vector is computed alone; in one batch, in requests of 16: a vector depends on its text only.
    const run = async (batched: boolean) => {
      const { db, clock } = semanticDb();
      const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
      const inputs = records.map((r, i) => ({ content: r.text, source: r.source, soulIds: [soul.id], createdAt: clock.now() - (records.length - i) * 3_600_000 }));
      if (batched) await dropShards(db, inputs);
      else {
        for (const input of inputs) {
          await dropShard(db, input.content, input.source, input.soulIds, input);
          await awaitEmbeddings(db);
        }
      }
      await awaitEmbeddings(db);
      const ids = Array.from({ length: records.length }, (_, i) => i + 1);
      const vectors = [...(await getShardEmbeddings(db, ids)).values()].map((v) => Buffer.from(v.buffer).toString('base64'));
      return { vectors, report: JSON.stringify(await formatEvidence(db, soul.id)) };
    };
    const first = await run(true);
    const second = await run(false);
    expect(first.vectors).toHaveLength(records.length);
    expect(second.vectors).toEqual(first.vectors);
    expect(second.report).toBe(first.report);
    const report = JSON.parse(first.report);
    expect(report.similarity).toMatchObject({ mode: 'semantic', threshold: THRESHOLD, vectors: { model: 'use-lite-512', pending: 0, reindexNeeded: false } });
    expect(report.clusters.length).toBeGreaterThan(1);
    expect(report.clusters.length).toBeLessThan(records.length);
  });

  it('the threshold boundary: a pair whose similarity equals the threshold is one cluster, just above it two', async () => {
    const { db, clock } = semanticDb();
    const { shardIds } = await dropDaysApart(db, clock, [TABLE, TABLE_PARAPHRASE]);
    await awaitEmbeddings(db);
    const vectors = await getShardEmbeddings(db, shardIds);
    const [a, b] = shardIds.map((id) => vectors.get(id)!);
    const exact = semanticSimilarity(lexicalSimilarity(TABLE, TABLE_PARAPHRASE), a, b);
    expect(exact).toBeGreaterThan(0.3);
    expect(clusterBy('semantic', [TABLE, TABLE_PARAPHRASE], exact, [a, b])).toEqual([[0, 1]]);
    expect(clusterBy('semantic', [TABLE, TABLE_PARAPHRASE], exact + 1e-6, [a, b])).toEqual([[0], [1]]);
  });

  it('a paraphrase joins its original; a text sharing its words but not its meaning stays apart (lexical alone merges it)', async () => {
    const { db, clock } = semanticDb();
    const { soulId } = await dropDaysApart(db, clock, [TABLE, INNKEEPER, TABLE_PARAPHRASE]);
    await awaitEmbeddings(db);
    const report = await formatEvidence(db, soulId);
    expect(report.clusters.map((c) => c.memberIds).sort((x, y) => x.length - y.length)).toEqual([[2], [1, 3]]);
    expect(clusterBy('lexical', [TABLE, INNKEEPER], defaultClusteringThresholds.lexical)).toEqual([[0, 1]]);
  });

  it('until a vector lands a shard is compared lexically, on semantic scale: a pool without vectors clusters as lexical does', () => {
    const texts = loadParaphraseCorpus().records.slice(0, 80).map((r) => r.text);
    expect(clusterBy('semantic', texts, THRESHOLD, texts.map(() => null))).toEqual(clusterBy('lexical', texts, defaultClusteringThresholds.lexical));
  });

  it('resists chaining: A~B~C~D with A and D unrelated is two clusters, not one', () => {
    // Unit vectors 25°, 30° and 35° apart: each neighbour pair is similar, A and D are orthogonal; the texts share no word.
    const at = (degrees: number) => decodeEmbedding(encodeEmbedding('embedding', [Math.cos((degrees * Math.PI) / 180), Math.sin((degrees * Math.PI) / 180)]));
    const texts = ['alpha apples', 'bravo bananas', 'charlie cherries', 'delta dates'];
    const vectors = [0, 25, 55, 90].map(at);
    for (const k of [0, 1, 2]) expect(semanticSimilarity(0, vectors[k], vectors[k + 1])).toBeGreaterThan(THRESHOLD);
    expect(semanticSimilarity(0, vectors[0], vectors[3])).toBeLessThan(1e-6);
    expect(clusterBy('semantic', texts, THRESHOLD, vectors)).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });
});

describe('semantic in the gate and the report', () => {
  it('vectors landing re-evaluate readiness: the soul becomes ready once, announced to onReady, not to the write', async () => {
    const { db, clock } = semanticDb();
    const texts = [TABLE, INNKEEPER, TABLE_PARAPHRASE];
    // Compared lexically (no vectors yet) the three are one cluster, so the two-cluster rule fails.
    expect(clusterBy('semantic', texts, THRESHOLD, [null, null, null])).toEqual([[0, 1, 2]]);
    const announced: number[][] = [];
    db.semantic!.onReady((ids) => announced.push(ids));
    const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
    const write = await dropShards(db, texts.map((content, i) => ({ content, source: i % 2 ? 'chat' : 'review', soulIds: [soul.id], createdAt: clock.now() - (3 - i) * DAY_MS })));
    await awaitEmbeddings(db);
    expect([...write.readySoulIds, ...announced.flat()]).toEqual([soul.id]);
    const verdict = (await getCrystallization(db, [soul.id])).get(soul.id)!;
    expect(verdict).toMatchObject({ ready: true, clusterCount: 2 });
  });

  it('shards stored without vectors (another mode) get them from the queue; the soul they make ready is announced', async () => {
    const { dir, db, soulId, shardIds } = await writtenLexicallyThenSemantic();
    try {
      open.push(db);
      expect((await getCrystallization(db, [soulId])).get(soulId)).toMatchObject({ ready: false, clusterCount: 1, unmet: ['MIN_CLUSTERS'] });
      const announced: number[][] = [];
      db.semantic!.onReady((ids) => announced.push(ids));
      db.semantic!.enqueue(shardIds);
      await awaitEmbeddings(db);
      expect(announced).toEqual([[soulId]]);
      expect((await getCrystallization(db, [soulId])).get(soulId)).toMatchObject({ ready: true, clusterCount: 2 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('two paraphrases of a trait are REINFORCING under semantic and NOVEL under trigram', async () => {
    const principle = 'Back up the production database before dropping any table.';
    const alignment = async (similarity: string) => {
      const { db, clock } = freshDb(T0, { similarity });
      open.push(db);
      const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
      const trait = await addTrait(db, soul.id, { principle, provenance: 'Lost a table in March.' });
      await dropShards(db, [TABLE, TABLE_PARAPHRASE].map((content, i) => ({ content, source: i ? 'chat' : 'review', soulIds: [soul.id], createdAt: clock.now() - (2 - i) * DAY_MS })));
      await awaitEmbeddings(db);
      const report = await formatEvidence(db, soul.id);
      return { trait: trait.id, clusters: report.clusters.map((c) => ({ size: c.memberCount, kind: c.alignment.kind, traitId: c.alignment.traitId })) };
    };
    const semantic = await alignment('semantic');
    expect(semantic.clusters).toEqual([{ size: 2, kind: 'REINFORCING', traitId: semantic.trait }]);
    const trigram = await alignment('trigram');
    expect(trigram.clusters.length).toBeGreaterThan(0);
    expect(trigram.clusters.every((c) => c.kind === 'NOVEL')).toBe(true);
  });


  it('settings: semantic is a similarity with its own default threshold', () => {
    expect(resolveSettings({ similarity: 'semantic' })).toMatchObject({ similarity: 'semantic', clusteringThreshold: THRESHOLD });
  });
});

describe('semantic through GraphQL', () => {
  const server = serverPerTest(afterEach);

  it('publishes crystallizationReady when landing vectors make a soul ready', async () => {
    const { dir, db, soulId, shardIds } = await writtenLexicallyThenSemantic();
    const app = buildApp({ db });
    try {
      const { url } = await app.start(0, '127.0.0.1');
      const listeners = trackListeners({ app });
      const client = createClient({ url: url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
      const events: unknown[] = [];
      client.subscribe({ query: 'subscription { crystallizationReady { soul { name } } }' }, { next: (r) => events.push(r.data), error: () => {}, complete: () => {} });
      await listeners.until('crystallizationReady', 1);
      db.semantic!.enqueue(shardIds);
      await awaitEmbeddings(db);
      await vi.waitFor(() => expect(events).toEqual([{ crystallizationReady: { soul: { name: 'Sable' } } }]));
      expect((await getCrystallization(db, [soulId])).get(soulId)!.ready).toBe(true);
      await client.dispose();
    } finally {
      await app.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports similarity { mode: SEMANTIC threshold } and the semantic clusters; the crossing vectors cause is published once', async () => {
    const live = await server({ settings: { similarity: 'semantic' }, start: T0 });
    const listeners = trackListeners(live);
    const client = createClient({ url: live.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    const events: Array<{ soul: { id: string } }> = [];
    const unsubscribe = client.subscribe(
      { query: 'subscription { crystallizationReady { soul { id } } }' },
      { next: (result) => events.push((result.data as { crystallizationReady: { soul: { id: string } } }).crystallizationReady), error: () => {}, complete: () => {} },
    );
    await listeners.until('crystallizationReady', 1);
    const data = async (query: string, variables: Record<string, unknown> = {}) => {
      const { body } = await live.request(query, variables);
      expect(body.errors).toBeUndefined();
      return body.data;
    };
    const soulId = (await data('mutation { createSoul(input: { name: "Sable", essence: "A coding agent." }) { ... on SoulPayload { soul { id } } } }')).createSoul.soul.id;
    for (const [i, content] of [TABLE, INNKEEPER, TABLE_PARAPHRASE].entries()) {
      const dropped = await data('mutation($input: DropShardInput!) { dropShard(input: $input) { __typename } }', { input: { content, source: i % 2 ? 'chat' : 'review', soulIds: [soulId] } });
      expect(dropped.dropShard.__typename).toBe('DropShardPayload');
      live.clock.advance(DAY_MS);
    }
    await awaitEmbeddings(live.app.db);
    const result = await data('query($id: ID!) { settings { similarity clusteringThreshold } soul(id: $id) { evidence { similarity { mode threshold } clusters { memberCount } } } }', { id: soulId });
    expect(result.settings).toEqual({ similarity: 'SEMANTIC', clusteringThreshold: THRESHOLD });
    expect(result.soul.evidence.similarity).toEqual({ mode: 'SEMANTIC', threshold: THRESHOLD });
    expect(result.soul.evidence.clusters.map((c: { memberCount: number }) => c.memberCount).sort()).toEqual([1, 2]);
    // Whether the last drop or its vectors landing made the soul ready, the crossing is announced exactly once.
    await vi.waitFor(() => expect(events).toEqual([{ soul: { id: soulId } }]));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(events).toHaveLength(1);
    unsubscribe();
    await client.dispose();
  });
});

describe('closing', () => {
  it('closing the last semantic database stops the worker cleanly: nothing is stored after close and waiting ends', async () => {
    const { db, clock } = freshDb(T0, { similarity: 'semantic' });
    await dropDaysApart(db, clock, [TABLE, INNKEEPER, TABLE_PARAPHRASE]);
    expect(sentenceEncoder.running).toBe(true);
    closeSoulsDb(keeper);
    expect(sentenceEncoder.running).toBe(true);
    closeSoulsDb(db);
    await expect(awaitEmbeddings(db)).resolves.toBeUndefined();
    expect(sentenceEncoder.running).toBe(false);
  });
});
