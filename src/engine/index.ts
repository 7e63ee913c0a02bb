/** The Souls engine's public surface: an async library API, usable with no server. */
export { DAY_MS, manualClock, systemClock, type Clock } from './clock.ts';
export { CapacityError, ConflictError, InvalidStateError, LevelUpPlanError, NotFoundError, SoulsError, StorageError, ValidationError, describeError } from './errors.ts';
export type { Citation, LevelEvent, Page, Shard, ShardStatus, Soul, SoulDocument, SourceCount, TagCount, Theme, ThemeEvent, ThemeEventKind, Trait, TraitStatus } from './model.ts';
export {
  defaultClusteringThresholds,
  defaultRedundancyThresholds,
  clusteringLinkages,
  defaultKnobs,
  defaultSettings,
  clusteringThresholdSource,
  resolveSettings,
  settingNames,
  similarityModes,
  type Bounds,
  type ClusteringThresholdSource,
  type Knobs,
  type Settings,
  type SimilarityMode,
} from './settings.ts';
export { closeSoulsDb, openSoulsDb, openSoulsDbAsync, type OpenOptions, type SoulsDb } from './souls-db.ts';
export { settleSlicedWork } from './slices.ts';
export type { ClusteringWork } from './cluster-memo.ts';
export {
  adjustedRandIndex,
  CALIBRATION_THRESHOLDS,
  calibrateThreshold,
  calibrationKey,
  chooseThreshold,
  getStoredCalibration,
  MIN_CALIBRATION_LABELS,
  MIN_CALIBRATION_TEXTS,
  parseLabelledJsonl,
  storeCalibration,
  storedThreshold,
  thresholdRange,
  type Calibration,
  type CalibrationRow,
  type LabelledText,
  type SweepFigures,
} from './calibrate.ts';
export type { StoredCalibration } from '../store/store.ts';
export { initSoulsTables, openSqliteStore } from '../store/sqlite.ts';
export {
  awakenSoul,
  createSoul,
  getSoul,
  getSoulByName,
  getSoulHealth,
  getSouls,
  listDormantSouls,
  listSouls,
  listSoulsOrdered,
  MAX_SOUL_PAGE,
  pageSouls,
  sortSouls,
  retireSoul,
  soulOrders,
  stampAttuned,
  updateSoul,
  type CreateSoulInput,
  type SoulOrder,
  type UpdateSoulInput,
} from './souls.ts';
export {
  addTrait,
  citeShard,
  citeShards,
  countActiveTraits,
  getCitations,
  getTrait,
  getTraitLimit,
  getTraits,
  getTraitSignals,
  listTraits,
  listTraitsOfSouls,
  previewTraitChanges,
  reactivateTrait,
  reviseTrait,
  revertTrait,
  unciteShard,
  unciteShards,
  type AddTraitInput,
  type CiteResult,
  type ReviseTraitInput,
  type TraitChanges,
  type TraitRevision,
} from './traits.ts';
export {
  dropShard,
  dropShards,
  fadeExhaustedShards,
  getEmbeddingDimension,
  getShard,
  getShardEmbeddings,
  getShards,
  listShards,
  MAX_PAGE_SIZE,
  pendingShardCount,
  pendingShardCounts,
  revealShards,
  searchMatches,
  searchShards,
  shardCountsBySource,
  shardCountsByTag,
  shardCountsByTagOfSouls,
  shardCountsPerSoul,
  shardRowBound,
  type ListShardsOptions,
  type SearchMatch,
  type ShardHit,
  type ShardInput,
} from './shards.ts';
export {
  crystallizationConditions,
  crystallizationReadiness,
  getCrystallization,
  type Crystallization,
  type CrystallizationCondition,
  type CrystallizationOptions,
  type CrystallizationWork,
  type ReadySoul,
} from './crystallization.ts';
export { getLevelHistory, levelUp, previewLevelUp, revertLevelUp, type LevelUpPlan, type LevelUpPreview, type LevelUpResult, type LevelUpWarning } from './levels.ts';
export { renderSoul, renderSouls, type RenderOptions } from './render.ts';
export { expiryCutoff } from './settings.ts';
export { similarity } from './similarity.ts';
export { clusterBy, textSimilarity } from './similarity-modes.ts';
export { lexicalSimilarity } from './lexical.ts';
export { VECTOR_WEIGHT } from './provided.ts';
export {
  awaitEmbeddings,
  BUILTIN_MODEL,
  checkEmbeddingModel,
  circuitStates,
  contentHash,
  DEFAULT_MAX_QUEUE,
  EMBED_BATCH,
  EmbedError,
  embedFailureReasons,
  reindexEmbeddings,
  SEMANTIC_DIMENSION,
  stopSentenceEncoder,
  type CircuitState,
  type EmbedFailureReason,
  type Embedder,
  type EmbedderObserver,
  type ReindexProgress,
  type ReindexResult,
} from './semantic.ts';
export { soulHealth, traitSignals, type TraitSignals } from './signals.ts';
export { orderedActiveTraits, orderForRender, renderBlock } from './render.ts';
export { cleanText, normalizeContent } from './normalize.ts';
export { getSoulDocument, MAX_DOCUMENT_BYTES, storeSoulDocument, type SoulDocumentInput } from './documents.ts';
export {
  buildEvidenceReport,
  formatEvidence,
  suggestedActionKinds,
  type EvidenceOptions,
  type EvidenceReport,
  type EvidenceWork,
  type ShardCluster,
  type SuggestedAction,
  type SuggestedActionKind,
  type TraitPair,
  type Trend,
} from './evidence.ts';
export {
  assignThemes,
  DEFAULT_THEME_ACTOR,
  getCounterEvidence,
  getShardThemes,
  getTheme,
  getThemeHistory,
  getThemes,
  listThemes,
  listThemesOfSouls,
  opposeTrait,
  renameTheme,
  unassignShards,
  unopposeTrait,
  requireThemeName,
  validThemeAssignments,
  type AssignThemesResult,
  type ThemeActorOptions,
  type ThemeAssignment,
} from './themes.ts';
