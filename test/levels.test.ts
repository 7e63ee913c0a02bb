import { describe, expect, it } from 'vitest';
import {
  DAY_MS,
  InvalidStateError,
  LevelUpPlanError,
  NotFoundError,
  addTrait,
  citeShard,
  countActiveTraits,
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
  reactivateTrait,
  renderSoul,
  retireSoul,
  revertLevelUp,
  revertTrait,
  similarity,
  type LevelUpPlan,
  type Shard,
  type Soul,
  type SoulsDb,
  type Trait,
} from '../src/engine/index.ts';
import { freshDb } from './support/engine.ts';

const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;
const ESSENCE = 'A careful engineer who writes the tests first and keeps commits small.';

async function setup(settings: Record<string, unknown> = {}) {
  const { clock, db } = freshDb(T0, settings);
  const soul = await createSoul(db, { name: 'Ada', essence: ESSENCE, description: 'Backend engineer' });
  return { clock, db, soul };
}

async function trait(db: SoulsDb, soulId: number, principle: string, citeShardIds: number[] = []): Promise<Trait> {
  return addTrait(db, soulId, { principle, provenance: `seen in review of "${principle}"`, citeShardIds });
}

async function shards(db: SoulsDb, soulId: number, n: number, prefix = 'Observation'): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push((await dropShard(db, `${prefix} number ${i + 1} about the work`, `source-${i % 3}`, [soulId])).shardId);
  return ids;
}

type Snapshot = {
  soul: Soul | null;
  traits: Trait[];
  citations: ReturnType<SoulsDb['store']['citationsOfTraits']>;
  shards: Array<Shard | null>;
  history: Awaited<ReturnType<typeof getLevelHistory>>;
};

/** Every row of the soul that a level-up or its revert may touch, read back through the API. */
async function snapshot(db: SoulsDb, soulId: number, shardIds: readonly number[], extraTraitIds: readonly number[] = []): Promise<Snapshot> {
  const traits = await listTraits(db, soulId);
  return {
    soul: await getSoul(db, soulId),
    traits,
    citations: await db.store.citationsOfTraits([...traits.map((t) => t.id), ...extraTraitIds]),
    shards: await Promise.all(shardIds.map((id) => getShard(db, id))),
    history: await getLevelHistory(db, soulId),
  };
}

/** The same snapshot with timestamps that writes bump (updatedAt, revertedAt) left out. */
function withoutTimestamps(s: Snapshot) {
  const strip = <T extends { updatedAt: number }>(row: T | null) => {
    if (row === null) return null;
    const { updatedAt: _ignored, ...rest } = row;
    return rest;
  };
  return {
    soul: strip(s.soul),
    traits: s.traits.map(strip),
    citations: s.citations,
    shards: s.shards.map(strip),
  };
}

async function expectPlanError(promise: Promise<unknown>): Promise<LevelUpPlanError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LevelUpPlanError);
  return error as LevelUpPlanError;
}

describe('level-up plan validation', () => {
  async function fixture() {
    const env = await setup();
    const { db, soul, clock } = env;
    const a = await trait(db, soul.id, 'Always write the tests before the code');
    const b = await trait(db, soul.id, 'Write tests before writing any code');
    const c = await trait(db, soul.id, 'Keep every commit small and focused');
    const reverted = await trait(db, soul.id, 'Deploy on Fridays');
    await revertTrait(db, reverted.id);
    const other = await createSoul(db, { name: 'Grace', essence: 'A compiler pioneer.' });
    const foreign = await trait(db, other.id, 'Explain things with nanoseconds of wire');
    clock.advance(HOUR);
    const before = await snapshot(db, soul.id, []);
    const otherBefore = await snapshot(db, other.id, []);
    const expectNothingWritten = async () => {
      expect(await snapshot(db, soul.id, [])).toEqual(before);
      expect(await snapshot(db, other.id, [])).toEqual(otherBefore);
    };
    return { ...env, a, b, c, reverted, foreign, expectNothingWritten };
  }

  const valid = (a: Trait, b: Trait, c: Trait): LevelUpPlan => ({
    newEssence: 'A test-first engineer.',
    consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Tests come first', mergedProvenance: 'a and b' }],
    promotedTraitIds: [],
    carriedTraitIds: [c.id],
  });

  it('reports an active trait left out of the plan as missing, writing nothing', async () => {
    const { db, soul, a, b, c, expectNothingWritten } = await fixture();
    const error = await expectPlanError(levelUp(db, soul.id, { ...valid(a, b, c), carriedTraitIds: [] }));
    expect({ missing: error.missing, duplicated: error.duplicated, notActive: error.notActive, problems: error.problems }).toEqual({
      missing: [c.id],
      duplicated: [],
      notActive: [],
      problems: [],
    });
    await expectNothingWritten();
  });

  it('reports an id listed twice in the same list as duplicated', async () => {
    const { db, soul, a, b, c, expectNothingWritten } = await fixture();
    const error = await expectPlanError(levelUp(db, soul.id, { ...valid(a, b, c), carriedTraitIds: [c.id, c.id] }));
    expect([error.missing, error.duplicated, error.notActive, error.problems]).toEqual([[], [c.id], [], []]);
    await expectNothingWritten();
  });

  it('reports an id listed in two different lists as duplicated', async () => {
    const { db, soul, a, b, c, expectNothingWritten } = await fixture();
    const plan: LevelUpPlan = { ...valid(a, b, c), promotedTraitIds: [a.id], carriedTraitIds: [c.id, b.id] };
    const error = await expectPlanError(levelUp(db, soul.id, plan));
    expect([error.missing, error.duplicated, error.notActive, error.problems]).toEqual([[], [a.id, b.id].sort((x, y) => x - y), [], []]);
    await expectNothingWritten();
  });

  it('reports an id in two consolidations as duplicated', async () => {
    const { db, soul, a, b, c, expectNothingWritten } = await fixture();
    const plan: LevelUpPlan = {
      ...valid(a, b, c),
      consolidations: [
        { sourceTraitIds: [a.id, b.id], mergedPrinciple: 'x', mergedProvenance: 'y' },
        { sourceTraitIds: [b.id], mergedPrinciple: 'z', mergedProvenance: 'y' },
      ],
    };
    const error = await expectPlanError(levelUp(db, soul.id, plan));
    expect([error.missing, error.duplicated, error.notActive, error.problems]).toEqual([[], [b.id], [], []]);
    await expectNothingWritten();
  });

  it.each([
    ['an unknown id', () => 987_654],
    ["another soul's active trait", (f: { foreign: Trait; reverted: Trait }) => f.foreign.id],
    ['a reverted trait of this soul', (f: { foreign: Trait; reverted: Trait }) => f.reverted.id],
  ])('reports %s as notActive', async (_label, pick) => {
    const f = await fixture();
    const id = pick(f);
    const error = await expectPlanError(levelUp(f.db, f.soul.id, { ...valid(f.a, f.b, f.c), promotedTraitIds: [id] }));
    expect([error.missing, error.duplicated, error.notActive, error.problems]).toEqual([[], [], [id], []]);
    await f.expectNothingWritten();
  });

  it('reports missing, duplicated and notActive at once, each sorted ascending', async () => {
    const { db, soul, a, b, c, reverted, foreign, expectNothingWritten } = await fixture();
    const plan: LevelUpPlan = {
      newEssence: 'New essence',
      // Listed out of order: each list of the diff must come back sorted.
      consolidations: [{ sourceTraitIds: [foreign.id, reverted.id], mergedPrinciple: 'Merged', mergedProvenance: 'why' }],
      promotedTraitIds: [987_654, c.id, reverted.id],
      carriedTraitIds: [c.id, 5_000],
    };
    const error = await expectPlanError(levelUp(db, soul.id, plan));
    const asc = (ids: number[]) => [...ids].sort((x, y) => x - y);
    expect(error.missing).toEqual(asc([a.id, b.id]));
    expect(error.duplicated).toEqual(asc([c.id, reverted.id]));
    expect(error.notActive).toEqual(asc([foreign.id, 987_654, reverted.id, 5_000]));
    expect(error.problems).toEqual([]);
    expect(error.message).toContain('missing');
    await expectNothingWritten();
  });

  it('reports empty texts and sourceless consolidations as problems naming the field', async () => {
    const { db, soul, a, b, c, expectNothingWritten } = await fixture();
    const plan: LevelUpPlan = {
      newEssence: '   \n ',
      consolidations: [
        { sourceTraitIds: [a.id, b.id], mergedPrinciple: '', mergedProvenance: 'fine' },
        { sourceTraitIds: [], mergedPrinciple: 'fine', mergedProvenance: ' \t ' },
      ],
      promotedTraitIds: [],
      carriedTraitIds: [c.id],
    };
    const error = await expectPlanError(levelUp(db, soul.id, plan));
    expect([error.missing, error.duplicated, error.notActive]).toEqual([[], [], []]);
    expect(error.problems.map((p) => p.field).sort()).toEqual(
      ['newEssence', 'consolidations[0].mergedPrinciple', 'consolidations[1].sourceTraitIds', 'consolidations[1].mergedProvenance'].sort(),
    );
    for (const p of error.problems) expect(p.message).not.toBe('');
    await expectNothingWritten();
  });

  it('refuses each single problem on its own', async () => {
    const { db, soul, a, b, c, expectNothingWritten } = await fixture();
    const cases: Array<[LevelUpPlan, string]> = [
      [{ ...valid(a, b, c), newEssence: '' }, 'newEssence'],
      [{ ...valid(a, b, c), consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: ' ', mergedProvenance: 'p' }] }, 'consolidations[0].mergedPrinciple'],
      [{ ...valid(a, b, c), consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'p', mergedProvenance: '' }] }, 'consolidations[0].mergedProvenance'],
      [
        {
          ...valid(a, b, c),
          consolidations: [{ sourceTraitIds: [], mergedPrinciple: 'p', mergedProvenance: 'q' }],
          carriedTraitIds: [a.id, b.id, c.id],
        },
        'consolidations[0].sourceTraitIds',
      ],
    ];
    for (const [plan, field] of cases) {
      const error = await expectPlanError(levelUp(db, soul.id, plan));
      expect(error.problems.map((p) => p.field)).toEqual([field]);
      expect([error.missing, error.duplicated, error.notActive]).toEqual([[], [], []]);
    }
    await expectNothingWritten();
  });

  it('accepts the valid plan after all those refusals', async () => {
    const { db, soul, a, b, c } = await fixture();
    const { soul: after } = await levelUp(db, soul.id, valid(a, b, c));
    expect(after.level).toBe(1);
  });

  it('refuses a level-up of a dormant soul and of an unknown soul', async () => {
    const { db, soul, a, b, c, clock } = await fixture();
    await retireSoul(db, soul.id);
    clock.advance(HOUR);
    const before = await snapshot(db, soul.id, []);
    await expect(levelUp(db, soul.id, valid(a, b, c))).rejects.toBeInstanceOf(InvalidStateError);
    await expect(previewLevelUp(db, soul.id, valid(a, b, c))).rejects.toBeInstanceOf(InvalidStateError);
    expect(await snapshot(db, soul.id, [])).toEqual(before);
    const missing = await levelUp(db, 424_242, valid(a, b, c)).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).entity).toBe('Soul');
    expect((missing as NotFoundError).id).toBe('424242');
  });
});

describe('level-up warnings (advisory)', () => {
  const tests1 = 'Always write the unit tests before the code';
  const tests2 = 'Always write unit tests before writing the code';
  const tests3 = 'Write the unit tests before the code, always';
  const hiking = 'Goes hiking in the mountains every weekend';
  const tea = 'Drinks green tea every morning';

  it('warns about a weak consolidation and still applies the level-up', async () => {
    const { db, soul, clock } = await setup();
    const a = await trait(db, soul.id, tests1);
    const h = await trait(db, soul.id, hiking);
    const mean = similarity(tests1, hiking);
    expect(mean).toBeLessThan(db.settings.consolidationThreshold);
    clock.advance(HOUR);
    const result = await levelUp(db, soul.id, {
      newEssence: ESSENCE,
      consolidations: [{ sourceTraitIds: [a.id, h.id], mergedPrinciple: 'Balanced', mergedProvenance: 'both' }],
      promotedTraitIds: [],
      carriedTraitIds: [],
    });
    expect(result.warnings.map((w) => [w.kind, w.traitIds])).toEqual([['WEAK_CONSOLIDATION', [a.id, h.id]]]);
    expect(result.warnings[0].message).toContain(mean.toFixed(2));
    expect(result.soul.level).toBe(1);
    expect((await getTrait(db, a.id))!.status).toBe('consolidated');
  });

  it('uses the mean over every pair of a three-trait group', async () => {
    const { db, soul } = await setup();
    const x = await trait(db, soul.id, tests1);
    const y = await trait(db, soul.id, tests2);
    const z = await trait(db, soul.id, tea);
    const mean = (similarity(tests1, tests2) + similarity(tests1, tea) + similarity(tests2, tea)) / 3;
    // The group would pass on its best pair alone; the mean is what counts.
    expect(similarity(tests1, tests2)).toBeGreaterThanOrEqual(0.3);
    expect(mean).toBeLessThan(0.3);
    const plan: LevelUpPlan = {
      newEssence: ESSENCE,
      consolidations: [{ sourceTraitIds: [x.id, y.id, z.id], mergedPrinciple: 'm', mergedProvenance: 'p' }],
      promotedTraitIds: [],
      carriedTraitIds: [],
    };
    const preview = await previewLevelUp(db, soul.id, plan);
    expect(preview.warnings.map((w) => w.kind)).toEqual(['WEAK_CONSOLIDATION']);
    expect(preview.warnings[0].message).toContain(mean.toFixed(2));
    const result = await levelUp(db, soul.id, plan);
    expect(result.warnings).toEqual(preview.warnings);
  });

  it('does not warn about a strong consolidation, a single-source one, or an echoed promotion', async () => {
    const { db, soul } = await setup();
    const x = await trait(db, soul.id, tests1);
    const y = await trait(db, soul.id, tests2);
    const z = await trait(db, soul.id, tests3);
    const lone = await trait(db, soul.id, hiking);
    const promoted = await trait(db, soul.id, 'Keeps commits small');
    const mean = (similarity(tests1, tests2) + similarity(tests1, tests3) + similarity(tests2, tests3)) / 3;
    expect(mean).toBeGreaterThanOrEqual(db.settings.consolidationThreshold);
    const newEssence = 'Keeps commits small and writes tests first.';
    expect(similarity('Keeps commits small', newEssence)).toBeGreaterThanOrEqual(db.settings.redundancyThreshold);
    const result = await levelUp(db, soul.id, {
      newEssence,
      consolidations: [
        { sourceTraitIds: [x.id, y.id, z.id], mergedPrinciple: 'Tests first', mergedProvenance: 'three reviews' },
        { sourceTraitIds: [lone.id], mergedPrinciple: 'Completely different words here', mergedProvenance: 'renamed' },
      ],
      promotedTraitIds: [promoted.id],
      carriedTraitIds: [],
    });
    expect(result.warnings).toEqual([]);
  });

  it('warns about a premature promotion and still applies it', async () => {
    const { db, soul } = await setup();
    const h = await trait(db, soul.id, hiking);
    const newEssence = 'A meticulous database administrator.';
    const redundancy = similarity(hiking, newEssence);
    expect(redundancy).toBeLessThan(db.settings.redundancyThreshold);
    const result = await levelUp(db, soul.id, { newEssence, consolidations: [], promotedTraitIds: [h.id], carriedTraitIds: [] });
    expect(result.warnings.map((w) => [w.kind, w.traitIds])).toEqual([['PREMATURE_PROMOTION', [h.id]]]);
    expect(result.warnings[0].message).toContain(redundancy.toFixed(2));
    expect((await getTrait(db, h.id))!.status).toBe('promoted');
    expect(result.soul.essence).toBe(newEssence);
  });

  it('respects the configured thresholds', async () => {
    // With both thresholds at 0 nothing can be weak or premature.
    const { db, soul } = await setup({ consolidationThreshold: 0, redundancyThreshold: 0 });
    const a = await trait(db, soul.id, tests1);
    const h = await trait(db, soul.id, hiking);
    const p = await trait(db, soul.id, 'Zebra quokka');
    const result = await levelUp(db, soul.id, {
      newEssence: 'Nothing alike',
      consolidations: [{ sourceTraitIds: [a.id, h.id], mergedPrinciple: 'm', mergedProvenance: 'p' }],
      promotedTraitIds: [p.id],
      carriedTraitIds: [],
    });
    expect(result.warnings).toEqual([]);
  });
});

describe('applying a level-up', () => {
  it('consolidates, promotes, carries, rewrites the essence and records one level row', async () => {
    const { db, soul, clock } = await setup();
    const a = await trait(db, soul.id, 'Always write the tests before the code');
    const b = await trait(db, soul.id, 'Write tests before writing any code');
    const p = await trait(db, soul.id, 'Keeps commits small');
    const c = await trait(db, soul.id, 'Reviews pull requests within a day');
    const d = await trait(db, soul.id, 'Prefers pairing on hard bugs');
    clock.advance(2 * HOUR);
    const at = clock.now();
    const before = (await getSoul(db, soul.id))!;
    const plan: LevelUpPlan = {
      newEssence: '  A test-first engineer who keeps commits small.  ',
      consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: ' Tests come first ', mergedProvenance: 'Seen in both reviews' }],
      promotedTraitIds: [p.id],
      carriedTraitIds: [d.id, c.id],
    };
    const { soul: after, event, warnings } = await levelUp(db, soul.id, plan);
    expect(warnings.map((w) => w.kind)).not.toContain('PREMATURE_PROMOTION');

    expect(event.merged).toHaveLength(1);
    const mergedId = event.merged[0];
    const merged = (await getTrait(db, mergedId))!;
    expect(merged).toEqual({
      id: mergedId,
      soulId: soul.id,
      principle: 'Tests come first',
      provenance: 'Seen in both reviews',
      generation: 1,
      status: 'active',
      mergedInto: null,
      createdAt: at,
      updatedAt: at,
    });
    for (const id of [a.id, b.id]) {
      const t = (await getTrait(db, id))!;
      expect([t.status, t.mergedInto, t.generation]).toEqual(['consolidated', mergedId, 0]);
    }
    const promoted = (await getTrait(db, p.id))!;
    expect([promoted.status, promoted.mergedInto, promoted.generation]).toEqual(['promoted', null, 0]);
    for (const id of [c.id, d.id]) {
      const t = (await getTrait(db, id))!;
      expect([t.status, t.generation, t.updatedAt]).toEqual(['active', 1, at]);
    }

    expect(after).toEqual({ ...before, essence: 'A test-first engineer who keeps commits small.', level: 1, updatedAt: at, orderedAt: at });
    expect(await getSoul(db, soul.id)).toEqual(after);
    expect((await listTraits(db, soul.id, { status: 'active' })).map((t) => t.id).sort((x, y) => x - y)).toEqual([c.id, d.id, mergedId].sort((x, y) => x - y));

    const history = await getLevelHistory(db, soul.id);
    expect(history).toHaveLength(1);
    expect(history[0]).toEqual(event);
    expect(event).toEqual({
      id: event.id,
      soulId: soul.id,
      level: 1,
      essenceBefore: ESSENCE,
      essenceAfter: 'A test-first engineer who keeps commits small.',
      consolidated: [a.id, b.id],
      promoted: [p.id],
      carried: [
        { id: c.id, generation: 0 },
        { id: d.id, generation: 0 },
      ],
      merged: [mergedId],
      createdAt: at,
      revertedAt: null,
    });
    expect(await renderSoul(db, soul.id)).toBe(
      '# Ada\n\n*Backend engineer*\n\nA test-first engineer who keeps commits small.\n\n## Traits\n' +
        '- Reviews pull requests within a day\n- Prefers pairing on hard bugs\n- Tests come first\n',
    );
  });

  it('records carried traits with their previous generation, whatever it was', async () => {
    const { db, soul, clock } = await setup();
    const a = await trait(db, soul.id, 'Always write the tests before the code');
    const b = await trait(db, soul.id, 'Write tests before writing any code');
    const c = await trait(db, soul.id, 'Reviews pull requests within a day');
    const first = await levelUp(db, soul.id, {
      newEssence: 'Level one',
      consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Tests first', mergedProvenance: 'p' }],
      promotedTraitIds: [],
      carriedTraitIds: [c.id],
    });
    const m1 = first.event.merged[0];
    clock.advance(HOUR);
    // Reactivated after the level-up, a keeps generation 0; c is at 1 now; e is born at level 1.
    const back = await reactivateTrait(db, a.id);
    expect([back.status, back.mergedInto, back.generation]).toEqual(['active', null, 0]);
    const e = await trait(db, soul.id, 'Prefers pairing on hard bugs');
    expect(e.generation).toBe(1);
    const second = await levelUp(db, soul.id, { newEssence: 'Level two', consolidations: [], promotedTraitIds: [], carriedTraitIds: [e.id, a.id, c.id, m1] });
    expect(second.event.level).toBe(2);
    expect(second.event.carried).toEqual(
      [
        { id: a.id, generation: 0 },
        { id: c.id, generation: 1 },
        { id: e.id, generation: 1 },
        { id: m1, generation: 1 },
      ].sort((x, y) => x.id - y.id),
    );
    for (const id of [a.id, c.id, e.id, m1]) expect((await getTrait(db, id))!.generation).toBe(2);
    expect(second.soul.level).toBe(2);

    clock.advance(HOUR);
    await revertLevelUp(db, soul.id);
    expect((await getTrait(db, a.id))!.generation).toBe(0);
    expect((await getTrait(db, c.id))!.generation).toBe(1);
    expect((await getTrait(db, e.id))!.generation).toBe(1);
    expect((await getTrait(db, m1))!.generation).toBe(1);
  });

  it('levels up a soul with no traits at all', async () => {
    const { db, soul } = await setup();
    const { soul: after, event, warnings } = await levelUp(db, soul.id, { newEssence: 'Grown up', consolidations: [], promotedTraitIds: [], carriedTraitIds: [] });
    expect([after.level, after.essence, warnings]).toEqual([1, 'Grown up', []]);
    expect([event.consolidated, event.promoted, event.carried, event.merged]).toEqual([[], [], [], []]);
  });

  it('reactivates a consolidated trait: active again, mergedInto cleared', async () => {
    const { db, soul } = await setup();
    const a = await trait(db, soul.id, 'Always write the tests before the code');
    const b = await trait(db, soul.id, 'Write tests before writing any code');
    const p = await trait(db, soul.id, 'Keeps commits small');
    const { event } = await levelUp(db, soul.id, {
      newEssence: 'Keeps commits small and tests first',
      consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Tests first', mergedProvenance: 'p' }],
      promotedTraitIds: [p.id],
      carriedTraitIds: [],
    });
    expect((await getTrait(db, a.id))!.mergedInto).toBe(event.merged[0]);
    const back = await reactivateTrait(db, a.id);
    expect([back.status, back.mergedInto]).toEqual(['active', null]);
    expect(await getTrait(db, a.id)).toEqual(back);
    const promotedBack = await reactivateTrait(db, p.id);
    expect(promotedBack.status).toBe('active');
    // The other source stays consolidated into the merged trait.
    expect((await getTrait(db, b.id))!.mergedInto).toBe(event.merged[0]);
    expect(await countActiveTraits(db, soul.id)).toBe(3);
  });
});

describe('reverting a level-up', () => {
  /**
   * a (4 citations) and b (1) → merged; p (3) promoted; e (5) and f (0)
   * carried: distinct densities, so the render order is fixed. s0, s5 and s9
   * are cited by two traits each and faded before the level-up.
   */
  async function leveledFixture() {
    const env = await setup();
    const { db, soul, clock } = env;
    const s = await shards(db, soul.id, 10);
    const a = await trait(db, soul.id, 'Always write the tests before the code', [s[0], s[1], s[2]]);
    const b = await trait(db, soul.id, 'Write tests before writing any code', [s[3]]);
    const p = await trait(db, soul.id, 'Keeps commits small', [s[4], s[5], s[9]]);
    const e = await trait(db, soul.id, 'Reviews pull requests within a day', [s[6], s[7], s[8], s[0]]);
    const f = await trait(db, soul.id, 'Prefers pairing on hard bugs');
    await citeShard(db, s[9], a.id);
    await citeShard(db, s[5], e.id);
    // s0 (a, e), s5 (p, e) and s9 (a, p) fade now.
    expect((await fadeExhaustedShards(db)).fadedCount).toBe(3);
    const reverted = await trait(db, soul.id, 'Deploys on Fridays');
    await revertTrait(db, reverted.id);
    clock.advance(HOUR);
    const before = await snapshot(db, soul.id, s);
    const lean = await renderSoul(db, soul.id);
    const full = await renderSoul(db, soul.id, { includeProvenance: true });
    clock.advance(HOUR);
    const plan: LevelUpPlan = {
      newEssence: 'A test-first engineer who keeps commits small.',
      consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Tests come first', mergedProvenance: 'Seen in both' }],
      promotedTraitIds: [p.id],
      carriedTraitIds: [e.id, f.id],
    };
    const result = await levelUp(db, soul.id, plan);
    const mergedId = result.event.merged[0];
    return { ...env, s, a, b, p, e, f, reverted, before, lean, full, result, mergedId, plan };
  }

  it('renders the fixture with distinct densities, in density order', async () => {
    const { lean } = await leveledFixture();
    expect(lean).toBe(
      '# Ada\n\n*Backend engineer*\n\n' +
        ESSENCE +
        '\n\n## Traits\n- Reviews pull requests within a day\n- Always write the tests before the code\n- Keeps commits small\n' +
        '- Write tests before writing any code\n- Prefers pairing on hard bugs\n',
    );
  });

  it('restores every row of the soul and the rendered block exactly', async () => {
    const { db, soul, clock, s, e, before, lean, full, result, mergedId } = await leveledFixture();
    // The merged trait carries its sources' citations (s0–s3, s9); they are not a second use of those shards, so s1 stays pending.
    // It also cites s6 and s7 (one other citer: e → they fade, then must come back); s0 (cited by a and e) stays faded.
    expect((await db.store.citationsOfTraits([mergedId])).map((c) => c.shardId).sort((x, y) => x - y)).toEqual([s[0], s[1], s[2], s[3], s[9]].sort((x, y) => x - y));
    clock.advance(HOUR);
    await citeShard(db, s[6], mergedId);
    await citeShard(db, s[7], mergedId);
    expect((await fadeExhaustedShards(db)).fadedCount).toBe(2);
    expect((await getShard(db, s[1]))!.status).toBe('pending');
    expect((await getShard(db, s[6]))!.status).toBe('faded');
    expect((await getShard(db, s[7]))!.status).toBe('faded');
    expect(await renderSoul(db, soul.id)).not.toBe(lean);

    clock.advance(HOUR);
    const revertAt = clock.now();
    const reverted = await revertLevelUp(db, soul.id);
    expect(reverted.event).toEqual({ ...result.event, revertedAt: revertAt });
    expect(reverted.soul.level).toBe(0);
    expect(reverted.soul.essence).toBe(ESSENCE);
    expect(reverted.soul.updatedAt).toBe(revertAt);

    const after = await snapshot(db, soul.id, s, [mergedId]);
    expect(withoutTimestamps(after)).toEqual(withoutTimestamps(before));
    expect(await getTrait(db, mergedId)).toBeNull();
    expect(await db.store.citationsOfTraits([mergedId])).toEqual([]);
    expect((await getShard(db, s[1]))!.status).toBe('pending');
    expect((await getShard(db, s[6]))!.status).toBe('pending');
    expect((await getShard(db, s[7]))!.status).toBe('pending');
    expect((await getShard(db, s[0]))!.status).toBe('faded');
    expect((await getTrait(db, e.id))!.generation).toBe(0);

    expect(await renderSoul(db, soul.id)).toBe(lean);
    expect(await renderSoul(db, soul.id, { includeProvenance: true })).toBe(full);

    const history = await getLevelHistory(db, soul.id);
    expect(history).toEqual([{ ...result.event, revertedAt: revertAt }]);
    expect(history[0].merged).toEqual([mergedId]);
  });

  it('leaves traits added after the level-up as they are', async () => {
    const { db, soul, clock, a, b, p } = await leveledFixture();
    clock.advance(HOUR);
    const later = await trait(db, soul.id, 'Writes runbooks for every service');
    clock.advance(HOUR);
    await revertLevelUp(db, soul.id);
    expect(await getTrait(db, later.id)).toEqual(later);
    const active = (await listTraits(db, soul.id, { status: 'active' })).map((t) => t.id);
    expect(active).toContain(later.id);
    for (const id of [a.id, b.id, p.id]) expect((await getTrait(db, id))!).toMatchObject({ status: 'active', mergedInto: null });
  });

  it('never gives a deleted merged trait id to a later trait', async () => {
    const { db, soul, mergedId } = await leveledFixture();
    await revertLevelUp(db, soul.id);
    const next = await trait(db, soul.id, 'Writes runbooks for every service');
    expect(next.id).toBeGreaterThan(mergedId);
    expect((await getLevelHistory(db, soul.id))[0].merged).toEqual([mergedId]);
    expect(await getTrait(db, mergedId)).toBeNull();
  });

  it('restores consolidated traits that were reactivated and reverted meanwhile', async () => {
    const { db, soul, a, before } = await leveledFixture();
    await reactivateTrait(db, a.id);
    await revertTrait(db, a.id);
    await revertLevelUp(db, soul.id);
    const after = await snapshot(db, soul.id, before.shards.map((x) => x!.id));
    expect(withoutTimestamps(after).traits).toEqual(withoutTimestamps(before).traits);
  });

  it('always succeeds, even past the trait limit', async () => {
    const { db, soul } = await setup({ traitLimit: 3 });
    const a = await trait(db, soul.id, 'Always write the tests before the code');
    const b = await trait(db, soul.id, 'Write tests before writing any code');
    const c = await trait(db, soul.id, 'Write the unit tests first');
    await levelUp(db, soul.id, {
      newEssence: 'Tests first',
      consolidations: [{ sourceTraitIds: [a.id, b.id, c.id], mergedPrinciple: 'Tests first', mergedProvenance: 'p' }],
      promotedTraitIds: [],
      carriedTraitIds: [],
    });
    const x = await trait(db, soul.id, 'Keeps commits small');
    const y = await trait(db, soul.id, 'Reviews pull requests within a day');
    expect(await countActiveTraits(db, soul.id)).toBe(3);
    const { soul: after } = await revertLevelUp(db, soul.id);
    expect(after.level).toBe(0);
    expect((await listTraits(db, soul.id, { status: 'active' })).map((t) => t.id)).toEqual([a.id, b.id, c.id, x.id, y.id]);
    expect(await countActiveTraits(db, soul.id)).toBe(5);
  });

  it('refuses a revert with no level-up left to revert, writing nothing', async () => {
    const { db, soul, clock } = await setup();
    await trait(db, soul.id, 'Keeps commits small');
    await expect(revertLevelUp(db, soul.id)).rejects.toBeInstanceOf(InvalidStateError);
    await levelUp(db, soul.id, { newEssence: 'Grown', consolidations: [], promotedTraitIds: [], carriedTraitIds: (await listTraits(db, soul.id)).map((t) => t.id) });
    await revertLevelUp(db, soul.id);
    clock.advance(HOUR);
    const before = await snapshot(db, soul.id, []);
    await expect(revertLevelUp(db, soul.id)).rejects.toBeInstanceOf(InvalidStateError);
    expect(await snapshot(db, soul.id, [])).toEqual(before);
    const missing = await revertLevelUp(db, 31_337).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).entity).toBe('Soul');
  });

  it('walks two level-ups back to level 0 and the original essence', async () => {
    const { db, soul, clock } = await setup();
    const s = await shards(db, soul.id, 4);
    const a = await trait(db, soul.id, 'Always write the tests before the code', [s[0]]);
    const b = await trait(db, soul.id, 'Write tests before writing any code', [s[1], s[2]]);
    const c = await trait(db, soul.id, 'Reviews pull requests within a day', [s[0], s[1], s[3]]);
    clock.advance(HOUR);
    const before = await snapshot(db, soul.id, s);
    const lean = await renderSoul(db, soul.id);
    const first = await levelUp(db, soul.id, {
      newEssence: 'Level one essence',
      consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Tests first', mergedProvenance: 'p1' }],
      promotedTraitIds: [],
      carriedTraitIds: [c.id],
    });
    const m1 = first.event.merged[0];
    await citeShard(db, s[2], m1);
    clock.advance(HOUR);
    const second = await levelUp(db, soul.id, {
      newEssence: 'Level two essence',
      consolidations: [{ sourceTraitIds: [m1, c.id], mergedPrinciple: 'Tests first, reviews fast', mergedProvenance: 'p2' }],
      promotedTraitIds: [],
      carriedTraitIds: [],
    });
    const m2 = second.event.merged[0];
    expect(second.soul.level).toBe(2);
    expect((await getTrait(db, m1))!.mergedInto).toBe(m2);

    clock.advance(HOUR);
    const r2 = await revertLevelUp(db, soul.id);
    expect(r2.event.id).toBe(second.event.id);
    expect([r2.soul.level, r2.soul.essence]).toEqual([1, 'Level one essence']);
    expect(await getTrait(db, m2)).toBeNull();
    expect((await getTrait(db, m1))!).toMatchObject({ status: 'active', mergedInto: null, generation: 1 });
    expect((await getTrait(db, c.id))!).toMatchObject({ status: 'active', generation: 1 });

    clock.advance(HOUR);
    const r1 = await revertLevelUp(db, soul.id);
    expect(r1.event.id).toBe(first.event.id);
    expect([r1.soul.level, r1.soul.essence]).toEqual([0, ESSENCE]);
    expect(await getTrait(db, m1)).toBeNull();
    expect(withoutTimestamps(await snapshot(db, soul.id, s, [m1, m2]))).toEqual(withoutTimestamps(before));
    expect(await renderSoul(db, soul.id)).toBe(lean);
    const history = await getLevelHistory(db, soul.id);
    expect(history.map((h) => [h.id, h.level, h.revertedAt !== null])).toEqual([
      [first.event.id, 1, true],
      [second.event.id, 2, true],
    ]);
    await expect(revertLevelUp(db, soul.id)).rejects.toBeInstanceOf(InvalidStateError);
  });

  it('refuses to revert a dormant soul', async () => {
    const { db, soul } = await leveledFixture();
    await retireSoul(db, soul.id);
    await expect(revertLevelUp(db, soul.id)).rejects.toBeInstanceOf(InvalidStateError);
    expect((await getSoul(db, soul.id))!.level).toBe(1);
  });
});

describe('previewLevelUp', () => {
  async function fixture() {
    const env = await setup();
    const { db, soul, clock } = env;
    const s = await shards(db, soul.id, 6);
    const a = await trait(db, soul.id, 'Always write the tests before the code', [s[0], s[1]]);
    const b = await trait(db, soul.id, 'Write tests before writing any code', [s[2]]);
    const p = await trait(db, soul.id, 'Keeps commits small', [s[3]]);
    clock.advance(3 * DAY_MS);
    const e = await trait(db, soul.id, 'Reviews pull requests within a day', [s[4], s[5]]);
    const f = await trait(db, soul.id, 'Prefers pairing on hard bugs');
    const g = await trait(db, soul.id, 'Goes hiking in the mountains every weekend', [s[0]]);
    clock.advance(DAY_MS);
    const plan: LevelUpPlan = {
      newEssence: 'A test-first engineer who keeps commits small.',
      consolidations: [
        { sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Tests come first', mergedProvenance: 'Seen in both reviews' },
        { sourceTraitIds: [g.id], mergedPrinciple: 'Recharges outdoors', mergedProvenance: 'Weekend notes' },
      ],
      promotedTraitIds: [p.id],
      carriedTraitIds: [f.id, e.id],
    };
    return { ...env, s, a, b, p, e, f, g, plan };
  }

  it('predicts the rendered block of the real level-up byte for byte, writing nothing', async () => {
    const { db, soul, s, plan } = await fixture();
    const state = await snapshot(db, soul.id, s);
    const lean = await previewLevelUp(db, soul.id, plan);
    const full = await previewLevelUp(db, soul.id, plan, { includeProvenance: true });
    expect(await snapshot(db, soul.id, s)).toEqual(state);
    expect(lean.valid).toBe(true);
    expect(lean.error).toBeNull();
    expect(lean.before).toBe(await renderSoul(db, soul.id));
    expect(full.before).toBe(await renderSoul(db, soul.id, { includeProvenance: true }));
    expect(lean.after).not.toBe(lean.before);

    const result = await levelUp(db, soul.id, plan);
    expect(lean.warnings).toEqual(result.warnings);
    expect(await renderSoul(db, soul.id)).toBe(lean.after);
    expect(await renderSoul(db, soul.id, { includeProvenance: true })).toBe(full.after);
    expect(lean.after).toContain('- Tests come first\n');
    expect(full.after).toContain('- **Recharges outdoors** — Weekend notes\n');
  });

  it('orders the predicted block by density at the level-up, not at the last write', async () => {
    const { db, soul, clock } = await setup();
    const s = await shards(db, soul.id, 12);
    const old = await trait(db, soul.id, 'Reviews pull requests within a day', s.slice(0, 10));
    clock.advance(30 * DAY_MS);
    const young = await trait(db, soul.id, 'Prefers pairing on hard bugs', s.slice(10, 12));
    // At the last write young is densest (2/1 vs 10/30); thirty days on, old is (10/60 vs 2/30).
    expect((await renderSoul(db, soul.id)).indexOf(young.principle)).toBeLessThan((await renderSoul(db, soul.id)).indexOf(old.principle));
    clock.advance(30 * DAY_MS);
    const plan: LevelUpPlan = { newEssence: `${ESSENCE} Still.`, consolidations: [], promotedTraitIds: [], carriedTraitIds: [old.id, young.id] };
    const preview = await previewLevelUp(db, soul.id, plan);
    await levelUp(db, soul.id, plan);
    const rendered = await renderSoul(db, soul.id);
    expect(rendered.indexOf(old.principle)).toBeLessThan(rendered.indexOf(young.principle));
    expect(preview.after).toBe(rendered);
  });

  it('reports the warnings of the plan', async () => {
    const { db, soul, plan, p } = await fixture();
    const preview = await previewLevelUp(db, soul.id, { ...plan, newEssence: 'A meticulous database administrator.' });
    expect(preview.valid).toBe(true);
    expect(preview.warnings.map((w) => [w.kind, w.traitIds])).toEqual([['PREMATURE_PROMOTION', [p.id]]]);
  });

  it('answers an invalid plan with its diff and no after block, writing nothing', async () => {
    const { db, soul, s, plan, e, f } = await fixture();
    const state = await snapshot(db, soul.id, s);
    const preview = await previewLevelUp(db, soul.id, { ...plan, carriedTraitIds: [e.id, e.id, 777_777], newEssence: ' ' });
    expect(preview.valid).toBe(false);
    expect(preview.after).toBeNull();
    expect(preview.warnings).toEqual([]);
    expect(preview.before).toBe(await renderSoul(db, soul.id));
    expect(preview.error).toBeInstanceOf(LevelUpPlanError);
    expect(preview.error!.missing).toEqual([f.id]);
    expect(preview.error!.duplicated).toEqual([e.id]);
    expect(preview.error!.notActive).toEqual([777_777]);
    expect(preview.error!.problems.map((x) => x.field)).toEqual(['newEssence']);
    expect(await snapshot(db, soul.id, s)).toEqual(state);
  });

  it('refuses an unknown soul', async () => {
    const { db, plan } = await fixture();
    await expect(previewLevelUp(db, 999_999, plan)).rejects.toBeInstanceOf(NotFoundError);
  });
});
