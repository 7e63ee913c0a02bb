// SPEC §6 and §7 (turn 2): a revert gives back every row and the rendered block byte for byte,
// whatever the traits' ages, citation counts and the time between level-up and revert.
import { describe, expect, it } from 'vitest';
import {
  DAY_MS,
  addTrait,
  citeShard,
  createSoul,
  dropShard,
  fadeExhaustedShards,
  getShards,
  getSoul,
  levelUp,
  listTraits,
  renderSoul,
  reviseTrait,
  revertLevelUp,
  type LevelUpPlan,
  type SoulsDb,
} from '../src/engine/index.ts';
import { freshDb } from './support/engine.ts';
import { createRng } from './support/fuzz.ts';

const T0 = Date.UTC(2026, 0, 1);

/** Every row a level-up and its revert touch; only the timestamps that mean "last write" are left out. */
async function rows(db: SoulsDb, soulId: number, shardIds: readonly number[]) {
  const { updatedAt: _lastWrite, ...soul } = (await getSoul(db, soulId))!;
  const traits = await listTraits(db, soulId);
  const shards = [...(await getShards(db, shardIds)).values()].map(({ updatedAt: _touched, ...shard }) => shard).sort((a, b) => a.id - b.id);
  return { soul, traits, citations: await db.store.citationsOfTraits(traits.map((t) => t.id)), shards };
}

async function renders(db: SoulsDb, soulId: number) {
  return { lean: await renderSoul(db, soulId), full: await renderSoul(db, soulId, { includeProvenance: true }) };
}

/** The shared seeded generator, with n distinct picks; a failure names the seed that reproduces it. */
function random(seed: number) {
  const rng = createRng(seed);
  const pick = <T>(list: readonly T[], n: number): T[] => {
    const copy = [...list];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [copy[i], copy[j]] = [copy[j], copy[i]];
    }
    return copy.slice(0, n);
  };
  return { next: rng.next, int: rng.between, pick };
}

describe('a revert is exact', () => {
  it('restores the render order of traits created on different days with different citation counts (the reported case)', async () => {
    const { db, clock } = freshDb(T0);
    const soul = await createSoul(db, { name: 'Ada', essence: 'A careful engineer.' });
    const s = [];
    for (const note of ['first note', 'second note', 'third note']) s.push((await dropShard(db, note, 'chat', [soul.id])).shardId);
    const b = await addTrait(db, soul.id, { principle: 'B', provenance: 'p', citeShardIds: [s[0], s[1]] });
    clock.advance(10 * DAY_MS);
    const a = await addTrait(db, soul.id, { principle: 'A', provenance: 'p', citeShardIds: [s[2]] });
    const before = await renders(db, soul.id);
    expect(before.lean).toBe('# Ada\n\nA careful engineer.\n\n## Traits\n- A\n- B\n');
    const state = await rows(db, soul.id, s);

    clock.advance(15 * DAY_MS);
    await levelUp(db, soul.id, { newEssence: 'Grown.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [a.id, b.id] });
    // Measured at the level-up, B is the denser now (2/25 against 1/15).
    expect(await renderSoul(db, soul.id)).toBe('# Ada\n\nGrown.\n\n## Traits\n- B\n- A\n');
    await revertLevelUp(db, soul.id);

    expect(await renders(db, soul.id)).toEqual(before);
    expect(await rows(db, soul.id, s)).toEqual(state);
    // updatedAt still means the last write.
    expect((await getSoul(db, soul.id))!.updatedAt).toBe(clock.now());
  });

  // A bound of its own, for a hang only: 100 histories take seconds in memory, half a minute on PGlite at idle
  // (test/engine-on-postgres.test.ts) and over two minutes at load 15.
  it('restores every row and the block byte for byte over random trait ages, citation counts, plans and revert delays', async () => {
    const runs = 100;
    for (let seed = 1; seed <= runs; seed++) {
      const rng = random(seed);
      const { db, clock } = freshDb(T0);
      const soul = await createSoul(db, { name: `Soul ${seed}`, description: 'Randomized', essence: 'Changes with evidence.' });
      const shards: number[] = [];
      for (let i = 0; i < 14; i++) shards.push((await dropShard(db, `observation ${i} of seed ${seed}`, `source-${i % 3}`, [soul.id])).shardId);
      const traitIds: number[] = [];
      const traitCount = rng.int(2, 7);
      for (let i = 0; i < traitCount; i++) {
        clock.advance(rng.int(0, 20 * DAY_MS));
        const cites = rng.pick(shards, rng.int(0, 5));
        traitIds.push((await addTrait(db, soul.id, { principle: `Principle ${i} of seed ${seed}`, provenance: `seen ${i}`, citeShardIds: cites })).id);
      }
      if (rng.next() < 0.4) {
        clock.advance(rng.int(0, 5 * DAY_MS));
        await reviseTrait(db, rng.pick(traitIds, 1)[0], { principle: `Revised principle of seed ${seed}` });
      }
      // Maintenance first: shards exhausted before the level-up fade for good, whatever the revert does.
      await fadeExhaustedShards(db);
      clock.advance(rng.int(0, 3 * DAY_MS));
      const before = await rows(db, soul.id, shards);
      const block = await renders(db, soul.id);

      clock.advance(rng.int(1, 30 * DAY_MS));
      const order = rng.pick(traitIds, traitIds.length);
      const groups = rng.int(0, 2);
      const plan: LevelUpPlan = { newEssence: `Level one of seed ${seed}.`, consolidations: [], promotedTraitIds: [], carriedTraitIds: [] };
      const consolidations: number[][] = Array.from({ length: groups }, () => []);
      for (const id of order) {
        const where = rng.int(0, 2 + groups);
        if (where === 0) plan.carriedTraitIds = [...plan.carriedTraitIds, id];
        else if (where === 1) plan.promotedTraitIds = [...plan.promotedTraitIds, id];
        else if (where === 2) plan.carriedTraitIds = [...plan.carriedTraitIds, id];
        else consolidations[where - 3].push(id);
      }
      plan.consolidations = consolidations
        .filter((group) => group.length > 0)
        .map((sourceTraitIds, i) => ({ sourceTraitIds, mergedPrinciple: `Merged ${i} of seed ${seed}`, mergedProvenance: `merged ${i}` }));
      const { event } = await levelUp(db, soul.id, plan);
      // Each merged trait starts with the union of its sources' citations (SPEC §12).
      event.merged.forEach(async (merged, i) => {
        const sources = new Set(plan.consolidations[i].sourceTraitIds);
        const union = new Set(before.citations.filter((c) => sources.has(c.traitId)).map((c) => c.shardId));
        expect(new Set((await db.store.citationsOfTraits([merged])).map((c) => c.shardId)), `seed ${seed}`).toEqual(union);
      });
      // Evidence cited by the merged traits, which the revert takes back (and the shards it had faded).
      for (const merged of event.merged) for (const shardId of rng.pick(shards, rng.int(0, 4))) await citeShard(db, shardId, merged);
      if (rng.next() < 0.5) await fadeExhaustedShards(db);

      clock.advance(rng.next() < 0.25 ? 0 : rng.int(1, 30 * DAY_MS));
      // Half the reverts name the event; those are retry-safe, so a retry changes nothing.
      const byId = rng.next() < 0.5;
      await revertLevelUp(db, soul.id, byId ? event.id : null);
      if (byId) await expect(revertLevelUp(db, soul.id, event.id), `seed ${seed}`).rejects.toThrow(`level-up ${event.id} is already reverted`);
      expect(await renders(db, soul.id), `seed ${seed}`).toEqual(block);
      expect(await rows(db, soul.id, shards), `seed ${seed}`).toEqual(before);
    }
  }, 600_000);
});
