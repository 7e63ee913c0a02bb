// Issue 26's deterministic hints: possible counter-evidence (same topic, flipped polarity), a pair is a tension or a
// consolidation candidate but never both, near-duplicate and contradiction warnings for new principles, clusters that
// carry no signal, and promotion candidates that need real tenure.
import { describe, expect, it } from 'vitest';
import { DAY_MS } from '../src/engine/clock.ts';
import type { Crystallization } from '../src/engine/crystallization.ts';
import { buildEvidenceReport, type EvidenceInput } from '../src/engine/evidence.ts';
import { checkLevelUpPlan, levelUpWarnings } from '../src/engine/levels.ts';
import type { Citation, Shard, Soul, Trait } from '../src/engine/model.ts';
import { possibleContradiction, principleHints, TOPIC_OVERLAP } from '../src/engine/polarity.ts';
import { defaultKnobs, resolveSettings } from '../src/engine/settings.ts';
import { similarity } from '../src/engine/similarity.ts';
import { LevelUpPlanError } from '../src/engine/errors.ts';

const now = Date.UTC(2026, 2, 1);
const daysAgo = (d: number) => now - d * DAY_MS;
const MINUTE = 60_000;

const TESTS = 'Always run the tests before merging';

const soul: Soul = {
  id: 1,
  name: 'Grace',
  slug: 'grace',
  essence: 'A careful engineer.',
  description: '',
  level: 1,
  createdAt: daysAgo(100),
  updatedAt: daysAgo(100),
  orderedAt: daysAgo(100),
  deletedAt: null,
  lastAttunedAt: null,
};

const shard = (id: number, content: string, source = 'chat', ageDays = 1): Shard => ({
  id,
  content,
  source,
  status: 'pending',
  sealed: false,
  tags: [],
  soulIds: [1],
  createdAt: daysAgo(ageDays),
  updatedAt: daysAgo(ageDays),
  recordedAt: daysAgo(ageDays),
  revealedAt: null,
});

const trait = (id: number, principle: string, createdAt: number): Trait => ({
  id,
  soulId: 1,
  principle,
  provenance: 'fixture',
  generation: 1,
  status: 'active',
  mergedInto: null,
  createdAt,
  updatedAt: createdAt,
});

const crystallization: Crystallization = {
  soulId: 1,
  ready: false,
  priority: 0,
  pendingCount: 0,
  distinctSources: 0,
  ageSpreadDays: 0,
  newSinceAttuned: true,
  clusterCount: 0,
  clusteredShardCount: 0,
  unmet: [],
};

function report(overrides: Partial<EvidenceInput>) {
  return buildEvidenceReport({
    soul,
    shards: [],
    activeTraits: [],
    citations: [],
    attunedAt: [],
    crystallization,
    soulNames: new Map(),
    knobs: defaultKnobs,
    now,
    scope: { tags: [], query: null },
    ...overrides,
  });
}

describe('possibleContradiction: same topic, flipped polarity', () => {
  it('flags the issue’s examples against "Always run the tests before merging", with the reason', () => {
    const hotfix = possibleContradiction(TESTS, 'Approve urgent hotfixes without waiting for tests');
    expect(hotfix).toEqual({ reason: 'same topic ("tests") with flipped polarity: negation "without" on one side only', overlap: 1 / 3, sharedWords: ['tests'] });
    const overkill = possibleContradiction(TESTS, 'Said tests were overkill');
    expect(overkill?.reason).toBe('same topic ("tests") with flipped polarity: negation "overkill" on one side only');
    expect(possibleContradiction(TESTS, 'Skipped the tests when merging the docs fix')?.sharedWords).toEqual(['tests', 'merging']);
  });

  it('flags antonyms split between the sides', () => {
    expect(possibleContradiction('Always ask before deleting branches', 'Never ask before deleting branches')?.reason).toBe(
      'same topic ("ask", "deleting", "branches") with flipped polarity: antonyms "always" / "never"',
    );
    expect(possibleContradiction('Write more comments in reviews', 'Write less comments in reviews')?.reason).toContain('antonyms "more" / "less"');
  });

  it('does not flag the same polarity, another topic, or a topic overlap below a third', () => {
    expect(possibleContradiction(TESTS, 'Ran the tests before merging again')).toBeNull();
    expect(possibleContradiction(TESTS, 'Never deploy on Fridays')).toBeNull();
    expect(possibleContradiction('Never deploy on Fridays', 'Never deploy without a rollback plan')).toBeNull();
    // One shared stem ("tests") of four in each: an overlap of 1/4, under TOPIC_OVERLAP.
    expect(TOPIC_OVERLAP).toBeCloseTo(1 / 3, 12);
    expect(possibleContradiction('Always run flaky integration tests nightly', 'Rewrote the unit tests without mocks today')).toBeNull();
  });

  it('takes a topic of several texts (a theme’s name and members): any one of them is enough', () => {
    expect(possibleContradiction(['Release hygiene', 'Ran the tests before merging'], 'Merged without running the tests')?.reason).toContain('"without"');
    expect(possibleContradiction(['Release hygiene', 'Tagged the release'], 'Merged without running the tests')).toBeNull();
  });
});

describe('principleHints: dry-run warnings for a new principle', () => {
  const active = [
    { id: 1, principle: TESTS },
    { id: 2, principle: 'Reply to customer emails within a day' },
  ];

  it('warns of a paraphrase duplicate naming the most similar trait, its score and the measure', () => {
    const paraphrase = 'Always run the tests before you merge';
    const score = similarity(paraphrase, TESTS);
    expect(principleHints('add[0]', paraphrase, active, defaultKnobs)).toEqual([
      {
        kind: 'NEAR_DUPLICATE',
        message: `add[0] is close to trait 1 (trigram Jaccard ${score.toFixed(2)}, at least 0.3): revise or consolidate that trait instead of keeping both`,
        traitIds: [1],
      },
    ]);
    const lexical = principleHints('add[0]', 'Run all the tests before any merge', active, resolveSettings({ similarity: 'lexical' }));
    expect(lexical.map((h) => [h.kind, h.traitIds])).toEqual([['NEAR_DUPLICATE', [1]]]);
    expect(lexical[0].message).toContain('lexical TF-IDF cosine');
  });

  it('warns of a possible contradiction (and not of a near-duplicate) for the same topic with flipped polarity', () => {
    expect(principleHints('revise[0]', 'Never run the tests before merging', active, defaultKnobs)).toEqual([
      {
        kind: 'POSSIBLE_CONTRADICTION',
        message: 'revise[0] may contradict trait 1: same topic ("run", "tests", "merging") with flipped polarity: antonyms "always" / "never"',
        traitIds: [1],
      },
    ]);
  });

  it('says nothing for an unrelated principle', () => {
    expect(principleHints('add[0]', 'Keep commits small and focused', active, defaultKnobs)).toEqual([]);
  });

  it('warns on a level-up plan whose merged principle repeats or contradicts a carried trait', () => {
    const traits = [
      trait(1, TESTS, daysAgo(30)),
      trait(2, 'Reply to customer emails within a day', daysAgo(30)),
      trait(3, 'Answer customer emails within one day', daysAgo(30)),
      trait(4, 'Keep commits small', daysAgo(30)),
      trait(5, 'Replies to customer emails within one day', daysAgo(30)),
    ];
    const plan = checkLevelUpPlan(soul, traits, {
      newEssence: 'A careful engineer who answers quickly.',
      consolidations: [
        { sourceTraitIds: [2, 3], mergedPrinciple: 'Reply to customer emails within one day', mergedProvenance: 'merged' },
        { sourceTraitIds: [4], mergedPrinciple: 'Merge without waiting for the tests when urgent', mergedProvenance: 'odd' },
      ],
      promotedTraitIds: [],
      carriedTraitIds: [1, 5],
    }, resolveSettings());
    if (plan instanceof LevelUpPlanError) throw plan;
    const warnings = levelUpWarnings(traits, plan, defaultKnobs);
    expect(warnings.map((w) => [w.kind, w.traitIds])).toEqual([
      ['NEAR_DUPLICATE', [5]],
      ['POSSIBLE_CONTRADICTION', [1]],
    ]);
    const score = similarity('Reply to customer emails within one day', traits[4].principle);
    expect(warnings[0].message).toBe(`consolidation 1 is close to trait 5 (trigram Jaccard ${score.toFixed(2)}, at least 0.3): revise or consolidate that trait instead of keeping both`);
    expect(warnings[1].message).toContain('consolidation 2 may contradict trait 1: same topic');
  });

  it('WEAK_CONSOLIDATION names the measure it used', () => {
    const traits = [trait(1, TESTS, daysAgo(30)), trait(2, 'Keep commits small', daysAgo(30))];
    const plan = checkLevelUpPlan(soul, traits, { newEssence: 'x', consolidations: [{ sourceTraitIds: [1, 2], mergedPrinciple: 'Be careful', mergedProvenance: 'm' }], promotedTraitIds: [], carriedTraitIds: [] }, resolveSettings());
    if (plan instanceof LevelUpPlanError) throw plan;
    const [weak] = levelUpWarnings(traits, plan, resolveSettings({ similarity: 'lexical' }));
    expect(weak.kind).toBe('WEAK_CONSOLIDATION');
    expect(weak.message).toMatch(/^consolidation 1 groups traits with mean similarity 0\.\d\d \(lexical TF-IDF cosine\), below 0\.3$/);
  });
});

describe('a contradiction is never offered as a new trait (SPEC §13)', () => {
  const MERGE = 'Merge only after the tests pass';

  it('labels a theme opposing traits CONTRADICTING the one its representative most resembles, in the JSON and the markdown', () => {
    const traits = [trait(1, 'Reply to customer emails within a day', daysAgo(30)), trait(2, TESTS, daysAgo(30)), trait(3, MERGE, daysAgo(30))];
    const shards = [shard(1, 'Merged the branch without running the tests', 'chat', 2), shard(2, 'Merged the hotfix without running the tests', 'email', 1)];
    const themes = [{ id: 7, name: 'Skips the tests', opposes: [3, 2] }];
    const r = report({ shards, activeTraits: traits, themeOf: new Map([[1, 7], [2, 7]]), themes });
    const [cluster] = r.clusters;
    const rep = shards.find((x) => x.id === cluster.representativeId)!.content;
    expect(similarity(rep, TESTS)).toBeGreaterThan(similarity(rep, MERGE));
    expect(cluster).toMatchObject({ themeId: 7, opposes: [2, 3], alignment: { kind: 'CONTRADICTING', traitId: 2, similarity: similarity(rep, TESTS) } });
    expect(r.suggestedActions.map((a) => a.kind)).not.toContain('NOVEL_CLUSTER');
    expect(r.markdown).toContain(`1. [theme "Skips the tests" (#7); weight ${cluster.weight.toFixed(2)}; size 2; sources chat, email; contradicts traits #2, #3] #${cluster.representativeId}`);
  });

  it('before it is judged: a cluster with a member that reads as possible counter-evidence is no NOVEL_CLUSTER candidate', () => {
    const traits = [trait(1, TESTS, daysAgo(30))];
    const against = [shard(1, 'Merged the branch without waiting for the tests', 'chat', 3), shard(2, 'Merged the branch after waiting for the tests', 'email', 2)];
    const other = [shard(3, 'Cooked a spicy curry for the whole team on friday', 'chat', 2), shard(4, 'Cooked a spicy curry for the whole team on monday', 'email', 1)];
    const flagged = report({ shards: against, activeTraits: traits });
    expect(flagged.clusters).toHaveLength(1);
    expect(flagged.clusters[0]).toMatchObject({ memberCount: 2, alignment: { kind: 'NOVEL' } });
    expect(flagged.possibleCounterEvidence.map((h) => [h.traitId, h.shardId])).toEqual([[1, 1]]);
    expect(flagged.suggestedActions.map((a) => a.kind)).toEqual(['POSSIBLE_COUNTER_EVIDENCE']);
    expect(flagged.markdown).toContain('; novel; may contradict trait #1 (possible counter-evidence)]');
    // A novel cluster nothing flags is still a candidate, beside the flagged one.
    const both = report({ shards: [...against, ...other], activeTraits: traits });
    expect(both.suggestedActions.find((a) => a.kind === 'NOVEL_CLUSTER')).toEqual({ kind: 'NOVEL_CLUSTER', count: 1, message: '1 cluster (size 2) not aligned with any trait', traitIds: [] });
  });
});

describe('the evidence report never misleads', () => {
  it('lists possible counter-evidence per trait with its reason, in the JSON, the actions and the markdown', () => {
    const shards = [
      shard(1, 'Approve urgent hotfixes without waiting for tests'),
      shard(2, 'Said tests were overkill'),
      shard(3, 'Ran the tests before merging again'),
      shard(4, 'Skipped the tests on the docs branch'),
    ];
    const traits = [trait(10, TESTS, daysAgo(30))];
    // A shard the trait cites is evidence for it, not a hint against it.
    const citations: Citation[] = [{ traitId: 10, shardId: 4, createdAt: daysAgo(1) }];
    const r = report({ shards, activeTraits: traits, citations });
    expect(r.possibleCounterEvidence).toEqual([
      { traitId: 10, shardId: 1, reason: 'same topic ("tests") with flipped polarity: negation "without" on one side only', overlap: 1 / 3 },
      { traitId: 10, shardId: 2, reason: 'same topic ("tests") with flipped polarity: negation "overkill" on one side only', overlap: 0.5 },
    ]);
    expect(r.suggestedActions.find((a) => a.kind === 'POSSIBLE_COUNTER_EVIDENCE')).toEqual({
      kind: 'POSSIBLE_COUNTER_EVIDENCE',
      count: 2,
      message: '2 shards read as possible counter-evidence to a trait (same topic, flipped polarity): read them before reinforcing',
      traitIds: [10],
    });
    expect(r.markdown).toContain(
      '\n## Possible counter-evidence (hints, not judgements)\n' +
        '- #1 vs trait #10 "Approve urgent hotfixes without waiting for tests": same topic ("tests") with flipped polarity: negation "without" on one side only\n' +
        '- #2 vs trait #10 "Said tests were overkill": same topic ("tests") with flipped polarity: negation "overkill" on one side only\n',
    );
  });

  it('lists a pair of similar, opposite traits as a tension only, never also as a consolidation candidate', () => {
    const traits = [
      trait(1, 'Always ask before deleting remote branches', daysAgo(30)),
      trait(2, 'Never ask before deleting remote branches', daysAgo(30)),
      trait(3, 'Reply to customer emails within a day', daysAgo(30)),
      trait(4, 'Reply to customer emails within one day', daysAgo(30)),
    ];
    const r = report({ activeTraits: traits });
    expect(r.tensions.map((p) => [p.a, p.b])).toEqual([[1, 2]]);
    expect(r.consolidationCandidates.map((p) => [p.a, p.b])).toEqual([[3, 4]]);
    const kinds = r.suggestedActions.map((a) => [a.kind, a.traitIds]);
    expect(kinds).toContainEqual(['TENSION', [1, 2]]);
    expect(kinds).toContainEqual(['CONSOLIDATION_CANDIDATES', [3, 4]]);
  });

  it('says when most clusters are singletons, with advice for the similarity mode', () => {
    const shards = [
      shard(1, 'Prefers tea in the morning'),
      shard(2, 'Refactored the billing module'),
      shard(3, 'Asked for a code review on Friday'),
      shard(4, 'Asked for a code review on Friday.'),
      shard(5, 'Went hiking at the weekend'),
    ];
    const r = report({ shards });
    expect(r.clusters.map((c) => c.memberCount).sort()).toEqual([1, 1, 1, 2]);
    expect(r.suggestedActions).toContainEqual({
      kind: 'NO_CLUSTER_SIGNAL',
      count: 3,
      message:
        '3 of 5 clustered shards resemble no other (each a cluster of one), so the clusters carry little signal (trigram): trigram similarity groups only near-verbatim texts: ' +
        'read the shards and assign themes, or use similarity lexical (or vectors: provided, semantic)',
      traitIds: [],
    });
    const lexical = report({ shards, knobs: resolveSettings({ similarity: 'lexical' }) });
    expect(lexical.suggestedActions.find((a) => a.kind === 'NO_CLUSTER_SIGNAL')?.message).toContain('read the shards and assign themes, or use vectors');
    // Mostly grouped: no such action.
    const grouped = report({ shards: [...shards.slice(2), shard(6, 'Asked for a code review on Friday!'), shard(7, 'Went hiking at the weekend.')] });
    expect(grouped.suggestedActions.map((a) => a.kind)).not.toContain('NO_CLUSTER_SIGNAL');
  });

  it('makes a trait a promotion candidate only with real tenure: promotionTenureDays old, an attunement survived is not enough (SPEC §13)', () => {
    const essence = 'Runs the tests before merging, always.';
    const input = (t: Trait, attunedAt: number[], knobs = defaultKnobs) =>
      report({ soul: { ...soul, essence }, activeTraits: [t], citations: [{ traitId: t.id, shardId: 1, createdAt: t.createdAt }], attunedAt, knobs });
    // Minutes old: tenure × density × redundancy is above 0, yet it is no candidate.
    const fresh = trait(1, TESTS, now - 5 * MINUTE);
    const freshReport = input(fresh, []);
    expect(freshReport.traits[0].tenure * freshReport.traits[0].citationDensity * freshReport.traits[0].essenceRedundancy).toBeGreaterThan(0);
    expect(freshReport.promotionCandidates).toEqual([]);
    expect(freshReport.suggestedActions.map((a) => a.kind)).not.toContain('PROMOTION_CANDIDATES');
    // Survived an attunement stamped minutes after its creation: still no tenure.
    const survived = input(fresh, [now - MINUTE]);
    expect(survived.traits[0].survivalCount).toBe(1);
    expect(survived.promotionCandidates).toEqual([]);
    // Old enough (defaults: 7 days), exactly at the boundary and just below it.
    expect(defaultKnobs.promotionTenureDays).toBe(7);
    expect(input(trait(1, TESTS, daysAgo(7)), []).promotionCandidates.map((p) => p.traitId)).toEqual([1]);
    expect(input(trait(1, TESTS, daysAgo(7) + MINUTE), []).promotionCandidates).toEqual([]);
    expect(input(trait(1, TESTS, daysAgo(2)), [], { ...defaultKnobs, promotionTenureDays: 1 }).promotionCandidates.map((p) => p.traitId)).toEqual([1]);
  });

  it('ranks the tenured traits by the seed\'s score (tenure × citation density × essence redundancy), leaving out a younger one that scores higher', () => {
    const essence = 'Runs the tests before merging, always, and keeps commits small.';
    const traits = [trait(1, 'Keep commits small', daysAgo(30)), trait(2, TESTS, daysAgo(60)), trait(3, 'Always run the tests before merging, always', daysAgo(3))];
    const citations: Citation[] = [1, 2, 3].flatMap((traitId) => [1, 2, 3, 4].map((shardId) => ({ traitId, shardId, createdAt: daysAgo(1) })));
    const r = report({ soul: { ...soul, essence }, activeTraits: traits, citations, attunedAt: [daysAgo(1)] });
    const score = new Map(r.traits.map((s) => [s.traitId, s.tenure * s.citationDensity * s.essenceRedundancy]));
    expect(score.get(3)!).toBeGreaterThan(score.get(1)!);
    expect(score.get(3)!).toBeGreaterThan(score.get(2)!);
    const expected = [1, 2].sort((a, b) => score.get(b)! - score.get(a)!);
    expect(r.promotionCandidates).toEqual(expected.map((traitId) => ({ traitId, score: score.get(traitId)! })));
  });
});
