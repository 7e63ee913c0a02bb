// Issue 26 through a real MCP client: trait_change and levelup dry runs carry NEAR_DUPLICATE and POSSIBLE_CONTRADICTION
// warnings, and soul_evidence's markdown lists possible counter-evidence (with a POSSIBLE_COUNTER_EVIDENCE action).
import { describe, expect, it } from 'vitest';
import { addTrait, createSoul, dropShard, listTraits, type SoulsDb } from '../src/engine/index.ts';
import { demoSessionPerTest } from './support/mcp.ts';

let db: SoulsDb;
const { tool } = demoSessionPerTest((demo) => (db = demo.db));
const TESTS = 'Always run the tests before merging';

async function grace() {
  const soul = await createSoul(db, { name: 'Grace', essence: 'Grace ships carefully.' });
  const shard = (await dropShard(db, 'Said tests were overkill', 'chat', [soul.id])).shardId;
  const tests = await addTrait(db, soul.id, { principle: TESTS, provenance: 'reviews' });
  const emails = await addTrait(db, soul.id, { principle: 'Reply to customer emails within a day', provenance: 'inbox' });
  return { soul, shard, tests, emails };
}

describe('dry runs warn', () => {
  it('trait_change add and revise with dryRun answer the warnings and write nothing', async () => {
    const { soul, tests, emails } = await grace();
    const add = await tool('trait_change', { action: 'add', soulId: soul.id, principle: 'Always run the tests before you merge', provenance: 'again', dryRun: true });
    expect(add.isError).toBe(false);
    expect(add.data.warnings).toEqual([expect.stringMatching(new RegExp(`^NEAR_DUPLICATE: add\\[0\\] is close to trait ${tests.id} \\(trigram Jaccard 0\\.\\d\\d, at least 0\\.3\\)`))]);
    const revise = await tool('trait_change', { action: 'revise', traitId: emails.id, principle: 'Merge hotfixes without waiting for the tests', dryRun: true });
    expect(revise.data.warnings).toEqual([`POSSIBLE_CONTRADICTION: revise[0] may contradict trait ${tests.id}: same topic ("tests", "merging") with flipped polarity: negation "without" on one side only`]);
    expect((await listTraits(db, soul.id)).map((t) => t.principle)).toEqual([TESTS, 'Reply to customer emails within a day']);
  });

  it('levelup with dryRun warns when a merged principle nearly repeats a carried trait', async () => {
    const { soul, tests, emails } = await grace();
    const other = await addTrait(db, soul.id, { principle: 'Keep commits small', provenance: 'log' });
    const r = await tool('levelup', {
      soulId: soul.id,
      newEssence: 'Grace ships carefully and answers quickly.',
      consolidations: [{ sourceTraitIds: [emails.id, other.id], mergedPrinciple: 'Always run all the tests before merging', mergedProvenance: 'm' }],
      promotedTraitIds: [],
      carriedTraitIds: [tests.id],
      dryRun: true,
    });
    expect(r.isError).toBe(false);
    expect(r.data.warnings.map((w: { kind: string }) => w.kind)).toEqual(['WEAK_CONSOLIDATION', 'NEAR_DUPLICATE']);
    expect(r.data.warnings[1].message).toContain(`consolidation 1 is close to trait ${tests.id}`);
  });
});

describe('soul_evidence', () => {
  it('lists possible counter-evidence with its reason', async () => {
    const { soul, shard, tests } = await grace();
    const r = await tool('soul_evidence', { soulId: soul.id });
    expect(r.isError).toBe(false);
    expect(r.data.suggestedActions).toContainEqual({ kind: 'POSSIBLE_COUNTER_EVIDENCE', message: expect.any(String), traitIds: [tests.id] });
    expect(r.text).toContain(`- #${shard} vs trait #${tests.id} "Said tests were overkill": same topic ("tests") with flipped polarity: negation "overkill" on one side only\n`);
  });
});
