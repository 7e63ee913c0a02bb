import { createHash } from 'node:crypto';
import { DAY_MS } from './clock.ts';
import { getCrystallization, unmetNeedLine, unmetNeeds, type Crystallization } from './crystallization.ts';
import { NotFoundError } from './errors.ts';
import { normalizeTags } from './normalize.ts';
import { textQuery } from './shards.ts';
import type { SoulsDb } from './souls-db.ts';
import { usesVectors, type ClusteringWork } from './cluster-memo.ts';
import type { Citation, Shard, Soul, Theme, Trait } from './model.ts';
import { expiryCutoff, type Knobs, type SimilarityMode } from './settings.ts';
import { rankKey, traitSignals } from './signals.ts';
import type { TraitSignals } from './signals.ts';
import { judgedShards, soulThemeMaps } from './crystallization.ts';
import { dot, lexicalVectors } from './lexical.ts';
import { mixSimilarity } from './provided.ts';
import { semanticSimilarity } from './semantic-similarity.ts';
import { clusterSignalWarning, isTenured } from './report-hints.ts';
import { vectorUse, type VectorUse } from './vector-use.ts';
import { PROVIDED_MODEL, type Awaitable } from '../store/store.ts';
import { oppositePolarity, possibleCounterEvidenceSteps, type CounterEvidenceHint } from './polarity.ts';
import { clusterSteps as partitionSteps, type Embeddings } from './similarity-modes.ts';
import { gramIndexSteps, jaccardOfIndexed } from './similarity.ts';
import { runSteps, runStepsSliced, yieldToEventLoop, type Steps } from './slices.ts';
import type { GramIndex } from './similarity.ts';

export type EvidenceInput = {
  soul: Soul;
  /** The report's scope, already chosen by the caller: the soul's considered shards (pending, unsealed, unexpired), optionally narrowed to tags / a full-text query. Each carries tags and soulIds (every soul it is attributed to). */
  shards: readonly Shard[];
  activeTraits: readonly Trait[];
  /** Citations of the active traits (any shard, any time). */
  citations: readonly Citation[];
  /** The soul's attunement times. */
  attunedAt: readonly number[];
  crystallization: Crystallization;
  /** Stored embeddings by shard id (similarity `provided`); a shard missing here is compared lexically. */
  embeddings?: ReadonlyMap<number, Float32Array>;
  /** The model the mode's vectors come from (the embedder's in semantic, PROVIDED_MODEL in provided); null or absent in trigram and lexical. */
  vectorModel?: string | null;
  /** Shards whose vector is being computed (semantic mode): they wait for it rather than lack it. */
  vectorsWaiting?: ReadonlySet<number>;
  /** The clustered shards' single-linkage partition as lists of shard ids, when the caller already has it; computed otherwise. */
  partition?: readonly (readonly number[])[];
  /** Clusters cover at most this many shards, the most recently dropped (highest ids); default: all. */
  clusterLimit?: number;
  /** Representatives found before, by a cluster's member ids ("3,5,9"); read and filled. Contents never change, so neither do they. */
  representatives?: { get(key: string): number | undefined; set(key: string, id: number): void };
  /**
   * What earlier reports analysed (clusters, trait pairs, counter-evidence hints), by a digest of everything that
   * analysis reads; read and filled in trigram mode, where similarity depends on the two texts alone.
   */
  analyses?: { get(key: string): EvidenceAnalysis | undefined; set(key: string, analysis: EvidenceAnalysis): void };
  /** The analysis's key in `analyses`, and what `analyses` held under it, when the caller looked already. */
  held?: { key: string; analysis: EvidenceAnalysis | undefined };
  /**
   * The themes the soul's shards of this report are assigned to (shard id → theme id), and those themes; none when
   * omitted. A theme's members in `shards` are one cluster, always, and never share a cluster with any other shard.
   */
  themeOf?: ReadonlyMap<number, number>;
  themes?: readonly ThemeSummary[];
  /** Names of souls that may appear in sharedWith, for the markdown. */
  soulNames: ReadonlyMap<number, string>;
  knobs: Knobs;
  now: number;
  scope: { tags: readonly string[]; query: string | null };
};

/** What the report needs of a theme: its name, and the traits its members contradict. */
export type ThemeSummary = { id: number; name: string; opposes: readonly number[] };

/** REINFORCING a trait, CONTRADICTING one (the cluster is a theme judged to oppose it, SPEC §13), else NOVEL. */
export type AlignmentKind = 'REINFORCING' | 'NOVEL' | 'CONTRADICTING';
export type ClusterAlignment = { kind: AlignmentKind; traitId: number | null; similarity: number };
export type SharedSoul = { soulId: number; sharedCount: number; fraction: number };
export type ShardCluster = {
  representativeId: number;
  memberIds: number[];
  memberCount: number;
  sources: string[];
  sourceDiversity: number;
  ageSpanDays: number;
  freshness: number;
  weight: number;
  alignment: ClusterAlignment;
  sharedWith: SharedSoul[];
  /** The judged theme this cluster is (its pending members in the report, exactly), or null for unjudged shards. */
  themeId: number | null;
  /** For unjudged shards: the theme whose members they most resemble, at or above the clustering threshold (a suggestion only). */
  suggestedThemeId: number | null;
  /** The similarity behind suggestedThemeId (its members' highest, in the report's similarity mode), or null. */
  suggestedThemeSimilarity: number | null;
  /** Traits the cluster's theme opposes: its members are counter-evidence for them, never reinforcement. */
  opposes: number[];
};
/**
 * The theme an unjudged shard most resembles (its most similar judged member's), at or above the clustering
 * threshold; `opposes` the active traits that theme is judged against: the shard is then possible counter-evidence.
 */
export type ThemeSuggestion = { themeId: number; similarity: number; opposes: number[] };
/** An unjudged shard of the report with its text, so an agent judges it without a second read. */
export type UnjudgedShard = { shardId: number; source: string; createdAt: number; content: string; suggestion: ThemeSuggestion | null };
/** A trait and the shards of this report judged, through a theme opposing it, to contradict it. */
export type CounterEvidence = { traitId: number; themeIds: number[]; shardIds: number[] };
/** Trait ids, a < b. */
export type TraitPair = { a: number; b: number; similarity: number };
export type PromotionCandidate = { traitId: number; score: number };
export type SourceTrend = { source: string; recent: number; previous: number };
export type Trend = { recentCount: number; previousCount: number; velocity: number; newSources: string[]; sources: SourceTrend[] };

export const suggestedActionKinds = [
  'READY_FOR_REFINEMENT',
  'AT_CAPACITY',
  'STALE_TRAITS',
  'ESSENCE_REDUNDANT',
  'NOVEL_CLUSTER',
  'CONSOLIDATION_CANDIDATES',
  'TENSION',
  'PROMOTION_CANDIDATES',
  'POSSIBLE_COUNTER_EVIDENCE',
  'NO_CLUSTER_SIGNAL',
  'NEW_THEME',
] as const;
export type SuggestedActionKind = (typeof suggestedActionKinds)[number];
export type SuggestedAction = { kind: SuggestedActionKind; message: string; count: number; traitIds: number[] };

export type EvidenceReport = {
  soulId: number;
  generatedAt: number;
  shardCount: number;
  /** How many of the shards the clusters cover: shardCount, or maxClusteredShards (the most recently dropped) when there are more. */
  clusteredShardCount: number;
  crystallization: Crystallization;
  clusters: ShardCluster[];
  traits: TraitSignals[];
  consolidationCandidates: TraitPair[];
  tensions: TraitPair[];
  /** Shards of the report, not cited by the trait, that share its topic with flipped polarity: hints, never merges. */
  possibleCounterEvidence: CounterEvidenceHint[];
  promotionCandidates: PromotionCandidate[];
  trend: Trend;
  /** Shards of the report not assigned to any theme: what is left to judge. */
  unjudgedCount: number;
  /** The clustered unjudged shards, ascending id, each with the theme it resembles (if any). */
  unjudged: UnjudgedShard[];
  /** The soul's themes with members in the report, ascending id. */
  themes: ThemeSummary[];
  /** Per active trait that a theme with members in the report opposes, ascending trait id. */
  counterEvidence: CounterEvidence[];
  suggestedActions: SuggestedAction[];
  markdown: string;
  scope: { tags: string[]; query: string | null };
  /** The similarity that produced the clusters, alignments and trait pairs, the clustering threshold, and how many clustered shards had vectors. */
  similarity: { mode: SimilarityMode; threshold: number; vectors: VectorUse };
};

/**
 * What a report computes from its shards, traits, citations and themes alone, not from the clock: the clusters
 * (all but their freshness and weight, which each report computes at its own time), the similar trait pairs and
 * the possible counter-evidence. Most of a report's work; the same for the same inputs.
 */
export type EvidenceAnalysis = {
  clusters: readonly AnalysedCluster[];
  tensions: readonly TraitPair[];
  consolidationCandidates: readonly TraitPair[];
  possibleCounterEvidence: readonly CounterEvidenceHint[];
  /** Each clustered unjudged shard's best theme, by shard id, when one is close enough. */
  suggestions: ReadonlyMap<number, ThemeSuggestion>;
};
/**
 * A cluster as analysed: everything but what the clock changes (freshness and weight), its members' creation times
 * (in memberIds' order) to compute those from, and where its representative is among the report's shards (by id).
 */
type AnalysedCluster = Omit<ShardCluster, 'freshness' | 'weight'> & { createdAt: readonly number[]; representativeAt: number };

export const TREND_WINDOW_DAYS = 14;
/** Member ids the markdown lists per cluster beside its representative; the JSON report has them all. */
export const MARKDOWN_MEMBER_IDS = 12;
/** Possible counter-evidence lines the markdown shows; the JSON report has them all. */
export const MARKDOWN_COUNTER_EVIDENCE = 20;

/**
 * Everything needed to cluster and align. Texts are numbered as one pool: the clustered shards' contents,
 * then the active traits' principles; `pair` compares two of them (lexical IDF is over that pool).
 */
type Context = {
  input: EvidenceInput;
  /** The clustered shards, by id. */
  shards: Shard[];
  traits: Trait[];
  pair: (i: number, j: number) => number;
  /** The clustered shards' embeddings by position (provided mode), else empty. */
  embeddings: Embeddings;
  /** For each of `members`, the sum of its similarities to every other member. */
  sums: (members: readonly number[]) => Steps<Float64Array>;
};

/**
 * The pool's pairwise similarity in the knobs' mode: trigram Jaccard over one gram index, or lexical cosine;
 * provided mixes in the embeddings of shard pairs (`embeddings` by position; principles have none, so stay lexical).
 */
function* poolSimilarity(mode: SimilarityMode, texts: readonly string[], embeddings: Embeddings): Steps<Pick<Context, 'pair' | 'sums'>> {
  if (mode === 'trigram') {
    // One index lets every shard–shard, shard–principle and principle–principle Jaccard skip re-tokenizing.
    const index = yield* gramIndexSteps(texts);
    return { pair: (i, j) => jaccardOfIndexed(index, i, j), sums: (members) => similaritySumsSteps(index, members) };
  }
  const vectors = lexicalVectors(texts);
  const lexical = (i: number, j: number): number => Math.min(1, dot(vectors[i], vectors[j]));
  const shardCount = embeddings.length;
  const mix = mode === 'provided' ? mixSimilarity : mode === 'semantic' ? semanticSimilarity : null;
  const pair =
    mix !== null
      ? (i: number, j: number): number => (i < shardCount && j < shardCount ? mix(lexical(i, j), embeddings[i], embeddings[j]) : lexical(i, j))
      : lexical;
  return {
    pair,
    *sums(members) {
      const sums = new Float64Array(members.length);
      for (let p = 0; p < members.length; p++) {
        yield;
        for (let q = p + 1; q < members.length; q++) {
          const s = pair(members[p], members[q]);
          sums[p] += s;
          sums[q] += s;
        }
      }
      return sums;
    },
  };
}

export function buildEvidenceReport(input: EvidenceInput): EvidenceReport {
  return runSteps(evidenceReportSteps(input));
}

/** buildEvidenceReport in steps, for runStepsSliced: a large report does not hold the event loop. */
export function* evidenceReportSteps(input: EvidenceInput): Steps<EvidenceReport> {
  const { soul, knobs, now } = input;
  // Sorted by id so the report does not depend on the order the caller fetched rows in (the store's is already).
  const shards = input.shards.every((s, i) => i === 0 || input.shards[i - 1].id < s.id) ? input.shards : [...input.shards].sort((x, y) => x.id - y.id);
  const themeOf = input.themeOf ?? new Map<number, number>();
  // Every judged shard is clustered (a theme is never split); the bound applies to the unjudged.
  const unjudged = shards.filter((s) => !themeOf.has(s.id));
  const kept = new Set(unjudged.slice(Math.max(0, unjudged.length - (input.clusterLimit ?? unjudged.length))).map((s) => s.id));
  const clustered = shards.filter((s) => themeOf.has(s.id) || kept.has(s.id));
  const traits = [...input.activeTraits].sort((x, y) => x.id - y.id);
  const citedByTrait = Map.groupBy(input.citations, (c) => c.traitId);
  const themeById = new Map((input.themes ?? []).map((t) => [t.id, t]));
  const memo = knobs.similarity === 'trigram' ? input.analyses : undefined;
  const key = memo === undefined ? '' : (input.held?.key ?? analysisKey({ ...input, soulId: soul.id, shardIds: shards.map((s) => s.id), themeOf, traits }));
  let analysis = input.held === undefined ? memo?.get(key) : input.held.analysis;
  if (analysis === undefined) {
    const embeddings = knobs.similarity === 'provided' || knobs.similarity === 'semantic' ? clustered.map((s) => input.embeddings?.get(s.id) ?? null) : [];
    const pool = yield* poolSimilarity(knobs.similarity, [...clustered.map((s) => s.content), ...traits.map((t) => t.principle)], embeddings);
    const ctx: Context = { input, shards: clustered, traits, embeddings, ...pool };
    const similarPairs = similarTraitPairs(ctx);
    const negated = new Map(traits.map((t) => [t.id, hasNegation(t.principle)]));
    const principle = new Map(traits.map((t) => [t.id, t.principle]));
    // A pair is either in tension or a consolidation candidate, never both.
    const opposed = (p: TraitPair) => negated.get(p.a) !== negated.get(p.b) || oppositePolarity(principle.get(p.a)!, principle.get(p.b)!);
    const found = yield* clusterSteps(ctx);
    const lexicalHints = yield* possibleCounterEvidenceSteps(
      counterEvidenceTopics(shards, themeOf, input.themes ?? [], traits, citedByTrait),
      // A judged shard's place is the judge's: the hint reads only what is not yet judged.
      unjudged,
    );
    const position = new Map(shards.map((s, i) => [s.id, i]));
    analysis = {
      clusters: found.clusters.map(({ freshness: _, weight: __, ...cluster }) => ({
        ...cluster,
        createdAt: cluster.memberIds.map((id) => shards[position.get(id)!].createdAt),
        representativeAt: position.get(cluster.representativeId)!,
      })),
      suggestions: found.suggestions,
      tensions: similarPairs.filter(opposed),
      consolidationCandidates: similarPairs.filter((p) => !opposed(p)),
      possibleCounterEvidence: [...lexicalHints, ...suggestedAgainst(found.suggestions, themeById, knobs.similarity, lexicalHints)],
    };
    memo?.set(key, analysis);
  }
  const { suggestions } = analysis;
  const clusters = described(analysis.clusters, shards, now, knobs);
  const signals = input.activeTraits.map((t) =>
    traitSignals(t, { soul, citations: input.citations, attunedAt: input.attunedAt }, knobs, now),
  );
  const traitById = new Map(traits.map((t) => [t.id, t]));
  const promotionCandidates = signals
    .filter((s) => isTenured(traitById.get(s.traitId)!, knobs, now))
    .map((s) => ({ traitId: s.traitId, score: s.tenure * s.citationDensity * s.essenceRedundancy }))
    .filter((p) => p.score > 0)
    .sort((x, y) => rankKey(y.score) - rankKey(x.score) || x.traitId - y.traitId);
  const trend = buildTrend(shards, now);

  const report: EvidenceReport = {
    soulId: soul.id,
    generatedAt: now,
    shardCount: shards.length,
    clusteredShardCount: clustered.length,
    crystallization: input.crystallization,
    clusters,
    traits: signals,
    consolidationCandidates: [...analysis.consolidationCandidates],
    tensions: [...analysis.tensions],
    possibleCounterEvidence: [...analysis.possibleCounterEvidence],
    promotionCandidates,
    trend,
    unjudgedCount: unjudged.length,
    unjudged: clustered
      .filter((s) => !themeOf.has(s.id))
      .map((s) => ({ shardId: s.id, source: s.source, createdAt: s.createdAt, content: s.content, suggestion: suggestions.get(s.id) ?? null })),
    themes: [...new Set(themeOf.values())].sort((a, b) => a - b).flatMap((id) => (themeById.has(id) ? [themeById.get(id)!] : [])),
    counterEvidence: counterEvidence(shards, themeOf, input.themes ?? [], traits),
    suggestedActions: [],
    markdown: '',
    scope: { tags: [...input.scope.tags], query: input.scope.query },
    similarity: {
      mode: knobs.similarity,
      threshold: knobs.clusteringThreshold,
      vectors: vectorUse(knobs.similarity, input.vectorModel ?? null, clustered.map((s) => input.embeddings?.has(s.id) ?? false), (i) => input.vectorsWaiting?.has(clustered[i].id) ?? false),
    },
  };
  report.suggestedActions = suggestActions(report, shards, input.activeTraits.length, knobs);
  // Rendered when first read: a dashboard that asks for clusters and actions never pays for it.
  let markdown: string | undefined;
  Object.defineProperty(report, 'markdown', { enumerable: true, get: () => (markdown ??= renderMarkdown(report, input)) });
  return report;
}

/** What a report's analysis reads besides the shards' rows: its soul, the knobs it compares by, themes, traits and citations. */
type AnalysisInputs = Pick<EvidenceInput, 'knobs' | 'clusterLimit' | 'themes' | 'citations'> & { soulId: number; shardIds: readonly number[]; themeOf: ReadonlyMap<number, number>; traits: readonly Trait[] };

/**
 * A digest of everything a report's analysis reads: the knobs it compares by, the soul, its shards (ids, ascending:
 * a shard's content, source, time and souls never change), how many are clustered, the judged themes, the active
 * traits by id and their citations. Trigram similarity depends on the texts compared alone, so the partition of those
 * shards is a function of them too; the other modes keep no analysis (lexical's weights are over the pool, vectors land).
 */
function analysisKey(a: AnalysisInputs): string {
  const { similarity, clusteringThreshold, redundancyThreshold, consolidationThreshold } = a.knobs;
  const parts = [
    `${similarity} ${clusteringThreshold} ${redundancyThreshold} ${consolidationThreshold} ${a.clusterLimit ?? ''} ${a.soulId}`,
    a.shardIds.join(','),
    [...a.themeOf].map(([shardId, themeId]) => `${shardId}:${themeId}`).join(','),
    JSON.stringify((a.themes ?? []).map((t) => [t.id, t.name, t.opposes])),
    JSON.stringify([...a.traits].sort((x, y) => x.id - y.id).map((t) => [t.id, t.principle])),
    a.citations.map((c) => `${c.traitId}:${c.shardId}`).sort().join(','),
  ];
  return createHash('sha256').update(parts.join('\n')).digest('base64');
}

/**
 * A cluster as a report of this process describes it, holding its representative's row as the report read it
 * (private: the cluster's fields, its JSON and its copies are those of ShardCluster).
 */
// Its fields are declared once, by ShardCluster: this interface merges with the class.
interface DescribedCluster extends ShardCluster {}
class DescribedCluster {
  readonly #representative: Shard;

  /** `c` at `now`: its freshness and weight as timeFigures computes them, in describeCluster's order of keys. */
  constructor(c: AnalysedCluster, representative: Shard, now: number, knobs: Knobs) {
    this.representativeId = c.representativeId;
    this.memberIds = c.memberIds;
    this.memberCount = c.memberCount;
    this.sources = c.sources;
    this.sourceDiversity = c.sourceDiversity;
    this.ageSpanDays = c.ageSpanDays;
    this.freshness = freshnessOf(c.createdAt, now, knobs);
    this.weight = c.memberCount * c.sourceDiversity * this.freshness;
    this.alignment = c.alignment;
    this.sharedWith = c.sharedWith;
    this.themeId = c.themeId;
    this.suggestedThemeId = c.suggestedThemeId;
    this.suggestedThemeSimilarity = c.suggestedThemeSimilarity;
    this.opposes = c.opposes;
    this.#representative = representative;
  }

  static representativeOf(cluster: ShardCluster): Shard | undefined {
    return #representative in cluster ? cluster.#representative : undefined;
  }
}

/** The representative's row of a cluster a report of this process made (read with the report's shards), else undefined. */
export function representativeRow(cluster: ShardCluster): Shard | undefined {
  return DescribedCluster.representativeOf(cluster);
}

/** The analysed clusters at `now`, highest weight first. */
function described(analysed: readonly AnalysedCluster[], shards: readonly Shard[], now: number, knobs: Knobs): ShardCluster[] {
  const clusters = analysed.map((c) => new DescribedCluster(c, shards[c.representativeAt], now, knobs));
  return clusters.sort((x, y) => rankKey(y.weight) - rankKey(x.weight) || x.representativeId - y.representativeId);
}

function* clusterSteps(ctx: Context): Steps<{ clusters: ShardCluster[]; suggestions: Map<number, ThemeSuggestion> }> {
  const { shards, input } = ctx;
  const themeOf = input.themeOf ?? new Map<number, number>();
  const position = new Map(shards.map((s, i) => [s.id, i]));
  const free = shards.flatMap((s, i) => (themeOf.has(s.id) ? [] : [i]));
  // Judged shards are left out of similarity: a given partition is of the unjudged (any judged id in it is dropped).
  const unjudgedPartition = input.partition
    ? input.partition.map((ids) => ids.filter((id) => !themeOf.has(id) && position.has(id)).map((id) => position.get(id)!).sort((a, b) => a - b)).filter((g) => g.length > 0)
    : (yield* partitionSteps(
        input.knobs.similarity,
        free.map((i) => shards[i].content),
        input.knobs.clusteringThreshold,
        ctx.embeddings.length === 0 ? [] : free.map((i) => ctx.embeddings[i]),
      )).map((group) => group.map((k) => free[k]));
  const themed = new Map<number, number[]>();
  shards.forEach((s, i) => {
    const themeId = themeOf.get(s.id);
    if (themeId === undefined) return;
    const members = themed.get(themeId);
    if (members) members.push(i);
    else themed.set(themeId, [i]);
  });
  const activeIds = new Set(ctx.traits.map((t) => t.id));
  // Only active traits: a reverted one is no longer a claim a cluster could contradict.
  const opposedBy = new Map((input.themes ?? []).map((t) => [t.id, t.opposes.filter((id) => activeIds.has(id)).sort((a, b) => a - b)]));
  const partition: Array<{ indices: number[]; themeId: number | null }> = [
    ...[...themed].sort((x, y) => x[0] - y[0]).map(([themeId, indices]) => ({ indices, themeId })),
    ...unjudgedPartition.map((indices) => ({ indices, themeId: null })),
  ];
  const citedBy = new Map<number, number[]>();
  for (const c of input.citations) {
    if (!activeIds.has(c.traitId)) continue;
    const list = citedBy.get(c.shardId);
    if (list) list.push(c.traitId);
    else citedBy.set(c.shardId, [c.traitId]);
  }

  // Keyed by position in ctx.shards: each clustered unjudged shard's best theme, when one is close enough.
  const suggestions = new Map<number, ThemeSuggestion>();
  if (themed.size > 0) {
    for (const i of free) {
      yield;
      const best = bestTheme(ctx, i, themed);
      if (best !== null) suggestions.set(i, { ...best, opposes: opposedBy.get(best.themeId) ?? [] });
    }
  }
  const clusters: ShardCluster[] = [];
  for (const { indices, themeId } of partition) {
    const opposes = themeId === null ? [] : (opposedBy.get(themeId) ?? []);
    const cluster = yield* describeCluster(ctx, indices, citedBy, themeId, opposes);
    if (themeId === null) {
      const suggestion = clusterSuggestion(indices, suggestions);
      cluster.suggestedThemeId = suggestion?.themeId ?? null;
      cluster.suggestedThemeSimilarity = suggestion?.similarity ?? null;
    }
    clusters.push(cluster);
  }
  clusters.sort((x, y) => rankKey(y.weight) - rankKey(x.weight) || x.representativeId - y.representativeId);
  return { clusters, suggestions: new Map([...suggestions].map(([i, s]) => [shards[i].id, s])) };
}

/**
 * The theme whose members shard `i` most resembles: the one holding its most similar judged shard, at or above the
 * clustering threshold (the link single linkage would have made; ties go to the lowest theme id), or null.
 */
function bestTheme(ctx: Context, i: number, themed: ReadonlyMap<number, readonly number[]>): { themeId: number; similarity: number } | null {
  let best: { themeId: number; similarity: number } | null = null;
  for (const themeId of [...themed.keys()].sort((a, b) => a - b)) {
    let most = 0;
    for (const j of themed.get(themeId)!) most = Math.max(most, ctx.pair(i, j));
    if (most >= ctx.input.knobs.clusteringThreshold && (best === null || most > best.similarity)) best = { themeId, similarity: most };
  }
  return best;
}

/**
 * An unjudged cluster's suggestion: the theme every member resembling any theme resembles most, with the highest of
 * their similarities. A cluster whose members point at different themes is mixed: any one suggestion would mislead.
 */
function clusterSuggestion(indices: readonly number[], suggestions: ReadonlyMap<number, ThemeSuggestion>): { themeId: number; similarity: number } | null {
  let themeId: number | null = null;
  let similarity = 0;
  for (const i of indices) {
    const s = suggestions.get(i);
    if (!s) continue;
    if (themeId !== null && themeId !== s.themeId) return null;
    themeId = s.themeId;
    similarity = Math.max(similarity, s.similarity);
  }
  return themeId === null ? null : { themeId, similarity };
}

/**
 * What an unjudged shard may contradict, per trait: its principle, then each theme it draws on (cites a member of,
 * and does not oppose) as the theme's name and members in the report, so a shard against that theme is a hint too.
 */
function counterEvidenceTopics(
  shards: readonly Shard[],
  themeOf: ReadonlyMap<number, number>,
  themes: readonly ThemeSummary[],
  traits: readonly Trait[],
  citedByTrait: ReadonlyMap<number, readonly Citation[]>,
): { traitId: number; texts: string[]; excludeShardIds: Set<number>; via?: string }[] {
  const members = Map.groupBy(shards.filter((s) => themeOf.has(s.id)), (s) => themeOf.get(s.id)!);
  const byId = new Map(themes.map((t) => [t.id, t]));
  return traits.flatMap((t) => {
    const cited = new Set((citedByTrait.get(t.id) ?? []).map((c) => c.shardId));
    const drawnOn = [...new Set([...cited].flatMap((id) => (themeOf.has(id) ? [themeOf.get(id)!] : [])))]
      .filter((themeId) => byId.has(themeId) && !byId.get(themeId)!.opposes.includes(t.id))
      .sort((a, b) => a - b);
    return [
      { traitId: t.id, texts: [t.principle], excludeShardIds: cited },
      ...drawnOn.map((themeId) => {
        const theme = byId.get(themeId)!;
        const texts = [theme.name, ...(members.get(themeId) ?? []).map((s) => s.content)];
        return { traitId: t.id, texts, excludeShardIds: cited, via: `against theme "${theme.name}" (#${theme.id}), which trait ${t.id} draws on` };
      }),
    ];
  });
}

/** Per active trait a theme in the report opposes: that theme's members in the report, ascending. */
function counterEvidence(shards: readonly Shard[], themeOf: ReadonlyMap<number, number>, themes: readonly ThemeSummary[], traits: readonly Trait[]): CounterEvidence[] {
  const active = new Set(traits.map((t) => t.id));
  const byTrait = new Map<number, CounterEvidence>();
  for (const theme of themes) {
    const members = shards.filter((s) => themeOf.get(s.id) === theme.id).map((s) => s.id);
    if (members.length === 0) continue;
    for (const traitId of theme.opposes) {
      if (!active.has(traitId)) continue;
      const entry = byTrait.get(traitId) ?? { traitId, themeIds: [], shardIds: [] };
      entry.themeIds.push(theme.id);
      entry.shardIds.push(...members);
      byTrait.set(traitId, entry);
    }
  }
  return [...byTrait.values()]
    .map((e) => ({ traitId: e.traitId, themeIds: distinctAscending(e.themeIds), shardIds: distinctAscending(e.shardIds) }))
    .sort((x, y) => x.traitId - y.traitId);
}

/**
 * An unjudged shard suggested into a theme that opposes a trait reads as counter-evidence to that trait, never as
 * support: one hint per trait and shard, unless the lexical hints already name that pair.
 */
function suggestedAgainst(
  suggestions: ReadonlyMap<number, ThemeSuggestion>,
  themes: ReadonlyMap<number, ThemeSummary>,
  mode: SimilarityMode,
  known: readonly CounterEvidenceHint[],
): CounterEvidenceHint[] {
  const seen = new Set(known.map((h) => `${h.traitId}:${h.shardId}`));
  const hints: CounterEvidenceHint[] = [];
  for (const [shardId, s] of [...suggestions].sort((x, y) => x[0] - y[0])) {
    for (const traitId of s.opposes) {
      if (seen.has(`${traitId}:${shardId}`)) continue;
      const name = oneLine(themes.get(s.themeId)?.name ?? '');
      hints.push({ traitId, shardId, overlap: s.similarity, reason: `resembles theme "${name}" (#${s.themeId}, ${mode} ${fixed(s.similarity, 2)}), judged to oppose trait ${traitId}` });
    }
  }
  return hints.sort((x, y) => x.traitId - y.traitId || x.shardId - y.shardId);
}

/** What a cluster's rows tell at `now`: its sources, their diversity, its age span, freshness and weight. Members in time order. */
function timeFigures(members: readonly Shard[], now: number, knobs: Knobs): Pick<ShardCluster, 'memberCount' | 'sources' | 'sourceDiversity' | 'ageSpanDays' | 'freshness' | 'weight'> {
  const memberCount = members.length;
  const sources = [...new Set(members.map((s) => s.source))].sort();
  const sourceDiversity = sources.length / memberCount;
  const freshness = freshnessOf(members.map((s) => s.createdAt), now, knobs);
  const ageSpanDays = (members[memberCount - 1].createdAt - members[0].createdAt) / DAY_MS;
  return { memberCount, sources, sourceDiversity, ageSpanDays, freshness, weight: memberCount * sourceDiversity * freshness };
}

/** The mean of the members' freshness at `now`, from their creation times. */
function freshnessOf(createdAt: readonly number[], now: number, knobs: Knobs): number {
  let sum = 0;
  for (const time of createdAt) {
    // Clamped so a shard stamped slightly in the future counts as brand new, not fresher than new.
    const ageDays = Math.max(0, now - time) / DAY_MS;
    sum += Math.exp(-ageDays / knobs.shardRelevanceHalfLife);
  }
  return sum / createdAt.length;
}

function* describeCluster(ctx: Context, indices: number[], citedBy: ReadonlyMap<number, number[]>, themeId: number | null = null, opposes: number[] = []): Steps<ShardCluster> {
  const { shards, input } = ctx;
  const { now, knobs } = input;
  const members = [...indices].sort((i, j) => shards[i].createdAt - shards[j].createdAt || shards[i].id - shards[j].id);
  const rep = yield* representative(ctx, members);
  return {
    representativeId: shards[rep].id,
    memberIds: members.map((i) => shards[i].id),
    ...timeFigures(members.map((i) => shards[i]), now, knobs),
    alignment: opposes.length > 0 ? contradicting(ctx, rep, opposes) : align(ctx, rep, members, citedBy),
    sharedWith: sharedWith(members, shards, input.soul.id),
    themeId,
    suggestedThemeId: null,
    suggestedThemeSimilarity: null,
    opposes,
  };
}

/** The member with the highest mean similarity to the others; ties go to the lowest shard id. */
function* representative(ctx: Context, members: readonly number[]): Steps<number> {
  const { shards, input } = ctx;
  const n = members.length;
  if (n === 1) return members[0];
  const key = members.map((i) => shards[i].id).sort((a, b) => a - b).join(',');
  // A lexical similarity depends on the whole pool (IDF), so only trigram representatives are a function of the members alone.
  const remembered = input.knobs.similarity === 'trigram' ? input.representatives : undefined;
  const known = remembered?.get(key);
  if (known !== undefined) return members.find((i) => shards[i].id === known)!;
  const sums = yield* ctx.sums(members);
  let best = 0;
  let bestKey = rankKey(sums[0] / (n - 1));
  for (let p = 1; p < n; p++) {
    const key = rankKey(sums[p] / (n - 1));
    if (key > bestKey || (key === bestKey && shards[members[p]].id < shards[members[best]].id)) {
      best = p;
      bestKey = key;
    }
  }
  remembered?.set(key, shards[members[best]].id);
  return members[best];
}

/** Clusters smaller than this use plain merge intersections; the bitset setup does not pay off. */
const BITSET_MIN_MEMBERS = 32;

/** For each member, the sum of its Jaccard similarities to every other member. */
export function similaritySums(index: GramIndex, members: readonly number[]): Float64Array {
  return runSteps(similaritySumsSteps(index, members));
}

/** similaritySums in steps, one per member: a cluster of n members compares n²/2 pairs. */
function* similaritySumsSteps(index: GramIndex, members: readonly number[]): Steps<Float64Array> {
  const n = members.length;
  const sums = new Float64Array(n);
  const bitsets = n >= BITSET_MIN_MEMBERS ? memberBitsets(index, members) : null;
  if (bitsets === null) {
    for (let p = 0; p < n; p++) {
      yield;
      for (let q = p + 1; q < n; q++) {
        const s = jaccardOfIndexed(index, members[p], members[q]);
        sums[p] += s;
        sums[q] += s;
      }
    }
    return sums;
  }
  // Same integer intersection and union as jaccardOfIndexed, so the sums are bit-identical.
  const { bits, words } = bitsets;
  for (let p = 0; p < n; p++) {
    yield;
    const sizeP = index.sets[members[p]].length;
    const rowP = p * words;
    for (let q = p + 1; q < n; q++) {
      const rowQ = q * words;
      let inter = 0;
      for (let w = 0; w < words; w++) inter += popcount(bits[rowP + w] & bits[rowQ + w]);
      const s = inter / (sizeP + index.sets[members[q]].length - inter);
      sums[p] += s;
      sums[q] += s;
    }
  }
  return sums;
}

/**
 * The members' gram sets as bitsets over the cluster's own grams, or null when those
 * are so many that a bitset row is longer than an average set (merging is then cheaper).
 */
function memberBitsets(index: GramIndex, members: readonly number[]): { bits: Int32Array; words: number } | null {
  const local = new Map<number, number>();
  let total = 0;
  for (const m of members) {
    const set = index.sets[m];
    total += set.length;
    for (let k = 0; k < set.length; k++) if (!local.has(set[k])) local.set(set[k], local.size);
  }
  const words = (local.size + 31) >>> 5;
  if (words > total / members.length) return null;
  const bits = new Int32Array(members.length * words);
  members.forEach((m, p) => {
    for (const gram of index.sets[m]) {
      const bit = local.get(gram)!;
      bits[p * words + (bit >>> 5)] |= 1 << (bit & 31);
    }
  });
  return { bits, words };
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/**
 * A judged contradiction outweighs resemblance and citations: a theme opposing active traits contradicts the one its
 * representative most resembles (ties: the lowest id), never reinforces any, and is never NOVEL.
 */
function contradicting(ctx: Context, rep: number, opposes: readonly number[]): ClusterAlignment {
  const opposed = new Set(opposes);
  let best: ClusterAlignment | null = null;
  // traits are in id order, so strict ">" keeps the lowest id on ties.
  for (let t = 0; t < ctx.traits.length; t++) {
    if (!opposed.has(ctx.traits[t].id)) continue;
    const sim = ctx.pair(rep, ctx.shards.length + t);
    if (best === null || sim > best.similarity) best = { kind: 'CONTRADICTING', traitId: ctx.traits[t].id, similarity: sim };
  }
  return best!;
}

/** REINFORCING the trait a member is cited by or the representative resembles (the most similar wins), else NOVEL. */
function align(ctx: Context, rep: number, members: readonly number[], citedBy: ReadonlyMap<number, number[]>): ClusterAlignment {
  const { traits, shards, input } = ctx;
  const cited = new Set<number>();
  for (const i of members) for (const traitId of citedBy.get(shards[i].id) ?? []) cited.add(traitId);

  let best: ClusterAlignment | null = null;
  let bestSeen = 0;
  // traits are in id order, so strict ">" keeps the lowest id on ties.
  for (let t = 0; t < traits.length; t++) {
    const sim = ctx.pair(rep, shards.length + t);
    if (sim > bestSeen) bestSeen = sim;
    const qualifies = cited.has(traits[t].id) || sim >= input.knobs.redundancyThreshold;
    if (qualifies && (best === null || sim > best.similarity)) {
      best = { kind: 'REINFORCING', traitId: traits[t].id, similarity: sim };
    }
  }
  return best ?? { kind: 'NOVEL', traitId: null, similarity: bestSeen };
}

function sharedWith(members: readonly number[], shards: readonly Shard[], soulId: number): SharedSoul[] {
  const counts = new Map<number, number>();
  for (const i of members) {
    for (const other of new Set(shards[i].soulIds)) {
      if (other !== soulId) counts.set(other, (counts.get(other) ?? 0) + 1);
    }
  }
  return [...counts]
    .map(([id, sharedCount]) => ({ soulId: id, sharedCount, fraction: sharedCount / members.length }))
    .sort((x, y) => y.sharedCount - x.sharedCount || x.soulId - y.soulId);
}

function similarTraitPairs(ctx: Context): TraitPair[] {
  const { traits, shards, input } = ctx;
  const base = shards.length;
  const pairs: TraitPair[] = [];
  for (let i = 0; i < traits.length; i++) {
    for (let j = i + 1; j < traits.length; j++) {
      const sim = ctx.pair(base + i, base + j);
      if (sim >= input.knobs.consolidationThreshold) pairs.push({ a: traits[i].id, b: traits[j].id, similarity: sim });
    }
  }
  return pairs.sort((x, y) => y.similarity - x.similarity || x.a - y.a || x.b - y.b);
}

const negationWords = new Set(['not', 'never', 'without', 'no', 'nor', 'none', 'nothing', 'neither', 'cannot']);
/** Marker verbs, matched on their stem so every inflection counts: avoid, avoids, avoided, avoiding, avoidance. */
const negationStems = new Set(['avoid', 'refus', 'refrain']);
const inflection = /(?:ing|ance|ed|es|s|e)$/u;

export function hasNegation(text: string): boolean {
  const words = text.toLowerCase().match(/[\p{L}\p{N}'’]+/gu) ?? [];
  return words.some((raw) => {
    // Quotes around a word ("'never'") are not part of it.
    const word = raw.replace(/^['’]+|['’]+$/gu, '');
    return negationWords.has(word) || negationStems.has(word.replace(inflection, '')) || word.endsWith("n't") || word.endsWith('n’t');
  });
}

function buildTrend(shards: readonly Shard[], now: number): Trend {
  const window = TREND_WINDOW_DAYS * DAY_MS;
  const bySource = new Map<string, SourceTrend>();
  let recentCount = 0;
  let previousCount = 0;
  for (const s of shards) {
    const recent = s.createdAt > now - window && s.createdAt <= now;
    const previous = s.createdAt > now - 2 * window && s.createdAt <= now - window;
    if (!recent && !previous) continue;
    let entry = bySource.get(s.source);
    if (!entry) {
      entry = { source: s.source, recent: 0, previous: 0 };
      bySource.set(s.source, entry);
    }
    if (recent) {
      entry.recent++;
      recentCount++;
    } else {
      entry.previous++;
      previousCount++;
    }
  }
  const sources = [...bySource.values()].sort((x, y) => compareStrings(x.source, y.source));
  return {
    recentCount,
    previousCount,
    velocity: recentCount - previousCount,
    newSources: sources.filter((s) => s.recent > 0 && s.previous === 0).map((s) => s.source),
    sources,
  };
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function plural(count: number, singular: string, pluralForm: string): string {
  return `${count} ${count === 1 ? singular : pluralForm}`;
}

function distinctAscending(ids: Iterable<number>): number[] {
  return [...new Set(ids)].sort((x, y) => x - y);
}

/**
 * traitIds lists the traits an action is about (ascending); actions about the soul or
 * about clusters (READY_FOR_REFINEMENT, AT_CAPACITY, NOVEL_CLUSTER) carry none.
 */
function suggestActions(report: EvidenceReport, shards: readonly Shard[], activeCount: number, knobs: Knobs): SuggestedAction[] {
  const actions: SuggestedAction[] = [];
  const add = (kind: SuggestedActionKind, count: number, message: string, traitIds: number[] = []): void => {
    if (count > 0) actions.push({ kind, message, count, traitIds });
  };

  const cr = report.crystallization;
  if (cr.ready) {
    // The verdict covers all considered shards, whatever the report's scope.
    add('READY_FOR_REFINEMENT', cr.pendingCount, `ready for refinement: ${plural(cr.pendingCount, 'shard', 'shards')} from ${plural(cr.distinctSources, 'source', 'sources')}`);
  }
  if (activeCount >= knobs.traitLimit) {
    add('AT_CAPACITY', activeCount, `soul at capacity (${activeCount}/${knobs.traitLimit} traits) — level-up recommended`);
  }

  const stale = report.traits.filter((s) => s.stale).map((s) => s.traitId);
  add('STALE_TRAITS', stale.length, `${plural(stale.length, 'trait', 'traits')} flagged stale`, distinctAscending(stale));

  const redundant = report.traits.filter((s) => s.essenceRedundancy > knobs.redundancyThreshold).map((s) => s.traitId);
  add('ESSENCE_REDUNDANT', redundant.length, `${plural(redundant.length, 'trait', 'traits')} redundant with essence`, distinctAscending(redundant));

  // A cluster contradicting a trait is a tension to resolve, not a new trait to propose: judged (CONTRADICTING), or
  // not yet, when a member reads as possible counter-evidence to a trait.
  const flagged = new Set(report.possibleCounterEvidence.map((h) => h.shardId));
  const novel = report.clusters.filter((c) => c.alignment.kind === 'NOVEL' && c.memberCount >= 2 && !c.memberIds.some((id) => flagged.has(id)));
  const sizes = novel.map((c) => c.memberCount).join(', ');
  add(
    'NOVEL_CLUSTER',
    novel.length,
    `${plural(novel.length, 'cluster', 'clusters')} (${novel.length === 1 ? 'size' : 'sizes'} ${sizes}) not aligned with any trait`,
  );

  const pairs = report.consolidationCandidates;
  add(
    'CONSOLIDATION_CANDIDATES',
    pairs.length,
    pairs.length === 1 ? '1 trait pair is a consolidation candidate' : `${pairs.length} trait pairs are consolidation candidates`,
    distinctAscending(pairs.flatMap((p) => [p.a, p.b])),
  );

  // One TENSION action (kinds are unique): trait pairs in tension, and traits a judged theme contradicts.
  const tensions = report.tensions;
  const contradicted = report.counterEvidence;
  const tensionParts = [
    ...(tensions.length > 0 ? [`${plural(tensions.length, 'trait pair', 'trait pairs')} in tension`] : []),
    ...(contradicted.length > 0 ? [`${plural(contradicted.length, 'trait is', 'traits are')} contradicted by judged themes`] : []),
  ];
  add(
    'TENSION',
    tensions.length + contradicted.length,
    tensionParts.join('; '),
    distinctAscending([...tensions.flatMap((p) => [p.a, p.b]), ...contradicted.map((c) => c.traitId)]),
  );

  const promotable = report.promotionCandidates;
  add(
    'PROMOTION_CANDIDATES',
    promotable.length,
    promotable.length === 1 ? '1 trait is a promotion candidate' : `${promotable.length} traits are promotion candidates`,
    distinctAscending(promotable.map((p) => p.traitId)),
  );

  const counter = report.possibleCounterEvidence;
  add(
    'POSSIBLE_COUNTER_EVIDENCE',
    counter.length,
    `${plural(counter.length, 'shard reads', 'shards read')} as possible counter-evidence to a trait (same topic, flipped polarity): read them before reinforcing`,
    distinctAscending(counter.map((h) => h.traitId)),
  );

  const noSignal = clusterSignalWarning(report.clusters, report.similarity.mode);
  if (noSignal) add('NO_CLUSTER_SIGNAL', noSignal.singletons, noSignal.message);

  // Without themes every cluster is new; with them, a cluster that fits none (from two sources or more) may be one.
  const newThemes = report.themes.length === 0 ? [] : newThemeClusters(report);
  add(
    'NEW_THEME',
    newThemes.length,
    `${plural(newThemes.length, 'cluster', 'clusters')} of unjudged shards from two or more sources ${newThemes.length === 1 ? 'fits' : 'fit'} no theme: ${newThemes.map((c) => `#${c.representativeId} (size ${c.memberCount})`).join(', ')}; judge ${newThemes.length === 1 ? 'it' : 'each'} into a new theme`,
  );
  return actions;
}

/** Unjudged clusters of two or more sources whose members resemble no theme: candidates for a new theme. */
export function newThemeClusters(report: Pick<EvidenceReport, 'clusters' | 'unjudged'>): ShardCluster[] {
  const suggested = new Set(report.unjudged.filter((u) => u.suggestion !== null).map((u) => u.shardId));
  return report.clusters.filter((c) => c.themeId === null && c.memberCount >= 2 && c.sources.length >= 2 && !c.memberIds.some((id) => suggested.has(id)));
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function fixed(value: number, digits: number): string {
  return value.toFixed(digits);
}

/** Unjudged lines the markdown shows; the JSON report pages them all. */
export const MARKDOWN_UNJUDGED = 40;
/** Characters of an unjudged shard's text on its line. */
export const UNJUDGED_TEXT = 110;

function clipLine(text: string, room: number): string {
  const line = oneLine(text);
  return line.length <= room ? line : `${line.slice(0, room - 1).trimEnd()}…`;
}

/** `#id · source · date · text`: an unjudged shard on one line, its text clipped. */
export function unjudgedLine(u: UnjudgedShard): string {
  const similarity = u.suggestion === null ? '' : ` (${fixed(u.suggestion.similarity, 2)})`;
  return `- #${u.shardId} · ${oneLine(u.source)} · ${new Date(u.createdAt).toISOString().slice(0, 10)} · ${clipLine(u.content, UNJUDGED_TEXT)}${similarity}`;
}

/**
 * The unjudged shards with their text, grouped by the theme each resembles (ascending theme id; one judged against a
 * trait says so: possible counter-evidence), then those that fit no theme; at most MARKDOWN_UNJUDGED lines.
 */
export function unjudgedLines(report: Pick<EvidenceReport, 'soulId' | 'themes' | 'similarity'>, unjudged: readonly UnjudgedShard[], total: number, limit = MARKDOWN_UNJUDGED): string[] {
  if (total === 0) return [];
  const lines = ['', `## Unjudged shards (${total}): id · source · date · text`];
  const names = new Map(report.themes.map((t) => [t.id, t.name]));
  const groups = Map.groupBy(unjudged, (u) => u.suggestion?.themeId ?? 0);
  let room = limit;
  const measure = `${report.similarity.mode} ≥ ${fixed(report.similarity.threshold, 2)}`;
  for (const themeId of [...groups.keys()].filter((id) => id !== 0).sort((a, b) => a - b)) {
    if (room <= 0) break;
    const members = groups.get(themeId)!;
    const against = members[0].suggestion!.opposes;
    const warning = against.length > 0 ? `, judged against trait${against.length === 1 ? '' : 's'} ${against.map((id) => `#${id}`).join(', ')}: possible counter-evidence, never support` : '';
    lines.push(`Resembling theme "${oneLine(names.get(themeId) ?? '')}" (#${themeId}; ${measure})${warning}:`);
    for (const u of members.slice(0, room)) lines.push(unjudgedLine(u));
    room -= members.length;
  }
  const rest = groups.get(0) ?? [];
  if (rest.length > 0 && room > 0) {
    lines.push(report.themes.length === 0 ? 'No theme yet:' : `Fits no theme (${measure}): candidates for a new theme:`);
    for (const u of rest.slice(0, room)) lines.push(unjudgedLine(u));
  }
  const shown = Math.min(unjudged.length, limit);
  if (total > shown) lines.push(`- and ${total - shown} more: all in souls://${report.soulId}/unjudged.md (MCP) or EvidenceReport.unjudged (GraphQL)`);
  return lines;
}

/** The report's second line: what to do next and why (readiness, the unmet conditions, what is left to judge). */
function nextStep(report: EvidenceReport, knobs: Knobs): string {
  const cr = report.crystallization;
  const why = `${cr.ready ? 'ready' : `not ready (${cr.unmet.join(', ')} unmet)`}, ${report.unjudgedCount} unjudged`;
  const novel = report.suggestedActions.find((a) => a.kind === 'NOVEL_CLUSTER')?.count ?? 0;
  let step: string;
  if (report.traits.length >= knobs.traitLimit) step = `level up first: at capacity (${report.traits.length}/${knobs.traitLimit} traits)`;
  else if (report.unjudgedCount > 0) step = `judge the unjudged shards below into themes (assign, new theme, oppose)${cr.ready ? ', then add or cite traits from the themes' : ''}`;
  else if (cr.ready && novel > 0) step = `propose traits from ${plural(novel, 'novel cluster', 'novel clusters')}, cite reinforcing themes, then attune`;
  else if (cr.ready) step = 'cite what reinforces the traits, then attune';
  else step = 'nothing until new evidence arrives';
  return `Next: ${step} — ${why}.`;
}

function renderMarkdown(report: EvidenceReport, input: EvidenceInput): string {
  const { soul, soulNames } = input;
  const principles = new Map(input.activeTraits.map((t) => [t.id, t.principle]));
  const contents = new Map(input.shards.map((s) => [s.id, s.content]));
  const lines: string[] = [];
  lines.push(`# Evidence: ${oneLine(soul.name)} (soul #${soul.id}, level ${soul.level})`);

  const scopeParts: string[] = [];
  if (report.scope.tags.length > 0) scopeParts.push(`tags ${report.scope.tags.join(', ')}`);
  if (report.scope.query !== null && report.scope.query !== '') scopeParts.push(`query "${oneLine(report.scope.query)}"`);
  if (scopeParts.length > 0) lines.push(`Scope: ${scopeParts.join('; ')}`);

  lines.push(`Shards: ${report.shardCount}, clusters: ${report.clusters.length}, active traits: ${report.traits.length}`);
  if (report.unjudgedCount < report.shardCount) {
    const judged = report.clusters.filter((c) => c.themeId !== null).length;
    lines.push(`Judged: ${report.shardCount - report.unjudgedCount} shards in ${plural(judged, 'theme', 'themes')}; unjudged: ${report.unjudgedCount}`);
  }
  if (report.clusteredShardCount < report.shardCount) {
    lines.push(`Clusters cover the ${report.clusteredShardCount} most recently dropped shards of ${report.shardCount} (maxClusteredShards)`);
  }
  if (report.similarity.vectors.model !== null) lines.push(`Vectors (similarity ${report.similarity.mode}): ${report.similarity.vectors.message}`);
  const cr = report.crystallization;
  const needs = unmetNeeds(cr, soul.lastAttunedAt, input.knobs).map(unmetNeedLine);
  lines.push(cr.ready ? `Readiness: ready (priority ${fixed(cr.priority, 2)})` : `Readiness: not ready${needs.length > 0 ? ` — ${needs.join('; ')}` : ''}`);
  // Second line, so one read starts a cycle: what to do next, and why.
  lines.splice(1, 0, nextStep(report, input.knobs));

  lines.push('', '## Suggested actions');
  if (report.suggestedActions.length === 0) lines.push('- none');
  for (const a of report.suggestedActions) {
    const ids = a.traitIds.length > 0 ? ` (${a.traitIds.map((id) => `#${id}`).join(', ')})` : '';
    lines.push(`- ${a.kind}: ${a.message}${ids}`);
  }
  lines.push(...unjudgedLines(report, report.unjudged, report.unjudgedCount));

  // What a refiner acts on comes first; the clusters, longest, come last, so a clipped copy loses only the lightest.
  if (report.traits.length > 0) {
    lines.push('', '## Traits');
    for (const s of report.traits) {
      const flags = s.stale ? ', stale' : '';
      lines.push(
        `- #${s.traitId} ${oneLine(principles.get(s.traitId) ?? '')} — cites ${s.citationCount}, density ${fixed(s.citationDensity, 2)}, ` +
          `tenure ${fixed(s.tenure, 2)}, essence ${fixed(s.essenceRedundancy, 2)}, survived ${s.survivalCount}${flags}`,
      );
    }
  }

  const pairLines = (title: string, pairs: readonly TraitPair[], joiner: string): void => {
    if (pairs.length === 0) return;
    lines.push('', `## ${title}`);
    for (const p of pairs) lines.push(`- #${p.a} ${joiner} #${p.b} (similarity ${fixed(p.similarity, 2)})`);
  };
  const themeNames = new Map((input.themes ?? []).map((t) => [t.id, t.name]));
  const traitList = (ids: readonly number[]) => `${ids.length === 1 ? 'trait' : 'traits'} ${ids.map((id) => `#${id}`).join(', ')}`;
  const themeLabel = (id: number) => `theme "${oneLine(themeNames.get(id) ?? '')}" (#${id})`;
  const opposedBy = new Map((input.themes ?? []).map((t) => [t.id, t.opposes.filter((id) => principles.has(id))]));
  const againstLabel = (id: number) => ((opposedBy.get(id) ?? []).length > 0 ? `, judged against ${traitList(opposedBy.get(id)!)}: possible counter-evidence, never support` : '');
  if (report.counterEvidence.length > 0) {
    lines.push('', '## Counter-evidence (judged to contradict a trait, never counted as reinforcing it)');
    for (const c of report.counterEvidence) {
      const shown = c.shardIds.slice(0, MARKDOWN_MEMBER_IDS).map((id) => `#${id}`).join(', ');
      const rest = c.shardIds.length > MARKDOWN_MEMBER_IDS ? ` and ${c.shardIds.length - MARKDOWN_MEMBER_IDS} more` : '';
      lines.push(`- #${c.traitId} ${oneLine(principles.get(c.traitId) ?? '')} — contradicted by ${c.themeIds.map(themeLabel).join(', ')}: ${shown}${rest}`);
    }
  }
  pairLines('Consolidation candidates', report.consolidationCandidates, '+');
  pairLines('Tensions', report.tensions, 'vs');
  if (report.counterEvidence.length > 0) {
    if (report.tensions.length === 0) lines.push('', '## Tensions');
    for (const c of report.counterEvidence) {
      for (const themeId of c.themeIds) lines.push(`- ${themeLabel(themeId)} vs #${c.traitId}`);
    }
  }

  if (report.possibleCounterEvidence.length > 0) {
    lines.push('', '## Possible counter-evidence (hints, not judgements)');
    for (const h of report.possibleCounterEvidence.slice(0, MARKDOWN_COUNTER_EVIDENCE)) lines.push(`- #${h.shardId} vs trait #${h.traitId} "${oneLine(contents.get(h.shardId) ?? '')}": ${h.reason}`);
    const more = report.possibleCounterEvidence.length - MARKDOWN_COUNTER_EVIDENCE;
    if (more > 0) lines.push(`- and ${more} more (possibleCounterEvidence in the JSON report)`);
  }

  if (report.promotionCandidates.length > 0) {
    lines.push('', '## Promotion candidates');
    for (const p of report.promotionCandidates) lines.push(`- #${p.traitId} (score ${fixed(p.score, 3)})`);
  }

  const t = report.trend;
  const velocity = t.velocity > 0 ? `+${t.velocity}` : `${t.velocity}`;
  const bySource = t.sources.map((s) => `${s.source} ${s.recent}/${s.previous}`).join(', ');
  lines.push(
    '',
    `Trend (last ${TREND_WINDOW_DAYS} days vs the ${TREND_WINDOW_DAYS} before): ${t.recentCount} recent, ${t.previousCount} previous, velocity ${velocity}` +
      (t.newSources.length > 0 ? `; new sources: ${t.newSources.join(', ')}` : '') +
      (bySource !== '' ? `; by source (recent/previous): ${bySource}` : ''),
  );

  // A theme is listed as a cluster whatever its size; only unjudged shards alike to no other are folded.
  const groups = report.clusters.filter((c) => c.memberCount > 1 || c.themeId !== null);
  const singles = report.clusters.filter((c) => c.memberCount === 1 && c.themeId === null);
  const hintedTraits = Map.groupBy(report.possibleCounterEvidence, (h) => h.shardId);
  if (groups.length > 0) {
    lines.push('', '## Clusters (highest weight first)');
    groups.forEach((c, k) => {
      const alignment =
        c.alignment.kind === 'REINFORCING' ? `reinforces trait #${c.alignment.traitId}` : c.alignment.kind === 'CONTRADICTING' ? `contradicts ${traitList(c.opposes)}` : 'novel';
      const parts = [`weight ${fixed(c.weight, 2)}`, `size ${c.memberCount}`, `sources ${c.sources.join(', ')}`, alignment];
      if (c.themeId !== null) parts.unshift(themeLabel(c.themeId));
      const mayContradict = distinctAscending(c.memberIds.flatMap((id) => (hintedTraits.get(id) ?? []).map((h) => h.traitId)));
      if (mayContradict.length > 0) parts.push(`may contradict ${traitList(mayContradict)} (possible counter-evidence)`);
      if (c.suggestedThemeId !== null) parts.push(`resembles ${themeLabel(c.suggestedThemeId)} (${fixed(c.suggestedThemeSimilarity ?? 0, 2)})${againstLabel(c.suggestedThemeId)}`);
      if (c.sharedWith.length > 0) {
        const names = c.sharedWith.map((s) => `${oneLine(soulNames.get(s.soulId) ?? `soul #${s.soulId}`)} (${s.sharedCount}/${c.memberCount})`);
        parts.push(`shared with ${names.join(', ')}`);
      }
      const others = c.memberIds.filter((id) => id !== c.representativeId);
      const shown = others.slice(0, MARKDOWN_MEMBER_IDS).map((id) => `#${id}`).join(', ');
      const rest = others.length > MARKDOWN_MEMBER_IDS ? ` and ${others.length - MARKDOWN_MEMBER_IDS} more` : '';
      lines.push(`${k + 1}. [${parts.join('; ')}] #${c.representativeId} "${oneLine(contents.get(c.representativeId) ?? '')}" +${others.length} similar: ${shown}${rest}`);
    });
  }
  if (singles.length > 0) {
    const ids = singles.map((c) => (c.alignment.kind === 'REINFORCING' ? `#${c.representativeId} (reinforces #${c.alignment.traitId})` : `#${c.representativeId}`));
    const suggested = singles.filter((c) => c.suggestedThemeId !== null).map((c) => `#${c.representativeId} → ${themeLabel(c.suggestedThemeId!)}`);
    lines.push('', `${singles.length === 1 ? '1 shard resembles' : `${singles.length} shards resemble`} nothing else (highest weight first): ${singles.length === 1 ? 'id' : 'ids'} ${ids.join(', ')}`);
    if (suggested.length > 0) lines.push(`Of those, resembling a theme: ${suggested.join(', ')}`);
  }
  return lines.join('\n') + '\n';
}

/** What a report is about to do, told before it clusters: the shards it reads, and what clustering them does (nothing when their partition is held). */
export type EvidenceWork = {
  shards: number;
  clustering: ClusteringWork;
  /** The shards analysed afresh (aligned, compared with the traits, read for counter-evidence): none when the analysis is held. */
  analysis: number;
};

/** `price` hears the report's work before any clustering, and may refuse it by throwing: nothing more is done. */
export type EvidenceOptions = { tags?: readonly string[] | null; query?: string | null; price?: (work: EvidenceWork) => void };

/** Unscoped, a report clusters with the gate's memo; scoped, with the evidence cache's partitions. */
function clusteringWork(db: SoulsDb, soulId: number, unjudgedIds: readonly number[], scoped: boolean): ClusteringWork {
  if (!scoped) return db.clusters.clusteringWork(soulId, unjudgedIds);
  const n = unjudgedIds.length;
  return db.evidence.holdsPartition(unjudgedIds) ? { shards: 0, pairs: 0 } : { shards: n, pairs: (n * (n - 1)) / 2 };
}

/**
 * The evidence report (SPEC §9) over the soul's considered shards, optionally
 * only those carrying any of `tags` and/or matching the full-text `query`.
 */
export async function formatEvidence(db: SoulsDb, soulId: number, options: EvidenceOptions = {}): Promise<EvidenceReport> {
  const [report] = await formatEvidenceOfSouls(db, [{ soulId, price: options.price }], options);
  if (report instanceof Error) throw report;
  return report;
}

/**
 * One soul of a batch of reports, and what hears its work before it is done (and may refuse it by throwing); with
 * the soul's crystallization verdict when the caller has it for this moment already (a request that judged it).
 */
export type EvidenceRequest = { soulId: number; price?: (work: EvidenceWork) => void; crystallization?: Crystallization };

/**
 * Where a batch of reports reads its souls, their active traits (in the store's order), those traits' citations and
 * the souls' attunements: the store, unless the caller has read them already (a request's loaders).
 */
export type EvidenceReads = {
  souls(ids: readonly number[]): Awaitable<Map<number, Soul>>;
  activeTraits(soulIds: readonly number[]): Awaitable<Trait[]>;
  citations(traitIds: readonly number[]): Awaitable<Citation[]>;
  attunements(soulIds: readonly number[]): Awaitable<Map<number, number[]>>;
};

function storeReads(db: SoulsDb): EvidenceReads {
  return {
    souls: (ids) => db.store.getSouls(ids),
    activeTraits: (soulIds) => db.store.listTraits(soulIds, { statuses: ['active'] }),
    citations: (traitIds) => db.store.citationsOfTraits(traitIds),
    attunements: (soulIds) => db.store.attunements(soulIds),
  };
}

/**
 * The evidence reports of several souls over one scope, each as formatEvidence makes it, reading each kind of row
 * once for all of them: a dashboard of any number of souls issues the same statements. Answers in the order asked,
 * each the report or the error that stopped it (an unknown soul, a refused price); the souls are distinct.
 */
export async function formatEvidenceOfSouls(
  db: SoulsDb,
  requests: readonly EvidenceRequest[],
  scope: Pick<EvidenceOptions, 'tags' | 'query'> = {},
  reads: EvidenceReads = storeReads(db),
): Promise<(EvidenceReport | Error)[]> {
  const now = db.clock.now();
  const cutoff = expiryCutoff(db, now);
  const soulIds = requests.map((r) => r.soulId);
  const souls = await reads.souls(soulIds);
  const answers = new Map<number, EvidenceReport | Error>();
  for (const id of soulIds) if (!souls.has(id)) answers.set(id, new NotFoundError('Soul', id));
  const tags = normalizeTags(scope.tags ?? []);
  const query = typeof scope.query === 'string' && scope.query.trim() !== '' ? scope.query.trim() : null;
  const scoped = tags.length > 0 || query !== null;
  const found = soulIds.filter((id) => souls.has(id));
  // Reports asked for at once (aliases, a list) start in a turn of their own, not back to back with the request's other work.
  await yieldToEventLoop();
  const versions = found.length === 0 ? [] : await db.store.consideredShardVersions(found, cutoff, { tags, text: query === null ? undefined : textQuery(query) });
  await yieldToEventLoop();
  // Rows and partitions come from the cache when these exact shards were seen before; what is new is loaded and clustered in slices.
  const rows = await db.evidence.shards(versions, (chunk) => db.store.getShards(chunk));
  const shardsOf = new Map(found.map((id) => [id, [] as Shard[]]));
  // Ascending ids, as the store lists them; a shard of several souls of the batch is in each one's list.
  for (const shard of rows) for (const soulId of shard.soulIds) shardsOf.get(soulId)?.push(shard);
  // Judged shards are clustered by their themes; similarity clusters only the unjudged (SPEC §12).
  const themeMaps = await soulThemeMaps(db, found);
  type Plan = { soul: Soul; shards: Shard[]; themeOf: Map<number, number>; unjudgedIds: readonly number[]; clusteredIds: number[]; held?: EvidenceInput['held'] };
  const candidates: Plan[] = [];
  for (const request of requests) {
    if (answers.has(request.soulId)) continue;
    const shards = shardsOf.get(request.soulId)!;
    const ids = shards.map((s) => s.id);
    const soulThemes = themeMaps.get(request.soulId)!;
    const themeOf = new Map<number, number>();
    for (const id of ids) {
      const themeId = soulThemes.get(id);
      if (themeId !== undefined) themeOf.set(id, themeId);
    }
    const unjudgedIds = judgedShards(db, themeOf, ids).unjudged;
    const kept = new Set(unjudgedIds);
    const clusteredIds = themeOf.size === 0 ? [...unjudgedIds] : ids.filter((id) => themeOf.has(id) || kept.has(id));
    candidates.push({ soul: souls.get(request.soulId)!, shards, themeOf, unjudgedIds, clusteredIds });
  }
  // What the analysis reads, read before pricing: a held analysis is priced as read, not made.
  const candidateIds = candidates.map((p) => p.soul.id);
  const themeIds = [...new Set(candidates.flatMap((p) => [...p.themeOf.values()]))];
  const themes = themeIds.length === 0 ? new Map<number, Theme>() : await db.store.getThemes(themeIds);
  const traitsOf = Map.groupBy(candidateIds.length === 0 ? [] : await reads.activeTraits(candidateIds), (t) => t.soulId);
  const traitIds = [...traitsOf.values()].flat().map((t) => t.id);
  const citationsOf = Map.groupBy(traitIds.length === 0 ? [] : await reads.citations(traitIds), (c) => c.traitId);
  const summaries = (themeOf: ReadonlyMap<number, number>): ThemeSummary[] =>
    [...new Set(themeOf.values())].sort((a, b) => a - b).flatMap((id) => (themes.has(id) ? [themes.get(id)!] : [])).map((t) => ({ id: t.id, name: t.name, opposes: t.opposes }));
  const citationsOfSoul = (soulId: number) => (traitsOf.get(soulId) ?? []).flatMap((t) => citationsOf.get(t.id) ?? []);
  const priceOf = new Map(requests.map((r) => [r.soulId, r.price]));
  const plans: Plan[] = [];
  for (const plan of candidates) {
    const { soul, shards, themeOf, unjudgedIds } = plan;
    if (db.settings.similarity === 'trigram') {
      const key = analysisKey({ knobs: db.settings, clusterLimit: db.settings.maxClusteredShards, themes: summaries(themeOf), citations: citationsOfSoul(soul.id), soulId: soul.id, shardIds: shards.map((s) => s.id), themeOf, traits: traitsOf.get(soul.id) ?? [] });
      plan.held = { key, analysis: db.evidence.analyses.get(key) };
    }
    try {
      priceOf.get(soul.id)?.({ shards: shards.length, clustering: clusteringWork(db, soul.id, unjudgedIds, scoped), analysis: plan.held?.analysis ? 0 : shards.length });
    } catch (error) {
      answers.set(soul.id, error instanceof Error ? error : new Error(String(error)));
      continue;
    }
    plans.push(plan);
  }
  const planned = plans.map((p) => p.soul.id);
  const crystallizations = new Map(requests.flatMap((r) => (r.crystallization === undefined ? [] : [[r.soulId, r.crystallization] as const])));
  const toJudge = planned.filter((id) => !crystallizations.has(id));
  if (toJudge.length > 0) for (const [id, verdict] of await getCrystallization(db, toJudge)) crystallizations.set(id, verdict);
  const partitions = new Map<number, number[][]>();
  // A held analysis has its clusters: only the others need the partition.
  for (const { soul, shards, unjudgedIds } of plans.filter((p) => p.held?.analysis === undefined)) {
    const byId = new Map(shards.map((s) => [s.id, s]));
    if (scoped) {
      partitions.set(soul.id, await db.evidence.partition(unjudgedIds.map((id) => byId.get(id)!)));
    } else {
      // Unscoped, the report clusters exactly the gate's shards: the remembered partition serves both.
      const texts = (missing: number[]) => new Map(missing.map((id) => [id, byId.get(id)!.content]));
      await db.clusters.prepare(soul.id, unjudgedIds, texts);
      partitions.set(soul.id, await db.clusters.partition(soul.id, unjudgedIds, texts));
    }
  }
  const embeddings = new Map<number, Float32Array>();
  if (usesVectors(db.settings.similarity)) {
    const clusteredIds = plans.flatMap((p) => p.clusteredIds);
    for (const [i, vector] of (await db.evidence.vectors(clusteredIds)).entries()) if (vector) embeddings.set(clusteredIds[i], vector);
  }
  const otherSouls = new Set<number>();
  for (const plan of plans) {
    for (const shard of plan.shards) if (shard.soulIds.length > 1) for (const id of shard.soulIds) if (!souls.has(id)) otherSouls.add(id);
  }
  const soulNames = new Map([...souls].map(([id, s]) => [id, s.name]));
  if (otherSouls.size > 0) for (const [id, s] of await reads.souls([...otherSouls])) soulNames.set(id, s.name);
  const attunements = planned.length === 0 ? new Map<number, number[]>() : await reads.attunements(planned);
  const vectorModel = db.semantic?.embedder.model ?? (db.settings.similarity === 'provided' ? PROVIDED_MODEL : null);
  for (const { soul, shards, themeOf, clusteredIds, held } of plans) {
    const activeTraits = traitsOf.get(soul.id) ?? [];
    answers.set(
      soul.id,
      await runStepsSliced(
        evidenceReportSteps({
          soul,
          shards,
          activeTraits,
          citations: citationsOfSoul(soul.id),
          attunedAt: attunements.get(soul.id) ?? [],
          crystallization: crystallizations.get(soul.id)!,
          partition: partitions.get(soul.id),
          embeddings,
          vectorModel,
          vectorsWaiting: new Set(clusteredIds.filter((id) => db.semantic?.isWaiting(id) ?? false)),
          clusterLimit: db.settings.maxClusteredShards,
          themeOf,
          themes: summaries(themeOf),
          representatives: db.evidence.representatives,
          analyses: db.evidence.analyses,
          held,
          soulNames,
          knobs: db.settings,
          now,
          scope: { tags, query },
        }),
      ),
    );
  }
  return soulIds.map((id) => answers.get(id)!);
}
