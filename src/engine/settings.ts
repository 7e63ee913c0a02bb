import { ValidationError } from './errors.ts';

/** How shard and trait texts are compared (docs/evidence.md, "Similarity modes"). */
export const similarityModes = ['trigram', 'lexical', 'provided', 'semantic'] as const;
export type SimilarityMode = (typeof similarityModes)[number];

/**
 * Each mode's clustering threshold when `clusteringThreshold` is not set: trigram keeps the seed's 0.4;
 * lexical's is the paraphrase corpus's choice (bench/paraphrase.ts: the best adjusted Rand index of the
 * sweep among thresholds whose largest cluster is no larger than the largest labelled theme); provided's
 * is chosen the same way on synthetic vectors over that corpus (bench/provided.ts); semantic's the same way
 * with the sentence encoder's vectors of the corpus (bench/semantic.ts).
 */
export const defaultClusteringThresholds: Record<SimilarityMode, number> = { trigram: 0.4, lexical: 0.06, provided: 0.25, semantic: 0.425 };

/**
 * Each mode's `redundancyThreshold` (alignment: a cluster REINFORCES a principle at least this similar) when it
 * is not set: trigram keeps the seed's 0.3; lexical's is bench/lexical-variants.ts's choice on the paraphrase
 * corpus (the most records REINFORCING their own theme's principle net of those REINFORCING another theme's and
 * of singletons aligned). Provided and semantic compare principles lexically, so they share lexical's. `consolidationThreshold`
 * stays 0.3 in every mode: there it flags no pair of principles of different themes, and lower values add none of one theme.
 */
export const defaultRedundancyThresholds: Record<SimilarityMode, number> = { trigram: 0.3, lexical: 0.2, provided: 0.2, semantic: 0.2 };

/**
 * Each mode's linkage: trigram keeps the seed's single linkage; lexical, provided and semantic use complete linkage, which
 * the same rule preferred to average linkage on the paraphrase corpus and which bounds a cluster by its worst pair.
 */
export const clusteringLinkages: Record<SimilarityMode, 'single' | 'average' | 'complete'> = { trigram: 'single', lexical: 'complete', provided: 'complete', semantic: 'complete' };

/** The engine's knobs (SPEC §10). Source diversity >= 2 and age spread > 1 day are fixed, not knobs. */
export type Knobs = {
  similarity: SimilarityMode;
  traitLimit: number;
  crystallizationThreshold: number;
  shardExpiryDays: number;
  shardFadeCitations: number;
  shardRelevanceHalfLife: number;
  clusteringThreshold: number;
  staleDays: number;
  redundancyThreshold: number;
  consolidationThreshold: number;
  /** A trait is a promotion candidate only once it is at least this many days old (SPEC §13). */
  promotionTenureDays: number;
};

/** Input size bounds (SPEC §11). Texts are measured in UTF-8 bytes, tags in characters. */
export type Bounds = {
  maxShardContentBytes: number;
  maxTagLength: number;
  maxTagsPerShard: number;
  maxPrincipleBytes: number;
  maxProvenanceBytes: number;
  maxEssenceBytes: number;
  maxBatchSize: number;
  maxNameLength: number;
  maxDescriptionBytes: number;
  maxSourceLength: number;
  /** Clustering (the gate's condition 2 and the report's clusters) covers at most this many of a soul's shards, the most recently dropped. */
  maxClusteredShards: number;
  /** Themes a soul may hold, like traitLimit for traits: a judgement that would create one more is refused. */
  maxThemesPerSoul: number;
  /** The longest shard embedding accepted (similarity `provided`). */
  maxEmbeddingDimension: number;
  /** MiB of shard data kept in memory between requests (the clustering memo and the evidence cache), least recently used first out. */
  maxCacheMegabytes: number;
};

export type Settings = Knobs & Bounds;

export const defaultKnobs: Knobs = {
  similarity: 'trigram',
  traitLimit: 10,
  crystallizationThreshold: 3,
  shardExpiryDays: 120,
  shardFadeCitations: 2,
  shardRelevanceHalfLife: 60,
  clusteringThreshold: defaultClusteringThresholds.trigram,
  staleDays: 90,
  redundancyThreshold: 0.3,
  consolidationThreshold: 0.3,
  promotionTenureDays: 7,
};

export const defaultBounds: Bounds = {
  maxShardContentBytes: 8 * 1024,
  maxTagLength: 64,
  maxTagsPerShard: 32,
  maxPrincipleBytes: 2 * 1024,
  maxProvenanceBytes: 16 * 1024,
  maxEssenceBytes: 64 * 1024,
  maxBatchSize: 10_000,
  maxNameLength: 200,
  maxDescriptionBytes: 4 * 1024,
  maxSourceLength: 128,
  // Exact single linkage is all-pairs on adversarial low-variety text: 2,000 shards bound that work to about 2 million pairs.
  maxClusteredShards: 2_000,
  // Each theme is a cluster of the report and a list a soul's readers page through: a hundred is more than one refiner names.
  maxThemesPerSoul: 100,
  // 4,096 covers the common embedding models (16 KiB stored per shard).
  maxEmbeddingDimension: 4096,
  // Chosen by bench/server-memory.ts and bench/growth.ts: see docs/performance.md.
  maxCacheMegabytes: 96,
};

export const defaultSettings: Settings = { ...defaultKnobs, ...defaultBounds };

type Rule = { kind: 'int' | 'number'; min: number; max: number; minExclusive?: boolean };

const positiveInt: Rule = { kind: 'int', min: 1, max: 1_000_000_000 };
const fraction: Rule = { kind: 'number', min: 0, max: 1 };

type NumericSetting = Exclude<keyof Settings, 'similarity'>;

const rules: Record<NumericSetting, Rule> = {
  traitLimit: { kind: 'int', min: 1, max: 1000 },
  crystallizationThreshold: positiveInt,
  shardExpiryDays: positiveInt,
  shardFadeCitations: positiveInt,
  shardRelevanceHalfLife: { kind: 'number', min: 0, max: 1_000_000, minExclusive: true },
  clusteringThreshold: { kind: 'number', min: 0, max: 1, minExclusive: true },
  staleDays: positiveInt,
  redundancyThreshold: fraction,
  consolidationThreshold: fraction,
  promotionTenureDays: { kind: 'number', min: 0, max: 1_000_000 },
  maxShardContentBytes: positiveInt,
  maxTagLength: positiveInt,
  maxTagsPerShard: positiveInt,
  maxPrincipleBytes: positiveInt,
  maxProvenanceBytes: positiveInt,
  maxEssenceBytes: positiveInt,
  maxBatchSize: positiveInt,
  maxNameLength: positiveInt,
  maxDescriptionBytes: positiveInt,
  maxSourceLength: positiveInt,
  maxClusteredShards: { kind: 'int', min: 2, max: 1_000_000 },
  maxThemesPerSoul: { kind: 'int', min: 1, max: 100_000 },
  maxEmbeddingDimension: { kind: 'int', min: 1, max: 16_384 },
  maxCacheMegabytes: { kind: 'int', min: 1, max: 1_000_000 },
};

export const settingNames: (keyof Settings)[] = ['similarity', ...(Object.keys(rules) as NumericSetting[])];

function checkSimilarity(value: unknown): SimilarityMode {
  if (typeof value === 'string' && (similarityModes as readonly string[]).includes(value)) return value as SimilarityMode;
  throw new ValidationError('similarity', `must be one of ${similarityModes.join(', ')}, got ${JSON.stringify(value)}`);
}

function checkSetting(name: NumericSetting, value: unknown): number {
  const rule = rules[name];
  const range = `${rule.minExclusive ? '>' : '>='} ${rule.min} and <= ${rule.max}`;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ValidationError(name, `must be a number ${range}, got ${JSON.stringify(value)}`);
  }
  if (rule.kind === 'int' && !Number.isInteger(value)) {
    throw new ValidationError(name, `must be a whole number, got ${value}`);
  }
  const tooLow = rule.minExclusive ? value <= rule.min : value < rule.min;
  if (tooLow || value > rule.max) throw new ValidationError(name, `must be ${range}, got ${value}`);
  return value;
}

/** Where the clustering threshold in force came from: a setting, the mode's default, or `souls calibrate`'s choice stored in the database. */
export type ClusteringThresholdSource = 'setting' | 'default' | 'calibrated';

/**
 * Resolved settings whose threshold nobody set. Kept beside the objects rather than in them, so that resolving
 * them again (config → openSoulsDb) keeps the threshold open to a calibration, while a copy with any changes
 * (`{ ...settings, … }`) counts as set, as it always has.
 */
const thresholdSources = new WeakMap<Settings, ClusteringThresholdSource>();

export function clusteringThresholdSource(settings: Settings): ClusteringThresholdSource {
  return thresholdSources.get(settings) ?? 'setting';
}

/** The settings with a threshold `souls calibrate` chose for this database. */
export function withCalibratedThreshold(settings: Settings, threshold: number): Settings {
  const calibrated = Object.freeze({ ...settings, clusteringThreshold: checkSetting('clusteringThreshold', threshold) });
  thresholdSources.set(calibrated, 'calibrated');
  return calibrated;
}

/**
 * Defaults overlaid with `overrides`, every value checked; a bad or unknown one throws naming the knob.
 * Without a `clusteringThreshold` or `redundancyThreshold`, each is the similarity mode's own default.
 */
export function resolveSettings(overrides: Partial<Record<string, unknown>> = {}): Settings {
  const settings: Settings = { ...defaultSettings };
  const reresolved = thresholdSources.get(overrides as Settings);
  if (reresolved !== undefined && reresolved !== 'setting') overrides = { ...overrides, clusteringThreshold: undefined };
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    if (name === 'similarity') settings.similarity = checkSimilarity(value);
    else if (Object.hasOwn(rules, name)) settings[name as NumericSetting] = checkSetting(name as NumericSetting, value);
    else throw new ValidationError(name, `unknown setting (known: ${settingNames.join(', ')})`);
  }
  if (overrides.clusteringThreshold === undefined) settings.clusteringThreshold = defaultClusteringThresholds[settings.similarity];
  if (overrides.redundancyThreshold === undefined) settings.redundancyThreshold = defaultRedundancyThresholds[settings.similarity];
  const resolved = Object.freeze(settings);
  if (overrides.clusteringThreshold === undefined) thresholdSources.set(resolved, 'default');
  return resolved;
}

/** Shards created at or before this moment are past `shardExpiryDays` and left out of every read (never deleted). */
export function expiryCutoff(db: { readonly settings: Pick<Settings, 'shardExpiryDays'> }, now: number): number {
  return now - db.settings.shardExpiryDays * 86_400_000;
}
