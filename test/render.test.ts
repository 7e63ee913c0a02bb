import { describe, expect, it } from 'vitest';
import {
  CapacityError,
  DAY_MS,
  InvalidStateError,
  NotFoundError,
  ValidationError,
  addTrait,
  citeShard,
  createSoul,
  dropShard,
  getSoul,
  listTraits,
  manualClock,
  previewTraitChanges,
  renderSoul,
  renderSouls,
  retireSoul,
  reviseTrait,
  revertTrait,
  type SoulsDb,
  type Trait,
} from '../src/engine/index.ts';
import { orderForRender, renderBlock } from '../src/engine/render.ts';
import { freshDb, rejection } from './support/engine.ts';

const T0 = Date.UTC(2026, 0, 1);
const HOUR_MS = 3_600_000;

const setup = (settings: Record<string, unknown> = {}) => freshDb(T0, settings);


describe('render format', () => {
  it('lean and full blocks, exactly', async () => {
    const { db, clock } = setup();
    const soul = await createSoul(db, { name: 'Ada', description: 'Counts  everything.', essence: 'A careful engineer.\nShe measures twice.' });
    await addTrait(db, soul.id, { principle: 'Run the tests first', provenance: 'three code reviews' });
    clock.advance(HOUR_MS);
    await addTrait(db, soul.id, { principle: 'Keep commits\n  small', provenance: 'git log, March' });

    expect(await renderSoul(db, soul.id)).toBe(
      '# Ada\n\n*Counts everything.*\n\nA careful engineer.\nShe measures twice.\n\n## Traits\n- Run the tests first\n- Keep commits small\n',
    );
    expect(await renderSoul(db, soul.id, { includeProvenance: true })).toBe(
      '# Ada\n\n*Counts everything.*\n\nA careful engineer.\nShe measures twice.\n\n## Traits\n' +
        '- **Run the tests first** — three code reviews\n' +
        '- **Keep commits small** — git log, March\n',
    );
  });

  it('omits the description line when empty and the Traits section without active traits', async () => {
    const { db } = setup();
    const soul = await createSoul(db, { name: 'Bob', essence: 'A quiet tester.' });
    expect(await renderSoul(db, soul.id)).toBe('# Bob\n\nA quiet tester.\n');
    expect(await renderSoul(db, soul.id, { includeProvenance: true })).toBe('# Bob\n\nA quiet tester.\n');

    const t = await addTrait(db, soul.id, { principle: 'Writes the test first', provenance: 'pairing' });
    expect(await renderSoul(db, soul.id)).toBe('# Bob\n\nA quiet tester.\n\n## Traits\n- Writes the test first\n');
    await revertTrait(db, t.id);
    expect(await renderSoul(db, soul.id)).toBe('# Bob\n\nA quiet tester.\n');
  });

  it('renderSouls gives the same blocks as renderSoul, leaving out unknown ids; renderSoul refuses an unknown soul', async () => {
    const { db } = setup();
    const a = await createSoul(db, { name: 'Ada', essence: 'First.' });
    const b = await createSoul(db, { name: 'Bob', essence: 'Second.', description: 'Quiet.' });
    await addTrait(db, b.id, { principle: 'Listens', provenance: 'meetings' });
    const blocks = await renderSouls(db, [b.id, a.id, 999], { includeProvenance: true });
    expect([...blocks.keys()].sort()).toEqual([a.id, b.id].sort());
    expect(blocks.get(a.id)).toBe(await renderSoul(db, a.id, { includeProvenance: true }));
    expect(blocks.get(b.id)).toBe('# Bob\n\n*Quiet.*\n\nSecond.\n\n## Traits\n- **Listens** — meetings\n');
    const error = await rejection(renderSoul(db, 999), NotFoundError);
    expect([error.entity, error.id]).toEqual(['Soul', '999']);
  });
});

/**
 * Six traits whose order exercises every tie-breaker. Densities are measured
 * at day 10, when the last citation bumps the soul's orderedAt:
 *   Cedar   created day 8, 3 citations → 3/2 = 1.5
 *   Ash     created day 0, 5 citations → 5/10 = 0.5   (ties with Birch: older first)
 *   Birch   created day 6, 2 citations → 2/4 = 0.5
 *   Fir     created day 3, 0 citations → 0           (ties with Dogwood and Elm: older first)
 *   Dogwood created day 9, 0 citations → 0           (same createdAt as Elm: lower id first)
 *   Elm     created day 9, 0 citations → 0
 */
async function buildGrove(db: SoulsDb, clock: ReturnType<typeof manualClock>) {
  const soul = await createSoul(db, { name: 'Grove', essence: 'A stand of trees.' });
  const shards: number[] = [];
  for (const content of ['note one', 'note two', 'note three', 'note four', 'note five']) {
    shards.push((await dropShard(db, content, 'chat', [soul.id])).shardId);
  }
  const at = (day: number) => clock.set(T0 + day * DAY_MS);
  const add = (principle: string) => addTrait(db, soul.id, { principle, provenance: `${principle} provenance` });
  at(0);
  const ash = await add('Ash');
  at(3);
  const fir = await add('Fir');
  at(6);
  const birch = await add('Birch');
  at(8);
  const cedar = await add('Cedar');
  at(9);
  const dogwood = await add('Dogwood');
  const elm = await add('Elm');
  at(10);
  for (const s of shards) await citeShard(db, s, ash.id);
  for (const s of shards.slice(0, 2)) await citeShard(db, s, birch.id);
  for (const s of shards.slice(0, 3)) await citeShard(db, s, cedar.id);
  return { soul, traits: { ash, birch, cedar, dogwood, elm, fir } };
}

const groveBlock =
  '# Grove\n\nA stand of trees.\n\n## Traits\n' + ['Cedar', 'Ash', 'Birch', 'Fir', 'Dogwood', 'Elm'].map((p) => `- ${p}`).join('\n') + '\n';

describe('render order', () => {
  it('citation density descending, then createdAt ascending, then id', async () => {
    const { db, clock } = setup();
    const { soul } = await buildGrove(db, clock);
    expect((await getSoul(db, soul.id))!.orderedAt).toBe(T0 + 10 * DAY_MS);
    expect(await renderSoul(db, soul.id)).toBe(groveBlock);
  });

  it('is byte-identical across a 60-day clock jump', async () => {
    const { db, clock } = setup();
    const { soul, traits } = await buildGrove(db, clock);
    const lean = await renderSoul(db, soul.id);
    const full = await renderSoul(db, soul.id, { includeProvenance: true });
    clock.advance(60 * DAY_MS);
    // Density depends on age, and age on the clock: measured at now (day 70)
    // Ash would be 5/70, Cedar 3/62 and Birch 2/64, reordering the block
    // between two writes. The engine measures age at the soul's orderedAt
    // (bumped by every write that changes the block), so the block is a pure
    // function of stored rows and stays identical until the next such write.
    const active = await listTraits(db, soul.id, { status: 'active' });
    const counts = new Map([
      [traits.ash.id, 5],
      [traits.birch.id, 2],
      [traits.cedar.id, 3],
    ]);
    const orderAtNow = orderForRender({ orderedAt: clock.now() }, active, counts).map((t) => t.principle);
    expect(orderAtNow.slice(0, 3)).toEqual(['Ash', 'Cedar', 'Birch']);

    expect(await renderSoul(db, soul.id)).toBe(lean);
    expect(await renderSoul(db, soul.id, { includeProvenance: true })).toBe(full);
    expect(lean).toBe(groveBlock);
  });

  it('same input and clock → same bytes, in a separate database', async () => {
    const first = setup();
    const second = setup();
    const a = await buildGrove(first.db, first.clock);
    const b = await buildGrove(second.db, second.clock);
    expect(await renderSoul(second.db, b.soul.id, { includeProvenance: true })).toBe(await renderSoul(first.db, a.soul.id, { includeProvenance: true }));
    expect(await renderSoul(first.db, a.soul.id)).toBe(await renderSoul(first.db, a.soul.id));
  });

  it('orders by createdAt before id and by id last, whatever order the rows arrive in (pure renderBlock)', () => {
    const soul = { name: 'Pure', description: '', essence: 'Rows only.', orderedAt: T0 + 10 * DAY_MS };
    const row = (id: number, principle: string, day: number): Trait => ({
      id,
      soulId: 1,
      principle,
      provenance: 'p',
      generation: 0,
      status: 'active',
      mergedInto: null,
      createdAt: T0 + day * DAY_MS,
      updatedAt: T0 + day * DAY_MS,
    });
    // An imported trait can have a higher id yet an older createdAt.
    const traits = [row(7, 'same day, id 7', 5), row(3, 'same day, id 3', 5), row(9, 'imported, oldest', 1), row(2, 'cited', 8)];
    const counts = new Map([[2, 1]]);
    const expected = '# Pure\n\nRows only.\n\n## Traits\n- cited\n- imported, oldest\n- same day, id 3\n- same day, id 7\n';
    expect(renderBlock(soul, traits, counts)).toBe(expected);
    expect(renderBlock(soul, [...traits].reverse(), counts)).toBe(expected);
  });
});

describe('render order ties', () => {
  it('mathematically equal densities tie and fall through to createdAt, whatever the last floating-point bit says', async () => {
    const { db, clock } = setup();
    const soul = await createSoul(db, { name: 'Tie', essence: 'Equal densities.' });
    const s = [];
    for (const content of ['first note', 'second note', 'third note', 'fourth note']) s.push((await dropShard(db, content, 'chat', [soul.id])).shardId);
    // Older: 3 citations over 11 days. Younger: 1 citation over 11/3 days. Both 3/11 exactly,
    // but in floating point 1 / (11/3) is one bit above 3 / 11.
    const older = await addTrait(db, soul.id, { principle: 'Older', provenance: 'p', citeShardIds: s.slice(0, 3) });
    clock.set(T0 + (22 * DAY_MS) / 3);
    await addTrait(db, soul.id, { principle: 'Younger', provenance: 'p', citeShardIds: [s[3]] });
    clock.set(T0 + 11 * DAY_MS);
    await addTrait(db, soul.id, { principle: 'Uncited', provenance: 'p' });
    expect(1 / (11 / 3)).toBeGreaterThan(3 / 11);
    expect(older.createdAt).toBe(T0);
    expect(await renderSoul(db, soul.id)).toBe('# Tie\n\nEqual densities.\n\n## Traits\n- Older\n- Younger\n- Uncited\n');
  });
});

describe('previewTraitChanges', () => {
  it('returns before and after and writes nothing', async () => {
    const { db, clock } = setup();
    const { soul, traits } = await buildGrove(db, clock);
    clock.advance(DAY_MS);
    const extra = await dropShard(db, 'note six', 'email', [soul.id]);
    const before = await renderSoul(db, soul.id);
    const rows = await listTraits(db, soul.id);
    const soulRow = await getSoul(db, soul.id);
    const citations = db.store.citationsOfShards([extra.shardId]);

    const preview = await previewTraitChanges(db, soul.id, {
      add: [{ principle: 'Oak', provenance: 'acorns', citeShardIds: [extra.shardId] }],
      revise: [{ traitId: traits.elm.id, principle: 'Elm, revised' }],
      revert: [traits.cedar.id],
    });
    expect(preview.before).toBe(before);
    expect(preview.after).not.toBe(before);

    expect(await renderSoul(db, soul.id)).toBe(before);
    expect(await listTraits(db, soul.id)).toEqual(rows);
    expect(await getSoul(db, soul.id)).toEqual(soulRow);
    expect(db.store.citationsOfShards([extra.shardId])).toEqual(citations);
  });

  it('after equals the real render once the same changes are applied at the same clock', async () => {
    const { db, clock } = setup();
    const { soul, traits } = await buildGrove(db, clock);
    clock.advance(2 * DAY_MS);
    const s6 = await dropShard(db, 'note six', 'email', [soul.id]);
    const s7 = await dropShard(db, 'note seven', 'email', [soul.id]);
    const changes = {
      add: [
        { principle: 'Oak', provenance: 'acorns', citeShardIds: [s6.shardId, s7.shardId] },
        { principle: 'Pine', provenance: 'needles' },
      ],
      revise: [{ traitId: traits.elm.id, principle: 'Elm, revised', provenance: 'bark' }],
      revert: [traits.cedar.id, traits.fir.id],
    };
    const lean = await previewTraitChanges(db, soul.id, changes);
    const full = await previewTraitChanges(db, soul.id, changes, { includeProvenance: true });

    await reviseTrait(db, traits.elm.id, changes.revise[0]);
    for (const id of changes.revert) await revertTrait(db, id);
    for (const add of changes.add) await addTrait(db, soul.id, add);

    const real = await renderSoul(db, soul.id);
    expect(lean.after).toBe(real);
    expect(full.after).toBe(await renderSoul(db, soul.id, { includeProvenance: true }));
    // Measured at the new orderedAt (day 12): Oak 2/1 = 2, Ash 5/12, Birch 2/6, then the uncited by age.
    expect(real).toBe('# Grove\n\nA stand of trees.\n\n## Traits\n- Oak\n- Ash\n- Birch\n- Dogwood\n- Elm, revised\n- Pine\n');
  });

  it('refuses in the same order as the real write: bad text before capacity, capacity before a missing shard', async () => {
    const { db } = setup({ traitLimit: 1 });
    const soul = await createSoul(db, { name: 'Ada', essence: 'e' });
    await addTrait(db, soul.id, { principle: 'One', provenance: 'p' });
    const blank = { principle: ' ', provenance: 'p' };
    expect((await rejection(addTrait(db, soul.id, blank), ValidationError)).field).toBe('principle');
    expect((await rejection(previewTraitChanges(db, soul.id, { add: [blank] }), ValidationError)).field).toBe('add[0].principle');
    const uncitable = { principle: 'Two', provenance: 'p', citeShardIds: [404] };
    await rejection(addTrait(db, soul.id, uncitable), CapacityError);
    await rejection(previewTraitChanges(db, soul.id, { add: [uncitable] }), CapacityError);
  });

  it('with no changes, after equals before', async () => {
    const { db, clock } = setup();
    const { soul } = await buildGrove(db, clock);
    clock.advance(30 * DAY_MS);
    const preview = await previewTraitChanges(db, soul.id, {});
    expect(preview).toEqual({ before: groveBlock, after: groveBlock, warnings: [] });
  });

  it('refuses bad changes with typed errors naming the field, writing nothing', async () => {
    const { db, clock } = setup({ traitLimit: 3 });
    const soul = await createSoul(db, { name: 'Ada', essence: 'e' });
    const other = await createSoul(db, { name: 'Bob', essence: 'e' });
    const a = await addTrait(db, soul.id, { principle: 'One', provenance: 'p' });
    const b = await addTrait(db, soul.id, { principle: 'Two', provenance: 'p' });
    const gone = await addTrait(db, soul.id, { principle: 'Gone', provenance: 'p' });
    await revertTrait(db, gone.id);
    const foreign = await addTrait(db, other.id, { principle: 'Theirs', provenance: 'p' });
    clock.advance(HOUR_MS);
    const rows = await listTraits(db, soul.id);
    const render = await renderSoul(db, soul.id);
    const ok = { principle: 'Fine', provenance: 'fine' };

    const unknown = await rejection(previewTraitChanges(db, soul.id, { revise: [{ traitId: 4242, principle: 'x' }] }), NotFoundError);
    expect([unknown.entity, unknown.id]).toEqual(['Trait', '4242']);
    expect((await rejection(previewTraitChanges(db, soul.id, { revert: [4242] }), NotFoundError)).entity).toBe('Trait');

    const theirs = await rejection(previewTraitChanges(db, soul.id, { revise: [{ traitId: foreign.id, principle: 'x' }] }), ValidationError);
    expect(theirs.field).toBe('revise[0].traitId');
    expect((await rejection(previewTraitChanges(db, soul.id, { revert: [a.id, foreign.id] }), ValidationError)).field).toBe('revert[1]');
    expect((await rejection(previewTraitChanges(db, soul.id, { revert: [gone.id] }), ValidationError)).field).toBe('revert[0]');

    const full = await rejection(previewTraitChanges(db, soul.id, { add: [ok, ok] }), CapacityError);
    expect([full.limit, full.activeCount]).toEqual([3, 2]);
    // Reverting one in the same preview frees a slot.
    expect((await previewTraitChanges(db, soul.id, { add: [ok, { ...ok, principle: 'Also fine' }], revert: [b.id] })).after).toContain('- Fine\n- Also fine\n');
    // Two additions with one principle would be two active traits sharing it (SPEC §12).
    expect(await rejection(previewTraitChanges(db, soul.id, { add: [ok, ok], revert: [b.id] }), ValidationError)).toMatchObject({ field: 'add[1].principle', message: 'repeats an earlier addition' });

    expect((await rejection(previewTraitChanges(db, soul.id, { add: [{ principle: '  ', provenance: 'p' }] }), ValidationError)).field).toBe('add[0].principle');
    expect((await rejection(previewTraitChanges(db, soul.id, { add: [ok, { principle: 'x', provenance: '' }] }), ValidationError)).field).toBe(
      'add[1].provenance',
    );
    expect((await rejection(previewTraitChanges(db, soul.id, { revise: [{ traitId: a.id, principle: '' }] }), ValidationError)).field).toBe(
      'revise[0].principle',
    );
    const shard = await rejection(previewTraitChanges(db, soul.id, { add: [{ ...ok, citeShardIds: [31337] }] }), NotFoundError);
    expect([shard.entity, shard.id]).toEqual(['Shard', '31337']);

    expect((await rejection(previewTraitChanges(db, 999, {}), NotFoundError)).entity).toBe('Soul');
    await retireSoul(db, other.id);
    await rejection(previewTraitChanges(db, other.id, {}), InvalidStateError);

    expect(await listTraits(db, soul.id)).toEqual(rows);
    expect(await renderSoul(db, soul.id)).toBe(render);
  });
});
