// The price list (SPEC §13: a request's price is its work), one for every door: GraphQL's estimate before execution
// and its meter while executing (src/server/request-cost.ts, limits-cost.ts), and MCP's batch pricing
// (src/mcp/requests.ts). A unit is about the work of resolving one plain field of one object; bench/price-list.ts
// times each priced thing in those units, in the same run, so that the prices can be checked on any machine.
import { MAX_PAGE_SIZE, MAX_SOUL_PAGE, suggestedActionKinds, type ClusteringWork, type CrystallizationWork, type EvidenceWork, type Settings } from '../engine/index.ts';

/** What a plain field costs (a scalar or an enum read off an object already loaded) and an object field. */
export const FIELD_PRICE = 1;
export const OBJECT_PRICE = 2;

/**
 * What a field costs beyond FIELD_PRICE or OBJECT_PRICE, per resolution, where its work does not show in the selection
 * (a DataLoader round, a signal computed per trait, a block rendered). Measured by bench/price-list.ts.
 */
export const FIELD_EXTRAS: Readonly<Record<string, number>> = {
  'Soul.activeTraitCount': 12,
  'Soul.atCapacity': 12,
  'Soul.pendingShardCount': 12,
  'Soul.health': 180,
  'Soul.rendered': 40,
  'Soul.traits': 10,
  'Soul.themes': 10,
  'Soul.levelHistory': 10,
  'Soul.soulMd': 100,
  'Trait.signals': 19,
  'Trait.citations': 10,
  'Trait.counterEvidence': 10,
  'Shard.citedBy': 10,
  'Shard.theme': 10,
};

/**
 * Evidence reports and crystallization verdicts. A verdict costs `verdict` when its soul's partition is held; a
 * report served from the evidence cache (its analysis held) costs `reportRead` and `reportShard` for each shard it
 * reads, and `analysisShard` more a shard when its analysis is made (aligning its clusters, comparing the traits,
 * reading every shard for counter-evidence). Clustering what is not held costs `clusterShard` a shard (loading its
 * text, indexing it) and `clusterPair` a pair compared: n and n(n−1)/2 from scratch, the new shards and new × n when
 * the memo adds to a partition it holds. Measured by bench/price-list.ts.
 */
export const EVIDENCE_PRICES = { reportRead: 150, reportShard: 5, analysisShard: 12, verdict: 85, clusterShard: 25, clusterPair: 0.02 } as const;

/** Each row a search or a count may read (FTS matches, a listing's COUNT), bounded by the shards in the database. */
export const SCAN_ROW_PRICE = 4;

/** Writing one shard (validated, inserted with its tags and souls, its souls' gate judged), or revealing one. */
export const WRITE_PRICE = 100;

/** Each item of a list argument costs one, but for those that write a shard each. */
export const INPUT_ITEM_PRICES: Readonly<Record<string, number>> = {
  'Mutation.dropShards(inputs:)': WRITE_PRICE,
  'Mutation.revealShards(ids:)': WRITE_PRICE,
};

/** Any MCP tool call or resource read, on top of its work: a GraphQL operation's few fields. */
export const CALL_PRICE = 10;

function clusteringPrice(work: ClusteringWork): number {
  return EVIDENCE_PRICES.clusterShard * work.shards + EVIDENCE_PRICES.clusterPair * work.pairs;
}

export function evidencePrice(work: EvidenceWork): number {
  return EVIDENCE_PRICES.reportRead + EVIDENCE_PRICES.reportShard * work.shards + EVIDENCE_PRICES.analysisShard * work.analysis + clusteringPrice(work.clustering);
}

export function verdictPrice(work: CrystallizationWork): number {
  return EVIDENCE_PRICES.verdict * work.souls + clusteringPrice(work.clustering);
}

/** A full-text search reads each word's matches: up to every shard per word. */
export function searchPrice(shardRows: number, words: number): number {
  return SCAN_ROW_PRICE * shardRows * Math.max(1, words);
}

/** Clustering n shards from scratch. */
export const fromScratch = (n: number): ClusteringWork => ({ shards: n, pairs: (n * (n - 1)) / 2 });

/** The words of a search, as the engine reads them (letters or digits), at most its 32. */
export function searchWords(query: unknown): number {
  if (typeof query !== 'string') return 1;
  return Math.min(32, query.split(/\s+/u).filter((t) => /[\p{L}\p{N}]/u.test(t)).length);
}

/** A page argument's default and most. */
export type PageBound = { readonly default: number; readonly max: number };

/** Plain lists paged by `first` (and `after`, an item's id), the roster's lists, a report's clusters, a search. */
export const LIST_PAGE: PageBound = { default: 100, max: 500 };
export const ROSTER_PAGE: PageBound = { default: MAX_SOUL_PAGE, max: MAX_SOUL_PAGE };
export const CLUSTER_PAGE: PageBound = { default: 20, max: 500 };
export const SEARCH_PAGE: PageBound = { default: 20, max: MAX_PAGE_SIZE };
export const SHARD_PAGE: PageBound = { default: 50, max: MAX_PAGE_SIZE };
export const SOUL_CONNECTION_PAGE: PageBound = { default: 50, max: MAX_SOUL_PAGE };
/** Short lists capped without an argument: sources of a cluster or a trend, souls a cluster is shared with. */
export const LIST_CAP = 100;

type SettingsBound = Pick<Settings, 'traitLimit' | 'maxThemesPerSoul' | 'maxTagsPerShard' | 'maxBatchSize'>;

/**
 * How many items each list field of the schema may return, by coordinate: a page argument (its value, else its
 * default), a fixed number, a setting, or the input of the mutation that answers it. Every list field of the schema
 * is here (test/price-list.test.ts checks), and its description says the bound.
 */
export type OutputBound =
  | { page: 'first'; default: number; max: number }
  | { items: number }
  | { setting: keyof SettingsBound; pairs?: true }
  | { input: true };

const page = (p: PageBound): OutputBound => ({ page: 'first', ...p });
const traits: OutputBound = { setting: 'traitLimit' };
const touched: OutputBound = { items: ROSTER_PAGE.max };
const input: OutputBound = { input: true };

export const outputBounds: Readonly<Record<string, OutputBound>> = {
  'Query.souls': page(ROSTER_PAGE),
  'Query.dormantSouls': page(ROSTER_PAGE),
  'Query.crystallizationReadiness': page(ROSTER_PAGE),
  'Query.shardCountsPerSoul': page(ROSTER_PAGE),
  'Query.shardCountsByTag': page(LIST_PAGE),
  'Query.searchShards': page(SEARCH_PAGE),
  'SoulConnection.edges': page(SOUL_CONNECTION_PAGE),
  'ShardConnection.edges': page(SHARD_PAGE),
  'Soul.traits': page(LIST_PAGE),
  'Soul.themes': { setting: 'maxThemesPerSoul' },
  'Soul.levelHistory': page(LIST_PAGE),
  'Soul.shardCountsBySource': page(LIST_PAGE),
  'Soul.shardCountsByTag': page(LIST_PAGE),
  'Theme.members': page(LIST_PAGE),
  'Theme.opposes': page(LIST_PAGE),
  'Trait.citations': page(LIST_PAGE),
  'Trait.counterEvidence': page(LIST_PAGE),
  'Shard.souls': page(LIST_PAGE),
  'Shard.citedBy': page(LIST_PAGE),
  'Shard.tags': { setting: 'maxTagsPerShard' },
  'EvidenceReport.clusters': page(CLUSTER_PAGE),
  'EvidenceReport.possibleCounterEvidence': page(LIST_PAGE),
  'EvidenceReport.unjudged': page(LIST_PAGE),
  'UnjudgedShard.opposes': traits,
  'EvidenceChanges.newShards': { items: LIST_CAP },
  'EvidenceChanges.goneShards': { items: LIST_CAP },
  'EvidenceChanges.changedThemeIds': { items: LIST_CAP },
  'EvidenceChanges.newSuggestedActions': { items: suggestedActionKinds.length },
  'EvidenceReport.traits': traits,
  'EvidenceReport.promotionCandidates': traits,
  'EvidenceReport.consolidationCandidates': { setting: 'traitLimit', pairs: true },
  'EvidenceReport.tensions': { setting: 'traitLimit', pairs: true },
  'EvidenceReport.suggestedActions': { items: suggestedActionKinds.length },
  'ShardCluster.members': page(LIST_PAGE),
  'ShardCluster.sources': { items: LIST_CAP },
  'ShardCluster.sharedWith': { items: LIST_CAP },
  'Trend.sources': { items: LIST_CAP },
  'Trend.newSources': { items: LIST_CAP },
  'SuggestedAction.traits': traits,
  'LevelEvent.consolidated': traits,
  'LevelEvent.promoted': traits,
  'LevelEvent.carried': traits,
  'LevelEvent.merged': traits,
  'SoulMdPlannedTrait.nearDuplicates': traits,
  'Crystallization.unmet': { items: 6 },
  'Crystallization.needs': { items: 6 },
  'Caller.scopes': { items: 4 },
  'LevelUpWarning.traitIds': traits,
  'SoulPayload.readySouls': { items: 1 },
  'CiteShardPayload.readySouls': touched,
  'DropShardPayload.readySouls': touched,
  'DropShardsPayload.readySouls': touched,
  'RevealShardsPayload.readySouls': touched,
  'RevertLevelUpPayload.readySouls': touched,
  'FadePayload.readySouls': touched,
  'SoulMdImportPayload.readySouls': { items: 1 },
  'DropShardsPayload.shards': input,
  'RevealShardsPayload.shards': input,
  'AssignThemesPayload.themes': input,
  'LevelUpPayload.warnings': input,
  'LevelUpPreview.warnings': input,
  'RenderPreview.warnings': input,
  'LevelUpPlanError.duplicated': input,
  'LevelUpPlanError.missing': input,
  'LevelUpPlanError.notActive': input,
  'LevelUpPlanError.problems': input,
  'SoulMdImportPlan.notes': input,
  'SoulMdImportPlan.problems': input,
  'SoulMdImportPlan.shards': input,
  'SoulMdImportPlan.traits': input,
};

/**
 * The items a list field may return: its page argument (given, else the default), its fixed bound or setting, or for
 * a mutation's payload the items of the mutation's input (`inputItems`, at least one). A soul's traits of the default
 * status (active only) are at most the trait limit.
 */
export function listItems(coordinate: string, args: Readonly<Record<string, unknown>>, settings: SettingsBound, inputItems: number): number {
  const bound = outputBounds[coordinate];
  if (!bound) return 1;
  if ('page' in bound) {
    const asked = args[bound.page];
    const items = typeof asked === 'number' && Number.isInteger(asked) && asked >= 0 ? Math.min(asked, bound.max) : bound.default;
    const status = args.status;
    const activeOnly = Array.isArray(status) && status.length > 0 && status.every((s) => String(s).toUpperCase() === 'ACTIVE');
    if (coordinate === 'Soul.traits' && activeOnly) {
      return Math.min(items, settings.traitLimit);
    }
    return items;
  }
  if ('items' in bound) return bound.items;
  if ('setting' in bound) return bound.pairs ? fromScratch(settings[bound.setting]).pairs : settings[bound.setting];
  return Math.max(1, inputItems);
}
