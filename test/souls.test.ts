import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  DAY_MS,
  InvalidStateError,
  NotFoundError,
  ValidationError,
  addTrait,
  awakenSoul,
  createSoul,
  dropShard,
  getCrystallization,
  getLevelHistory,
  getShard,
  getSoul,
  getSoulByName,
  levelUp,
  listDormantSouls,
  listSouls,
  listSoulsOrdered,
  listTraits,
  renderSoul,
  retireSoul,
  revertTrait,
  stampAttuned,
  updateSoul,
  type SoulOrder,
  type SoulsDb,
} from '../src/engine/index.ts';
import { freshDb, rejection } from './support/engine.ts';

const T0 = Date.UTC(2026, 0, 1);
const HOUR_MS = 3_600_000;

const setup = (settings: Record<string, unknown> = {}) => freshDb(T0, settings);

/** Awaits a promise that must reject with `type`; returns the error for field assertions. */

/** Three dissimilar shards from three sources over three days: enough for a soul to crystallize. */
async function dropReadyEvidence(db: SoulsDb, soulId: number, extra: string[] = []) {
  const now = db.clock.now();
  const drops = [
    await dropShard(db, 'Always runs the full test suite before pushing', 'chat', [soulId], { createdAt: now - 3 * DAY_MS }),
    await dropShard(db, 'Prefers green tea to coffee in the morning', 'email', [soulId], { createdAt: now - 2 * DAY_MS }),
  ];
  for (const content of extra) drops.push(await dropShard(db, content, 'chat', [soulId], { createdAt: now - DAY_MS }));
  drops.push(await dropShard(db, 'Writes documentation for each public function', 'journal', [soulId]));
  return { shardId: drops.at(-1)!.shardId, readySoulIds: drops.flatMap((d) => d.readySoulIds) };
}

const emptyPlan = (newEssence: string) => ({ newEssence, consolidations: [], promotedTraitIds: [], carriedTraitIds: [] });

describe('createSoul', () => {
  it('trims name and essence, starts at level 0, defaults description to empty and derives the slug from the name', async () => {
    const { db } = setup();
    const soul = await createSoul(db, { name: '  Ada  ', essence: '\n A careful engineer. \t' });
    expect(soul).toEqual({
      id: soul.id,
      name: 'Ada',
      slug: 'ada',
      essence: 'A careful engineer.',
      description: '',
      level: 0,
      createdAt: T0,
      updatedAt: T0,
      orderedAt: T0,
      deletedAt: null,
      lastAttunedAt: null,
    });
    expect(await getSoul(db, soul.id)).toEqual(soul);
  });

  it('stores a valid slug and a trimmed description', async () => {
    const { db } = setup();
    const soul = await createSoul(db, { name: 'Ada', slug: ' ada-1_x ', essence: 'e', description: '  Counts everything.  ' });
    expect(soul.slug).toBe('ada-1_x');
    expect(soul.description).toBe('Counts everything.');
    const blank = await createSoul(db, { name: 'Bob', slug: '   ', essence: 'e' });
    expect(blank.slug).toBe('bob');
  });

  it.each([
    ['name', { name: '   ', essence: 'e' }],
    ['name', { name: '', essence: 'e' }],
    ['name', { name: 42 as unknown as string, essence: 'e' }],
    ['essence', { name: 'Ada', essence: ' \n\t ' }],
    ['essence', { name: 'Ada', essence: undefined as unknown as string }],
    ['slug', { name: 'Ada', essence: 'e', slug: 'Ada Lovelace' }],
    ['slug', { name: 'Ada', essence: 'e', slug: '-leading-dash' }],
    ['slug', { name: 'Ada', essence: 'e', slug: 'x'.repeat(65) }],
  ])('refuses a bad %s with a ValidationError naming it, writing nothing', async (field, input) => {
    const { db } = setup();
    const error = await rejection(createSoul(db, input), ValidationError);
    expect(error.field).toBe(field);
    expect(await listSouls(db)).toEqual([]);
    expect(await listDormantSouls(db)).toEqual([]);
  });

  it('refuses a name already taken by an awake soul (ConflictError on name)', async () => {
    const { db } = setup();
    const ada = await createSoul(db, { name: 'Ada', essence: 'first' });
    const error = await rejection(createSoul(db, { name: ' Ada ', essence: 'second' }), ConflictError);
    expect(error.field).toBe('name');
    expect(await listSouls(db)).toEqual([ada]);
  });

  it('refuses a slug already taken by an awake soul (ConflictError on slug)', async () => {
    const { db } = setup();
    const ada = await createSoul(db, { name: 'Ada', slug: 'ada', essence: 'first' });
    const error = await rejection(createSoul(db, { name: 'Other', slug: 'ada', essence: 'second' }), ConflictError);
    expect(error.field).toBe('slug');
    expect(await listSouls(db)).toEqual([ada]);
  });

  it("lets a new soul reuse a dormant soul's name and slug", async () => {
    const { db } = setup();
    const old = await createSoul(db, { name: 'Ada', slug: 'ada', essence: 'old' });
    await retireSoul(db, old.id);
    const fresh = await createSoul(db, { name: 'Ada', slug: 'ada', essence: 'new' });
    expect(fresh.id).not.toBe(old.id);
    expect((await listSouls(db)).map((s) => s.id)).toEqual([fresh.id]);
    expect((await listDormantSouls(db)).map((s) => s.id)).toEqual([old.id]);
  });
});

describe('retireSoul and awakenSoul', () => {
  it('sets and clears deletedAt; listSouls excludes dormant souls, listDormantSouls lists them', async () => {
    const { db, clock } = setup();
    const ada = await createSoul(db, { name: 'Ada', essence: 'e' });
    const bob = await createSoul(db, { name: 'Bob', essence: 'e' });
    clock.advance(HOUR_MS);
    const retired = await retireSoul(db, ada.id);
    expect(retired.deletedAt).toBe(clock.now());
    expect((await listSouls(db)).map((s) => s.name)).toEqual(['Bob']);
    expect((await listDormantSouls(db)).map((s) => s.name)).toEqual(['Ada']);

    clock.advance(HOUR_MS);
    const { soul: awake } = await awakenSoul(db, ada.id);
    expect(awake.deletedAt).toBeNull();
    expect(awake.name).toBe('Ada');
    expect((await listSouls(db)).map((s) => s.id)).toEqual([ada.id, bob.id]);
    expect(await listDormantSouls(db)).toEqual([]);
  });

  it('refuses to retire a dormant soul or awaken an awake one (InvalidStateError), and unknown souls (NotFoundError)', async () => {
    const { db } = setup();
    const ada = await createSoul(db, { name: 'Ada', essence: 'e' });
    await rejection(awakenSoul(db, ada.id), InvalidStateError);
    const retired = await retireSoul(db, ada.id);
    await rejection(retireSoul(db, ada.id), InvalidStateError);
    expect(await getSoul(db, ada.id)).toEqual(retired);
    const missing = await rejection(retireSoul(db, 999), NotFoundError);
    expect([missing.entity, missing.id]).toEqual(['Soul', '999']);
    await rejection(awakenSoul(db, 999), NotFoundError);
  });

  it('refuses to awaken a soul whose name was taken meanwhile, and accepts a rename (checked again)', async () => {
    const { db, clock } = setup();
    const old = await createSoul(db, { name: 'Ada', essence: 'old' });
    await retireSoul(db, old.id);
    await createSoul(db, { name: 'Ada', essence: 'new' });
    await createSoul(db, { name: 'Ada II', essence: 'newer' });

    const conflict = await rejection(awakenSoul(db, old.id), ConflictError);
    expect(conflict.field).toBe('name');
    expect((await getSoul(db, old.id))!.deletedAt).not.toBeNull();

    const renameTaken = await rejection(awakenSoul(db, old.id, { rename: 'Ada II' }), ConflictError);
    expect(renameTaken.field).toBe('name');
    const renameBlank = await rejection(awakenSoul(db, old.id, { rename: '   ' }), ValidationError);
    expect(renameBlank.field).toBe('name');
    expect(await getSoul(db, old.id)).toMatchObject({ name: 'Ada', deletedAt: expect.any(Number) });

    clock.advance(HOUR_MS);
    const { soul: renamed } = await awakenSoul(db, old.id, { rename: '  Ada (elder)  ' });
    expect(renamed.name).toBe('Ada (elder)');
    expect(renamed.deletedAt).toBeNull();
    // The name is part of the rendered block, so a rename bumps updatedAt.
    expect(renamed.updatedAt).toBe(clock.now());
    expect((await listSouls(db)).map((s) => s.name)).toEqual(['Ada', 'Ada (elder)', 'Ada II']);
  });

  it('gives a soul whose slug was taken while it slept a free slug from its name when it awakens', async () => {
    const { db } = setup();
    const old = await createSoul(db, { name: 'Ada', slug: 'ada', essence: 'old' });
    await retireSoul(db, old.id);
    await createSoul(db, { name: 'Other', slug: 'ada', essence: 'new' });
    expect((await awakenSoul(db, old.id, { rename: 'Ada again' })).soul.slug).toBe('ada-again');

    const kept = await createSoul(db, { name: 'Bea', slug: 'bea-slug', essence: 'e' });
    await retireSoul(db, kept.id);
    expect((await awakenSoul(db, kept.id)).soul.slug).toBe('bea-slug');

    const taken = await createSoul(db, { name: 'Cy', essence: 'e' });
    await retireSoul(db, taken.id);
    await createSoul(db, { name: 'Cy', essence: 'e' });
    await createSoul(db, { name: 'Cy 2', slug: 'cy-2', essence: 'e' });
    expect((await awakenSoul(db, taken.id, { rename: 'Cy the elder' })).soul.slug).toBe('cy-the-elder');
    await retireSoul(db, taken.id);
    await createSoul(db, { name: 'Cy the elder', essence: 'e' });
    // Its name and slug both taken now: awakened under a new name whose slug is free.
    expect((await awakenSoul(db, taken.id, { rename: 'Cy III' })).soul.slug).toBe('cy-iii');
  });

  it('keeps history intact through retire and awaken: traits, level history, level and render', async () => {
    const { db, clock } = setup();
    const soul = await createSoul(db, { name: 'Ada', essence: 'A careful engineer.' });
    const a = await addTrait(db, soul.id, { principle: 'Run the tests first', provenance: 'three reviews' });
    const b = await addTrait(db, soul.id, { principle: 'Keep commits small', provenance: 'git log' });
    clock.advance(DAY_MS);
    await levelUp(db, soul.id, { newEssence: 'A careful, test-first engineer.', consolidations: [], promotedTraitIds: [a.id], carriedTraitIds: [b.id] });
    const c = await addTrait(db, soul.id, { principle: 'Pairs on hard bugs', provenance: 'standups' });
    await revertTrait(db, c.id);

    const before = {
      soul: await getSoul(db, soul.id),
      traits: await listTraits(db, soul.id),
      history: await getLevelHistory(db, soul.id),
      render: await renderSoul(db, soul.id, { includeProvenance: true }),
    };
    expect(before.soul!.level).toBe(1);
    expect(before.traits.map((t) => t.status)).toEqual(['promoted', 'active', 'reverted']);
    expect(before.history).toHaveLength(1);

    clock.advance(DAY_MS);
    await retireSoul(db, soul.id);
    expect(await listTraits(db, soul.id)).toEqual(before.traits);
    expect(await getLevelHistory(db, soul.id)).toEqual(before.history);
    clock.advance(DAY_MS);
    const { soul: awake } = await awakenSoul(db, soul.id);

    expect(awake).toEqual(before.soul);
    expect(await listTraits(db, soul.id)).toEqual(before.traits);
    expect(await getLevelHistory(db, soul.id)).toEqual(before.history);
    expect(await renderSoul(db, soul.id, { includeProvenance: true })).toBe(before.render);
  });

  it('lets a dormant soul receive shards but never makes it ready (unmet: DORMANT); awakening makes it ready', async () => {
    const { db } = setup();
    const soul = await createSoul(db, { name: 'Ada', essence: 'e' });
    await retireSoul(db, soul.id);
    const drop = await dropReadyEvidence(db, soul.id);
    expect(drop.readySoulIds).toEqual([]);
    expect((await getShard(db, drop.shardId))!.soulIds).toEqual([soul.id]);

    const dormant = (await getCrystallization(db, [soul.id])).get(soul.id)!;
    expect(dormant.ready).toBe(false);
    expect(dormant.pendingCount).toBe(3);
    expect(dormant.unmet).toEqual(['DORMANT']);

    await awakenSoul(db, soul.id);
    const awake = (await getCrystallization(db, [soul.id])).get(soul.id)!;
    expect(awake.ready).toBe(true);
    expect(awake.unmet).toEqual([]);
  });
});

describe('getSoulByName', () => {
  it('finds the awake soul, else the dormant one; null for an unknown name', async () => {
    const { db, clock } = setup();
    expect(await getSoulByName(db, 'Ada')).toBeNull();
    const old = await createSoul(db, { name: 'Ada', essence: 'old' });
    expect((await getSoulByName(db, 'Ada'))!.id).toBe(old.id);
    clock.advance(HOUR_MS);
    await retireSoul(db, old.id);
    expect((await getSoulByName(db, 'Ada'))!.id).toBe(old.id);
    const fresh = await createSoul(db, { name: 'Ada', essence: 'new' });
    expect((await getSoulByName(db, 'Ada'))!.id).toBe(fresh.id);
    expect(await getSoulByName(db, 'Grace')).toBeNull();
  });
});

describe('updateSoul', () => {
  it('overwrites the fields, bypasses evolution and bumps updatedAt only', async () => {
    const { db, clock } = setup();
    const soul = await createSoul(db, { name: 'Ada', slug: 'ada', essence: 'old essence', description: 'old' });
    clock.advance(DAY_MS);
    const updated = await updateSoul(db, soul.id, { name: ' Grace ', slug: 'grace', essence: ' new essence ', description: ' new ' });
    // The block changed, so its reference time moves with it.
    expect(updated).toEqual({ ...soul, name: 'Grace', slug: 'grace', essence: 'new essence', description: 'new', updatedAt: T0 + DAY_MS, orderedAt: T0 + DAY_MS });
    expect(await getLevelHistory(db, soul.id)).toEqual([]);
    expect(updated.level).toBe(0);
    expect(await getSoul(db, soul.id)).toEqual(updated);
  });

  it('leaves fields it is not given alone, and derives the slug from the name again with null', async () => {
    const { db, clock } = setup();
    const soul = await createSoul(db, { name: 'Ada Lovelace', slug: 'ada', essence: 'e', description: 'd' });
    clock.advance(HOUR_MS);
    const updated = await updateSoul(db, soul.id, { slug: null });
    // Only the slug changed, which the block does not show: orderedAt stays.
    expect(updated).toEqual({ ...soul, slug: 'ada-lovelace', updatedAt: T0 + HOUR_MS });
    const same = await updateSoul(db, soul.id, { name: 'Ada Lovelace' });
    expect(same.name).toBe('Ada Lovelace');
  });

  it('checks conflicts and input, writing nothing when refused', async () => {
    const { db, clock } = setup();
    await createSoul(db, { name: 'Ada', slug: 'ada', essence: 'e' });
    const bob = await createSoul(db, { name: 'Bob', slug: 'bob', essence: 'e' });
    clock.advance(HOUR_MS);
    expect((await rejection(updateSoul(db, bob.id, { name: 'Ada' }), ConflictError)).field).toBe('name');
    expect((await rejection(updateSoul(db, bob.id, { slug: 'ada' }), ConflictError)).field).toBe('slug');
    expect((await rejection(updateSoul(db, bob.id, { essence: '  ' }), ValidationError)).field).toBe('essence');
    expect((await rejection(updateSoul(db, bob.id, { name: '' }), ValidationError)).field).toBe('name');
    expect((await rejection(updateSoul(db, bob.id, { slug: 'Not A Slug' }), ValidationError)).field).toBe('slug');
    expect(await getSoul(db, bob.id)).toEqual(bob);
    const missing = await rejection(updateSoul(db, 999, { name: 'X' }), NotFoundError);
    expect(missing.entity).toBe('Soul');
  });
});

describe('stampAttuned', () => {
  it('records the attunement time; refused on a dormant soul', async () => {
    const { db, clock } = setup();
    const soul = await createSoul(db, { name: 'Ada', essence: 'e' });
    clock.advance(DAY_MS);
    expect((await stampAttuned(db, soul.id)).lastAttunedAt).toBe(T0 + DAY_MS);
    await retireSoul(db, soul.id);
    await rejection(stampAttuned(db, soul.id), InvalidStateError);
    expect((await getSoul(db, soul.id))!.lastAttunedAt).toBe(T0 + DAY_MS);
  });
});

describe('listSoulsOrdered', () => {
  it('NAME: alphabetical, dormant souls left out', async () => {
    const { db } = setup();
    for (const name of ['Mia', 'Zora', 'Aaron', 'Dormant']) await createSoul(db, { name, essence: 'e' });
    await retireSoul(db, (await getSoulByName(db, 'Dormant'))!.id);
    expect((await listSoulsOrdered(db, 'NAME')).map((s) => s.name)).toEqual(['Aaron', 'Mia', 'Zora']);
  });

  it('LEVEL: highest level first, then name', async () => {
    const { db } = setup();
    const souls = new Map<string, number>();
    for (const name of ['Amy', 'Bob', 'Cat', 'Zed']) souls.set(name, (await createSoul(db, { name, essence: 'e' })).id);
    await levelUp(db, souls.get('Zed')!, emptyPlan('zed one'));
    await levelUp(db, souls.get('Zed')!, emptyPlan('zed two'));
    await levelUp(db, souls.get('Cat')!, emptyPlan('cat one'));
    expect((await listSoulsOrdered(db, 'LEVEL')).map((s) => [s.name, s.level])).toEqual([
      ['Zed', 2],
      ['Cat', 1],
      ['Amy', 0],
      ['Bob', 0],
    ]);
  });

  it('UPDATED: most recently updated first', async () => {
    const { db, clock } = setup();
    const a = await createSoul(db, { name: 'A', essence: 'e' });
    clock.advance(HOUR_MS);
    await createSoul(db, { name: 'B', essence: 'e' });
    clock.advance(HOUR_MS);
    await createSoul(db, { name: 'C', essence: 'e' });
    clock.advance(HOUR_MS);
    await updateSoul(db, a.id, { description: 'touched' });
    expect((await listSoulsOrdered(db, 'UPDATED')).map((s) => s.name)).toEqual(['A', 'C', 'B']);
  });

  it('READINESS (the default): ready souls first by priority, then the rest by priority, then name', async () => {
    const { db } = setup();
    const ids = new Map<string, number>();
    for (const name of ['Aaron', 'Mia', 'Yuri', 'Zora']) ids.set(name, (await createSoul(db, { name, essence: 'e' })).id);
    // Zora: 3 shards × 3 sources × 3 days = priority 27; Yuri: one more shard, priority 36.
    const zora = await dropReadyEvidence(db, ids.get('Zora')!);
    const yuri = await dropReadyEvidence(db, ids.get('Yuri')!, ['Sketches architecture diagrams on whiteboards']);
    expect(zora.readySoulIds).toEqual([ids.get('Zora')]);
    expect(yuri.readySoulIds).toEqual([ids.get('Yuri')]);
    // Mia: two shards, not ready (below the threshold) but with priority 2 × 2 × 2 = 8 > Aaron's 0.
    await dropShard(db, 'Reads papers on distributed consensus', 'chat', [ids.get('Mia')!], { createdAt: T0 - 2 * DAY_MS });
    await dropShard(db, 'Plays chess at lunch', 'email', [ids.get('Mia')!]);

    const verdicts = await getCrystallization(db, [...ids.values()]);
    expect([...ids].map(([name, id]) => [name, verdicts.get(id)!.ready, verdicts.get(id)!.priority])).toEqual([
      ['Aaron', false, 0],
      ['Mia', false, 8],
      ['Yuri', true, 36],
      ['Zora', true, 27],
    ]);
    expect((await listSoulsOrdered(db, 'READINESS')).map((s) => s.name)).toEqual(['Yuri', 'Zora', 'Mia', 'Aaron']);
    expect((await listSoulsOrdered(db)).map((s) => s.name)).toEqual(['Yuri', 'Zora', 'Mia', 'Aaron']);
  });

  it('READINESS puts a ready soul before a not-ready one whatever their names', async () => {
    const { db } = setup();
    const aaron = await createSoul(db, { name: 'Aaron', essence: 'e' });
    const zora = await createSoul(db, { name: 'Zora', essence: 'e' });
    await dropReadyEvidence(db, zora.id);
    expect((await listSoulsOrdered(db, 'READINESS')).map((s) => s.id)).toEqual([zora.id, aaron.id]);
    expect((await listSoulsOrdered(db, 'NAME')).map((s) => s.id)).toEqual([aaron.id, zora.id]);
  });

  it('refuses an unknown order', async () => {
    const { db } = setup();
    const error = await rejection(listSoulsOrdered(db, 'SIZE' as SoulOrder), ValidationError);
    expect(error.field).toBe('orderBy');
  });
});
