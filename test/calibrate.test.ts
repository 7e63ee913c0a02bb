// Calibration: the clustering threshold chosen from labelled data (a JSONL file's lines, or refiners' themes), stored
// per mode and vector model and dimension, and used when a database is opened without a clusteringThreshold.
import { describe, expect, it } from 'vitest';
import {
  InvalidStateError,
  ValidationError,
  assignThemes,
  calibrateThreshold,
  chooseThreshold,
  createSoul,
  defaultClusteringThresholds,
  dropShards,
  formatEvidence,
  getStoredCalibration,
  lexicalSimilarity,
  openSoulsDb,
  openSoulsDbAsync,
  maxLabelledLineLength,
  parseLabelledJsonl,
  readLabelledJsonl,
  resolveSettings,
  storeCalibration,
  storedThreshold,
  type SoulsDb,
} from '../src/engine/index.ts';
import { ENGINE_MODES, LEXICAL_SWEEP_THRESHOLDS, loadParaphraseCorpus, chooseThreshold as benchChoice, sweepThresholds } from '../bench/paraphrase.ts';
import { KNOWN_BEST_THRESHOLD, labelledJsonl, labelledVectors, WORDS } from './support/calibration.ts';
import { freshDb, rejection } from './support/engine.ts';

const T0 = Date.UTC(2026, 0, 1);

/** The same store opened again, as a server restarted on the database would open it. */
const reopen = (db: SoulsDb, settings: Record<string, unknown>) => openSoulsDbAsync({ store: db.store, clock: db.clock, settings });

/** A soul holding the labelled words as shards with their vectors (fixing the database's dimension at 22). */
async function soulWithVectors(db: SoulsDb, name = 'Sable') {
  const soul = await createSoul(db, { name, essence: 'A coding agent.' });
  const items = labelledVectors();
  const { shardIds } = await dropShards(db, items.map((item) => ({ content: item.text, source: 'chat', soulIds: [soul.id], embedding: item.embedding })));
  return { soul, items, shardIds };
}

describe('chooseThreshold (the bench\'s rule, shared)', () => {
  const row = (threshold: number, ari: number, largestCluster: number, hardNegativesMerged?: number) => ({ threshold, ari, largestCluster, hardNegativesMerged });
  const pick = (rows: ReturnType<typeof row>[], largest: number) => chooseThreshold(rows, largest, (r) => r).threshold;

  it('keeps the best ARI among thresholds whose largest cluster fits the largest label, else the best of all', () => {
    expect(pick([row(0.1, 0.9, 12), row(0.2, 0.7, 4), row(0.3, 0.5, 2)], 4)).toBe(0.2);
    expect(pick([row(0.1, 0.9, 12), row(0.2, 0.7, 5)], 4)).toBe(0.1);
  });

  it('compares ARI to three places; ties go to fewer hard negatives merged, then to the lowest threshold', () => {
    expect(pick([row(0.1, 0.8001, 3), row(0.2, 0.8004, 3)], 4)).toBe(0.1);
    expect(pick([row(0.1, 0.8, 3, 2), row(0.2, 0.8, 3, 0), row(0.3, 0.8, 3, 0)], 4)).toBe(0.2);
    expect(pick([row(0.1, 0.8, 3), row(0.2, 0.8006, 3)], 4)).toBe(0.2);
  });
});

describe('calibrateThreshold from a labelled set', () => {
  it('the fixture compares by vectors only: no two of its texts share a word or a 4-gram', () => {
    for (const a of WORDS) for (const b of WORDS) if (a !== b) expect(lexicalSimilarity(a, b)).toBe(0);
  });

  it('chooses the known-best threshold, reports the sweep, stores it for the mode and dimension, and the next open clusters at it', async () => {
    const { db } = freshDb(T0, { similarity: 'provided' });
    const { soul } = await soulWithVectors(db);
    expect(db.clusteringThresholdSource).toBe('default');
    const calibration = await calibrateThreshold(db, { labels: labelledVectors() });
    expect(calibration).toMatchObject({ mode: 'provided', key: 'provided:provided:22d', from: 'labels', texts: 12, labels: 3, largestLabel: 4, withVectors: 12 });
    expect(calibration.chosen).toEqual({ threshold: KNOWN_BEST_THRESHOLD, ari: 1, clusters: 3, largestCluster: 4 });
    const at = (t: number) => calibration.sweep.find((r) => r.threshold === t);
    expect(at(0.35)).toEqual({ threshold: 0.35, ari: 0, clusters: 1, largestCluster: 12 });
    expect(at(0.625)).toMatchObject({ clusters: 6, largestCluster: 2 });
    expect(at(0.625)!.ari).toBeLessThan(1);
    expect(at(0.75)).toEqual({ threshold: 0.75, ari: 0, clusters: 12, largestCluster: 1 });
    expect(calibration.current).toEqual({ threshold: defaultClusteringThresholds.provided, source: 'default' });
    expect(await getStoredCalibration(db)).toBeNull();

    expect(await storeCalibration(db, calibration)).toEqual({ threshold: KNOWN_BEST_THRESHOLD, ari: 1, from: 'labels', texts: 12, labels: 3, calibratedAt: T0 });
    const next = await reopen(db, { similarity: 'provided' });
    expect(next.settings.clusteringThreshold).toBe(KNOWN_BEST_THRESHOLD);
    expect(next.clusteringThresholdSource).toBe('calibrated');
    // Clustered at the calibrated threshold: the three labels, where the default (0.25) makes one cluster of all twelve.
    const report = await formatEvidence(next, soul.id);
    expect(report.similarity).toMatchObject({ mode: 'provided', threshold: KNOWN_BEST_THRESHOLD });
    expect(report.clusters.map((c) => c.memberCount)).toEqual([4, 4, 4]);
    expect((await formatEvidence(db, soul.id)).clusters.map((c) => c.memberCount)).toEqual([12]);
    expect(await getStoredCalibration(next)).toMatchObject({ threshold: KNOWN_BEST_THRESHOLD });
  });

  it('an explicit clusteringThreshold still wins; another mode keeps its own default', async () => {
    const { db } = freshDb(T0, { similarity: 'provided' });
    await soulWithVectors(db);
    await storeCalibration(db, await calibrateThreshold(db, { labels: labelledVectors() }));
    const set = await reopen(db, { similarity: 'provided', clusteringThreshold: 0.3 });
    expect([set.settings.clusteringThreshold, set.clusteringThresholdSource]).toEqual([0.3, 'setting']);
    const lexical = await reopen(db, { similarity: 'lexical' });
    expect([lexical.settings.clusteringThreshold, lexical.clusteringThresholdSource]).toEqual([defaultClusteringThresholds.lexical, 'default']);
    // Settings resolved once (a server's config) and handed to the open keep their threshold open to the calibration.
    const again = await reopen(db, (await reopen(db, { similarity: 'provided' })).settings);
    expect([again.settings.clusteringThreshold, again.clusteringThresholdSource]).toEqual([KNOWN_BEST_THRESHOLD, 'calibrated']);
    // Read first, as a store answering with promises needs: the same outcome, and a set threshold still wins.
    const read = await storedThreshold(db.store, resolveSettings({ similarity: 'provided' }));
    expect(read).toBe(KNOWN_BEST_THRESHOLD);
    expect(await storedThreshold(db.store, resolveSettings({ similarity: 'provided', clusteringThreshold: 0.3 }))).toBeNull();
    const given = await openSoulsDbAsync({ store: db.store, settings: { similarity: 'provided' }, calibratedThreshold: read });
    expect([given.settings.clusteringThreshold, given.clusteringThresholdSource]).toEqual([KNOWN_BEST_THRESHOLD, 'calibrated']);
    const givenButSet = await openSoulsDbAsync({ store: db.store, settings: { similarity: 'provided', clusteringThreshold: 0.3 }, calibratedThreshold: read });
    expect([givenButSet.settings.clusteringThreshold, givenButSet.clusteringThresholdSource]).toEqual([0.3, 'setting']);
  });

  it('a semantic calibration belongs to its model: another model of the same dimension clusters at the default', async () => {
    const { db } = freshDb(T0, { similarity: 'provided' });
    const { shardIds, items } = await soulWithVectors(db);
    const vectorsOf = async (model: string) => {
      await db.store.rebindEmbeddings(model);
      await db.store.storeEmbeddings(shardIds.map((id, i) => ({ id, embedding: new Uint8Array(new Float32Array(items[i].embedding!).buffer), contentHash: null })), model);
    };
    await vectorsOf('model-a');
    expect(await storedThreshold(db.store, resolveSettings({ similarity: 'semantic' }))).toBeNull();
    await db.store.putCalibration('semantic:model-a:22d', { threshold: 0.6, ari: 1, from: 'labels', texts: 12, labels: 3, calibratedAt: T0 });
    expect(await storedThreshold(db.store, resolveSettings({ similarity: 'semantic' }))).toBe(0.6);
    await vectorsOf('model-b');
    expect(await storedThreshold(db.store, resolveSettings({ similarity: 'semantic' }))).toBeNull();
    expect(await db.store.embeddingDimension()).toBe(22);
  });

  it('a vector of another dimension than the database\'s is refused, naming its line', async () => {
    const { db } = freshDb(T0, { similarity: 'provided' });
    await soulWithVectors(db);
    const items = labelledVectors();
    items[4] = { ...items[4], embedding: [...items[4].embedding!, 0.5] };
    const error = await rejection(calibrateThreshold(db, { labels: items }), ValidationError);
    expect(error).toMatchObject({ field: 'line 5.embedding' });
    expect(error.message).toMatch(/must have 22 numbers, the dimension of this database's embeddings, got 23/);
  });
});

describe('calibrateThreshold and the bench agree', () => {
  it('on the paraphrase corpus, lexical: the same sweep figures where the grids meet, and the bench\'s default', async () => {
    const corpus = loadParaphraseCorpus();
    const db = openSoulsDb({ settings: { similarity: 'lexical' } });
    const calibration = await calibrateThreshold(db, { labels: corpus.records.map((r) => ({ text: r.text, label: r.theme })) });
    const bench = sweepThresholds(corpus, ENGINE_MODES[1].cluster, LEXICAL_SWEEP_THRESHOLDS);
    const shared = bench.filter((row) => calibration.sweep.some((r) => r.threshold === row.threshold));
    expect(shared.length).toBeGreaterThan(10);
    for (const row of shared) {
      expect(calibration.sweep.find((r) => r.threshold === row.threshold)).toEqual({
        threshold: row.threshold,
        ari: Math.round(row.evaluation.ari * 1e6) / 1e6,
        clusters: row.evaluation.clusters,
        largestCluster: row.evaluation.largestCluster,
      });
    }
    expect(calibration.chosen.threshold).toBe(benchChoice(corpus, bench).threshold);
    expect(calibration.chosen.threshold).toBe(defaultClusteringThresholds.lexical);
  });
});

describe('calibrateThreshold from themes', () => {
  it('labels each soul\'s assigned shards with their theme, clusters each soul as the engine does, and ignores unassigned shards', async () => {
    const { db } = freshDb(T0, { similarity: 'provided' });
    const { soul, items, shardIds } = await soulWithVectors(db);
    const other = await createSoul(db, { name: 'Wren', essence: 'A second agent.' });
    // Labels 0 and 1 judged in Sable, label 2 in Wren (the same vectors dropped again there).
    const wren = await dropShards(db, items.slice(8).map((item) => ({ content: item.text, source: 'chat', soulIds: [other.id], embedding: item.embedding })));
    await assignThemes(db, soul.id, [
      { shardIds: shardIds.slice(0, 4), newThemeName: 'zero' },
      { shardIds: shardIds.slice(4, 8), newThemeName: 'one' },
    ]);
    await assignThemes(db, other.id, [{ shardIds: wren.shardIds, newThemeName: 'two' }]);
    // Sable's unjudged copies of label 2 would merge with nothing judged: they are not labels.
    const calibration = await calibrateThreshold(db);
    expect(calibration).toMatchObject({ from: 'themes', texts: 12, labels: 3, largestLabel: 4, key: 'provided:provided:22d' });
    expect(calibration.chosen).toEqual({ threshold: KNOWN_BEST_THRESHOLD, ari: 1, clusters: 3, largestCluster: 4 });
    // Below it, Sable's two themes merge into one cluster of 8 (Wren's four stay apart: another soul).
    expect(calibration.sweep.find((r) => r.threshold === 0.35)).toMatchObject({ clusters: 2, largestCluster: 8 });
  });

  it('too few themes is an error saying what is needed; without labels the default stands', async () => {
    const { db } = freshDb(T0, { similarity: 'lexical' });
    const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
    const none = await rejection(calibrateThreshold(db), InvalidStateError);
    expect(none.message).toMatch(/at least 10 shards assigned to themes in at least 2 themes of two or more; found 0 in 0/);
    const { shardIds } = await dropShards(db, WORDS.map((content) => ({ content, source: 'chat', soulIds: [soul.id] })));
    await assignThemes(db, soul.id, [{ shardIds, newThemeName: 'everything' }]);
    expect((await rejection(calibrateThreshold(db), InvalidStateError)).message).toMatch(/found 12 in 1 \(assign more/);
    expect((await reopen(db, { similarity: 'lexical' })).settings.clusteringThreshold).toBe(defaultClusteringThresholds.lexical);
  });
});

describe('labelled sets that cannot calibrate', () => {
  it('fewer than 10 texts or fewer than 2 labels of two or more', async () => {
    const { db } = freshDb(T0, { similarity: 'provided' });
    const items = labelledVectors();
    expect((await rejection(calibrateThreshold(db, { labels: items.slice(0, 9) }), InvalidStateError)).message).toMatch(/at least 10 labelled lines in at least 2 labels of two or more; found 9 in 2/);
    const oneLabel = items.map((item, i) => ({ ...item, label: i < 4 ? 'a' : null }));
    expect((await rejection(calibrateThreshold(db, { labels: oneLabel }), InvalidStateError)).message).toMatch(/found 12 in 1$/);
  });

  it('provided without a single vector, and a vector in a text-only mode', async () => {
    const { db } = freshDb(T0, { similarity: 'provided' });
    const bare = labelledVectors().map(({ text, label }) => ({ text, label }));
    expect((await rejection(calibrateThreshold(db, { labels: bare }), InvalidStateError)).message).toMatch(/give "embedding" on the lines/);
    const { db: lexical } = freshDb(T0, { similarity: 'lexical' });
    expect(await rejection(calibrateThreshold(lexical, { labels: labelledVectors() }), ValidationError)).toMatchObject({ field: 'line 1.embedding' });
  });
});

describe('parseLabelledJsonl', () => {
  const bounds = { maxShardContentBytes: 8192, maxEmbeddingDimension: 4096, maxClusteredShards: 2000 };

  it('reads one object a line, skipping blank lines; null labels are texts of their own', () => {
    const parsed = parseLabelledJsonl(`${labelledJsonl().trim()}\n\n{"text": "a loner", "label": null}\n`, bounds);
    expect(parsed).toHaveLength(13);
    expect(parsed[0]).toEqual(labelledVectors()[0]);
    expect(parsed[12]).toEqual({ text: 'a loner', label: null, embedding: null });
  });

  it('names the line of a malformed one, whatever is wrong with it', () => {
    const fail = (content: string) => {
      try {
        parseLabelledJsonl(content, bounds);
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        return { field: (error as ValidationError).field, message: (error as Error).message };
      }
      throw new Error('expected a refusal');
    };
    const good = '{"text": "a", "label": "x"}';
    expect(fail(`${good}\n${good}\n{"text": "b", "label": "x"\n`)).toMatchObject({ field: 'line 3', message: expect.stringMatching(/^is not JSON/) });
    expect(fail(`${good}\n[1, 2]\n`)).toEqual({ field: 'line 2', message: 'must be a JSON object with "text" and "label"' });
    expect(fail(`{"text": "a"}\n`)).toMatchObject({ field: 'line 1.label' });
    expect(fail(`{"label": "x"}\n`)).toMatchObject({ field: 'line 1.text' });
    expect(fail(`${good}\n{"text": "a", "label": "x", "theme": "y"}\n`)).toMatchObject({ field: 'line 2', message: expect.stringMatching(/unknown key "theme"/) });
    expect(fail(`${good}\n\n{"text": "a", "label": "x", "embedding": [0, 0]}\n`)).toMatchObject({ field: 'line 3.embedding', message: expect.stringMatching(/all zeros/) });
  });

  it('bounds the set by maxClusteredShards', () => {
    const line = '{"text": "a", "label": "x"}\n';
    expect(parseLabelledJsonl(line.repeat(2), { ...bounds, maxClusteredShards: 2 })).toHaveLength(2);
    expect(() => parseLabelledJsonl(line.repeat(3), { ...bounds, maxClusteredShards: 2 })).toThrow(expect.objectContaining({ field: 'line 3', message: expect.stringMatching(/at most 2 \(maxClusteredShards\)/) }));
  });
});

describe('readLabelledJsonl (a labelled file as a stream)', () => {
  const bounds = { maxShardContentBytes: 8192, maxEmbeddingDimension: 4096, maxClusteredShards: 2000 };

  /** Yields `chunk()` for ever (or until it returns null), counting the chunks the reader pulled. */
  function source(chunk: (i: number) => Uint8Array | string | null) {
    const pulled = { chunks: 0 };
    async function* chunks() {
      for (let i = 0; ; i++) {
        const next = chunk(i);
        if (next === null) return;
        pulled.chunks++;
        yield next;
      }
    }
    return { pulled, chunks: chunks() };
  }

  it('reads what parseLabelledJsonl reads, however the bytes are cut, a character of several bytes split included', async () => {
    const content = `${labelledJsonl().trim()}\n\n{"text": "déjà vu, 二度目 🙂", "label": null}\r\n{"text": "last", "label": "x"}`;
    const bytes = new TextEncoder().encode(content);
    for (const size of [1, 2, 3, 7, 64, bytes.length]) {
      const { chunks } = source((i) => (i * size < bytes.length ? bytes.subarray(i * size, (i + 1) * size) : null));
      expect(await readLabelledJsonl(chunks, bounds)).toEqual(parseLabelledJsonl(content, bounds));
    }
    expect((await readLabelledJsonl(source((i) => (i === 0 ? content : null)).chunks, bounds))[12]).toEqual({ text: 'déjà vu, 二度目 🙂', label: null, embedding: null });
  });

  it('stops reading at the labelled text past maxClusteredShards: the rest of an endless file is never pulled', async () => {
    const { pulled, chunks } = source((i) => `{"text": "observation ${i}", "label": "label ${i % 3}"}\n`);
    const refused = await rejection(readLabelledJsonl(chunks, { ...bounds, maxClusteredShards: 5 }), ValidationError);
    expect(refused).toMatchObject({ field: 'line 6', message: 'one labelled text too many: calibration clusters at most 5 (maxClusteredShards); the file is read no further' });
    expect(pulled.chunks).toBe(6);
  });

  it('stops at a bad line, and at a line longer than any text and vector need: a file without line breaks is never held whole', async () => {
    const bad = source((i) => (i === 3 ? '{"text": "b", "label": \n' : `{"text": "a ${i}", "label": "x"}\n`));
    expect(await rejection(readLabelledJsonl(bad.chunks, bounds), ValidationError)).toMatchObject({ field: 'line 4', message: expect.stringMatching(/^is not JSON/) });
    expect(bad.pulled.chunks).toBe(4);

    const longest = maxLabelledLineLength(bounds);
    expect(longest).toBe(8192 * 4 * 6 + 4096 * 32 + 1024);
    const block = 'x'.repeat(64 * 1024);
    const endless = source(() => block);
    const refused = await rejection(readLabelledJsonl(endless.chunks, bounds), ValidationError);
    expect(refused).toMatchObject({ field: 'line 1', message: `is longer than ${longest} characters, more than the longest text and vector need` });
    expect(endless.pulled.chunks).toBe(Math.floor(longest / block.length) + 1);
  });
});
