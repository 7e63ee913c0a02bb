import { describe, expect, it } from 'vitest';
import { makeObservationCorpus, makeRng } from '../bench/corpus.ts';
import { ClusterMemo } from '../src/engine/cluster-memo.ts';
import { decodeEmbedding, encodeEmbedding, vectorCosine, VectorPairs } from '../src/engine/provided.ts';
import { clusterBy, defaultClusteringThresholds, DAY_MS, createSoul, dropShard, fadeExhaustedShards, addTrait, citeShard, getCrystallization, manualClock, openSoulsDb, revealShards } from '../src/engine/index.ts';
import { trigramSet } from '../src/engine/similarity.ts';
import { lexicalSimilarity } from '../src/engine/lexical.ts';
import { clusterTextsNaive as clusterTexts } from './support/naive-clustering.ts';

function texts(count: number, seed: number): string[] {
  const rng = makeRng(seed);
  const corpus = makeObservationCorpus(count, seed);
  // Short texts over a tiny alphabet make bridges and splits common.
  return corpus.map((t, i) => (i % 3 === 0 ? Array.from({ length: 3 + Math.floor(rng() * 6) }, () => 'abc'[Math.floor(rng() * 3)]).join('') : t));
}

describe('ClusterMemo', () => {
  it('counts exactly the clusters of the set asked about, through random additions and removals', async () => {
    for (const threshold of [0.2, 0.4, 0.7]) {
      const pool = texts(120, Math.round(threshold * 100));
      const memo = new ClusterMemo(threshold);
      const rng = makeRng(7);
      let current = new Set<number>();
      let loads = 0;
      for (let step = 0; step < 150; step++) {
        const next = new Set(current);
        const adds = Math.floor(rng() * 6);
        const removes = Math.floor(rng() * 4);
        for (let i = 0; i < adds; i++) next.add(1 + Math.floor(rng() * pool.length));
        for (let i = 0; i < removes && next.size > 0; i++) next.delete([...next][Math.floor(rng() * next.size)]);
        if (step % 50 === 49) next.clear();
        const ids = [...next].sort((a, b) => a - b);
        const count = await memo.clusterCount(1, ids, (missing) => {
          loads += missing.length;
          return new Map(missing.map((id) => [id, pool[id - 1]]));
        });
        const expected = clusterTexts(ids.map((id) => pool[id - 1]), threshold);
        expect(count).toBe(expected.length);
        if (step % 5 === 0) {
          const partition = await memo.partition(1, ids, () => new Map());
          expect(partition).toEqual(expected.map((cluster) => cluster.map((i) => ids[i])));
        }
        current = next;
      }
      expect(loads).toBeLessThanOrEqual(pool.length); // each text is loaded once, then remembered
    }
  });

  it('answers "still two clusters or more" only when it is so, through random additions and removals with no count between', async () => {
    for (const threshold of [0.2, 0.4, 0.7]) {
      const rng = makeRng(11);
      // Mostly short strings over two letters: sets often fall back to one cluster, and bridges are common.
      const pool = texts(120, Math.round(threshold * 100) + 1).map((t, i) => (i % 4 === 0 ? t : Array.from({ length: 3 + Math.floor(rng() * 5) }, () => 'ab'[Math.floor(rng() * 2)]).join('')));
      const contents = (missing: number[]) => new Map(missing.map((id) => [id, pool[id - 1]]));
      const memo = new ClusterMemo(threshold);
      let current = new Set<number>();
      const answered = { separated: 0, unknown: 0 };
      for (let step = 0; step < 300; step++) {
        const next = new Set(current);
        for (let i = Math.floor(rng() * 3); i > 0; i--) next.add(1 + Math.floor(rng() * pool.length));
        // Small sets, so that the count often falls back to one cluster.
        for (let i = Math.floor(rng() * (next.size > 5 ? 4 : 2)); i > 0 && next.size > 0; i--) next.delete([...next][Math.floor(rng() * next.size)]);
        const ids = [...next].sort((a, b) => a - b);
        const clusters = clusterTexts(ids.map((id) => pool[id - 1]), threshold).length;
        if (await memo.stillSeparated(1, ids, contents)) {
          answered.separated++;
          expect(clusters, `threshold ${threshold}, step ${step}`).toBeGreaterThanOrEqual(2);
        } else {
          answered.unknown++;
          // Only a count renews what it knows, as the write path does when it cannot tell.
          expect(await memo.clusterCount(1, ids, contents)).toBe(clusters);
        }
        current = next;
      }
      // Both ways were taken, most often the cheap one.
      expect(answered.unknown, `threshold ${threshold}`).toBeGreaterThan(0);
      expect(answered.separated, `threshold ${threshold}`).toBeGreaterThan(answered.unknown);
    }
  });

  it('does not vouch for a separation a new shard bridges, nor one whose side was removed', async () => {
    const pool = ['alpha beta gamma', 'zulu yankee xray', 'alpha beta gamma zulu yankee xray'];
    const contents = (missing: number[]) => new Map(missing.map((id) => [id, pool[id - 1]]));
    const memo = new ClusterMemo(0.3);
    expect(await memo.clusterCount(1, [1, 2], contents)).toBe(2);
    expect(await memo.stillSeparated(1, [1, 2], contents)).toBe(true);
    // Shard 3 is similar to both: one cluster.
    expect(await memo.stillSeparated(1, [1, 2, 3], contents)).toBe(false);
    expect(await memo.clusterCount(1, [1, 2, 3], contents)).toBe(1);
    expect(await memo.clusterCount(1, [1, 2], contents)).toBe(2);
    expect(await memo.stillSeparated(1, [1], contents)).toBe(false);
    expect(await memo.stillSeparated(1, [2], contents)).toBe(false);
  });

  it('stays exact past its byte budget: the least recently clustered souls are forgotten and rebuilt, their texts loaded again', async () => {
    const pool = texts(240, 9);
    // About thirty shards' worth of gram ids and texts, for six souls of up to forty shards each.
    const memo = new ClusterMemo(0.4, 30_000);
    const rng = makeRng(13);
    const sets = Array.from({ length: 6 }, () => new Set<number>());
    const seen = new Set<number>();
    let loads = 0;
    const load = (missing: number[]) => {
      loads += missing.length;
      return new Map(missing.map((id) => [id, pool[id - 1]]));
    };
    for (let step = 0; step < 240; step++) {
      const soul = Math.floor(rng() * sets.length);
      const set = sets[soul];
      for (let i = 1 + Math.floor(rng() * 3); i > 0; i--) set.add(1 + soul * 40 + Math.floor(rng() * 40));
      if (rng() < 0.3 && set.size > 2) set.delete([...set][Math.floor(rng() * set.size)]);
      const ids = [...set].sort((a, b) => a - b);
      for (const id of ids) seen.add(id);
      expect(await memo.clusterCount(soul, ids, load)).toBe(clusterTexts(ids.map((id) => pool[id - 1]), 0.4).length);
      if (step % 7 === 0) expect(await memo.partition(soul, ids, load)).toEqual(clusterTexts(ids.map((id) => pool[id - 1]), 0.4).map((cluster) => cluster.map((i) => ids[i])));
    }
    expect(loads).toBeGreaterThan(2 * seen.size); // what was forgotten was loaded again
  });

  it('stays exact when its trigram dictionary outgrows 16 bits and the gram ids it holds are widened', async () => {
    const rng = makeRng(21);
    // Greek and Cyrillic small letters: 57^3 possible trigrams, so random texts keep adding new ones.
    const letters = [...Array.from({ length: 25 }, (_, i) => 0x3b1 + i), ...Array.from({ length: 32 }, (_, i) => 0x430 + i)].map((code) => String.fromCodePoint(code));
    // Each text ends with its first letters again: some trigrams occur twice and count once.
    const random = () => {
      const text = Array.from({ length: 80 }, () => letters[Math.floor(rng() * letters.length)]).join('');
      return text + text.slice(0, 12);
    };
    const pool: string[] = [];
    while (pool.length < 2800) {
      const text = random();
      // Every other text has a twin, so that clusters form across the widening: from a near copy to a third of
      // the letters changed, so their similarities span the threshold and any error in a gram set shows.
      const changed = rng() * 0.3;
      const twin = [...text].map((c) => (rng() < changed ? letters[Math.floor(rng() * letters.length)] : c)).join('');
      pool.push(text, twin);
    }
    expect(new Set(pool.flatMap((text) => [...trigramSet(text)])).size).toBeGreaterThan(70_000);
    const memo = new ClusterMemo(0.4);
    const load = (missing: number[]) => new Map(missing.map((id) => [id, pool[id - 1]]));
    const sets = Array.from({ length: 4 }, () => [] as number[]);
    for (let next = 1; next <= pool.length; ) {
      const soul = Math.floor(rng() * sets.length);
      // Mostly new shards (the twins often land in other souls), and some of the soul's old ones dropped.
      const kept = sets[soul].filter(() => rng() < 0.85).slice(-120);
      for (let i = 0; i < 20 && next <= pool.length; i++) kept.push(next++);
      const ids = kept.sort((a, b) => a - b);
      sets[soul] = ids;
      const expected = clusterTexts(ids.map((id) => pool[id - 1]), 0.4);
      expect(await memo.clusterCount(soul, ids, load)).toBe(expected.length);
      expect(await memo.partition(soul, ids, load)).toEqual(expected.map((cluster) => cluster.map((i) => ids[i])));
    }
  });

  it('starts a large set with one bulk clustering and keeps souls apart', async () => {
    const pool = texts(200, 3);
    const memo = new ClusterMemo(0.4);
    const load = (missing: number[]) => new Map(missing.map((id) => [id, pool[id - 1]]));
    const a = Array.from({ length: 100 }, (_, i) => i + 1);
    const b = Array.from({ length: 60 }, (_, i) => i + 101);
    expect(await memo.clusterCount(1, a, load)).toBe(clusterTexts(pool.slice(0, 100), 0.4).length);
    expect(await memo.clusterCount(2, b, load)).toBe(clusterTexts(pool.slice(100, 160), 0.4).length);
    expect(await memo.clusterCount(1, a.slice(10), load)).toBe(clusterTexts(pool.slice(10, 100), 0.4).length);
  });
});

describe('the remembered partitions inside the engine', () => {
  it.each(['trigram', 'lexical'] as const)('give the same verdicts as a fresh handle after drops, reveals, fading and expiry (%s)', async (similarity) => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const db = openSoulsDb({ clock, settings: { shardExpiryDays: 20, similarity } });
    const rng = makeRng(11);
    const pool = texts(300, 5);
    const souls = [];
    for (let i = 0; i < 4; i++) souls.push((await createSoul(db, { name: `s${i}`, essence: 'e' })).id);
    // Two traits per soul: a trait cites only its own soul's shards (SPEC §12).
    const pairs = new Map<number, [number, number]>();
    for (const soulId of souls) {
      pairs.set(soulId, [(await addTrait(db, soulId, { principle: 'p', provenance: 'q' })).id, (await addTrait(db, soulId, { principle: 'p2', provenance: 'q2' })).id]);
    }
    const sealed: number[] = [];
    for (let step = 0; step < 300; step++) {
      clock.advance(Math.floor(rng() * 0.3 * DAY_MS));
      const soulIds = [souls[Math.floor(rng() * 4)], ...(rng() < 0.2 ? [souls[Math.floor(rng() * 4)]] : [])];
      const { shardId } = await dropShard(db, pool[step], ['a', 'b', 'c'][Math.floor(rng() * 3)], soulIds, { sealed: rng() < 0.1 });
      if (rng() < 0.1) sealed.push(shardId);
      if (rng() < 0.08) {
        const [trait, trait2] = pairs.get(soulIds[0])!;
        await citeShard(db, shardId, trait);
        await citeShard(db, shardId, trait2);
        await fadeExhaustedShards(db);
      }
      if (step % 40 === 39) await revealShards(db, sealed.splice(0));
      if (step % 10 === 0) {
        const remembered = await getCrystallization(db, souls);
        const fresh = await getCrystallization({ ...db, clusters: new ClusterMemo(db.settings.clusteringThreshold, undefined, similarity) }, souls);
        expect(remembered).toEqual(fresh);
      }
    }
  });
});

describe('ClusterMemo in the lexical and provided modes', () => {
  const pool = makeObservationCorpus(160, 21);
  // Vectors around a few directions, so that vector pairs are often close; every fifth shard has none.
  const rng = makeRng(5);
  const centres = Array.from({ length: 6 }, () => Array.from({ length: 8 }, () => rng() - 0.5));
  const stored = pool.map((_, i) => {
    if (i % 5 === 4) return null;
    const centre = centres[Math.floor(rng() * centres.length)];
    return decodeEmbedding(encodeEmbedding('embedding', centre.map((x) => x + (rng() - 0.5) * 0.3)));
  });
  const load = (missing: number[]) => new Map(missing.map((id) => [id, pool[id - 1]]));
  const loadVectors = (ids: number[]) => new Map(ids.flatMap((id) => (stored[id - 1] ? [[id, encodeEmbedding('embedding', Array.from(stored[id - 1]!))] as const] : [])));

  it.each([
    ['lexical', defaultClusteringThresholds.lexical],
    ['lexical', 0.2],
    ['provided', defaultClusteringThresholds.provided],
    ['provided', 0.5],
  ] as const)('%s at %s: the partition equals clustering afresh, whatever the order shards come and go in, for two souls', async (mode, threshold) => {
    const memo = new ClusterMemo(threshold, undefined, mode, loadVectors);
    const order = makeRng(Math.round(threshold * 1000));
    const sets = [new Set<number>(), new Set<number>()];
    for (let step = 0; step < 60; step++) {
      const soul = step % 2;
      const next = sets[soul];
      const adds = Math.floor(order() * (step < 6 ? 30 : 5));
      for (let i = 0; i < adds; i++) next.add(1 + Math.floor(order() * pool.length));
      for (let i = Math.floor(order() * 3); i > 0 && next.size > 0; i--) next.delete([...next][Math.floor(order() * next.size)]);
      const ids = [...next].sort((a, b) => a - b);
      const fresh = clusterBy(mode, ids.map((id) => pool[id - 1]), threshold, mode === 'provided' ? ids.map((id) => stored[id - 1]) : []);
      if (step % 3 === 0) await memo.prepare(soul, ids, load);
      expect(await memo.partition(soul, ids, load)).toEqual(fresh.map((cluster) => cluster.map((i) => ids[i])));
    }
  });

  it.each([
    ['lexical', defaultClusteringThresholds.lexical],
    ['lexical', 0.3],
    ['provided', defaultClusteringThresholds.provided],
    ['semantic', defaultClusteringThresholds.semantic],
  ] as const)('%s at %s: answers "two clusters or more" only when clustering afresh says so, and for nearly every such set, shards coming and going in random orders', (mode, threshold) => {
    // Half the pool repeats a few short texts with one vector, so that small sets often form a single cluster.
    const repeats = ['merge the branch', 'merge the branch today', 'review the branch', 'merge branch'];
    const texts = pool.map((t, i) => (i % 2 === 0 ? repeats[i % repeats.length] : t));
    const vectors = stored.map((v, i) => (i % 2 === 0 ? stored[0] : v));
    const contents = (missing: number[]) => new Map(missing.map((id) => [id, texts[id - 1]]));
    const embeddings = (ids: number[]) => new Map(ids.flatMap((id) => (vectors[id - 1] ? [[id, encodeEmbedding('embedding', Array.from(vectors[id - 1]!))] as const] : [])));
    for (const seed of [1, 2, 3]) {
      const memo = new ClusterMemo(threshold, undefined, mode, embeddings);
      const order = makeRng(seed);
      let current = new Set<number>();
      const answered = { separated: 0, several: 0, single: 0 };
      for (let step = 0; step < 120; step++) {
        const next = new Set(current);
        for (let i = Math.floor(order() * 4); i > 0; i--) next.add(1 + Math.floor(order() * texts.length));
        for (let i = Math.floor(order() * (next.size > 12 ? 5 : 2)); i > 0 && next.size > 0; i--) next.delete([...next][Math.floor(order() * next.size)]);
        const ids = [...next].sort((a, b) => a - b);
        const fresh = clusterBy(mode, ids.map((id) => texts[id - 1]), threshold, mode === 'lexical' ? [] : ids.map((id) => vectors[id - 1])).length;
        if (fresh >= 2) answered.several++;
        else answered.single++;
        if (memo.stillSeparated(7, ids, contents)) {
          answered.separated++;
          expect(fresh, `seed ${seed}, step ${step}`).toBeGreaterThanOrEqual(2);
        } else if (step % 4 === 0) expect(memo.clusterCount(7, ids, contents)).toBe(fresh);
        current = next;
      }
      expect(answered.single, `seed ${seed}`).toBeGreaterThan(0);
      expect(answered.separated, `seed ${seed}`).toBeGreaterThanOrEqual(0.9 * answered.several);
    }
  });

  it('answers "two clusters or more" for a pair exactly when it falls below the threshold (lexical, the boundary)', () => {
    const pair = ['merge the branch after review', 'review the branch before the merge'];
    const contents = (missing: number[]) => new Map(missing.map((id) => [id, pair[id - 1]]));
    const cosine = lexicalSimilarity(pair[0], pair[1]);
    expect(cosine).toBeGreaterThan(0);
    expect(new ClusterMemo(cosine, undefined, 'lexical').stillSeparated(1, [1, 2], contents)).toBe(false);
    expect(new ClusterMemo(cosine, undefined, 'lexical').clusterCount(1, [1, 2], contents)).toBe(1);
    expect(new ClusterMemo(cosine * (1 + 1e-6), undefined, 'lexical').stillSeparated(1, [1, 2], contents)).toBe(true);
    expect(new ClusterMemo(cosine * (1 + 1e-6), undefined, 'lexical').clusterCount(1, [1, 2], contents)).toBe(2);
  });

  it('keeps vector cosines equal to computing them afresh as shards take and free slots', () => {
    const pairs = new VectorPairs();
    const order = makeRng(9);
    let held: number[] = [];
    for (let step = 0; step < 40; step++) {
      const next = new Set(held.filter(() => order() > 0.2));
      for (let i = Math.floor(order() * 8); i > 0; i--) next.add(1 + Math.floor(order() * pool.length));
      held = [...next];
      pairs.sync(held, (id) => stored[id - 1]);
      for (const a of held) {
        for (const b of held) {
          if (a === b || !stored[a - 1] || !stored[b - 1]) continue;
          expect(pairs.cosine(pairs.slot(a), pairs.slot(b))).toBe(vectorCosine(stored[a - 1]!, stored[b - 1]!));
        }
      }
    }
  });
});
