import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { clusterMatrix, loadParaphraseCorpus } from '../bench/paraphrase.ts';
import { loadConfig } from '../src/server/config.ts';
import { ClusterMemo } from '../src/engine/cluster-memo.ts';
import {
  addTrait,
  awaitEmbeddings,
  clusterBy,
  createSoul,
  DAY_MS,
  defaultClusteringThresholds,
  dropShard,
  formatEvidence,
  getCrystallization,
  similarityModes,
  textSimilarity,
  ValidationError,
  type SimilarityMode,
} from '../src/engine/index.ts';
import { averageLinkageSteps, cosineMatrixSteps, dot, lexicalVectors, linkageSteps, squareLinkageSteps } from '../src/engine/lexical.ts';
import { ENGINE_WEIGHTING, weightedMatrix } from '../bench/lexical-variants.ts';
import { fallbackSimilarity, mixSimilarity } from '../src/engine/provided.ts';
import { semanticSimilarity } from '../src/engine/semantic-similarity.ts';
import { runSteps } from '../src/engine/slices.ts';
import { freshDb } from './support/engine.ts';
import { serverPerTest } from './support/server.ts';

const T0 = Date.UTC(2026, 2, 1);
const corpus = loadParaphraseCorpus();
const corpusTexts = corpus.records.map((r) => r.text);

/** Two tellings of one incident in different words, and two unrelated observations. */
const paraphrase = [
  'Merged the pull request without running the test suite.',
  'Skipped the tests and merged the PR anyway.',
  'Greets every villager by name at the market.',
  'Brewed a pot of coffee for the night shift.',
];

/** A chain: each text a near-duplicate of the next, the first and the last unrelated. */
const chain = [
  'The guard captain locked the north gate at dusk',
  'The guard captain locked the north gate at dawn, a scout said',
  'At dawn, a scout said, the north gate was locked with a lantern',
  'At dawn a scout said the marsh was lit with a lantern',
];

const clusterOf = (clusters: number[][], i: number) => clusters.findIndex((c) => c.includes(i));

describe.each(similarityModes)('similarity mode %s', (mode: SimilarityMode) => {
  const threshold = defaultClusteringThresholds[mode];

  it('is deterministic: two runs over the corpus give the same bytes', () => {
    expect(JSON.stringify(clusterBy(mode, corpusTexts, threshold))).toBe(JSON.stringify(clusterBy(mode, [...corpusTexts], threshold)));
    const sims = () => Float64Array.from(corpusTexts.slice(0, 40), (t, i) => textSimilarity(mode, t, corpusTexts[i + 1]));
    expect(Buffer.from(sims().buffer).equals(Buffer.from(sims().buffer))).toBe(true);
  });

  it('joins a pair exactly at its similarity and not above it (the threshold boundary)', () => {
    const [a, b] = paraphrase;
    // Provided and semantic mix the vectors' cosine (here 0.6) with lexical.
    const vectorMode = mode === 'provided' || mode === 'semantic';
    const vectors = vectorMode ? [Float32Array.of(1, 0), Float32Array.of(0.6, 0.8)] : [];
    const s = vectorMode ? mixSimilarity(textSimilarity(mode, a, b), vectors[0], vectors[1]) : textSimilarity(mode, a, b);
    expect(s).toBeLessThan(1);
    expect(s).toBeGreaterThan(0);
    expect(clusterBy(mode, [a, b], s, vectors)).toEqual([[0, 1]]);
    expect(clusterBy(mode, [a, b], Math.min(1, s * (1 + 1e-6)), vectors)).toEqual([[0], [1]]);
    if (vectorMode) {
      // Without vectors, provided and semantic cluster by lexical put on their own scale.
      const lexical = textSimilarity(mode, a, b);
      const fallback = mode === 'provided' ? fallbackSimilarity(lexical) : semanticSimilarity(lexical, null, null);
      expect(clusterBy(mode, [a, b], fallback)).toEqual([[0, 1]]);
      expect(clusterBy(mode, [a, b], fallback * (1 + 1e-6))).toEqual([[0], [1]]);
    }
  });

  it('keeps a hard negative apart at its default threshold (corpus: "writes no tests" vs "writes too many tests")', () => {
    const clusters = clusterBy(mode, corpusTexts, threshold);
    const label = (theme: string) => new Set(corpus.records.flatMap((r, i) => (r.theme === theme ? [clusterOf(clusters, i)] : [])));
    const none = label('no-tests');
    for (const c of label('over-tests')) expect(none.has(c)).toBe(false);
  });

  it('produces the same evidence report, byte for byte, from the same writes', async () => {
    const reports = [];
    for (let run = 0; run < 2; run++) {
      const { db, clock } = freshDb(T0, { similarity: mode });
      const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
      await addTrait(db, soul.id, { principle: 'Skips the test suite before merging changes', provenance: 'reviews' });
      for (const [i, record] of corpus.records.slice(0, 60).entries()) {
        await dropShard(db, record.text, record.source, [soul.id], { createdAt: T0 - (60 - i) * 3_600_000 });
      }
      clock.advance(DAY_MS);
      // Semantic vectors land after the writes; the report is compared once they have.
      await awaitEmbeddings(db);
      reports.push(JSON.stringify(await formatEvidence(db, soul.id)));
    }
    expect(reports[0]).toBe(reports[1]);
    const { vectors, ...similarity } = JSON.parse(reports[0]).similarity;
    expect(similarity).toEqual({ mode, threshold });
    // Every clustered shard: with a vector once semantic's have landed; provided shards here came without one.
    const expected = { trigram: [null, 0, 60], lexical: [null, 0, 60], provided: ['provided', 0, 60], semantic: ['use-lite-512', 60, 0] }[mode];
    expect([vectors.model, vectors.withVectors, vectors.without, vectors.pending]).toEqual([...expected, 0]);
  }, 30_000);
});

describe('lexical against trigram', () => {
  it('puts a paraphrase pair in one cluster under lexical and in two under trigram, at their defaults', () => {
    const lexical = clusterBy('lexical', paraphrase, defaultClusteringThresholds.lexical);
    const trigram = clusterBy('trigram', paraphrase, defaultClusteringThresholds.trigram);
    expect(clusterOf(lexical, 0)).toBe(clusterOf(lexical, 1));
    expect(lexical).toHaveLength(3);
    expect(trigram).toEqual([[0], [1], [2], [3]]);
  });

  it('keeps a hard negative apart under trigram at 0.4', () => {
    const pair = ['Writes far too many tests for every small change.', 'Merged the change with no tests at all.'];
    expect(clusterBy('trigram', pair, 0.4)).toEqual([[0], [1]]);
  });

  it("resists chaining: single linkage joins the ends of a chain, lexical's complete linkage does not (both at 0.4)", () => {
    for (let i = 0; i + 1 < chain.length; i++) expect(textSimilarity('trigram', chain[i], chain[i + 1])).toBeGreaterThanOrEqual(0.4);
    expect(textSimilarity('trigram', chain[0], chain[3])).toBeLessThan(0.2);
    expect(textSimilarity('lexical', chain[0], chain[3])).toBeLessThan(0.1);
    expect(clusterBy('trigram', chain, 0.4)).toEqual([[0, 1, 2, 3]]);
    // B~C is the closest pair; complete linkage then asks every pair of a merge to meet 0.4, which A–C and B–D do not.
    const lexical = clusterBy('lexical', chain, 0.4);
    expect(clusterOf(lexical, 0)).not.toBe(clusterOf(lexical, 3));
    expect(lexical).toEqual([[0], [1, 2], [3]]);
  });

  it('average and complete linkage on a pure chain of similarities split it where single linkage would not', () => {
    // A~B~C~D at 0.9, every other pair 0: average links {A,B} and {C,D} at (0 + 0 + 0.9 + 0) / 4.
    const n = 4;
    const matrix = new Float64Array((n * (n - 1)) / 2);
    const at = (i: number, j: number) => i * n - (i * (i + 1)) / 2 + (j - i - 1);
    for (let i = 0; i + 1 < n; i++) matrix[at(i, i + 1)] = 0.9;
    expect(runSteps(averageLinkageSteps(n, Float64Array.from(matrix), 0.5))).toEqual([[0, 1], [2, 3]]);
    expect(runSteps(averageLinkageSteps(n, Float64Array.from(matrix), 0.2))).toEqual([[0, 1, 2, 3]]);
    // Complete linkage joins {A,B} and {C,D} only when their worst pair (0) meets the threshold: never, above 0.
    expect(runSteps(linkageSteps(n, Float64Array.from(matrix), 0.2, 'complete'))).toEqual([[0, 1], [2, 3]]);
    expect(runSteps(linkageSteps(n, Float64Array.from(matrix), 0.01, 'complete'))).toEqual([[0, 1], [2, 3]]);
  });

  it.each(['average', 'complete'] as const)('%s linkage (nearest-neighbour chain) equals the greedy all-pairs merge on random similarities', (linkage) => {
    let seed = 7;
    const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    for (let round = 0; round < 40; round++) {
      const n = 2 + Math.floor(random() * 30);
      const full = new Float64Array(n * n);
      const condensed: number[] = [];
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          const s = random() < 0.5 ? 0 : random();
          full[i * n + j] = s;
          full[j * n + i] = s;
          condensed.push(s);
        }
      }
      const threshold = 0.1 + random() * 0.6;
      expect(runSteps(linkageSteps(n, Float64Array.from(condensed), threshold, linkage))).toEqual(clusterMatrix(full, n, threshold, linkage));
    }
  });

  it.each(['average', 'complete'] as const)('%s linkage over a full matrix leaves its diagonal unread, with links tied and at the threshold', (linkage) => {
    let seed = 11;
    const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    for (let round = 0; round < 40; round++) {
      const n = 2 + Math.floor(random() * 30);
      const condensed: number[] = [];
      // A self-similarity of 1 on the diagonal, above every link: a cluster must never be taken for its own nearest.
      const full = new Float64Array(n * n).fill(1);
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          const s = Math.floor(random() * 5) / 4;
          full[i * n + j] = s;
          full[j * n + i] = s;
          condensed.push(s);
        }
      }
      const threshold = [0.25, 0.5, 0.75][round % 3];
      expect(runSteps(squareLinkageSteps(n, full, threshold, linkage))).toEqual(runSteps(linkageSteps(n, Float64Array.from(condensed), threshold, linkage)));
    }
  });

  it("gives the cosines of the bench's independent reference vectorizer with the engine's weighting", () => {
    const texts = corpusTexts.slice(0, 60);
    const engine = runSteps(cosineMatrixSteps(lexicalVectors(texts)));
    const reference = weightedMatrix(texts, ENGINE_WEIGHTING);
    engine.forEach((x, k) => expect(Math.min(1, x)).toBeCloseTo(reference[k], 12));
  });

  it('weighs terms by their rarity in the pool being compared (smoothed IDF)', () => {
    // "gate" shared by more texts of the pool is commoner, so the same pair resembles each other less.
    const [a, b] = lexicalVectors(['gate scout', 'gate lantern']);
    const [c, d] = lexicalVectors(['gate scout', 'gate lantern', 'gate marsh', 'gate dusk']);
    expect(dot(a, b)).toBeGreaterThan(dot(c, d));
    expect(dot(c, d)).toBeGreaterThan(0);
    expect(dot(a, a)).toBeCloseTo(1, 12);
  });
});

describe('the remembered partition under lexical', () => {
  it('is always the partition of the set asked about, as shards come and go', () => {
    const threshold = defaultClusteringThresholds.lexical;
    const memo = new ClusterMemo(threshold, undefined, 'lexical');
    const texts = new Map(corpusTexts.slice(0, 80).map((t, i) => [i + 1, t]));
    const contents = (ids: number[]) => new Map(ids.map((id) => [id, texts.get(id)!]));
    const sets = [
      [1, 2, 3],
      [1, 2, 3, 4, 5, 6, 7, 8],
      [2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
      Array.from({ length: 60 }, (_, i) => i + 1),
      Array.from({ length: 59 }, (_, i) => i + 2),
      Array.from({ length: 80 }, (_, i) => i + 1),
    ];
    for (const ids of sets) {
      const expected = clusterBy('lexical', ids.map((id) => texts.get(id)!), threshold).map((c) => c.map((i) => ids[i]));
      expect(memo.partition(7, ids, contents)).toEqual(expected);
      expect(memo.clusterCount(7, ids, contents)).toBe(expected.length);
    }
  });

  it('gives the gate the same cluster count as clustering the pending shards afresh', async () => {
    const { db, clock } = freshDb(T0, { similarity: 'lexical' });
    const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
    const dropped: string[] = [];
    for (const record of corpus.records.slice(0, 30)) {
      await dropShard(db, record.text, record.source, [soul.id]);
      dropped.push(record.text);
      clock.advance(DAY_MS / 4);
      const crystallization = (await getCrystallization(db, [soul.id])).get(soul.id)!;
      if (crystallization.clusterCount !== null) {
        expect(crystallization.clusterCount).toBe(clusterBy('lexical', dropped, db.settings.clusteringThreshold).length);
      }
    }
  });
});

describe('alignment follows the mode', () => {
  const principle = 'Skips the test suite before merging changes';
  const retellings = ['Merged the pull request without running the test suite.', 'Skipped the tests and merged the pull request anyway.'];

  async function alignments(mode: SimilarityMode) {
    const { db, clock } = freshDb(T0, { similarity: mode });
    const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
    const trait = await addTrait(db, soul.id, { principle, provenance: 'reviews' });
    await dropShard(db, retellings[0], 'review', [soul.id]);
    clock.advance(2 * DAY_MS);
    await dropShard(db, retellings[1], 'chat', [soul.id]);
    const report = await formatEvidence(db, soul.id);
    return { trait, report };
  }

  it('labels two paraphrases of a trait REINFORCING under lexical', async () => {
    const { trait, report } = await alignments('lexical');
    expect(report.clusters).toHaveLength(1);
    expect(report.clusters[0].memberCount).toBe(2);
    expect(report.clusters[0].alignment).toMatchObject({ kind: 'REINFORCING', traitId: trait.id });
    expect(report.similarity).toMatchObject({ mode: 'lexical', threshold: defaultClusteringThresholds.lexical, vectors: { model: null, withVectors: 0 } });
  });

  it('labels them NOVEL, each a cluster of its own, under trigram', async () => {
    const { report } = await alignments('trigram');
    expect(report.clusters.map((c) => [c.memberCount, c.alignment.kind])).toEqual([
      [1, 'NOVEL'],
      [1, 'NOVEL'],
    ]);
    expect(report.similarity).toMatchObject({ mode: 'trigram', threshold: 0.4, vectors: { model: null, withVectors: 0 } });
  });

  const server = serverPerTest(afterEach);

  it.each(similarityModes)('shows the same through GraphQL (%s)', async (mode) => {
    const live = await server({ settings: { similarity: mode }, start: T0 });
    const data = async (query: string, variables: Record<string, unknown> = {}) => {
      const { body } = await live.request(query, variables);
      expect(body.errors).toBeUndefined();
      return body.data;
    };
    const soulId = (await data('mutation { createSoul(input: { name: "Sable", essence: "A coding agent." }) { ... on SoulPayload { soul { id } } } }')).createSoul.soul.id;
    const traitId = (
      await data('mutation($soulId: ID!, $p: String!) { addTrait(soulId: $soulId, input: { principle: $p, provenance: "reviews" }) { ... on TraitPayload { trait { id } } } }', {
        soulId,
        p: principle,
      })
    ).addTrait.trait.id;
    for (const [i, content] of retellings.entries()) {
      await data('mutation($input: DropShardInput!) { dropShard(input: $input) { __typename } }', {
        input: { content, source: i === 0 ? 'review' : 'chat', soulIds: [soulId] },
      });
      live.clock.advance(2 * DAY_MS);
    }
    const result = await data(
      'query($id: ID!) { settings { similarity clusteringThreshold } soul(id: $id) { evidence { similarity { mode threshold } clusters { memberCount alignment { kind trait { id } } } } } }',
      { id: soulId },
    );
    const threshold = defaultClusteringThresholds[mode];
    expect(result.settings).toEqual({ similarity: mode.toUpperCase(), clusteringThreshold: threshold });
    expect(result.soul.evidence.similarity).toEqual({ mode: mode.toUpperCase(), threshold });
    expect(result.soul.evidence.clusters).toEqual(
      mode !== 'trigram'
        ? [{ memberCount: 2, alignment: { kind: 'REINFORCING', trait: { id: traitId } } }]
        : [
            { memberCount: 1, alignment: { kind: 'NOVEL', trait: null } },
            { memberCount: 1, alignment: { kind: 'NOVEL', trait: null } },
          ],
    );
  });
});

describe('the similarity setting', () => {
  const dir = mkdtempSync(join(tmpdir(), 'souls-similarity-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('comes from the flag, the environment or the config file, in that precedence', () => {
    const file = join(dir, 'lexical.json');
    writeFileSync(file, JSON.stringify({ similarity: 'lexical' }));
    expect(loadConfig([], {}).settings).toMatchObject({ similarity: 'trigram', clusteringThreshold: 0.4 });
    expect(loadConfig(['--config', file], {}).settings).toMatchObject({ similarity: 'lexical', clusteringThreshold: defaultClusteringThresholds.lexical });
    expect(loadConfig(['--config', file], { SOULS_SIMILARITY: 'trigram' }).settings.similarity).toBe('trigram');
    expect(loadConfig(['--similarity', 'lexical', '--clustering-threshold', '0.2'], { SOULS_SIMILARITY: 'trigram' }).settings).toMatchObject({
      similarity: 'lexical',
      clusteringThreshold: 0.2,
    });
  });

  it.each([
    [['--similarity', 'neural'], {}, '--similarity'],
    [[], { SOULS_SIMILARITY: 'LEXICAL' }, 'SOULS_SIMILARITY'],
  ] as const)('refuses %j %j, naming %s', (argv, env, field) => {
    let error: unknown;
    try {
      loadConfig([...argv], { ...env });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe(field);
    expect((error as ValidationError).message).toMatch(/trigram, lexical/);
  });

  it('refuses a config file value that is not a mode, naming the file and key', () => {
    const file = join(dir, 'number.json');
    writeFileSync(file, JSON.stringify({ similarity: 3 }));
    expect(() => loadConfig(['--config', file], {})).toThrow(expect.objectContaining({ field: `${file} similarity` }));
  });
});
