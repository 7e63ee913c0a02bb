import { describe, expect, it } from 'vitest';
import {
  CapacityError,
  DAY_MS,
  InvalidStateError,
  NotFoundError,
  ValidationError,
  addTrait,
  citeShard,
  countActiveTraits,
  createSoul,
  dropShard,
  getSoul,
  getSoulHealth,
  getTrait,
  getTraitSignals,
  levelUp,
  listTraits,
  reactivateTrait,
  retireSoul,
  reviseTrait,
  revertTrait,
  stampAttuned,
  updateSoul,
  type SoulsDb,
} from '../src/engine/index.ts';
import { similarity } from '../src/engine/similarity.ts';
import { freshDb, rejection } from './support/engine.ts';

const T0 = Date.UTC(2026, 0, 1);
const HOUR_MS = 3_600_000;

const setup = (settings: Record<string, unknown> = {}) => freshDb(T0, settings);


async function newSoul(db: SoulsDb, name = 'Ada', essence = 'A careful engineer who keeps commits small and focused.') {
  return createSoul(db, { name, essence });
}

const trait = (principle: string, provenance = 'seen in reviews') => ({ principle, provenance });

/** Every citation of the traits, read back through the store's public read. */
const citationsOf = (db: SoulsDb, traitIds: number[]) => db.store.citationsOfTraits(traitIds);

describe('addTrait', () => {
  it('trims both texts, starts active, generation = soul level, created now', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    clock.advance(HOUR_MS);
    const t = await addTrait(db, soul.id, { principle: '  Run the tests first \n', provenance: '\tthree reviews ' });
    expect(t).toEqual({
      id: t.id,
      soulId: soul.id,
      principle: 'Run the tests first',
      provenance: 'three reviews',
      generation: 0,
      status: 'active',
      mergedInto: null,
      createdAt: T0 + HOUR_MS,
      updatedAt: T0 + HOUR_MS,
    });
    expect(await getTrait(db, t.id)).toEqual(t);
  });

  it('takes its generation from the current soul level', async () => {
    const { db } = setup();
    const soul = await newSoul(db);
    await levelUp(db, soul.id, { newEssence: 'one', consolidations: [], promotedTraitIds: [], carriedTraitIds: [] });
    await levelUp(db, soul.id, { newEssence: 'two', consolidations: [], promotedTraitIds: [], carriedTraitIds: [] });
    expect((await addTrait(db, soul.id, trait('Later'))).generation).toBe(2);
  });

  it.each([
    ['principle', { principle: '   ', provenance: 'p' }],
    ['principle', { principle: '', provenance: 'p' }],
    ['principle', { principle: null as unknown as string, provenance: 'p' }],
    ['provenance', { principle: 'Run the tests', provenance: ' \n ' }],
    ['provenance', { principle: 'Run the tests', provenance: undefined as unknown as string }],
    ['citeShardIds[0]', { principle: 'Run the tests', provenance: 'p', citeShardIds: [-1] }],
  ])('no provenance, no trait: a bad %s is a ValidationError naming it, nothing written', async (field, input) => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    clock.advance(HOUR_MS);
    const error = await rejection(addTrait(db, soul.id, input), ValidationError);
    expect(error.field).toBe(field);
    expect(await listTraits(db, soul.id)).toEqual([]);
    expect(await getSoul(db, soul.id)).toEqual(soul);
  });

  it('refuses an unknown soul', async () => {
    const { db } = setup();
    const error = await rejection(addTrait(db, 42, trait('x')), NotFoundError);
    expect([error.entity, error.id]).toEqual(['Soul', '42']);
  });

  it('cites citeShardIds in the same write', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    const s1 = await dropShard(db, 'Ran the tests before pushing', 'chat', [soul.id]);
    const s2 = await dropShard(db, 'Asked for the test report', 'email', [soul.id]);
    clock.advance(HOUR_MS);
    const t = await addTrait(db, soul.id, { ...trait('Run the tests first'), citeShardIds: [s1.shardId, s2.shardId, s1.shardId] });
    expect(citationsOf(db, [t.id])).toEqual([
      { shardId: s1.shardId, traitId: t.id, createdAt: T0 + HOUR_MS },
      { shardId: s2.shardId, traitId: t.id, createdAt: T0 + HOUR_MS },
    ]);
    expect((await getTraitSignals(db, [t.id])).get(t.id)!.citationCount).toBe(2);
  });

  it('writes no trait and no citation when a cited shard is missing', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    const s1 = await dropShard(db, 'Ran the tests before pushing', 'chat', [soul.id]);
    clock.advance(HOUR_MS);
    const error = await rejection(addTrait(db, soul.id, { ...trait('Run the tests first'), citeShardIds: [s1.shardId, 9999] }), NotFoundError);
    expect([error.entity, error.id]).toEqual(['Shard', '9999']);
    expect(await listTraits(db, soul.id)).toEqual([]);
    expect(db.store.citationsOfShards([s1.shardId])).toEqual([]);
    expect(await getSoul(db, soul.id)).toEqual(soul);
  });

  it('is refused at traitLimit with a CapacityError carrying limit and activeCount, nothing written', async () => {
    const { db, clock } = setup({ traitLimit: 2 });
    const soul = await newSoul(db);
    const a = await addTrait(db, soul.id, trait('One'));
    await addTrait(db, soul.id, trait('Two'));
    const shard = await dropShard(db, 'Some evidence here', 'chat', [soul.id]);
    clock.advance(HOUR_MS);
    const before = await getSoul(db, soul.id);
    const error = await rejection(addTrait(db, soul.id, { ...trait('Three'), citeShardIds: [shard.shardId] }), CapacityError);
    expect([error.limit, error.activeCount]).toEqual([2, 2]);
    expect((await listTraits(db, soul.id)).map((t) => t.principle)).toEqual(['One', 'Two']);
    expect(db.store.citationsOfShards([shard.shardId])).toEqual([]);
    expect(await getSoul(db, soul.id)).toEqual(before);
    // Non-active traits do not count against the limit.
    await revertTrait(db, a.id);
    expect((await addTrait(db, soul.id, trait('Three'))).status).toBe('active');
    expect(await countActiveTraits(db, soul.id)).toBe(2);
  });
});

describe('reviseTrait', () => {
  it('overwrites only the given texts (trimmed) and bumps updatedAt', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    const t = await addTrait(db, soul.id, trait('Run the tests', 'reviews'));
    clock.advance(HOUR_MS);
    const revised = await reviseTrait(db, t.id, { principle: '  Run the whole suite  ' });
    expect(revised).toEqual({ ...t, principle: 'Run the whole suite', updatedAt: T0 + HOUR_MS });
    clock.advance(HOUR_MS);
    const again = await reviseTrait(db, t.id, { provenance: ' reviews and CI logs ', principle: null });
    expect(again).toEqual({ ...revised, provenance: 'reviews and CI logs', updatedAt: T0 + 2 * HOUR_MS });
  });

  it('refuses to make either text empty (ValidationError naming it), nothing written', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    const t = await addTrait(db, soul.id, trait('Run the tests', 'reviews'));
    clock.advance(HOUR_MS);
    expect((await rejection(reviseTrait(db, t.id, { principle: '  ' }), ValidationError)).field).toBe('principle');
    expect((await rejection(reviseTrait(db, t.id, { principle: 'ok', provenance: '' }), ValidationError)).field).toBe('provenance');
    expect(await getTrait(db, t.id)).toEqual(t);
    expect(await getSoul(db, soul.id)).toEqual(soul);
  });

  it('revises active traits only (InvalidStateError otherwise); unknown trait is NotFoundError', async () => {
    const { db } = setup();
    const soul = await newSoul(db);
    const t = await addTrait(db, soul.id, trait('Run the tests'));
    const reverted = await revertTrait(db, t.id);
    await rejection(reviseTrait(db, t.id, { principle: 'Changed' }), InvalidStateError);
    expect(await getTrait(db, t.id)).toEqual(reverted);
    const error = await rejection(reviseTrait(db, 777, { principle: 'x' }), NotFoundError);
    expect([error.entity, error.id]).toEqual(['Trait', '777']);
  });
});

describe('revertTrait and reactivateTrait', () => {
  it('revert: active → reverted; a second revert is an InvalidStateError', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    const t = await addTrait(db, soul.id, trait('Run the tests'));
    clock.advance(HOUR_MS);
    const reverted = await revertTrait(db, t.id);
    expect(reverted).toEqual({ ...t, status: 'reverted', updatedAt: T0 + HOUR_MS });
    expect(await countActiveTraits(db, soul.id)).toBe(0);
    await rejection(revertTrait(db, t.id), InvalidStateError);
    expect(await getTrait(db, t.id)).toEqual(reverted);
    expect((await rejection(revertTrait(db, 555), NotFoundError)).entity).toBe('Trait');
  });

  it('reactivate: reverted → active; an active trait is an InvalidStateError', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    const t = await addTrait(db, soul.id, trait('Run the tests'));
    await rejection(reactivateTrait(db, t.id), InvalidStateError);
    await revertTrait(db, t.id);
    clock.advance(HOUR_MS);
    expect(await reactivateTrait(db, t.id)).toEqual({ ...t, status: 'active', updatedAt: T0 + HOUR_MS });
    expect((await rejection(reactivateTrait(db, 555), NotFoundError)).entity).toBe('Trait');
  });

  it('reactivate: consolidated and promoted → active, merged_into cleared, within the trait limit', async () => {
    const { db, clock } = setup({ traitLimit: 3 });
    const soul = await newSoul(db);
    const a = await addTrait(db, soul.id, trait('Run the tests before pushing'));
    const b = await addTrait(db, soul.id, trait('Run the tests after merging'));
    const c = await addTrait(db, soul.id, trait('Keep commits small'));
    clock.advance(DAY_MS);
    const { event } = await levelUp(db, soul.id, {
      newEssence: 'A careful engineer who keeps commits small.',
      consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Always run the tests', mergedProvenance: 'merged from two' }],
      promotedTraitIds: [c.id],
      carriedTraitIds: [],
    });
    const [merged] = event.merged;
    expect(await getTrait(db, a.id)).toMatchObject({ status: 'consolidated', mergedInto: merged });
    expect(await getTrait(db, c.id)).toMatchObject({ status: 'promoted', mergedInto: null });

    clock.advance(HOUR_MS);
    expect(await reactivateTrait(db, a.id)).toMatchObject({ status: 'active', mergedInto: null, updatedAt: clock.now() });
    expect(await reactivateTrait(db, c.id)).toMatchObject({ status: 'active', mergedInto: null });
    expect(await countActiveTraits(db, soul.id)).toBe(3);

    const bBefore = await getTrait(db, b.id);
    const error = await rejection(reactivateTrait(db, b.id), CapacityError);
    expect([error.limit, error.activeCount]).toEqual([3, 3]);
    expect(await getTrait(db, b.id)).toEqual(bBefore);
    expect(bBefore).toMatchObject({ status: 'consolidated', mergedInto: merged });
  });
});

describe('citeShard', () => {
  it('is idempotent per pair', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    const t = await addTrait(db, soul.id, trait('Run the tests'));
    const s = await dropShard(db, 'Ran the tests', 'chat', [soul.id]);
    clock.advance(HOUR_MS);
    const first = await citeShard(db, s.shardId, t.id);
    expect(first.trait.id).toBe(t.id);
    expect(first.shard.id).toBe(s.shardId);
    clock.advance(HOUR_MS);
    await citeShard(db, s.shardId, t.id);
    expect(citationsOf(db, [t.id])).toEqual([{ shardId: s.shardId, traitId: t.id, createdAt: T0 + HOUR_MS }]);
    expect((await getTraitSignals(db, [t.id])).get(t.id)!.citationCount).toBe(1);
  });

  it('answers NotFoundError for an unknown shard or trait, writing nothing', async () => {
    const { db } = setup();
    const soul = await newSoul(db);
    const t = await addTrait(db, soul.id, trait('Run the tests'));
    const s = await dropShard(db, 'Ran the tests', 'chat', [soul.id]);
    const noShard = await rejection(citeShard(db, 999, t.id), NotFoundError);
    expect([noShard.entity, noShard.id]).toEqual(['Shard', '999']);
    const noTrait = await rejection(citeShard(db, s.shardId, 888), NotFoundError);
    expect([noTrait.entity, noTrait.id]).toEqual(['Trait', '888']);
    expect(citationsOf(db, [t.id])).toEqual([]);
    expect(db.store.citationsOfShards([s.shardId])).toEqual([]);
  });
});

describe("writes that change the rendered block bump the soul's updatedAt", () => {
  it('add, revise, revert, reactivate, cite and updateSoul do; a repeated citation, a refused write and dropShard do not', async () => {
    const { db, clock } = setup({ traitLimit: 1 });
    const soul = await newSoul(db);
    const updatedAt = async () => (await getSoul(db, soul.id))!.updatedAt;
    const step = () => {
      clock.advance(HOUR_MS);
      return clock.now();
    };

    let at = step();
    const t = await addTrait(db, soul.id, trait('Run the tests'));
    expect(await updatedAt()).toBe(at);

    at = step();
    await reviseTrait(db, t.id, { principle: 'Run all the tests' });
    expect(await updatedAt()).toBe(at);

    const untouched = at;
    step();
    const s = await dropShard(db, 'Ran the tests', 'chat', [soul.id]);
    expect(await updatedAt()).toBe(untouched);

    at = step();
    await citeShard(db, s.shardId, t.id);
    expect(await updatedAt()).toBe(at);

    const cited = at;
    step();
    await citeShard(db, s.shardId, t.id);
    expect(await updatedAt()).toBe(cited);

    step();
    await rejection(addTrait(db, soul.id, trait('Second')), CapacityError);
    expect(await updatedAt()).toBe(cited);

    at = step();
    await revertTrait(db, t.id);
    expect(await updatedAt()).toBe(at);

    at = step();
    await reactivateTrait(db, t.id);
    expect(await updatedAt()).toBe(at);

    at = step();
    await updateSoul(db, soul.id, { essence: 'A new essence.' });
    expect(await updatedAt()).toBe(at);
  });
});

describe('trait writes on a dormant soul', () => {
  it('are refused with InvalidStateError and write nothing', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    const active = await addTrait(db, soul.id, trait('Run the tests'));
    const reverted = await addTrait(db, soul.id, trait('Keep commits small'));
    await revertTrait(db, reverted.id);
    const s = await dropShard(db, 'Ran the tests', 'chat', [soul.id]);
    await retireSoul(db, soul.id);
    clock.advance(HOUR_MS);
    const traits = await listTraits(db, soul.id);
    const dormant = await getSoul(db, soul.id);

    await rejection(addTrait(db, soul.id, trait('New one')), InvalidStateError);
    await rejection(reviseTrait(db, active.id, { principle: 'Changed' }), InvalidStateError);
    await rejection(revertTrait(db, active.id), InvalidStateError);
    await rejection(reactivateTrait(db, reverted.id), InvalidStateError);
    await rejection(citeShard(db, s.shardId, active.id), InvalidStateError);

    expect(await listTraits(db, soul.id)).toEqual(traits);
    expect(citationsOf(db, [active.id, reverted.id])).toEqual([]);
    expect(await getSoul(db, soul.id)).toEqual(dormant);
  });
});

describe('getTraitSignals', () => {
  it('tenure = trait age / max(1 day, soul age), within 0..1', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    const founding = await addTrait(db, soul.id, trait('From the start'));
    clock.advance(10 * DAY_MS);
    const later = await addTrait(db, soul.id, trait('Added on day ten'));
    clock.advance(30 * DAY_MS);
    const signals = await getTraitSignals(db, [founding.id, later.id]);
    expect(signals.get(founding.id)!.tenure).toBe(1);
    expect(signals.get(later.id)!.tenure).toBe(30 / 40);

    // A soul younger than a day: the denominator is one day, not the soul's age.
    const young = await newSoul(db, 'Young');
    const t = await addTrait(db, young.id, trait('Brand new'));
    clock.advance(6 * HOUR_MS);
    expect((await getTraitSignals(db, [t.id])).get(t.id)!.tenure).toBe(0.25);
  });

  it('stale = no change for more than staleDays AND no citation within staleDays', async () => {
    const { db, clock } = setup({ staleDays: 30 });
    const soul = await newSoul(db);
    const untouched = await addTrait(db, soul.id, trait('Never touched'));
    const revised = await addTrait(db, soul.id, trait('Revised later'));
    const cited = await addTrait(db, soul.id, trait('Cited later'));
    const s = await dropShard(db, 'Some evidence', 'chat', [soul.id]);
    const ids = [untouched.id, revised.id, cited.id];
    const staleAt = async (day: number) => {
      clock.set(T0 + day * DAY_MS);
      const signals = await getTraitSignals(db, ids);
      return ids.map((id) => signals.get(id)!.stale);
    };

    clock.set(T0 + 20 * DAY_MS);
    await reviseTrait(db, revised.id, { provenance: 'seen again in reviews' });
    clock.set(T0 + 25 * DAY_MS);
    await citeShard(db, s.shardId, cited.id);

    expect(await staleAt(30)).toEqual([false, false, false]); // exactly staleDays old is not "older than"
    expect(await staleAt(31)).toEqual([true, false, false]); // the cited one is 31 days unchanged, but cited 6 days ago
    expect(await staleAt(50)).toEqual([true, false, false]);
    expect(await staleAt(51)).toEqual([true, true, false]); // revised 31 days ago; citation 26 days ago
    expect(await staleAt(55)).toEqual([true, true, false]);
    expect(await staleAt(56)).toEqual([true, true, true]); // last citation now 31 days old
  });

  it('citationCount and citationDensity = citations / max(1, age in days)', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    clock.advance(10 * DAY_MS);
    const shards = [];
    for (const content of ['First note', 'Second note', 'Third note']) shards.push((await dropShard(db, content, 'chat', [soul.id])).shardId);
    const t = await addTrait(db, soul.id, { ...trait('Takes notes'), citeShardIds: shards });
    const bare = await addTrait(db, soul.id, trait('Uncited'));

    clock.advance(12 * HOUR_MS);
    let signals = await getTraitSignals(db, [t.id, bare.id]);
    expect(signals.get(t.id)).toMatchObject({ citationCount: 3, citationDensity: 3 });
    expect(signals.get(bare.id)).toMatchObject({ citationCount: 0, citationDensity: 0 });

    clock.set(T0 + 40 * DAY_MS);
    signals = await getTraitSignals(db, [t.id]);
    expect(signals.get(t.id)!.citationDensity).toBeCloseTo(3 / 30, 12);
  });

  it('essenceRedundancy = similarity(principle, essence)', async () => {
    const { db } = setup();
    const soul = await newSoul(db, 'Ada', 'Keeps commits small and focused.');
    const echo = await addTrait(db, soul.id, trait('Keep commits small'));
    const other = await addTrait(db, soul.id, trait('Drinks green tea at dawn'));
    const signals = await getTraitSignals(db, [echo.id, other.id]);
    const echoRedundancy = signals.get(echo.id)!.essenceRedundancy;
    expect(echoRedundancy).toBe(similarity('Keep commits small', 'Keeps commits small and focused.'));
    expect(signals.get(other.id)!.essenceRedundancy).toBe(similarity('Drinks green tea at dawn', 'Keeps commits small and focused.'));
    expect(echoRedundancy).toBeGreaterThan(0.3);
    expect(echoRedundancy).toBeGreaterThan(signals.get(other.id)!.essenceRedundancy);
  });

  it('survivalCount = attunements of the soul since the trait was created', async () => {
    const { db, clock } = setup();
    const soul = await newSoul(db);
    clock.advance(DAY_MS);
    await stampAttuned(db, soul.id);
    clock.advance(DAY_MS);
    const t = await addTrait(db, soul.id, trait('Survivor'));
    expect((await getTraitSignals(db, [t.id])).get(t.id)!.survivalCount).toBe(0);
    clock.advance(DAY_MS);
    await stampAttuned(db, soul.id);
    clock.advance(DAY_MS);
    await stampAttuned(db, soul.id);
    const other = await newSoul(db, 'Other');
    await stampAttuned(db, other.id);
    expect((await getTraitSignals(db, [t.id])).get(t.id)!.survivalCount).toBe(2);
  });
});

describe('getSoulHealth', () => {
  it('= (1 − avgStaleness) × (1 − activeCount / traitLimit) × min(1, pending / crystallizationThreshold)', async () => {
    const { db, clock } = setup({ traitLimit: 4, crystallizationThreshold: 3, staleDays: 30 });
    const soul = await newSoul(db);
    await addTrait(db, soul.id, trait('Will go stale'));
    clock.set(T0 + 35 * DAY_MS);
    await addTrait(db, soul.id, trait('Fresh'));
    await dropShard(db, 'First pending note', 'chat', [soul.id]);
    await dropShard(db, 'Second pending note', 'email', [soul.id]);
    await dropShard(db, 'A sealed note does not count', 'email', [soul.id], { sealed: true });
    clock.set(T0 + 40 * DAY_MS);

    // One of two active traits stale; 2 of 4 slots used; 2 of 3 pending shards.
    expect((await getSoulHealth(db, [soul.id])).get(soul.id)).toBeCloseTo((1 - 1 / 2) * (1 - 2 / 4) * (2 / 3), 12);

    await dropShard(db, 'Third pending note', 'journal', [soul.id]);
    await dropShard(db, 'Fourth pending note', 'journal', [soul.id]);
    // Pending coverage saturates at 1.
    expect((await getSoulHealth(db, [soul.id])).get(soul.id)).toBeCloseTo(0.5 * 0.5 * 1, 12);

    await addTrait(db, soul.id, trait('Third'));
    await addTrait(db, soul.id, trait('Fourth'));
    // At capacity: no headroom.
    expect((await getSoulHealth(db, [soul.id])).get(soul.id)).toBe(0);
  });

  it('is computed per soul in one call; no traits means no staleness and full headroom', async () => {
    const { db } = setup({ crystallizationThreshold: 3 });
    const empty = await newSoul(db, 'Empty');
    const fed = await newSoul(db, 'Fed');
    const partly = await newSoul(db, 'Partly');
    for (const content of ['one note', 'two notes', 'three notes']) await dropShard(db, content, 'chat', [fed.id]);
    await dropShard(db, 'only note', 'chat', [partly.id]);
    await addTrait(db, partly.id, trait('One of ten'));
    const health = await getSoulHealth(db, [empty.id, fed.id, partly.id]);
    expect(health.get(empty.id)).toBe(0);
    expect(health.get(fed.id)).toBe(1);
    expect(health.get(partly.id)).toBeCloseTo(1 * (1 - 1 / 10) * (1 / 3), 12);
  });
});
