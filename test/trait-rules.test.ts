// SPEC §12 (turn 3) rules on traits, citations and level-ups: no two active traits share a principle, a trait cites only
// its own soul's shards and can take a citation back, a merged trait carries its sources' citations, a revert with the
// event's id is retry-safe, and a level-up must change something.
import { describe, expect, it } from 'vitest';
import {
  DAY_MS,
  InvalidStateError,
  LevelUpPlanError,
  NotFoundError,
  ValidationError,
  addTrait,
  citeShard,
  citeShards,
  createSoul,
  dropShard,
  fadeExhaustedShards,
  getLevelHistory,
  getShard,
  getSoul,
  getTrait,
  levelUp,
  listTraits,
  previewLevelUp,
  previewTraitChanges,
  reactivateTrait,
  renderSoul,
  reviseTrait,
  revertLevelUp,
  revertTrait,
  unciteShard,
  unciteShards,
  type LevelUpPlan,
  type SoulsDb,
} from '../src/engine/index.ts';
import { freshDb, rejection } from './support/engine.ts';

const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;
const ESSENCE = 'A careful engineer who writes the tests first.';

async function setup(settings: Record<string, unknown> = {}) {
  const { clock, db } = freshDb(T0, settings);
  const ada = await createSoul(db, { name: 'Ada', essence: ESSENCE });
  const bo = await createSoul(db, { name: 'Bo', essence: 'A patient teacher.' });
  return { clock, db, ada, bo };
}

const add = (db: SoulsDb, soulId: number, principle: string, citeShardIds: number[] = []) => addTrait(db, soulId, { principle, provenance: `seen: ${principle}`, citeShardIds });

async function notes(db: SoulsDb, soulIds: number[], n: number, prefix: string): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push((await dropShard(db, `${prefix} note ${i + 1} about the work`, `source-${i % 2}`, soulIds)).shardId);
  return ids;
}

/** Everything a refused write could have touched, read back through the engine. */
async function state(db: SoulsDb, soulId: number) {
  const traits = await listTraits(db, soulId);
  return { soul: await getSoul(db, soulId), traits, citations: await db.store.citationsOfTraits(traits.map((t) => t.id)), history: await getLevelHistory(db, soulId) };
}

const sorted = (ids: Iterable<number>) => [...ids].sort((a, b) => a - b);

describe('an active principle is never duplicated', () => {
  it('refuses addTrait with the principle of an active trait (after text normalization), naming that trait; nothing written', async () => {
    const { db, ada, bo } = await setup();
    const first = await add(db, ada.id, 'Run the tests first');
    const before = await state(db, ada.id);
    for (const principle of ['Run the tests first', '  Run the\u200b tests first \n', 'Run the tests first\u2060']) {
      const error = await rejection(add(db, ada.id, principle), ValidationError);
      expect(error).toMatchObject({ field: 'principle', message: `active trait ${first.id} already has this principle` });
    }
    expect(await state(db, ada.id)).toEqual(before);
    // Another soul, a different case, or an inactive holder are no duplicates.
    await add(db, bo.id, 'Run the tests first');
    await add(db, ada.id, 'run the tests first');
    await revertTrait(db, first.id);
    expect((await add(db, ada.id, 'Run the tests first')).status).toBe('active');
  });

  it('refuses reviseTrait to another active trait\'s principle, and a dry run says so too', async () => {
    const { db, ada } = await setup();
    const a = await add(db, ada.id, 'Run the tests first');
    const b = await add(db, ada.id, 'Keep commits small');
    const before = await state(db, ada.id);
    const error = await rejection(reviseTrait(db, b.id, { principle: 'Run the tests first' }), ValidationError);
    expect(error).toMatchObject({ field: 'principle', message: `active trait ${a.id} already has this principle` });
    expect(await state(db, ada.id)).toEqual(before);
    const preview = await rejection(previewTraitChanges(db, ada.id, { revise: [{ traitId: b.id, principle: 'Run the tests first' }] }), ValidationError);
    expect(preview.field).toBe('revise[0].principle');
    const addPreview = await rejection(previewTraitChanges(db, ada.id, { add: [{ principle: 'Keep commits small', provenance: 'p' }] }), ValidationError);
    expect(addPreview).toMatchObject({ field: 'add[0].principle', message: `active trait ${b.id} already has this principle` });
    // Its own principle again is no duplicate (only its provenance changes).
    expect((await reviseTrait(db, a.id, { principle: 'Run the tests first', provenance: 'new' })).provenance).toBe('new');
  });

  it('refuses to reactivate a trait whose principle an active trait now has', async () => {
    const { db, ada } = await setup();
    const old = await add(db, ada.id, 'Run the tests first');
    await revertTrait(db, old.id);
    const again = await add(db, ada.id, 'Run the tests first');
    const error = await rejection(reactivateTrait(db, old.id), InvalidStateError);
    expect(error.message).toBe(`trait ${old.id} cannot be reactivated: active trait ${again.id} already has this principle`);
    expect((await getTrait(db, old.id))!.status).toBe('reverted');
  });

  it('refuses a level-up whose merged principle repeats a carried trait\'s or another merged one; a source\'s principle is fine', async () => {
    const { db, ada } = await setup();
    const a = await add(db, ada.id, 'Run the tests first');
    const b = await add(db, ada.id, 'Write the tests before the code');
    const c = await add(db, ada.id, 'Keep commits small');
    const d = await add(db, ada.id, 'Small commits, always');
    const before = await state(db, ada.id);
    const carriedRepeat: LevelUpPlan = {
      newEssence: 'Grown.',
      consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Keep commits small', mergedProvenance: 'p' }],
      promotedTraitIds: [],
      carriedTraitIds: [c.id, d.id],
    };
    const error = await rejection(levelUp(db, ada.id, carriedRepeat), LevelUpPlanError);
    expect(error.problems).toEqual([{ field: 'consolidations[0].mergedPrinciple', message: `is the principle of carried trait ${c.id}: two active traits would share it` }]);
    const mergedRepeat: LevelUpPlan = {
      newEssence: 'Grown.',
      consolidations: [
        { sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Tests and small commits', mergedProvenance: 'p' },
        { sourceTraitIds: [c.id, d.id], mergedPrinciple: 'Tests and small commits', mergedProvenance: 'p' },
      ],
      promotedTraitIds: [],
      carriedTraitIds: [],
    };
    expect((await rejection(levelUp(db, ada.id, mergedRepeat), LevelUpPlanError)).problems).toEqual([
      { field: 'consolidations[1].mergedPrinciple', message: 'is the principle of consolidations[0]: two active traits would share it' },
    ]);
    const preview = await previewLevelUp(db, ada.id, carriedRepeat);
    expect([preview.valid, preview.error?.problems.map((p) => p.field)]).toEqual([false, ['consolidations[0].mergedPrinciple']]);
    expect(await state(db, ada.id)).toEqual(before);
    // Keeping one source's wording, or a promoted trait's, is no duplicate: those leave the active list.
    const ok = await levelUp(db, ada.id, {
      newEssence: 'Grown; keeps commits small.',
      consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Run the tests first', mergedProvenance: 'p' }],
      promotedTraitIds: [c.id],
      carriedTraitIds: [d.id],
    });
    expect((await getTrait(db, ok.event.merged[0]))!.principle).toBe('Run the tests first');
  });
});

describe('citations belong to the trait\'s soul', () => {
  it('refuses to cite a shard not attributed to the trait\'s soul, naming both souls; nothing written', async () => {
    const { db, ada, bo } = await setup();
    const [own] = await notes(db, [ada.id], 1, 'own');
    const [foreign] = await notes(db, [bo.id], 1, 'foreign');
    const [shared] = await notes(db, [ada.id, bo.id], 1, 'shared');
    const t = await add(db, ada.id, 'Run the tests first', [own]);
    const before = await state(db, ada.id);
    const message = `shard ${foreign} is attributed to soul ${bo.id} (Bo), not to soul ${ada.id} (Ada), the soul of trait ${t.id}: a trait cites only its own soul's shards`;
    expect((await rejection(citeShard(db, foreign, t.id), InvalidStateError)).message).toBe(message);
    // A list with one foreign shard cites none of them.
    expect((await rejection(citeShards(db, t.id, [shared, foreign]), InvalidStateError)).message).toBe(message);
    const added = await rejection(add(db, ada.id, 'Keep commits small', [own, foreign]), ValidationError);
    expect(added).toMatchObject({
      field: 'citeShardIds',
      message: `shard ${foreign} is attributed to soul ${bo.id} (Bo), not to soul ${ada.id} (Ada), the soul of the new trait: a trait cites only its own soul's shards`,
    });
    const preview = await rejection(previewTraitChanges(db, ada.id, { add: [{ principle: 'Keep commits small', provenance: 'p', citeShardIds: [foreign] }] }), ValidationError);
    expect(preview.field).toBe('add[0].citeShardIds');
    expect(await state(db, ada.id)).toEqual(before);
    // A shard shared by both souls is the trait's soul's too.
    await citeShard(db, shared, t.id);
    expect(sorted((await db.store.citationsOfTraits([t.id])).map((c) => c.shardId))).toEqual(sorted([own, shared]));
  });

  it('says which shards of a cite list were new and which were already cited', async () => {
    const { db, ada } = await setup();
    const s = await notes(db, [ada.id], 3, 'cite');
    const t = await add(db, ada.id, 'Run the tests first', [s[0]]);
    const result = await citeShards(db, t.id, [s[2], s[0], s[1], s[2]]);
    expect([result.cited, result.alreadyCited]).toEqual([[s[2], s[1]], [s[0]]]);
    expect(sorted((await db.store.citationsOfTraits([t.id])).map((c) => c.shardId))).toEqual(s);
  });
});

describe('unciteShard', () => {
  it('takes a citation back, bumping the soul; refused (nothing written) when the trait does not cite the shard', async () => {
    const { db, clock, ada } = await setup();
    const s = await notes(db, [ada.id], 3, 'uncite');
    const t = await add(db, ada.id, 'Run the tests first', [s[0], s[1]]);
    clock.advance(HOUR);
    const { shard, trait, readySoulIds } = await unciteShard(db, s[0], t.id);
    expect([shard.id, trait.id, readySoulIds]).toEqual([s[0], t.id, []]);
    expect((await db.store.citationsOfTraits([t.id])).map((c) => c.shardId)).toEqual([s[1]]);
    expect((await getSoul(db, ada.id))!.updatedAt).toBe(clock.now());
    const before = await state(db, ada.id);
    clock.advance(HOUR);
    expect((await rejection(unciteShard(db, s[0], t.id), InvalidStateError)).message).toBe(`trait ${t.id} does not cite shard ${s[0]}: nothing to take back`);
    // All or nothing: s1 is cited, s2 is not.
    expect((await rejection(unciteShards(db, t.id, [s[1], s[2]]), InvalidStateError)).message).toBe(`trait ${t.id} does not cite shard ${s[2]}: nothing to take back`);
    await rejection(unciteShard(db, 9_999, t.id), NotFoundError);
    await rejection(unciteShard(db, s[1], 9_999), NotFoundError);
    expect(await state(db, ada.id)).toEqual(before);
    // A cite after an uncite is a cite like any other.
    await citeShard(db, s[0], t.id);
    expect(sorted((await db.store.citationsOfTraits([t.id])).map((c) => c.shardId))).toEqual([s[0], s[1]]);
  });

  it('un-fades a shard that falls below the fade threshold and reports the soul it makes ready', async () => {
    const { db, clock, ada } = await setup();
    // Three notes from two sources over two days, in two clusters: ready once all three count.
    const first = (await dropShard(db, 'Wrote the integration tests before touching the parser', 'review', [ada.id])).shardId;
    clock.advance(2 * DAY_MS);
    await dropShard(db, 'Prefers long walks after lunch on sunny days', 'chat', [ada.id]);
    await dropShard(db, 'Explains the database schema with hand-drawn maps', 'chat', [ada.id]);
    const a = await add(db, ada.id, 'Run the tests first', [first]);
    const b = await add(db, ada.id, 'Keep commits small', [first]);
    expect((await fadeExhaustedShards(db)).fadedCount).toBe(1);
    expect((await getShard(db, first))!.status).toBe('faded');
    const { readySoulIds } = await unciteShard(db, first, b.id);
    expect((await getShard(db, first))!.status).toBe('pending');
    expect(readySoulIds).toEqual([ada.id]);
    expect((await db.store.citationsOfTraits([a.id, b.id])).map((c) => c.traitId)).toEqual([a.id]);
  });

  it('refuses to take back a citation of a trait that is not active', async () => {
    const { db, ada } = await setup();
    const [s] = await notes(db, [ada.id], 1, 'inactive');
    const t = await add(db, ada.id, 'Run the tests first', [s]);
    await revertTrait(db, t.id);
    expect((await rejection(unciteShard(db, s, t.id), InvalidStateError)).message).toBe(`trait ${t.id} is reverted: only an active trait's citations can be taken back`);
    expect(await db.store.citationsOfTraits([t.id])).toHaveLength(1);
  });
});

describe('a merged trait carries its sources\' citations', () => {
  it('starts with the union of its sources\' citations (each shard once, at its first citation), ranks by them, and a revert removes them exactly', async () => {
    const { db, clock, ada } = await setup();
    const s = await notes(db, [ada.id], 12, 'merge');
    const a = await add(db, ada.id, 'Run the tests first', s.slice(0, 6));
    clock.advance(DAY_MS);
    const b = await add(db, ada.id, 'Write the tests before the code', [...s.slice(3, 6), ...s.slice(6, 11)]);
    const c = await add(db, ada.id, 'Keep commits small', [s[11]]);
    clock.advance(DAY_MS);
    const before = await state(db, ada.id);
    const block = await renderSoul(db, ada.id);
    const plan: LevelUpPlan = {
      newEssence: 'Grown.',
      consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Tests come first', mergedProvenance: 'a and b' }],
      promotedTraitIds: [],
      carriedTraitIds: [c.id],
    };
    const preview = await previewLevelUp(db, ada.id, plan);
    const { event } = await levelUp(db, ada.id, plan);
    const merged = event.merged[0];
    const carried = await db.store.citationsOfTraits([merged]);
    expect(carried).toHaveLength(11);
    expect(sorted(carried.map((c) => c.shardId))).toEqual(s.slice(0, 11));
    // The shards a and b both cited keep a's (earlier) citation time.
    expect(carried.filter((c) => c.createdAt === T0).map((c) => c.shardId)).toEqual(s.slice(0, 6));
    // The sources keep theirs, for the revert.
    expect(await db.store.citationsOfTraits([a.id, b.id])).toEqual(before.citations.filter((c) => c.traitId === a.id || c.traitId === b.id));
    // The preview ranked the merged trait by its carried citations, as the render does.
    expect(preview.after).toBe(await renderSoul(db, ada.id));
    // Carried citations are not a second use of the same evidence: only the three shards a and b both cited fade.
    expect((await fadeExhaustedShards(db)).fadedCount).toBe(3);
    expect((await Promise.all(s.map((id) => getShard(db, id)))).filter((x) => x!.status === 'faded').map((x) => x!.id)).toEqual(s.slice(3, 6));
    clock.advance(DAY_MS);
    await revertLevelUp(db, ada.id, event.id);
    expect(await db.store.citationsOfTraits([merged])).toEqual([]);
    const after = await state(db, ada.id);
    expect(after.citations).toEqual(before.citations);
    expect(after.traits.map(({ updatedAt: _u, ...t }) => t)).toEqual(before.traits.map(({ updatedAt: _u, ...t }) => t));
    expect(await renderSoul(db, ada.id)).toBe(block);
  });
});

describe('revertLevelUp with the event id', () => {
  async function twoLevelUps() {
    const env = await setup();
    const { db, clock, ada } = env;
    const a = await add(db, ada.id, 'Run the tests first');
    clock.advance(HOUR);
    const first = await levelUp(db, ada.id, { newEssence: 'Level one.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [a.id] });
    clock.advance(HOUR);
    const second = await levelUp(db, ada.id, { newEssence: 'Level two.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [a.id] });
    clock.advance(HOUR);
    return { ...env, a, first: first.event, second: second.event };
  }

  it('reverts that event once; a retry with the same id is refused as already reverted and the level-up before stays', async () => {
    const { db, ada, first, second } = await twoLevelUps();
    const reverted = await revertLevelUp(db, ada.id, second.id);
    expect([reverted.event.id, reverted.soul.level, reverted.soul.essence]).toEqual([second.id, 1, 'Level one.']);
    const before = await state(db, ada.id);
    const retry = await rejection(revertLevelUp(db, ada.id, second.id), InvalidStateError);
    expect(retry.message).toBe(`level-up ${second.id} is already reverted`);
    expect(await state(db, ada.id)).toEqual(before);
    expect((await getLevelHistory(db, ada.id)).map((e) => [e.id, e.revertedAt !== null])).toEqual([
      [first.id, false],
      [second.id, true],
    ]);
  });

  it('refuses an event that is not the latest unreverted one, another soul\'s, or none', async () => {
    const { db, ada, bo, first, second } = await twoLevelUps();
    const before = await state(db, ada.id);
    expect((await rejection(revertLevelUp(db, ada.id, first.id), InvalidStateError)).message).toBe(
      `level-up ${first.id} is not the latest of soul ${ada.id}: revert level-up ${second.id} first`,
    );
    expect((await rejection(revertLevelUp(db, bo.id, second.id), InvalidStateError)).message).toBe(`level-up ${second.id} is of soul ${ada.id}, not of soul ${bo.id}`);
    expect(await rejection(revertLevelUp(db, ada.id, 9_999), NotFoundError)).toMatchObject({ entity: 'LevelEvent', id: '9999' });
    expect(await state(db, ada.id)).toEqual(before);
  });

  it('without the id reverts the latest each time, as before (not retry-safe)', async () => {
    const { db, ada, first, second } = await twoLevelUps();
    expect((await revertLevelUp(db, ada.id)).event.id).toBe(second.id);
    expect((await revertLevelUp(db, ada.id)).event.id).toBe(first.id);
    expect((await getSoul(db, ada.id))!.level).toBe(0);
  });
});

describe('a level-up must change something', () => {
  it('refuses a plan that carries every trait with the same essence (after normalization), in the dry run too; nothing written', async () => {
    const { db, ada } = await setup();
    const a = await add(db, ada.id, 'Run the tests first');
    const b = await add(db, ada.id, 'Keep commits small');
    const before = await state(db, ada.id);
    const problem = { field: 'newEssence', message: 'the plan changes nothing (no consolidation, no promotion, the same essence): consolidate or promote traits, or give a new essence' };
    for (const newEssence of [ESSENCE, `  ${ESSENCE}\u200b `]) {
      const plan: LevelUpPlan = { newEssence, consolidations: [], promotedTraitIds: [], carriedTraitIds: [a.id, b.id] };
      const error = await rejection(levelUp(db, ada.id, plan), LevelUpPlanError);
      expect([error.missing, error.duplicated, error.notActive, error.problems]).toEqual([[], [], [], [problem]]);
      const preview = await previewLevelUp(db, ada.id, plan);
      expect([preview.valid, preview.after, preview.error?.problems]).toEqual([false, null, [problem]]);
    }
    // A soul without traits: the same essence changes nothing either.
    const empty = await createSoul(db, { name: 'Cy', essence: 'Quiet.' });
    expect((await rejection(levelUp(db, empty.id, { newEssence: 'Quiet.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [] }), LevelUpPlanError)).problems).toEqual([problem]);
    expect(await state(db, ada.id)).toEqual(before);
    // Any one change is enough: a new essence, a promotion, or a consolidation.
    expect((await previewLevelUp(db, ada.id, { newEssence: 'Grown.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [a.id, b.id] })).valid).toBe(true);
    expect((await previewLevelUp(db, ada.id, { newEssence: ESSENCE, consolidations: [], promotedTraitIds: [a.id], carriedTraitIds: [b.id] })).valid).toBe(true);
    expect(
      (await previewLevelUp(db, ada.id, { newEssence: ESSENCE, consolidations: [{ sourceTraitIds: [a.id], mergedPrinciple: 'Tests first', mergedProvenance: 'p' }], promotedTraitIds: [], carriedTraitIds: [b.id] })).valid,
    ).toBe(true);
  });
});
