// Issue 26 over GraphQL on HTTP: dry-run warnings (NEAR_DUPLICATE, POSSIBLE_CONTRADICTION) in previewTraitChanges
// and previewLevelUp, the report's possibleCounterEvidence, and promotion candidates that need tenure.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DAY_MS } from '../src/engine/clock.ts';
import { similarity } from '../src/engine/similarity.ts';
import { serverPerTest, type LiveServer } from './support/server.ts';

const T0 = Date.UTC(2026, 0, 1);
const TESTS = 'Always run the tests before merging';

const startServerPerTest = serverPerTest(afterEach);
let server: LiveServer;

beforeEach(async () => {
  server = await startServerPerTest({ start: T0 });
});

function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  return server.data(query, variables);
}

async function setup() {
  const created = await gql(`mutation($input: CreateSoulInput!) { createSoul(input: $input) { ... on SoulPayload { soul { id } } } }`, {
    input: { name: 'Grace', essence: 'Grace always runs the tests before merging.' },
  });
  const soulId: string = created.createSoul.soul.id;
  const shardIds: string[] = [];
  for (const content of ['Ran the tests before merging again', 'Approve urgent hotfixes without waiting for tests', 'Said tests were overkill']) {
    const data = await gql(`mutation($input: DropShardInput!) { dropShard(input: $input) { ... on DropShardPayload { shard { id } } } }`, { input: { content, source: 'chat', soulIds: [soulId] } });
    shardIds.push(data.dropShard.shard.id);
  }
  const traitIds: string[] = [];
  for (const [principle, cite] of [[TESTS, [shardIds[0]]], ['Reply to customer emails within a day', []], ['Keep commits small and focused', []]] as const) {
    const data = await gql(`mutation($soulId: ID!, $input: AddTraitInput!) { addTrait(soulId: $soulId, input: $input) { ... on TraitPayload { trait { id } } } }`, {
      soulId,
      input: { principle, provenance: 'seen', citeShardIds: cite },
    });
    traitIds.push(data.addTrait.trait.id);
  }
  return { soulId, shardIds, traitIds };
}

const PREVIEW = `query($soulId: ID!, $add: [AddTraitInput!], $revise: [TraitRevisionInput!]) {
  previewTraitChanges(soulId: $soulId, add: $add, revise: $revise) { after warnings { kind message traitIds } }
}`;

describe('dry-run warnings', () => {
  it('previewTraitChanges warns of a near-duplicate (naming the trait and its score) and of a possible contradiction', async () => {
    const { soulId, traitIds } = await setup();
    const paraphrase = 'Always run the tests before you merge';
    const data = await gql(PREVIEW, {
      soulId,
      add: [{ principle: paraphrase, provenance: 'again' }],
      revise: [{ traitId: traitIds[2], principle: 'Approve urgent merges without waiting for the tests' }],
    });
    expect(data.previewTraitChanges.warnings).toEqual([
      { kind: 'POSSIBLE_CONTRADICTION', message: `revise[0] may contradict trait ${traitIds[0]}: same topic ("tests", "merging") with flipped polarity: negation "without" on one side only`, traitIds: [traitIds[0]] },
      {
        kind: 'NEAR_DUPLICATE',
        message: `add[0] is close to trait ${traitIds[0]} (trigram Jaccard ${similarity(paraphrase, TESTS).toFixed(2)}, at least 0.3): revise or consolidate that trait instead of keeping both`,
        traitIds: [traitIds[0]],
      },
      // Additions are checked against the traits as they would be after the changes: the revised one included.
      { kind: 'POSSIBLE_CONTRADICTION', message: `add[0] may contradict trait ${traitIds[2]}: same topic ("merges", "tests") with flipped polarity: negation "without" on one side only`, traitIds: [traitIds[2]] },
    ]);
    // Advisory: the preview still shows the block after.
    expect(data.previewTraitChanges.after).toContain(paraphrase);
    expect((await gql(PREVIEW, { soulId, add: [{ principle: 'Pair with juniors on hard bugs', provenance: 'seen' }] })).previewTraitChanges.warnings).toEqual([]);
  });

  it('previewLevelUp warns when a merged principle nearly repeats a carried trait', async () => {
    const { soulId, traitIds } = await setup();
    const merged = 'Always run all the tests before merging';
    const data = await gql(
      `query($soulId: ID!, $plan: LevelUpPlanInput!) { previewLevelUp(soulId: $soulId, plan: $plan) { valid warnings { kind message traitIds } } }`,
      {
        soulId,
        plan: { newEssence: 'Grace ships carefully.', consolidations: [{ sourceTraitIds: [traitIds[1], traitIds[2]], mergedPrinciple: merged, mergedProvenance: 'm' }], promotedTraitIds: [], carriedTraitIds: [traitIds[0]] },
      },
    );
    expect(data.previewLevelUp.valid).toBe(true);
    const kinds = data.previewLevelUp.warnings.map((w: any) => [w.kind, w.traitIds]);
    expect(kinds).toEqual([
      ['WEAK_CONSOLIDATION', [traitIds[1], traitIds[2]]],
      ['NEAR_DUPLICATE', [traitIds[0]]],
    ]);
    expect(data.previewLevelUp.warnings[0].message).toContain('(trigram Jaccard)');
    expect(data.previewLevelUp.warnings[1].message).toBe(
      `consolidation 1 is close to trait ${traitIds[0]} (trigram Jaccard ${similarity(merged, TESTS).toFixed(2)}, at least 0.3): revise or consolidate that trait instead of keeping both`,
    );
  });
});

describe('the evidence report', () => {
  const EVIDENCE = `query($id: ID!) { soul(id: $id) { evidence {
    possibleCounterEvidence { trait { id } shard { id content } reason overlap }
    promotionCandidates { trait { id } }
    suggestedActions { kind count traits { id } }
    markdown
  } } }`;

  it('lists possible counter-evidence with its reason, and a promotion candidate only after promotionTenureDays, an attunement survived or not', async () => {
    const { soulId, shardIds, traitIds } = await setup();
    expect((await gql('{ settings { promotionTenureDays } }')).settings).toEqual({ promotionTenureDays: 7 });
    const fresh = (await gql(EVIDENCE, { id: soulId })).soul.evidence;
    expect(fresh.possibleCounterEvidence).toEqual([
      { trait: { id: traitIds[0] }, shard: { id: shardIds[1], content: 'Approve urgent hotfixes without waiting for tests' }, reason: 'same topic ("tests") with flipped polarity: negation "without" on one side only', overlap: 1 / 3 },
      { trait: { id: traitIds[0] }, shard: { id: shardIds[2], content: 'Said tests were overkill' }, reason: 'same topic ("tests") with flipped polarity: negation "overkill" on one side only', overlap: 0.5 },
    ]);
    expect(fresh.suggestedActions).toContainEqual({ kind: 'POSSIBLE_COUNTER_EVIDENCE', count: 2, traits: [{ id: traitIds[0] }] });
    expect(fresh.markdown).toContain(`- #${shardIds[2]} vs trait #${traitIds[0]} "Said tests were overkill": same topic ("tests")`);
    // Minutes old, never through an attunement: not a promotion candidate.
    expect(fresh.promotionCandidates).toEqual([]);
    // Nor once it survives an attunement stamped minutes later (SPEC §13: that is no tenure).
    server.clock.advance(5 * 60_000);
    expect((await gql(`mutation($id: ID!) { stampAttuned(soulId: $id) { __typename } }`, { id: soulId })).stampAttuned.__typename).toBe('SoulPayload');
    expect((await gql(EVIDENCE, { id: soulId })).soul.evidence.promotionCandidates).toEqual([]);
    server.clock.advance(7 * DAY_MS);
    const later = (await gql(EVIDENCE, { id: soulId })).soul.evidence;
    expect(later.promotionCandidates).toEqual([{ trait: { id: traitIds[0] } }]);
  });
});
