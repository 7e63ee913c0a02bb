import { describe, expect, it } from 'vitest';
import { makeObservationCorpus, makeRng } from '../bench/corpus.ts';
import { ClusterMemo } from '../src/engine/cluster-memo.ts';
import { DAY_MS, createSoul, dropShard, fadeExhaustedShards, addTrait, citeShard, getCrystallization, manualClock, openSoulsDb, revealShards } from '../src/engine/index.ts';
import { clusterTextsNaive as clusterTexts } from './support/naive-clustering.ts';

function texts(count: number, seed: number): string[] {
  const rng = makeRng(seed);
  const corpus = makeObservationCorpus(count, seed);
  // Short texts over a tiny alphabet make bridges and splits common.
  return corpus.map((t, i) => (i % 3 === 0 ? Array.from({ length: 3 + Math.floor(rng() * 6) }, () => 'abc'[Math.floor(rng() * 3)]).join('') : t));
}

describe('ClusterMemo', () => {
  it('counts exactly the clusters of the set asked about, through random additions and removals', () => {
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
        const count = memo.clusterCount(1, ids, (missing) => {
          loads += missing.length;
          return new Map(missing.map((id) => [id, pool[id - 1]]));
        });
        const expected = clusterTexts(ids.map((id) => pool[id - 1]), threshold);
        expect(count).toBe(expected.length);
        if (step % 5 === 0) {
          const partition = memo.partition(1, ids, () => new Map());
          expect(partition).toEqual(expected.map((cluster) => cluster.map((i) => ids[i])));
        }
        current = next;
      }
      expect(loads).toBeLessThanOrEqual(pool.length); // each text is loaded once, then remembered
    }
  });

  it('starts a large set with one bulk clustering and keeps souls apart', () => {
    const pool = texts(200, 3);
    const memo = new ClusterMemo(0.4);
    const load = (missing: number[]) => new Map(missing.map((id) => [id, pool[id - 1]]));
    const a = Array.from({ length: 100 }, (_, i) => i + 1);
    const b = Array.from({ length: 60 }, (_, i) => i + 101);
    expect(memo.clusterCount(1, a, load)).toBe(clusterTexts(pool.slice(0, 100), 0.4).length);
    expect(memo.clusterCount(2, b, load)).toBe(clusterTexts(pool.slice(100, 160), 0.4).length);
    expect(memo.clusterCount(1, a.slice(10), load)).toBe(clusterTexts(pool.slice(10, 100), 0.4).length);
  });
});

describe('the remembered partitions inside the engine', () => {
  it('give the same verdicts as a fresh handle after drops, reveals, fading and expiry', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const db = openSoulsDb({ clock, settings: { shardExpiryDays: 20 } });
    const rng = makeRng(11);
    const pool = texts(300, 5);
    const souls = [];
    for (let i = 0; i < 4; i++) souls.push((await createSoul(db, { name: `s${i}`, essence: 'e' })).id);
    const trait = await addTrait(db, souls[0], { principle: 'p', provenance: 'q' });
    const trait2 = await addTrait(db, souls[1], { principle: 'p2', provenance: 'q2' });
    const sealed: number[] = [];
    for (let step = 0; step < 300; step++) {
      clock.advance(Math.floor(rng() * 0.3 * DAY_MS));
      const soulIds = [souls[Math.floor(rng() * 4)], ...(rng() < 0.2 ? [souls[Math.floor(rng() * 4)]] : [])];
      const { shardId } = await dropShard(db, pool[step], ['a', 'b', 'c'][Math.floor(rng() * 3)], soulIds, { sealed: rng() < 0.1 });
      if (rng() < 0.1) sealed.push(shardId);
      if (rng() < 0.08) {
        await citeShard(db, shardId, trait.id);
        await citeShard(db, shardId, trait2.id);
        await fadeExhaustedShards(db);
      }
      if (step % 40 === 39) await revealShards(db, sealed.splice(0));
      if (step % 10 === 0) {
        const remembered = await getCrystallization(db, souls);
        const fresh = await getCrystallization({ ...db, clusters: new ClusterMemo(db.settings.clusteringThreshold) }, souls);
        expect(remembered).toEqual(fresh);
      }
    }
  });
});
