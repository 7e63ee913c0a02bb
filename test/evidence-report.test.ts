import { describe, expect, it } from 'vitest';
import { DAY_MS } from '../src/engine/clock.ts';
import type { Crystallization } from '../src/engine/crystallization.ts';
import { buildEvidenceReport, hasNegation, MARKDOWN_UNJUDGED, similaritySums } from '../src/engine/evidence.ts';
import type { EvidenceInput } from '../src/engine/evidence.ts';
import type { Citation, Shard, Soul, Trait } from '../src/engine/model.ts';
import { defaultKnobs } from '../src/engine/settings.ts';
import { buildGramIndex, jaccardOfIndexed, similarity } from '../src/engine/similarity.ts';

const now = Date.UTC(2026, 0, 31);
const daysAgo = (d: number): number => now - d * DAY_MS;
const fresh = (d: number): number => Math.exp(-d / defaultKnobs.shardRelevanceHalfLife);

const soul: Soul = {
  id: 1,
  name: 'Grace',
  slug: 'grace',
  essence: 'A careful engineer who keeps commits small and focused.',
  description: '',
  level: 3,
  createdAt: daysAgo(200),
  updatedAt: daysAgo(10),
  orderedAt: daysAgo(10),
  deletedAt: null,
  lastAttunedAt: daysAgo(40),
};

function shard(id: number, content: string, source: string, ageDays: number, soulIds: number[] = [1]): Shard {
  const at = daysAgo(ageDays);
  return { id, content, source, status: 'pending', sealed: false, tags: ['work'], soulIds, createdAt: at, updatedAt: at, recordedAt: at, revealedAt: null };
}

function trait(id: number, principle: string, ageDays: number): Trait {
  const at = daysAgo(ageDays);
  return { id, soulId: 1, principle, provenance: 'fixture', generation: 1, status: 'active', mergedInto: null, createdAt: at, updatedAt: at };
}

const cite = (traitId: number, shardId: number, ageDays: number): Citation => ({ traitId, shardId, createdAt: daysAgo(ageDays) });

const text = {
  1: 'Always run the tests before pushing to main',
  2: 'always run the tests before pushing to main!',
  3: 'Always run the whole test suite before pushing to main',
  4: 'Write documentation for every public function',
  5: 'Wrote documentation for each public function',
  6: 'Drinks green tea every morning before standup',
  7: 'Drinks green tea each morning before the standup',
  8: 'Refactored the billing module over the weekend',
  9: 'Asked a colleague to pair on the flaky login bug',
  10: 'Wrote documentation for every public function.',
};

// Deliberately not in id order: the report must not depend on the order rows arrive in.
const shards: Shard[] = [
  shard(10, text[10], 'chat', 1),
  shard(1, text[1], 'chat', 2, [1, 3]),
  shard(2, text[2], 'email', 5, [2, 1, 3]),
  shard(3, text[3], 'journal', 20),
  shard(4, text[4], 'chat', 25),
  shard(5, text[5], 'email', 30),
  shard(6, text[6], 'journal', 8),
  shard(7, text[7], 'journal', 14),
  shard(8, text[8], 'email', 28),
  shard(9, text[9], 'chat', 3),
];

const traits: Trait[] = [
  trait(10, 'Keep commits small and focused', 100),
  trait(11, 'Document every public function', 30),
  trait(12, 'Reply to customer emails within one day', 60),
  trait(13, 'Never reply to customer emails within one day', 50),
  trait(14, 'Prefer pairing over solo debugging', 150),
];

const citations: Citation[] = [
  cite(10, 1, 2),
  cite(10, 99, 40), // shard 99 is outside the scope; it still counts for the trait's signals
  cite(12, 9, 3),
  cite(13, 98, 10),
  cite(13, 97, 12),
];

const readyCrystallization: Crystallization = {
  soulId: 1,
  ready: true,
  priority: 12.5,
  pendingCount: 10,
  distinctSources: 3,
  ageSpreadDays: 29,
  newSinceAttuned: true,
  clusterCount: 5,
  clusteredShardCount: 10,
  unmet: [],
};

function fixture(overrides: Partial<EvidenceInput> = {}): EvidenceInput {
  return {
    soul,
    shards,
    activeTraits: traits,
    citations,
    attunedAt: [daysAgo(120), daysAgo(40)],
    crystallization: readyCrystallization,
    soulNames: new Map([
      [2, 'Ada'],
      [3, 'Linus'],
    ]),
    knobs: defaultKnobs,
    now,
    scope: { tags: [], query: null },
    ...overrides,
  };
}

describe('buildEvidenceReport on a hand-built fixture', () => {
  const report = buildEvidenceReport(fixture());

  it('anchors the hand arithmetic: trigram Jaccard values used below', () => {
    // |A∩B| / |A∪B| of the trigram sets, as counted for the fixture texts.
    expect(similarity(text[1], text[2])).toBeCloseTo(41 / 42, 12);
    expect(similarity(text[1], text[3])).toBeCloseTo(38 / 55, 12);
    expect(similarity(text[2], text[3])).toBeCloseTo(38 / 56, 12);
    expect(similarity(text[4], text[5])).toBeCloseTo(32 / 49, 12);
    expect(similarity(text[4], text[10])).toBeCloseTo(38 / 45, 12);
    expect(similarity(text[5], text[10])).toBeCloseTo(35 / 47, 12);
    expect(similarity(text[6], text[7])).toBeCloseTo(37 / 52, 12);
  });

  it('partitions, orders and describes the clusters', () => {
    // Partition at 0.4: {1,2,3} (0.98, 0.69, 0.68), {4,5,10} (0.65, 0.84, 0.74), {6,7} (0.71); 8 and 9 alone.
    // weight = memberCount × (distinct sources / memberCount) × mean freshness = distinct sources × mean e^(−age/60):
    //   {1,2,3}: 3 sources × (e^(−2/60) + e^(−5/60) + e^(−20/60)) / 3 = 0.96722 + 0.92004 + 0.71653 = 2.60379
    //   {4,5,10}: 2 sources × (e^(−25/60) + e^(−30/60) + e^(−1/60)) / 3 = 2 × (0.65924 + 0.60653 + 0.98347) / 3 = 1.49949
    //   {9}: 1 × e^(−3/60) = 0.95123
    //   {6,7}: 1 source × (e^(−8/60) + e^(−14/60)) / 2 = (0.87517 + 0.79189) / 2 = 0.83353
    //   {8}: 1 × e^(−28/60) = 0.62705
    expect(report.clusters.map((c) => c.memberIds)).toEqual([[3, 2, 1], [5, 4, 10], [9], [7, 6], [8]]);
    expect(report.clusters.map((c) => c.memberCount)).toEqual([3, 3, 1, 2, 1]);
    expect(report.clusters[0].weight).toBeCloseTo(fresh(2) + fresh(5) + fresh(20), 10);
    expect(report.clusters[0].weight).toBeCloseTo(2.60379, 4);
    expect(report.clusters[1].weight).toBeCloseTo(1.49949, 4);
    expect(report.clusters[2].weight).toBeCloseTo(0.95123, 4);
    expect(report.clusters[3].weight).toBeCloseTo(0.83353, 4);
    expect(report.clusters[4].weight).toBeCloseTo(0.62705, 4);
    expect(report.clusters[1].sourceDiversity).toBeCloseTo(2 / 3, 12);
    expect(report.clusters[1].freshness).toBeCloseTo(0.74975, 4);

    // Representatives, by mean similarity to the other members:
    //   {1,2,3}: 1 → (41/42 + 38/55)/2 = 0.8336, 2 → (41/42 + 38/56)/2 = 0.8274, 3 → (38/55 + 38/56)/2 = 0.6848 ⇒ 1
    //   {4,5,10}: 4 → (32/49 + 38/45)/2 = 0.7488, 5 → (32/49 + 35/47)/2 = 0.6989, 10 → (38/45 + 35/47)/2 = 0.7946 ⇒ 10
    //   {6,7}: both 37/52, a tie ⇒ lowest id 6; singletons are their own.
    expect(report.clusters.map((c) => c.representativeId)).toEqual([1, 10, 9, 6, 8]);

    expect(report.clusters.map((c) => c.sources)).toEqual([['chat', 'email', 'journal'], ['chat', 'email'], ['chat'], ['journal'], ['email']]);
    // Spans: 20 − 2, 30 − 1, 0, 14 − 8, 0.
    expect(report.clusters.map((c) => c.ageSpanDays)).toEqual([18, 29, 0, 6, 0]);
  });

  it('aligns clusters with traits', () => {
    // {1,2,3}: shard 1 is cited by #10 ⇒ REINFORCING #10, although rep 1 vs #10 is only 1/68.
    // {4,5,10}: rep 10 vs #11 "Document every public function" = 26/44 = 0.591 ≥ 0.3 ⇒ REINFORCING #11.
    // {9}: cited by #12 ⇒ REINFORCING #12 at 4/79.
    // {6,7}: no citation, best is rep 6 vs #11 = 5/66 < 0.3 ⇒ NOVEL at 5/66.
    // {8}: best is #14 at 7/64 ⇒ NOVEL.
    expect(report.clusters.map((c) => [c.alignment.kind, c.alignment.traitId])).toEqual([
      ['REINFORCING', 10],
      ['REINFORCING', 11],
      ['REINFORCING', 12],
      ['NOVEL', null],
      ['NOVEL', null],
    ]);
    expect(report.clusters.map((c) => c.alignment.similarity)).toEqual([1 / 68, 26 / 44, 4 / 79, 5 / 66, 7 / 64].map((x) => expect.closeTo(x, 12)));
  });

  it('lists the other souls each cluster is shared with', () => {
    // Shard 1 → souls 1, 3; shard 2 → souls 2, 1, 3. In {1,2,3}: soul 3 twice (2/3), soul 2 once (1/3).
    expect(report.clusters[0].sharedWith).toEqual([
      { soulId: 3, sharedCount: 2, fraction: 2 / 3 },
      { soulId: 2, sharedCount: 1, fraction: 1 / 3 },
    ]);
    expect(report.clusters.slice(1).every((c) => c.sharedWith.length === 0)).toBe(true);
  });

  it('computes trait signals in the given order', () => {
    expect(report.traits.map((s) => s.traitId)).toEqual([10, 11, 12, 13, 14]);
    // #14 is 150 days old, never cited ⇒ stale; #10 is 100 days old but cited 2 days ago.
    expect(report.traits.map((s) => s.stale)).toEqual([false, false, false, false, true]);
    expect(report.traits.map((s) => s.citationCount)).toEqual([2, 0, 1, 2, 0]);
    // Attunements 120 and 40 days ago; only those after the trait's creation count.
    expect(report.traits.map((s) => s.survivalCount)).toEqual([1, 0, 1, 1, 2]);
  });

  it('finds consolidation candidates, tensions and promotion candidates', () => {
    // Only #12/#13 pass 0.3: 37/42 = 0.881. #13 says "Never", #12 has no marker ⇒ a tension, and so not a consolidation candidate.
    expect(report.consolidationCandidates).toEqual([]);
    expect(report.tensions).toEqual([{ a: 12, b: 13, similarity: expect.closeTo(37 / 42, 12) }]);
    // score = tenure × density × essence redundancy, soul age 200 days:
    //   #10: 100/200 × 2/100 × 26/55 = 0.0047273
    //   #13: 50/200 × 2/50 × 2/93 = 0.00021505
    //   #12: 60/200 × 1/60 × 2/88 = 0.00011364
    //   #11 and #14 have no citations ⇒ score 0, left out.
    expect(report.promotionCandidates.map((p) => p.traitId)).toEqual([10, 13, 12]);
    expect(report.promotionCandidates[0].score).toBeCloseTo(0.5 * 0.02 * (26 / 55), 12);
    expect(report.promotionCandidates[1].score).toBeCloseTo(0.25 * 0.04 * (2 / 93), 12);
    expect(report.promotionCandidates[2].score).toBeCloseTo(0.3 * (1 / 60) * (2 / 88), 12);
  });

  it('computes the trend', () => {
    // Recent (age < 14 days): 10 chat, 1 chat, 9 chat, 2 email, 6 journal = 5.
    // Previous (14 ≤ age < 28): 7 journal (exactly 14), 3 journal, 4 chat = 3.
    // Shard 8 (exactly 28 days) and 5 (30 days) fall in neither window. Email: 1 recent, 0 previous ⇒ new.
    expect(report.trend).toEqual({
      recentCount: 5,
      previousCount: 3,
      velocity: 2,
      newSources: ['email'],
      sources: [
        { source: 'chat', recent: 3, previous: 1 },
        { source: 'email', recent: 1, previous: 0 },
        { source: 'journal', recent: 1, previous: 2 },
      ],
    });
  });

  it('suggests actions in the fixed order with counts and messages', () => {
    // Essence redundancy ≥ 0.3: only #10 (26/55 = 0.473). Novel clusters of size ≥ 2: {6,7} only.
    expect(report.suggestedActions).toEqual([
      { kind: 'READY_FOR_REFINEMENT', count: 10, message: 'ready for refinement: 10 shards from 3 sources', traitIds: [] },
      { kind: 'STALE_TRAITS', count: 1, message: '1 trait flagged stale', traitIds: [14] },
      { kind: 'ESSENCE_REDUNDANT', count: 1, message: '1 trait redundant with essence', traitIds: [10] },
      { kind: 'NOVEL_CLUSTER', count: 1, message: '1 cluster (size 2) not aligned with any trait', traitIds: [] },
      { kind: 'TENSION', count: 1, message: '1 trait pair in tension', traitIds: [12, 13] },
      { kind: 'PROMOTION_CANDIDATES', count: 3, message: '3 traits are promotion candidates', traitIds: [10, 12, 13] },
    ]);
  });

  it('renders compact markdown: what to act on first, then clusters with their shard ids, singletons folded into one line', () => {
    expect(report.markdown).toBe(
      [
        '# Evidence: Grace (soul #1, level 3)',
        'Next: judge the unjudged shards below into themes (assign, new theme, oppose), then add or cite traits from the themes — ready, 10 unjudged.',
        'Shards: 10, clusters: 5, active traits: 5',
        'Readiness: ready (priority 12.50)',
        '',
        '## Suggested actions',
        '- READY_FOR_REFINEMENT: ready for refinement: 10 shards from 3 sources',
        '- STALE_TRAITS: 1 trait flagged stale (#14)',
        '- ESSENCE_REDUNDANT: 1 trait redundant with essence (#10)',
        '- NOVEL_CLUSTER: 1 cluster (size 2) not aligned with any trait',
        '- TENSION: 1 trait pair in tension (#12, #13)',
        '- PROMOTION_CANDIDATES: 3 traits are promotion candidates (#10, #12, #13)',
        '',
        '## Unjudged shards (10): id · source · date · text',
        'No theme yet:',
        '- #1 · chat · 2026-01-29 · Always run the tests before pushing to main',
        '- #2 · email · 2026-01-26 · always run the tests before pushing to main!',
        '- #3 · journal · 2026-01-11 · Always run the whole test suite before pushing to main',
        '- #4 · chat · 2026-01-06 · Write documentation for every public function',
        '- #5 · email · 2026-01-01 · Wrote documentation for each public function',
        '- #6 · journal · 2026-01-23 · Drinks green tea every morning before standup',
        '- #7 · journal · 2026-01-17 · Drinks green tea each morning before the standup',
        '- #8 · email · 2026-01-03 · Refactored the billing module over the weekend',
        '- #9 · chat · 2026-01-28 · Asked a colleague to pair on the flaky login bug',
        '- #10 · chat · 2026-01-30 · Wrote documentation for every public function.',
        '',
        '## Traits',
        '- #10 Keep commits small and focused — cites 2, density 0.02, tenure 0.50, essence 0.47, survived 1',
        '- #11 Document every public function — cites 0, density 0.00, tenure 0.15, essence 0.01, survived 0',
        '- #12 Reply to customer emails within one day — cites 1, density 0.02, tenure 0.30, essence 0.02, survived 1',
        '- #13 Never reply to customer emails within one day — cites 2, density 0.04, tenure 0.25, essence 0.02, survived 1',
        '- #14 Prefer pairing over solo debugging — cites 0, density 0.00, tenure 0.75, essence 0.04, survived 2, stale',
        '',
        '## Tensions',
        '- #12 vs #13 (similarity 0.88)',
        '',
        '## Promotion candidates',
        '- #10 (score 0.005)',
        '- #13 (score 0.000)',
        '- #12 (score 0.000)',
        '',
        'Trend (last 14 days vs the 14 before): 5 recent, 3 previous, velocity +2; new sources: email; by source (recent/previous): chat 3/1, email 1/0, journal 1/2',
        '',
        '## Clusters (highest weight first)',
        `1. [weight 2.60; size 3; sources chat, email, journal; reinforces trait #10; shared with Linus (2/3), Ada (1/3)] #1 "${text[1]}" +2 similar: #3, #2`,
        `2. [weight 1.50; size 3; sources chat, email; reinforces trait #11] #10 "${text[10]}" +2 similar: #5, #4`,
        `3. [weight 0.83; size 2; sources journal; novel] #6 "${text[6]}" +1 similar: #7`,
        '',
        '2 shards resemble nothing else (highest weight first): ids #9 (reinforces #12), #8',
        '',
      ].join('\n'),
    );
    // Unjudged shards are read in their own section (issue 34); the clusters name members by id only.
    const clusterSection = report.markdown.slice(report.markdown.indexOf('## Clusters'));
    for (const id of [2, 3, 4, 5, 7, 8, 9] as const) expect(clusterSection).not.toContain(text[id]);
  });

  it('is deterministic: same input, same bytes, whatever the row order', () => {
    const again = buildEvidenceReport(fixture());
    expect(JSON.stringify(again)).toBe(JSON.stringify(report));
    expect(again.markdown).toBe(report.markdown);
    const reordered = buildEvidenceReport(fixture({ shards: [...shards].reverse() }));
    expect(JSON.stringify(reordered)).toBe(JSON.stringify(report));
  });

  it('shows the scope in the markdown and echoes it in the report', () => {
    const scoped = buildEvidenceReport(fixture({ scope: { tags: ['work', 'habits'], query: 'tests' } }));
    expect(scoped.scope).toEqual({ tags: ['work', 'habits'], query: 'tests' });
    expect(scoped.markdown).toContain('Scope: tags work, habits; query "tests"\n');
  });
});

describe('buildEvidenceReport variants', () => {
  it('flags capacity when the active traits reach the limit', () => {
    const report = buildEvidenceReport(fixture({ knobs: { ...defaultKnobs, traitLimit: 5 } }));
    expect(report.suggestedActions.map((a) => a.kind)).toEqual([
      'READY_FOR_REFINEMENT',
      'AT_CAPACITY',
      'STALE_TRAITS',
      'ESSENCE_REDUNDANT',
      'NOVEL_CLUSTER',
      'TENSION',
      'PROMOTION_CANDIDATES',
    ]);
    expect(report.suggestedActions[1]).toEqual({
      kind: 'AT_CAPACITY',
      count: 5,
      message: 'soul at capacity (5/5 traits) — level-up recommended',
      traitIds: [],
    });
  });

  it('flags essence redundancy only strictly above the threshold', () => {
    const exact = similarity(traits[0].principle, soul.essence);
    const at = buildEvidenceReport(fixture({ knobs: { ...defaultKnobs, redundancyThreshold: exact } }));
    expect(at.traits.find((t) => t.traitId === 10)!.essenceRedundancy).toBe(exact);
    expect(at.suggestedActions.map((a) => a.kind)).not.toContain('ESSENCE_REDUNDANT');
    const below = buildEvidenceReport(fixture({ knobs: { ...defaultKnobs, redundancyThreshold: exact - 1e-9 } }));
    expect(below.suggestedActions.find((a) => a.kind === 'ESSENCE_REDUNDANT')!.traitIds).toEqual([10]);
  });

  it('pluralizes several novel clusters, listing sizes in weight order', () => {
    // {8,11,12}: sources email, chat ⇒ 2 × mean(e^(−28/60), e^(−26/60), e^(−27/60)) ≈ 1.28, above {6,7} at 0.83.
    const more = [
      ...shards,
      shard(11, 'Refactored the billing module over the long weekend', 'email', 26),
      shard(12, 'Refactored the billing module during the weekend', 'chat', 27),
    ];
    const report = buildEvidenceReport(fixture({ shards: more }));
    const novel = report.suggestedActions.find((a) => a.kind === 'NOVEL_CLUSTER');
    expect(novel).toEqual({ kind: 'NOVEL_CLUSTER', count: 2, message: '2 clusters (sizes 3, 2) not aligned with any trait', traitIds: [] });
    expect(report.clusters.find((c) => c.memberIds.includes(8))?.weight).toBeCloseTo(2 * ((fresh(28) + fresh(26) + fresh(27)) / 3), 10);
  });

  it('reports an empty scope as an empty, well-formed report', () => {
    const report = buildEvidenceReport(
      fixture({
        shards: [],
        activeTraits: [],
        citations: [],
        crystallization: { ...readyCrystallization, ready: false, pendingCount: 0, distinctSources: 0, clusterCount: null, unmet: ['MIN_SHARDS', 'SOURCE_DIVERSITY'] },
        scope: { tags: ['nothing-here'], query: null },
      }),
    );
    expect(report.shardCount).toBe(0);
    expect(report.clusters).toEqual([]);
    expect(report.traits).toEqual([]);
    expect(report.consolidationCandidates).toEqual([]);
    expect(report.tensions).toEqual([]);
    expect(report.promotionCandidates).toEqual([]);
    expect(report.suggestedActions).toEqual([]);
    expect(report.trend).toEqual({ recentCount: 0, previousCount: 0, velocity: 0, newSources: [], sources: [] });
    expect(report.markdown).toBe(
      [
        '# Evidence: Grace (soul #1, level 3)',
        'Next: nothing until new evidence arrives — not ready (MIN_SHARDS, SOURCE_DIVERSITY unmet), 0 unjudged.',
        'Scope: tags nothing-here',
        'Shards: 0, clusters: 0, active traits: 0',
        'Readiness: not ready — MIN_SHARDS needs 3 more shards (0 of the 3 needed); SOURCE_DIVERSITY needs shards from 2 more sources (0 of the 2 needed)',
        '',
        '## Suggested actions',
        '- none',
        '',
        'Trend (last 14 days vs the 14 before): 0 recent, 0 previous, velocity 0',
        '',
      ].join('\n'),
    );
  });

  it('picks the representative of a 300-member cluster exactly, and keeps the markdown small', () => {
    const variants = Array.from({ length: 7 }, (_, v) => `Always run the tests before pushing to main, attempt ${'x'.repeat(v)}${v}`);
    const many = Array.from({ length: 300 }, (_, i) =>
      shard(1000 + i, variants[i % 7], ['chat', 'email', 'journal'][i % 3], (i % 30) + 0.5),
    );
    const report = buildEvidenceReport(fixture({ shards: many }));
    expect(report.clusters).toHaveLength(1);
    expect(report.clusters[0].memberCount).toBe(300);
    // Variant v has copies[v] copies (43 for v < 6, 42 for v = 6). A copy's similarity sum is
    // (copies[v] − 1) × 1 + Σ_{u≠v} copies[u] × sim(v, u); the best variant's lowest id wins.
    const copies = variants.map((_, v) => many.filter((s) => s.content === variants[v]).length);
    const sums = variants.map((a, v) => copies[v] - 1 + variants.reduce((acc, b, u) => (u === v ? acc : acc + copies[u] * similarity(a, b)), 0));
    // Variants 3, 4 and 5 tie (285.214…), so the lowest id among them, 1003, wins.
    const bestVariant = sums.findIndex((x) => x >= Math.max(...sums) - 1e-9);
    expect(bestVariant).toBe(3);
    expect(report.clusters[0].representativeId).toBe(1003);
    expect(report.markdown).toContain(`+299 similar: ${report.clusters[0].memberIds.filter((id) => id !== 1003).slice(0, 12).map((id) => `#${id}`).join(', ')} and 287 more`);
    const rawChars = many.reduce((n, s) => n + s.content.length, 0);
    // Unjudged shards are listed with their text, at most MARKDOWN_UNJUDGED of them; the rest of the report folds them.
    const [before, section] = report.markdown.split('\n## Unjudged shards');
    const [listed, after] = section.split('\n\n## Traits');
    expect(listed.split('\n').filter((l) => l.startsWith('- #'))).toHaveLength(MARKDOWN_UNJUDGED);
    expect(listed).toContain('- and 260 more: all in souls://1/unjudged.md (MCP) or EvidenceReport.unjudged (GraphQL)');
    expect((before.length + after.length) * 5).toBeLessThan(rawChars);
  });

  it('computes bitset similarity sums bit-identical to pairwise jaccardOfIndexed', () => {
    const texts = Array.from({ length: 120 }, (_, i) => `shard ${i % 13} about ${['tests', 'docs', 'tea'][i % 3]} number ${i % 17}`);
    const index = buildGramIndex(texts);
    const members = Array.from({ length: texts.length }, (_, i) => i);
    const expected = new Float64Array(texts.length);
    for (let p = 0; p < texts.length; p++) {
      for (let q = p + 1; q < texts.length; q++) {
        const s = jaccardOfIndexed(index, p, q);
        expected[p] += s;
        expected[q] += s;
      }
    }
    expect([...similaritySums(index, members)]).toEqual([...expected]);
  });
});

describe('hasNegation', () => {
  it('matches marker words and n’t contractions, nothing else', () => {
    for (const t of ['Never guess', 'do not guess', "Don't guess", 'Don’t guess', 'avoid guessing', 'No guessing.', 'cannot guess', "'never'"]) {
      expect(hasNegation(t), t).toBe(true);
    }
    for (const t of ['Note the knot', 'Knowing nobody', 'Nevertheless guess', 'notice']) expect(hasNegation(t), t).toBe(false);
  });

  it('matches inflections of a marker verb on its stem', () => {
    for (const t of ['Avoids guessing', 'Avoiding guesswork', 'Avoided guessing in reviews', 'Refuses to guess', 'Refrained from guessing']) {
      expect(hasNegation(t), t).toBe(true);
    }
    for (const t of ['Voids the warranty', 'Guessing is fine', 'Knots and nodes', 'Nothingness aside, guess']) expect(hasNegation(t), t).toBe(false);
  });
});
