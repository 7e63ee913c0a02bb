// SPEC §12 trait and level-up rules through a real MCP client: trait_change "uncite", a cite list that says which shards
// were new, levelup_revert with levelEventId (retry-safe), and a levelup plan that changes nothing.
import { describe, expect, it } from 'vitest';
import { addTrait, createSoul, dropShard, getCitations, getLevelHistory, getSoul, listTraits, type SoulsDb } from '../src/engine/index.ts';
import { demoSessionPerTest } from './support/mcp.ts';

let db: SoulsDb;
const { tool } = demoSessionPerTest((demo) => (db = demo.db));

async function soulWithTrait() {
  const soul = await createSoul(db, { name: 'Tamsin', essence: 'Tamsin keeps the ledger honest.' });
  const other = await createSoul(db, { name: 'Ulric', essence: 'Ulric sails.' });
  const s: number[] = [];
  for (const note of ['Balanced the ledger twice', 'Found the missing coin', 'Refused the bribe']) s.push((await dropShard(db, note, 'chat', [soul.id])).shardId);
  const foreign = (await dropShard(db, 'Charted the north passage', 'chat', [other.id])).shardId;
  const trait = await addTrait(db, soul.id, { principle: 'Counts every coin.', provenance: 'ledger notes', citeShardIds: [s[0]] });
  return { soul, other, s, foreign, trait };
}

const citedBy = async (traitId: number) => (await getCitations(db, [traitId])).map((c) => c.shardId).sort((a, b) => a - b);

describe('trait_change cite and uncite', () => {
  it('a cite list mixing new and already-cited shards says which were new', async () => {
    const { s, trait } = await soulWithTrait();
    const r = await tool('trait_change', { action: 'cite', traitId: trait.id, citeShardIds: [s[0], s[1]] });
    expect(r.isError).toBe(false);
    expect(r.data).toMatchObject({ cited: [s[1]], alreadyCited: [s[0]] });
    expect(await citedBy(trait.id)).toEqual([s[0], s[1]]);
  });

  it('refuses to cite a shard of another soul, naming both souls, and cites none of the list', async () => {
    const { soul, other, s, foreign, trait } = await soulWithTrait();
    const r = await tool('trait_change', { action: 'cite', traitId: trait.id, citeShardIds: [s[1], foreign] });
    expect(r.isError).toBe(true);
    expect(r.text).toContain(`shard ${foreign} is attributed to soul ${other.id} (Ulric), not to soul ${soul.id} (Tamsin)`);
    expect(await citedBy(trait.id)).toEqual([s[0]]);
  });

  it('"uncite" takes citations back; refused, nothing written, when the trait does not cite one of them', async () => {
    const { s, trait } = await soulWithTrait();
    await tool('trait_change', { action: 'cite', traitId: trait.id, citeShardIds: [s[1]] });
    const missing = await tool('trait_change', { action: 'uncite', traitId: trait.id, citeShardIds: [s[0], 999_999] });
    expect(missing.isError).toBe(true);
    expect(missing.text).toContain('citeShardIds: no shard has the ids 999999');
    const notCited = await tool('trait_change', { action: 'uncite', traitId: trait.id, citeShardIds: [s[1], s[2]] });
    expect(notCited.isError).toBe(true);
    expect(notCited.text).toContain(`trait ${trait.id} does not cite shard ${s[2]}: nothing to take back`);
    expect(await citedBy(trait.id)).toEqual([s[0], s[1]]);
    const done = await tool('trait_change', { action: 'uncite', traitId: trait.id, citeShardIds: [s[0], s[1]] });
    expect(done.isError).toBe(false);
    expect(done.data).toMatchObject({ trait: { id: trait.id }, uncited: [s[0], s[1]], readySouls: [] });
    expect(await citedBy(trait.id)).toEqual([]);
    const again = await tool('trait_change', { action: 'uncite', traitId: trait.id, citeShardIds: [s[0]] });
    expect(again.isError).toBe(true);
    expect(again.text).toContain(`trait ${trait.id} does not cite shard ${s[0]}: nothing to take back`);
  });

  it('refuses "uncite" without shards, with dryRun, or with a principle', async () => {
    const { trait } = await soulWithTrait();
    expect((await tool('trait_change', { action: 'uncite', traitId: trait.id })).text).toContain('action "uncite" needs at least one shard id');
    expect((await tool('trait_change', { action: 'uncite', traitId: trait.id, citeShardIds: [1], dryRun: true })).text).toContain('dryRun: is only for add, revise and revert');
    expect((await tool('trait_change', { action: 'uncite', traitId: trait.id, principle: 'x' })).text).toContain('principle: is not used by action "uncite"');
  });

  it('refuses to add a trait with the principle of an active trait, naming it', async () => {
    const { soul, trait } = await soulWithTrait();
    for (const dryRun of [true, false]) {
      const r = await tool('trait_change', { action: 'add', soulId: soul.id, principle: 'Counts every coin.', provenance: 'again', dryRun });
      expect(r.isError).toBe(true);
      expect(r.text).toContain(`active trait ${trait.id} already has this principle`);
    }
    expect(await listTraits(db, soul.id)).toHaveLength(1);
  });
});

describe('levelup_revert with levelEventId', () => {
  it('rolls back that level-up once; a retry is refused as already reverted and the level-up before stays', async () => {
    const { soul, trait } = await soulWithTrait();
    const plan = (newEssence: string) => ({ soulId: soul.id, newEssence, carriedTraitIds: [trait.id] });
    const first = await tool('levelup', plan('Tamsin keeps every ledger honest.'));
    const second = await tool('levelup', plan('Tamsin keeps every ledger honest, and says so.'));
    expect(second.data).toMatchObject({ applied: true, soul: { level: 2 } });
    const back = await tool('levelup_revert', { soulId: soul.id, levelEventId: second.data.levelEventId });
    expect(back.data).toMatchObject({ soul: { level: 1 }, revertedLevelEventId: second.data.levelEventId });
    const retry = await tool('levelup_revert', { soulId: soul.id, levelEventId: second.data.levelEventId });
    expect(retry.isError).toBe(true);
    expect(retry.text).toContain(`level-up ${second.data.levelEventId} is already reverted`);
    expect((await getSoul(db, soul.id))!.level).toBe(1);
    expect((await getLevelHistory(db, soul.id)).map((e) => [e.id, e.revertedAt === null])).toEqual([
      [first.data.levelEventId, true],
      [second.data.levelEventId, false],
    ]);
    const unknown = await tool('levelup_revert', { soulId: soul.id, levelEventId: 999_999 });
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toContain('levelEventId: there is no level event 999999.');
  });
});

describe('levelup that changes nothing', () => {
  it('is refused, in the dry run too, saying why; nothing written', async () => {
    const { soul, trait } = await soulWithTrait();
    for (const dryRun of [true, false]) {
      const r = await tool('levelup', { soulId: soul.id, newEssence: 'Tamsin keeps the ledger honest.', carriedTraitIds: [trait.id], dryRun });
      expect(r.isError).toBe(true);
      expect(r.text).toContain('newEssence: the plan changes nothing (no consolidation, no promotion, the same essence)');
    }
    expect((await getSoul(db, soul.id))!.level).toBe(0);
    expect(await getLevelHistory(db, soul.id)).toEqual([]);
  });
});
