import type { Citation, LevelEvent, Page, Shard, ShardStatus, Soul, SoulDocument, SourceCount, TagCount, Theme, ThemeEvent, Trait, TraitStatus } from '../engine/model.ts';
import { SoulsError, type CounterCitation } from '../engine/errors.ts';

/** A value, or a promise of it: the SQLite store answers at once, the PostgreSQL store with promises. */
export type Awaitable<T> = T | Promise<T>;

/**
 * Every SQL statement of Souls lives behind this interface. Each method is one
 * whole unit of work and atomic: the SQLite store runs it synchronously inside
 * one transaction, the PostgreSQL store as one transaction on one pooled
 * connection. Callers await every answer. Reads take lists of
 * ids so that callers (DataLoaders) batch them into a constant number of
 * statements. Methods throw (or reject with) the engine's domain errors (NotFoundError, …).
 */
export interface SoulsStore {
  readonly kind: string;

  // Souls
  insertSoul(input: NewSoul, now: number): Awaitable<Soul>;
  updateSoul(id: number, patch: SoulPatch, now: number): Awaitable<Soul>;
  setDormancy(id: number, change: { dormantAt: number | null; rename?: string }, now: number): Awaitable<Soul>;
  stampAttuned(id: number, now: number): Awaitable<Soul>;
  getSouls(ids: readonly number[]): Awaitable<Map<number, Soul>>;
  /** By folded name key (SPEC §2): the awake soul, else the most recently retired one. */
  getSoulByName(name: string): Awaitable<Soul | null>;
  listSouls(filter: { dormant: boolean }): Awaitable<Soul[]>;

  // Traits and citations
  insertTrait(soulId: number, input: NewTrait, now: number, traitLimit: number): Awaitable<Trait>;
  updateTrait(id: number, patch: { principle?: string; provenance?: string }, now: number): Awaitable<Trait>;
  setTraitStatus(id: number, status: 'active' | 'reverted', now: number, traitLimit: number): Awaitable<Trait>;
  getTraits(ids: readonly number[]): Awaitable<Map<number, Trait>>;
  listTraits(soulIds: readonly number[], filter?: TraitFilter): Awaitable<Trait[]>;
  countActiveTraits(soulIds: readonly number[]): Awaitable<Map<number, number>>;
  /**
   * Cites the shards (each attributed to the trait's soul) from an active trait; returns the ids it did not cite before,
   * in the order given. A shard of a theme that opposes the trait is refused (ValidationError `shardIds`, SPEC §13).
   */
  citeShards(traitId: number, shardIds: readonly number[], now: number): Awaitable<number[]>;
  /**
   * citeShards for several traits in one transaction, all or nothing; the fresh ids per entry, in order. `dryRun`
   * does every check and write, then rolls back, answering the same.
   */
  citeShardsOfTraits(cites: readonly { traitId: number; shardIds: readonly number[] }[], now: number, dryRun: boolean): Awaitable<number[][]>;
  /**
   * Takes the trait's citations of the shards back (refused, nothing written, when one is not cited), un-fades any of them
   * that falls below `shardFadeCitations`, and evaluates the cheap gate for their souls.
   */
  unciteShards(traitId: number, shardIds: readonly number[], now: number, shardFadeCitations: number, cutoff: number): Awaitable<{ gate: GateStats[] }>;
  /** Citations of the given traits, oldest first. */
  citationsOfTraits(traitIds: readonly number[]): Awaitable<Citation[]>;
  /** Citations of the given shards, oldest first. */
  citationsOfShards(shardIds: readonly number[]): Awaitable<Citation[]>;
  attunements(soulIds: readonly number[]): Awaitable<Map<number, number[]>>;

  // Imported documents
  /** Keeps the document of the soul in that format, replacing the one stored before; the soul must exist and be awake. */
  putSoulDocument(soulId: number, document: { format: string; file: string; text: string }, now: number): Awaitable<SoulDocument>;
  getSoulDocument(soulId: number, format: string): Awaitable<SoulDocument | null>;

  // Themes (SPEC §12): each write is one unit, recorded as ThemeEvents by `actor`.
  /**
   * Moves each assignment's shards to its theme (an existing one of the soul, or a new one by name), recording what
   * each replaced; returns the assignments' themes in order. A shard not attributed to the soul, a theme of another
   * soul or a new name the soul already has is a ValidationError naming `assignments[i]…`; so is moving a shard a
   * trait cites into a theme that opposes that trait (SPEC §13). A call that moves no shard and creates no theme is an
   * InvalidStateError. Nothing is written then.
   */
  assignThemes(soulId: number, assignments: readonly ThemeAssignmentWrite[], actor: string, now: number, maxThemes: number): Awaitable<Theme[]>;
  /** Returns the shards to the unjudged pool; returns the themes they left, by id. None of them in a theme: InvalidStateError. */
  unassignShards(soulId: number, shardIds: readonly number[], actor: string, now: number): Awaitable<Theme[]>;
  /** A name another theme of the soul has (by folded key) is a ValidationError `name`; the name it has already, an InvalidStateError. */
  renameTheme(themeId: number, name: string, actor: string, now: number): Awaitable<Theme>;
  /**
   * The trait must be of the theme's soul; opposing twice, or unopposing what is not opposed, is an InvalidStateError.
   * A theme whose members the trait cites cannot oppose it (ValidationError `traitId`, SPEC §13).
   */
  setThemeOpposition(themeId: number, traitId: number, opposed: boolean, actor: string, now: number): Awaitable<Theme>;
  /**
   * assignThemes, then each assignment's theme opposes its `opposes` traits (as setThemeOpposition), in one
   * transaction: all or nothing. `dryRun` checks and writes everything, then rolls back, answering the same.
   */
  judgeThemes(soulId: number, assignments: readonly ThemeAssignmentWrite[], opposes: readonly (readonly number[])[], actor: string, now: number, maxThemes: number, dryRun: boolean): Awaitable<Theme[]>;
  getThemes(ids: readonly number[]): Awaitable<Map<number, Theme>>;
  /** The souls' themes, by soul then id. */
  listThemes(soulIds: readonly number[]): Awaitable<Theme[]>;
  /** The theme id of each of the shards that has one in that soul. */
  themesOfShards(soulId: number, shardIds: readonly number[]): Awaitable<Map<number, number>>;
  /** Per soul (every one asked a key), the theme id of each of its shards that has one: one statement for any number of souls. */
  shardThemesOfSouls(soulIds: readonly number[]): Awaitable<Map<number, Map<number, number>>>;
  /** The shards assigned to themes opposing each of the traits, ascending (every trait a key). */
  counterEvidence(traitIds: readonly number[]): Awaitable<Map<number, number[]>>;
  /** Citations by any of `citingTraitIds` of shards held by themes opposing any of `opposedTraitIds`, by theme, opposed trait, citing trait, shard. */
  counterCitations(opposedTraitIds: readonly number[], citingTraitIds: readonly number[]): Awaitable<CounterCitation[]>;
  themeHistory(soulIds: readonly number[]): Awaitable<ThemeEvent[]>;

  // Level-ups
  /** A consolidation whose merged trait would cite counter-evidence (one source cites a theme opposing another) is a LevelUpPlanError. */
  applyLevelUp(soulId: number, plan: LevelUpWrite, now: number): Awaitable<LevelEvent>;
  /**
   * Reverts the latest unreverted level-up, or the event `levelEventId` when given, only if it is that latest one.
   * Also un-fades shards the merged traits' citations exhausted, and evaluates the cheap gate for their souls.
   */
  revertLevelUp(soulId: number, now: number, shardFadeCitations: number, cutoff: number, levelEventId?: number | null): Awaitable<{ event: LevelEvent; gate: GateStats[] }>;
  levelHistory(soulIds: readonly number[]): Awaitable<LevelEvent[]>;
  getLevelEvents(ids: readonly number[]): Awaitable<Map<number, LevelEvent>>;

  // Shards
  /**
   * Inserts the shards and evaluates the cheap crystallization gate for every soul they touch. The first
   * embedding ever stored fixes the database's dimension and binds it to PROVIDED_MODEL; one of another length,
   * or into a database bound to another model, is refused (ValidationError `embedding`), nothing written. `withIds` picks the souls whose GateStats carry their shard ids (every
   * soul when omitted); the others' lists may be left empty.
   */
  insertShards(shards: readonly NewShard[], now: number, cutoff: number, withIds?: (stats: GateStats) => boolean): Awaitable<ShardWrite>;
  /** Unseals the shards (still pending) and evaluates the cheap gate for their souls; `withIds` as for insertShards. */
  revealShards(ids: readonly number[], now: number, cutoff: number, withIds?: (stats: GateStats) => boolean): Awaitable<ShardWrite>;
  /** Fades every pending shard cited by at least `threshold` distinct traits; returns how many, and the cheap gate before and after for their souls. */
  fadeExhaustedShards(threshold: number, now: number, cutoff: number): Awaitable<{ fadedCount: number; gate: GateStats[] }>;
  getShards(ids: readonly number[]): Awaitable<Map<number, Shard>>;
  shardContents(ids: readonly number[]): Awaitable<Map<number, string>>;
  /** The stored embeddings (encoded bytes) of those of the shards that have one. */
  shardEmbeddings(ids: readonly number[]): Awaitable<Map<number, Uint8Array>>;
  /** The embedding dimension the first stored vector fixed, or null while none is stored. */
  embeddingDimension(): Awaitable<number | null>;
  /**
   * Stores computed embeddings (similarity `semantic`) of `model` in one transaction, each only where the shard has
   * none (a stored vector is never overwritten), with the hash of the text it came from; returns the ids that got
   * one. The first vector binds the database to its model and dimension; a vector of another model or dimension is
   * refused (ValidationError `embedding`), nothing written.
   */
  storeEmbeddings(entries: readonly EmbeddingWrite[], model: string): Awaitable<number[]>;
  /** A stored vector for each of the content hashes that has one (any shard's). */
  embeddingsByHash(hashes: readonly string[]): Awaitable<Map<string, Uint8Array>>;
  /** The model the database's vectors come from (PROVIDED_MODEL for callers' vectors), or null while none is recorded. */
  embeddingModel(): Awaitable<string | null>;
  /** Forgets every stored vector and its dimension and binds the database to `model`, in one transaction; returns how many vectors were forgotten. */
  rebindEmbeddings(model: string): Awaitable<number>;
  /** Up to `limit` shards (any status) without an embedding and with an id above `afterId`, ascending. */
  shardsWithoutEmbedding(afterId: number, limit: number): Awaitable<Array<{ id: number; content: string }>>;
  countShardsWithoutEmbedding(): Awaitable<number>;
  /** At least the shard rows there are (the highest id: rows are never deleted), read from the primary key in one step. */
  shardRowBound(): Awaitable<number>;

  // Calibrations (`souls calibrate`): the clustering threshold chosen for a similarity mode and model, in souls_meta.
  /** The calibration stored under `key` (calibrationKey: the mode, and for vectors their model and dimension), or null. */
  getCalibration(key: string): Awaitable<StoredCalibration | null>;
  /** Keeps the calibration under `key`, replacing the one stored before. */
  putCalibration(key: string, calibration: StoredCalibration): Awaitable<void>;
  listShards(filter: ShardFilter, page: { first: number; after: string | null }): Awaitable<Page<Shard>>;
  /** Full-text search (FTS5, bm25) over pending, unsealed, unexpired shards; no word matches nothing. */
  searchShards(query: TextQuery, filter: { soulId?: number; cutoff: number; limit: number }): Awaitable<Array<{ shardId: number; score: number }>>;
  /** Considered shards (pending, unsealed, created after cutoff) of the souls, with their tags and souls. */
  consideredShards(soulIds: readonly number[], cutoff: number, scope?: ShardScope): Awaitable<Shard[]>;
  /** The ids of those shards, ascending, each with its updatedAt (which every change of a shard's row sets). */
  consideredShardVersions(soulIds: readonly number[], cutoff: number, scope?: ShardScope): Awaitable<ShardVersion[]>;
  /** The cheap gate's aggregates for the souls, or for every non-dormant soul with considered shards. */
  gateStats(soulIds: readonly number[] | 'awake', cutoff: number): Awaitable<Map<number, GateStats>>;
  countsBySource(soulIds: readonly number[], cutoff: number): Awaitable<Map<number, SourceCount[]>>;
  countsByTag(soulId: number | null, cutoff: number): Awaitable<TagCount[]>;
  countsByTagPerSoul(soulIds: readonly number[], cutoff: number): Awaitable<Map<number, TagCount[]>>;
  /** Pending counts for the given souls, or every non-dormant soul. */
  pendingCounts(soulIds: readonly number[] | 'awake', cutoff: number): Awaitable<Map<number, number>>;

  // Maintenance and diagnostics
  /** How many SQL statements this store has executed: lets tests prove a query's cost does not grow with its size. */
  statementsExecuted(): Awaitable<number>;
  /** Reads the schema table (not counted in statementsExecuted); throws when the database cannot answer, e.g. once closed. */
  ping(): Awaitable<void>;
  optimize(): Awaitable<void>;
  backup(path: string): Awaitable<void>;
  explainQueryPlans(): Awaitable<Record<string, string[]>>;
  /** Checkpoints and closes; a checkpoint that cannot run (full disk) is deferred to the next open, never lost. */
  close(): Awaitable<{ checkpointDeferred: string | null }>;
}

/** The model name the vectors callers send with their shards (similarity `provided`) are recorded under. */
export const PROVIDED_MODEL = 'provided';

/** A computed vector for a shard, and the hash of the content it was computed from. */
export type EmbeddingWrite = { id: number; embedding: Uint8Array; contentHash: string | null };

/** A chosen clustering threshold, with the figures it was chosen by: the adjusted Rand index, from which labels, over how many texts. */
export type StoredCalibration = { threshold: number; ari: number; from: 'themes' | 'labels'; texts: number; labels: number; calibratedAt: number };

/** `slug` null: the store derives a free one from the name. */
/**
 * A full-text query in plain words, quoted by the store so none is syntax: each word is a list of spellings, any
 * of which matches it (stemmed as the store stems); `all` needs every word in a shard, `any` one of them.
 */
export type TextQuery = { words: readonly (readonly string[])[]; match: 'all' | 'any' };

/** Considered shards carrying any of `tags` and/or matching `text` (no word: none). */
export type ShardScope = { tags?: readonly string[]; text?: TextQuery };
/** A shard's id and the updatedAt of its row: a row held with another updatedAt is out of date. */
export type ShardVersion = { id: number; updatedAt: number };

export type NewSoul = { name: string; slug: string | null; essence: string; description: string };
/** `slug` undefined keeps it; null derives a free one from the (new) name. */
export type SoulPatch = { name?: string; slug?: string | null; essence?: string; description?: string };
export type NewTrait = { principle: string; provenance: string; citeShardIds: readonly number[] };
export type TraitFilter = { statuses?: readonly TraitStatus[]; generation?: number };

export type NewShard = {
  content: string;
  source: string;
  soulIds: readonly number[];
  tags: readonly string[];
  sealed: boolean;
  createdAt: number;
  /** L2-normalized Float32 little-endian bytes, or null. */
  embedding: Uint8Array | null;
};

export type ShardFilter = {
  soulId?: number;
  source?: string;
  tags?: readonly string[];
  status: ShardStatus;
  sealed?: boolean;
  /** Pending shards created at or before this are left out (read-time expiry); null lists them all. */
  cutoff: number | null;
};

/**
 * What the cheap gate needs about one soul's considered shards. oldest and newest are creation
 * times (age spread); latest is when the newest evidence arrived, max(created, recorded, revealed) (recency, SPEC §13).
 */
export type ShardAggregate = { count: number; distinctSources: number; oldest: number | null; newest: number | null; latest: number | null };

export type GateStats = {
  soulId: number;
  dormant: boolean;
  lastAttunedAt: number | null;
  /** The considered shards' ids now, ascending (empty when a write's `withIds` left the soul out). */
  shardIds: number[];
  /** The considered shards' ids before the write, ascending (empty when a write's `withIds` left the soul out). */
  beforeShardIds: number[];
  /** Considered shards now. */
  after: ShardAggregate;
  /** Considered shards before the write. */
  before: ShardAggregate;
  /** Whether any of the soul's shards has a theme, when the write knew it at no cost; absent: not known. */
  themed?: boolean;
};

/** `shardIds`: the shards this write inserted or actually unsealed (the ones `GateStats.before` leaves out). */
export type ShardWrite = { shardIds: number[]; gate: GateStats[] };

/** Exactly one of themeId and newThemeName (already validated and normalized). */
export type ThemeAssignmentWrite = { shardIds: readonly number[]; themeId: number | null; newThemeName: string | null };

export type LevelUpWrite = {
  /** The active trait ids the plan was validated against; the store refuses if they changed meanwhile. */
  activeTraitIds: readonly number[];
  newEssence: string;
  consolidations: ReadonlyArray<{ sourceTraitIds: readonly number[]; mergedPrinciple: string; mergedProvenance: string }>;
  promotedTraitIds: readonly number[];
  carriedTraitIds: readonly number[];
};

/**
 * Thrown inside a store transaction to roll a dry run back, carrying what the run would have answered. A SoulsError,
 * so the PostgreSQL store rolls the connection back rather than taking it for broken.
 */
export class DryRunRollback<T> extends SoulsError {
  override name = 'DryRunRollback';
  readonly value: T;
  constructor(value: T) {
    super('dry run: rolled back');
    this.value = value;
  }
}
