import type {
  EvidenceChanges,
  EvidenceSince,
  EvidenceReport as EvidenceReportRecord,
  ShardCluster as ShardClusterRecord,
  SuggestedAction as SuggestedActionRecord,
  TraitPair as TraitPairRecord,
  Trend as TrendRecord,
} from '../src/engine/index.ts';
import { rememberEvidence, representativeRow, suggestedActionKinds } from '../src/engine/index.ts';
import { loadPresent } from '../resolvers/loaders.ts';
import { builder, readBeyondId } from './builder.ts';
import { SimilarityMode } from './settings.ts';
import { Shard } from './shard.ts';
import { Crystallization, Soul } from './soul.ts';
import { Trait } from './trait.ts';
import { firstArg, firstItems, pageArgs, pageIds, pageOf, pageText } from './paging.ts';
import { CLUSTER_PAGE, LIST_CAP, LIST_PAGE } from '../src/server/price-list.ts';

type ClusterAlignmentRecord = ShardClusterRecord['alignment'];
type SharedSoulRecord = ShardClusterRecord['sharedWith'][number];

const AlignmentKind = builder.enumType('AlignmentKind', { values: ['REINFORCING', 'NOVEL', 'CONTRADICTING'] as const });

const SuggestedActionKind = builder.enumType('SuggestedActionKind', { values: suggestedActionKinds });

const ClusterAlignment = builder.objectRef<ClusterAlignmentRecord>('ClusterAlignment').implement({
  description:
    'REINFORCING an existing trait (a member is cited by it, or the representative resembles its principle); CONTRADICTING the trait a theme ' +
    'opposes (a judged theme whose members are counter-evidence: never NOVEL, never reinforcing); else NOVEL.',
  fields: (t) => ({
    kind: t.field({ type: AlignmentKind, resolve: (a) => a.kind }),
    trait: t.field({ type: Trait, nullable: true, resolve: (a, _, ctx) => (a.traitId === null ? null : ctx.loaders.trait.load(a.traitId)) }),
    similarity: t.exposeFloat('similarity'),
  }),
});

const SharedSoul = builder.objectRef<SharedSoulRecord>('SharedSoul').implement({
  description: 'Another soul the cluster’s shards are also attributed to.',
  fields: (t) => ({
    soul: t.field({ type: Soul, resolve: async (s, _, ctx) => (await ctx.loaders.soul.load(s.soulId))! }),
    sharedCount: t.exposeInt('sharedCount'),
    fraction: t.exposeFloat('fraction'),
  }),
});

export const ShardCluster = builder.objectRef<ShardClusterRecord>('ShardCluster').implement({
  description: 'Shards grouped by lexical similarity; weight = memberCount × sourceDiversity × freshness.',
  fields: (t) => ({
    representative: t.field({
      type: Shard,
      // The row the report read (checked current then): no second read, and no promise.
      resolve: (c, _, ctx) => representativeRow(c) ?? ctx.loaders.shard.load(c.representativeId).then((shard) => shard!),
    }),
    members: t.field({
      type: [Shard],
      description: `the cluster's shards in the report's order: ${pageText(LIST_PAGE)}; memberCount counts them all`,
      args: pageArgs(LIST_PAGE),
      resolve: (c, args, ctx) => loadPresent(ctx.loaders.shard, pageIds(c.memberIds, args, LIST_PAGE)),
    }),
    memberCount: t.exposeInt('memberCount'),
    sources: t.stringList({ description: `the sources of its shards, at most ${LIST_CAP}`, resolve: (c) => c.sources.slice(0, LIST_CAP) }),
    sourceDiversity: t.exposeFloat('sourceDiversity'),
    ageSpanDays: t.exposeFloat('ageSpanDays'),
    freshness: t.exposeFloat('freshness'),
    weight: t.exposeFloat('weight'),
    alignment: t.field({ type: ClusterAlignment, resolve: (c) => c.alignment }),
    sharedWith: t.field({ type: [SharedSoul], description: `other souls its shards are attributed to, at most ${LIST_CAP}`, resolve: (c) => c.sharedWith.slice(0, LIST_CAP) }),
  }),
});

const TraitPair = builder.objectRef<TraitPairRecord>('TraitPair').implement({
  fields: (t) => ({
    a: t.field({ type: Trait, resolve: async (p, _, ctx) => (await ctx.loaders.trait.load(p.a))! }),
    b: t.field({ type: Trait, resolve: async (p, _, ctx) => (await ctx.loaders.trait.load(p.b))! }),
    similarity: t.exposeFloat('similarity'),
  }),
});

const PromotionCandidate = builder.objectRef<{ traitId: number; score: number }>('PromotionCandidate').implement({
  fields: (t) => ({
    trait: t.field({ type: Trait, resolve: async (p, _, ctx) => (await ctx.loaders.trait.load(p.traitId))! }),
    score: t.exposeFloat('score', { description: 'tenure × citationDensity × essenceRedundancy, highest first; only traits at least promotionTenureDays old' }),
  }),
});

const PossibleCounterEvidence = builder.objectRef<EvidenceReportRecord['possibleCounterEvidence'][number]>('PossibleCounterEvidence').implement({
  description: 'A shard that shares a trait’s topic with flipped polarity (a negation or antonym on one side only): a hint to read, never a judgement or a merge.',
  fields: (t) => ({
    trait: t.field({ type: Trait, resolve: async (h, _, ctx) => (await ctx.loaders.trait.load(h.traitId))! }),
    shard: t.field({ type: Shard, resolve: async (h, _, ctx) => (await ctx.loaders.shard.load(h.shardId))! }),
    reason: t.exposeString('reason', { description: 'the shared content words and the polarity cue, e.g. same topic ("tests") with flipped polarity: negation "without" on one side only' }),
    overlap: t.exposeFloat('overlap', { description: 'shared content stems over the shorter text’s (overlap coefficient), at least 1/3' }),
  }),
});

const SourceTrend = builder.objectRef<TrendRecord['sources'][number]>('SourceTrend').implement({
  fields: (t) => ({ source: t.exposeString('source'), recent: t.exposeInt('recent'), previous: t.exposeInt('previous') }),
});

const Trend = builder.objectRef<TrendRecord>('Trend').implement({
  description: 'Shards in the last 14 days against the 14 before.',
  fields: (t) => ({
    recentCount: t.exposeInt('recentCount'),
    previousCount: t.exposeInt('previousCount'),
    velocity: t.exposeInt('velocity'),
    newSources: t.stringList({ description: `sources of the recent window not seen in the previous one, at most ${LIST_CAP}`, resolve: (tr) => tr.newSources.slice(0, LIST_CAP) }),
    sources: t.field({ type: [SourceTrend], description: `per source, at most ${LIST_CAP}`, resolve: (tr) => tr.sources.slice(0, LIST_CAP) }),
  }),
});

const SuggestedAction = builder.objectRef<SuggestedActionRecord>('SuggestedAction').implement({
  fields: (t) => ({
    kind: t.field({ type: SuggestedActionKind, resolve: (a) => a.kind }),
    message: t.exposeString('message'),
    count: t.exposeInt('count'),
    traits: t.field({ type: [Trait], description: 'the active traits it is about: at most traitLimit', resolve: (a, _, ctx) => loadPresent(ctx.loaders.trait, a.traitIds) }),
  }),
});

const EvidenceSimilarity = builder.objectRef<EvidenceReportRecord['similarity']>('EvidenceSimilarity').implement({
  description: 'The similarity mode and clustering threshold that produced a report, and how many of its clustered shards had vectors.',
  fields: (t) => ({
    mode: t.field({ type: SimilarityMode, resolve: (s) => s.mode }),
    threshold: t.exposeFloat('threshold'),
    vectorModel: t.string({
      nullable: true,
      description: "the model whose vectors the mode compares: the embedder's (semantic), 'provided' (callers' vectors); null in trigram and lexical",
      resolve: (s) => s.vectors.model,
    }),
    shardsWithVectors: t.int({ description: 'clustered shards with a stored vector of that model', resolve: (s) => s.vectors.withVectors }),
    vectorsPending: t.int({ description: 'clustered shards whose vector is being computed (semantic): compared lexically until it lands', resolve: (s) => s.vectors.pending }),
    shardsWithoutVectors: t.int({
      description: 'the other clustered shards, compared lexically (in trigram and lexical, every clustered shard: no vectors at all)',
      resolve: (s) => s.vectors.without,
    }),
    reindexNeeded: t.boolean({ description: 'semantic mode: some shards will get no vector until `souls reindex` (written before vectors were configured, or their embedding failed)', resolve: (s) => s.vectors.reindexNeeded }),
    vectors: t.string({ description: 'all of it in words, as the markdown says it', resolve: (s) => s.vectors.message }),
  }),
});

const EvidenceChangesType = builder.objectRef<EvidenceChanges & { since: string }>('EvidenceChanges').implement({
  description: 'What changed in a report since the revision a previous read returned.',
  fields: (t) => ({
    since: t.exposeString('since', { description: 'the revision asked about' }),
    newShards: t.field({ type: [Shard], description: `shards the report holds now and did not then, ascending id: at most ${LIST_CAP}`, resolve: (c, _, ctx) => loadPresent(ctx.loaders.shard, c.newShardIds.slice(0, LIST_CAP)) }),
    goneShards: t.field({ type: [Shard], description: `shards it held then and not now (faded, expired, sealed), ascending id: at most ${LIST_CAP}`, resolve: (c, _, ctx) => loadPresent(ctx.loaders.shard, c.goneShardIds.slice(0, LIST_CAP)) }),
    changedThemeIds: t.field({ type: ['ID'], description: `themes whose name, members or opposed traits changed, new or gone: at most ${LIST_CAP}`, resolve: (c) => c.changedThemeIds.slice(0, LIST_CAP).map(String) }),
    readinessChanged: t.exposeBoolean('readinessChanged'),
    newSuggestedActions: t.stringList({ description: 'suggested actions new or changed since, as "KIND: message": at most one of each kind', resolve: (c) => c.newActions }),
  }),
});

/** A report as a read answered it: with `read` when the read passed `since` (the markdown is then only what changed). */
export type EvidenceReportRead = EvidenceReportRecord & { read?: EvidenceSince };

export const EvidenceReport = builder.objectRef<EvidenceReportRead>('EvidenceReport').implement({
  description: 'The soul’s considered shards, pre-digested for whoever decides: a person, a script or an LLM.',
  ...readBeyondId,
  fields: (t) => ({
    soul: t.field({ type: Soul, resolve: async (r, _, ctx) => (await ctx.loaders.soul.load(r.soulId))! }),
    generatedAt: t.field({ type: 'DateTime', resolve: (r) => r.generatedAt }),
    shardCount: t.exposeInt('shardCount'),
    clusteredShardCount: t.exposeInt('clusteredShardCount', {
      description: 'how many of the shards the clusters cover: shardCount, or maxClusteredShards (the most recently dropped) when there are more',
    }),
    crystallization: t.field({ type: Crystallization, resolve: (r) => r.crystallization }),
    clusters: t.field({
      type: [ShardCluster],
      description: `highest weight first: ${pageText(CLUSTER_PAGE, false)}, after the cluster whose representative is \`after\`; clusterCount counts them all`,
      args: pageArgs(CLUSTER_PAGE),
      resolve: (r, args) => pageOf(r.clusters, (c) => c.representativeId, args, CLUSTER_PAGE),
    }),
    clusterCount: t.int({ description: 'how many clusters the report has (a theme is one, a shard alike to no other is one)', resolve: (r) => r.clusters.length }),
    traits: t.field({
      type: [Trait],
      description: 'the active traits the report covers: at most traitLimit',
      resolve: (r, _, ctx) => loadPresent(ctx.loaders.trait, r.traits.map((s) => s.traitId)),
    }),
    consolidationCandidates: t.field({ type: [TraitPair], description: 'pairs of active traits: at most traitLimit × (traitLimit − 1) / 2', resolve: (r) => r.consolidationCandidates }),
    tensions: t.field({
      type: [TraitPair],
      description: 'similar trait pairs that read as opposite; never also consolidation candidates: at most traitLimit × (traitLimit − 1) / 2',
      resolve: (r) => r.tensions,
    }),
    possibleCounterEvidence: t.field({
      type: [PossibleCounterEvidence],
      description: `shards of the report (not cited by the trait) that may contradict an active trait, by trait then shard id: ${pageText(LIST_PAGE, false)}`,
      args: firstArg(LIST_PAGE),
      resolve: (r, args) => firstItems(r.possibleCounterEvidence, args, LIST_PAGE),
    }),
    promotionCandidates: t.field({ type: [PromotionCandidate], description: 'at most traitLimit', resolve: (r) => r.promotionCandidates }),
    trend: t.field({ type: Trend, resolve: (r) => r.trend }),
    suggestedActions: t.field({ type: [SuggestedAction], description: 'at most one of each kind', resolve: (r) => r.suggestedActions }),
    markdown: t.string({
      description: 'the whole report, compact, for an LLM prompt; with `since` a known revision, only what changed (one line when nothing did)',
      resolve: (r) => r.read?.markdown ?? r.markdown,
    }),
    revision: t.string({
      description: 'names this report’s state (the same state, the same revision): pass it as `since` to a later read for only what changed',
      resolve: (r, _args, ctx) => r.read?.revision ?? rememberEvidence(ctx.db, r),
    }),
    sinceKnown: t.boolean({
      nullable: true,
      description: 'with `since`: whether that revision was known here; false answers the full report (a restart, another replica, too old)',
      resolve: (r) => (r.read?.since ? r.read.since.known : null),
    }),
    changes: t.field({
      type: EvidenceChangesType,
      nullable: true,
      description: 'with `since` a known revision: what changed since it',
      resolve: (r) => (r.read?.changes && r.read.since ? { ...r.read.changes, since: r.read.since.revision } : null),
    }),
    similarity: t.field({ type: EvidenceSimilarity, resolve: (r) => r.similarity }),
  }),
});
