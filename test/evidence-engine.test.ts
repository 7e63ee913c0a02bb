import { describe, expect, it } from 'vitest';
import {
  DAY_MS,
  NotFoundError,
  addTrait,
  createSoul,
  dropShard,
  fadeExhaustedShards,
  formatEvidence,
  getCrystallization,
  getTraitSignals,
  listTraits,
  manualClock,
  openSoulsDb,
  revealShards,
  revertTrait,
  similarity,
  type EvidenceReport,
} from '../src/engine/index.ts';

const T0 = Date.UTC(2026, 2, 1);
const ago = (days: number) => T0 - days * DAY_MS;

const docker = {
  d1: 'Fixed the Docker build cache for the api image',
  d2: 'Fixed the Docker build cache for the web image',
  d3: 'Fixed the Docker build cache for the worker image',
};
const tea = {
  t1: 'Drinks green tea every morning before standup',
  t2: 'Drinks green tea each morning before the standup',
};
const kube = 'Wrote a kubernetes operator for the billing queue';

/** The same writes, in the same order, at the same clock: a world with three souls and shards in and out of scope. */
async function world() {
  const clock = manualClock(T0);
  const db = openSoulsDb({ clock });
  const ada = await createSoul(db, { name: 'Ada', essence: 'A careful engineer who keeps commits small.' });
  const grace = await createSoul(db, { name: 'Grace', essence: 'A compiler pioneer.' });
  const linus = await createSoul(db, { name: 'Linus', essence: 'A kernel maintainer.' });
  const drop = async (content: string, source: string, soulIds: number[], options: { tags?: string[]; sealed?: boolean; createdAt?: number } = {}) =>
    (await dropShard(db, content, source, soulIds, options)).shardId;

  const d1 = await drop(docker.d1, 'chat', [ada.id, grace.id], { tags: ['Docker', 'build'], createdAt: ago(3) });
  const d2 = await drop(docker.d2, 'email', [ada.id, grace.id, linus.id], { tags: ['docker'], createdAt: ago(2) });
  const d3 = await drop(docker.d3, 'journal', [ada.id], { tags: [' DOCKER '], createdAt: ago(1) });
  const t1 = await drop(tea.t1, 'chat', [ada.id], { tags: ['habit'], createdAt: ago(5) });
  const t2 = await drop(tea.t2, 'email', [ada.id, linus.id], { tags: ['habit'], createdAt: ago(4) });
  const k1 = await drop(kube, 'chat', [ada.id], { tags: ['Kubernetes'], createdAt: ago(2) });
  // Out of scope for Ada: sealed, faded, expired, and another soul's only.
  const sealed = await drop('Fixed the Docker build cache for the sealed image', 'chat', [ada.id], { tags: ['docker'], sealed: true, createdAt: ago(1) });
  const faded = await drop('Fixed the Docker build cache for the faded image', 'email', [ada.id], { tags: ['docker'], createdAt: ago(1) });
  const expired = await drop('Fixed the Docker build cache for the ancient image', 'chat', [ada.id], { tags: ['docker'], createdAt: ago(121) });
  const foreign = await drop('Fixed the Docker build cache for the grace image', 'journal', [grace.id], { tags: ['docker'] });

  const lean = await addTrait(db, ada.id, { principle: 'Keeps container images lean', provenance: 'build reviews', citeShardIds: [d1] });
  const pairing = await addTrait(db, ada.id, { principle: 'Prefers pairing on hard bugs', provenance: 'retros', citeShardIds: [faded] });
  const review = await addTrait(db, ada.id, { principle: 'Reviews pull requests within a day', provenance: 'stats', citeShardIds: [faded] });
  const teaLover = await addTrait(db, ada.id, { principle: 'Enjoys hot beverages', provenance: 'kitchen', citeShardIds: [t1] });
  await revertTrait(db, teaLover.id);
  expect((await fadeExhaustedShards(db)).fadedCount).toBe(1);
  clock.advance(6 * 3_600_000);
  return {
    clock,
    db,
    souls: { ada, grace, linus },
    shards: { d1, d2, d3, t1, t2, k1, sealed, faded, expired, foreign },
    traits: { lean, pairing, review, teaLover },
  };
}

const members = (report: EvidenceReport) => report.clusters.flatMap((c) => c.memberIds).sort((a, b) => a - b);
const asc = (ids: number[]) => [...ids].sort((a, b) => a - b);

describe('formatEvidence scope', () => {
  it("covers exactly the soul's considered shards", async () => {
    const { db, souls, shards: s } = await world();
    const report = await formatEvidence(db, souls.ada.id);
    expect(report.soulId).toBe(souls.ada.id);
    expect(report.shardCount).toBe(6);
    expect(members(report)).toEqual(asc([s.d1, s.d2, s.d3, s.t1, s.t2, s.k1]));
    expect(report.scope).toEqual({ tags: [], query: null });
    expect(report.markdown).not.toContain('sealed image');
    expect(report.markdown).not.toContain('faded image');
    expect(report.markdown).not.toContain('ancient image');
    expect(report.markdown).not.toContain('grace image');
  });

  it('clusters the scope by similarity', async () => {
    const { db, souls, shards: s } = await world();
    const report = await formatEvidence(db, souls.ada.id);
    expect(report.clusters.map((c) => c.memberIds).sort((x, y) => x[0] - y[0])).toEqual(
      [[s.d1, s.d2, s.d3], [s.t1, s.t2], [s.k1]].sort((x, y) => x[0] - y[0]),
    );
  });

  it('takes in a sealed shard once revealed, and drops shards as they expire', async () => {
    const { db, clock, souls, shards: s } = await world();
    await revealShards(db, [s.sealed]);
    expect(members(await formatEvidence(db, souls.ada.id))).toEqual(asc([s.d1, s.d2, s.d3, s.t1, s.t2, s.k1, s.sealed]));
    // 120 days after d1 (created 3 days before T0) it is no longer considered.
    clock.set(ago(3) + 120 * DAY_MS);
    const report = await formatEvidence(db, souls.ada.id);
    expect(members(report)).not.toContain(s.d1);
    expect(members(report)).toContain(s.d2);
  });

  it('treats a shard created exactly at the expiry cutoff as expired', async () => {
    const clock = manualClock(T0);
    const db = openSoulsDb({ clock });
    const soul = await createSoul(db, { name: 'Edge', essence: 'Lives on the boundary.' });
    const atCutoff = (await dropShard(db, 'Exactly one hundred and twenty days old', 'a', [soul.id], { createdAt: T0 - 120 * DAY_MS })).shardId;
    const inside = (await dropShard(db, 'One millisecond younger than that', 'b', [soul.id], { createdAt: T0 - 120 * DAY_MS + 1 })).shardId;
    const report = await formatEvidence(db, soul.id);
    expect(members(report)).toEqual([inside]);
    expect(members(report)).not.toContain(atCutoff);
  });

  it('narrows to shards carrying any of the tags, normalized', async () => {
    const { db, souls, shards: s } = await world();
    const byDocker = await formatEvidence(db, souls.ada.id, { tags: ['DOCKER'] });
    expect(members(byDocker)).toEqual(asc([s.d1, s.d2, s.d3]));
    expect(byDocker.scope.tags).toEqual(['docker']);
    expect(byDocker.markdown).toContain('Scope: tags docker');
    const either = await formatEvidence(db, souls.ada.id, { tags: [' Kubernetes ', 'habit', 'HABIT', ''] });
    expect(members(either)).toEqual(asc([s.t1, s.t2, s.k1]));
    expect(either.scope.tags).toEqual(['kubernetes', 'habit']);
    const none = await formatEvidence(db, souls.ada.id, { tags: ['nothing-like-this'] });
    expect(none.shardCount).toBe(0);
    expect(none.clusters).toEqual([]);
    // An empty tag list is no filter.
    expect((await formatEvidence(db, souls.ada.id, { tags: [] })).shardCount).toBe(6);
  });

  it('narrows by full-text query, combined with tags', async () => {
    const { db, souls, shards: s } = await world();
    expect(members(await formatEvidence(db, souls.ada.id, { query: 'docker' }))).toEqual(asc([s.d1, s.d2, s.d3]));
    expect(members(await formatEvidence(db, souls.ada.id, { query: 'green tea' }))).toEqual(asc([s.t1, s.t2]));
    expect(members(await formatEvidence(db, souls.ada.id, { query: 'worker image' }))).toEqual([s.d3]);
    expect(members(await formatEvidence(db, souls.ada.id, { query: 'for', tags: ['kubernetes', 'habit'] }))).toEqual([s.k1]);
    expect((await formatEvidence(db, souls.ada.id, { query: 'kubernetes', tags: ['docker'] })).shardCount).toBe(0);
    const scoped = await formatEvidence(db, souls.ada.id, { query: '  docker  ' });
    expect(scoped.scope.query).toBe('docker');
    expect(scoped.markdown).toContain('Scope: query "docker"');
    // A blank query is no filter.
    expect((await formatEvidence(db, souls.ada.id, { query: '   ' })).shardCount).toBe(6);
  });

  it('treats hostile query text as plain words, never as FTS syntax', async () => {
    const { db, souls, shards: s } = await world();
    const dockerIds = asc([s.d1, s.d2, s.d3]);
    // Each is the word docker once the syntax is taken literally.
    for (const query of ['"docker"', 'docker*', 'DOCKER', 'docker\u0000', '\u0000docker', "docker'", '(docker)', 'docker^']) {
      expect(members(await formatEvidence(db, souls.ada.id, { query })), query).toEqual(dockerIds);
    }
    // Operators are words: no shard contains "or", "not", "near" or "content".
    for (const query of ['docker OR tea', 'docker NOT tea', 'NEAR(docker tea)', 'NEAR(', 'content:docker', 'docker AND', '"docker" OR "tea"']) {
      expect(members(await formatEvidence(db, souls.ada.id, { query })), query).toEqual([]);
    }
    // No word at all: nothing matches, nothing throws.
    for (const query of ['"', '""', '*', '(', ')', '-', ':', '^', '\u0000', '"\u0000"', "'", '{}', 'NEAR(']) {
      const report = await formatEvidence(db, souls.ada.id, { query });
      expect(report.shardCount, JSON.stringify(query)).toBe(0);
      expect(typeof report.markdown).toBe('string');
    }
    const weird = ['a"b', 'x" OR "y', 'tea"*', '\'; DROP TABLE souls; --', 'col: "x', 'ü*', '🐳 docker'];
    for (const query of weird) {
      const report = await formatEvidence(db, souls.ada.id, { query });
      for (const id of members(report)) expect([s.d1, s.d2, s.d3, s.t1, s.t2, s.k1]).toContain(id);
    }
    // A symbol-only word is no word: the query is "docker".
    expect(members(await formatEvidence(db, souls.ada.id, { query: '🐳 docker' }))).toEqual(dockerIds);
    expect((await formatEvidence(db, souls.ada.id)).shardCount).toBe(6);
  });
});

describe('formatEvidence wiring', () => {
  it("reports the soul's own crystallization verdict, scoped or not", async () => {
    const { db, souls } = await world();
    const verdicts = await getCrystallization(db, [souls.ada.id, souls.grace.id, souls.linus.id]);
    expect(verdicts.get(souls.ada.id)!.ready).toBe(true);
    expect(verdicts.get(souls.grace.id)!.unmet).toEqual(['MIN_CLUSTERS']);
    expect(verdicts.get(souls.linus.id)!.unmet).toContain('MIN_SHARDS');
    for (const soul of [souls.ada, souls.grace, souls.linus]) {
      const expected = verdicts.get(soul.id)!;
      expect((await formatEvidence(db, soul.id)).crystallization, soul.name).toEqual(expected);
      expect((await formatEvidence(db, soul.id, { tags: ['docker'] })).crystallization, soul.name).toEqual(expected);
      expect((await formatEvidence(db, soul.id, { query: 'tea' })).crystallization, soul.name).toEqual(expected);
    }
    expect((await formatEvidence(db, souls.ada.id)).markdown).toContain('Readiness: ready (priority');
    expect((await formatEvidence(db, souls.grace.id)).markdown).toContain('Readiness: not ready — MIN_CLUSTERS needs shards on 1 more distinct topic (1 of the 2 clusters needed; a judged theme counts as one)');
  });

  it('names the other souls attributed to each cluster', async () => {
    const { db, souls, shards: s } = await world();
    const report = await formatEvidence(db, souls.ada.id);
    const dockerCluster = report.clusters.find((c) => c.memberIds.includes(s.d1))!;
    expect(dockerCluster.sharedWith).toEqual([
      { soulId: souls.grace.id, sharedCount: 2, fraction: 2 / 3 },
      { soulId: souls.linus.id, sharedCount: 1, fraction: 1 / 3 },
    ]);
    const teaCluster = report.clusters.find((c) => c.memberIds.includes(s.t1))!;
    expect(teaCluster.sharedWith).toEqual([{ soulId: souls.linus.id, sharedCount: 1, fraction: 1 / 2 }]);
    expect(report.clusters.find((c) => c.memberIds.includes(s.k1))!.sharedWith).toEqual([]);
    expect(report.markdown).toContain('shared with Grace (2/3), Linus (1/3)');
    expect(report.markdown).toContain('shared with Linus (1/2)');
    // Seen from Grace, Ada shares the docker shards.
    const fromGrace = await formatEvidence(db, souls.grace.id);
    expect(fromGrace.clusters).toHaveLength(1);
    expect(fromGrace.clusters[0].sharedWith).toEqual([
      { soulId: souls.ada.id, sharedCount: 2, fraction: 2 / 3 },
      { soulId: souls.linus.id, sharedCount: 1, fraction: 1 / 3 },
    ]);
    expect(fromGrace.markdown).toContain('shared with Ada (2/3), Linus (1/3)');
  });

  it('aligns a cluster with the active trait citing a member, and ignores citations of inactive traits', async () => {
    const { db, souls, shards: s, traits } = await world();
    const report = await formatEvidence(db, souls.ada.id);
    const dockerCluster = report.clusters.find((c) => c.memberIds.includes(s.d1))!;
    const representative = Object.values(docker)[[s.d1, s.d2, s.d3].indexOf(dockerCluster.representativeId)];
    // Not by similarity: the principle barely resembles the shards, the citation is what aligns them.
    expect(similarity(representative, traits.lean.principle)).toBeLessThan(db.settings.redundancyThreshold);
    expect(dockerCluster.alignment.kind).toBe('REINFORCING');
    expect(dockerCluster.alignment.traitId).toBe(traits.lean.id);
    expect(report.markdown).toContain(`reinforces trait #${traits.lean.id}`);
    // t1 is cited by a reverted trait only.
    const teaCluster = report.clusters.find((c) => c.memberIds.includes(s.t1))!;
    expect(teaCluster.alignment).toMatchObject({ kind: 'NOVEL', traitId: null });
    expect(report.clusters.find((c) => c.memberIds.includes(s.k1))!.alignment.kind).toBe('NOVEL');
  });

  it('aligns through a citation added later, and reports signals of every active trait', async () => {
    const { db, souls, shards: s, traits } = await world();
    const late = await addTrait(db, souls.ada.id, { principle: 'Automates the cluster', provenance: 'ops log', citeShardIds: [s.k1] });
    const report = await formatEvidence(db, souls.ada.id);
    expect(report.clusters.find((c) => c.memberIds.includes(s.k1))!.alignment).toMatchObject({ kind: 'REINFORCING', traitId: late.id });
    const active = await listTraits(db, souls.ada.id, { status: 'active' });
    expect(active.map((t) => t.id)).toEqual([traits.lean.id, traits.pairing.id, traits.review.id, late.id]);
    const signals = await getTraitSignals(db, active.map((t) => t.id));
    expect(report.traits).toEqual(active.map((t) => signals.get(t.id)));
    expect(report.traits.map((t) => t.citationCount)).toEqual([1, 1, 1, 1]);
  });

  it('refuses an unknown soul', async () => {
    const { db } = await world();
    const error = await formatEvidence(db, 424_242).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).entity).toBe('Soul');
    expect((error as NotFoundError).id).toBe('424242');
  });

  it('is byte-identical across two fresh databases given the same writes and clock', async () => {
    const one = await world();
    const two = await world();
    for (const options of [{}, { tags: ['docker'] }, { query: 'green tea' }]) {
      const a = await formatEvidence(one.db, one.souls.ada.id, options);
      const b = await formatEvidence(two.db, two.souls.ada.id, options);
      expect(a.markdown).toBe(b.markdown);
      expect(a).toEqual(b);
    }
    expect((await formatEvidence(one.db, one.souls.ada.id)).markdown).toBe((await formatEvidence(one.db, one.souls.ada.id)).markdown);
  });

  it('answers an empty report for a soul with nothing', async () => {
    const { db } = await world();
    const empty = await createSoul(db, { name: 'Blank', essence: 'Nothing yet.' });
    const report = await formatEvidence(db, empty.id);
    expect(report.shardCount).toBe(0);
    expect([report.clusters, report.traits, report.consolidationCandidates, report.tensions, report.promotionCandidates]).toEqual([[], [], [], [], []]);
    expect(report.trend).toMatchObject({ recentCount: 0, previousCount: 0, velocity: 0 });
    expect(report.crystallization).toEqual((await getCrystallization(db, [empty.id])).get(empty.id));
    expect(report.markdown.startsWith(`# Evidence: Blank (soul #${empty.id}, level 0)\n`)).toBe(true);
    expect(report.generatedAt).toBe(db.clock.now());
  });
});

describe('world fixture', () => {
  it("scopes another soul's report to that soul's shards", async () => {
    const { db, souls, shards: s } = await world();
    const linus = await formatEvidence(db, souls.linus.id);
    expect(members(linus)).toEqual(asc([s.d2, s.t2]));
  });
});
