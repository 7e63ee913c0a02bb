/**
 * Calibration: the clustering threshold that fits this database's similarity mode (and, for vectors, its model),
 * chosen from labelled data the user already has: the themes a refiner assigned, or a labelled JSONL file
 * (docs/calibrate.md). The rule is the bench's (bench/paraphrase.ts uses this one): sweep thresholds, cluster the
 * labelled texts with the engine's own clustering at each, and keep the best adjusted Rand index among the
 * thresholds whose largest cluster is no larger than the largest label.
 */
import { usesVectors } from './cluster-memo.ts';
import { InvalidStateError, ValidationError } from './errors.ts';
import { exceedsUtf8Bytes, normalizeContent } from './normalize.ts';
import { decodeEmbedding, encodeEmbedding } from './provided.ts';
import { BUILTIN_MODEL, contentHash } from './semantic.ts';
import { clusteringThresholdSource, defaultClusteringThresholds, withCalibratedThreshold, type ClusteringThresholdSource, type Settings, type SimilarityMode } from './settings.ts';
import { clusterBy } from './similarity-modes.ts';
import type { SoulsDb } from './souls-db.ts';
import { PROVIDED_MODEL, type SoulsStore, type StoredCalibration } from '../store/store.ts';

const pairs = (k: number): number => (k * (k - 1)) / 2;

/**
 * Adjusted Rand index (Hubert & Arabie 1985) of two labellings of the same
 * items: (Σ C(nᵢⱼ,2) − E) / (½(Σ C(aᵢ,2) + Σ C(bⱼ,2)) − E), with
 * E = Σ C(aᵢ,2) · Σ C(bⱼ,2) / C(n,2). 1 for identical partitions, about 0 for
 * chance agreement, negative below chance. When the denominator is 0 (both
 * labellings all singletons, or both one cluster) the partitions are
 * identical and the index is 1.
 */
export function adjustedRandIndex(truth: readonly (string | number)[], predicted: readonly (string | number)[]): number {
  if (truth.length !== predicted.length) throw new RangeError('adjustedRandIndex: labellings differ in length');
  const n = truth.length;
  const cells = new Map<string, number>();
  const rows = new Map<string | number, number>();
  const cols = new Map<string | number, number>();
  for (let i = 0; i < n; i++) {
    const key = JSON.stringify([truth[i], predicted[i]]);
    cells.set(key, (cells.get(key) ?? 0) + 1);
    rows.set(truth[i], (rows.get(truth[i]) ?? 0) + 1);
    cols.set(predicted[i], (cols.get(predicted[i]) ?? 0) + 1);
  }
  let index = 0;
  for (const c of cells.values()) index += pairs(c);
  let sumRows = 0;
  for (const a of rows.values()) sumRows += pairs(a);
  let sumCols = 0;
  for (const b of cols.values()) sumCols += pairs(b);
  const expected = n < 2 ? 0 : (sumRows * sumCols) / pairs(n);
  const max = (sumRows + sumCols) / 2;
  if (max === expected) return 1;
  return (index - expected) / (max - expected);
}

/** What the choice looks at in one row of a sweep; `hardNegativesMerged` (theme pairs known to be distinct, merged) breaks ties when known. */
export type SweepFigures = { ari: number; largestCluster: number; hardNegativesMerged?: number };

/**
 * How a threshold is chosen from a sweep (rows in ascending threshold): the best adjusted Rand index (to three
 * places) among thresholds whose largest cluster holds no more texts than the largest label (a threshold that
 * pleases ARI by building clusters larger than any theme is merging unrelated texts); when none fits, the best of
 * all. Ties go to the fewest hard-negative theme pairs merged, then to the lowest threshold.
 */
export function chooseThreshold<T>(rows: readonly T[], largestLabel: number, figures: (row: T) => SweepFigures): T {
  if (rows.length === 0) throw new RangeError('chooseThreshold: no sweep rows');
  const fitting = rows.filter((r) => figures(r).largestCluster <= largestLabel);
  const key = (r: T) => Math.round(figures(r).ari * 1000);
  const negatives = (r: T) => figures(r).hardNegativesMerged ?? 0;
  return (fitting.length > 0 ? fitting : rows).reduce((best, row) =>
    key(row) > key(best) || (key(row) === key(best) && negatives(row) < negatives(best)) ? row : best,
  );
}

/** Thresholds from..to (inclusive) by step, rounded to avoid 0.30000000000000004. */
export function thresholdRange(from: number, to: number, step: number): number[] {
  const out: number[] = [];
  for (let k = 0; from + k * step <= to + 1e-9; k++) out.push(Math.round((from + k * step) * 1000) / 1000);
  return out;
}

/**
 * The thresholds `souls calibrate` tries: fine at the bottom, where lexical cosines of paraphrases sit, then every
 * 0.025 up to 0.95, where the cosines of models with a high baseline (most hosted embedding models) separate.
 */
export const CALIBRATION_THRESHOLDS: readonly number[] = [...thresholdRange(0.01, 0.09, 0.01), ...thresholdRange(0.1, 0.95, 0.025)];

/** Calibrating needs at least this many labelled texts, in at least MIN_CALIBRATION_LABELS labels of two or more. */
export const MIN_CALIBRATION_TEXTS = 10;
export const MIN_CALIBRATION_LABELS = 2;

/** One labelled text; `label` null is a text of its own (a singleton, as in the paraphrase corpus). `embedding` for vector modes. */
export type LabelledText = { text: string; label: string | null; embedding?: readonly number[] | null };

/** One row of the sweep: the partition of the labelled texts at `threshold`, scored against the labels. */
export type CalibrationRow = { threshold: number; ari: number; clusters: number; largestCluster: number };

export type Calibration = {
  mode: SimilarityMode;
  /** What the choice is stored under: the mode, and for vector modes the vectors' model and dimension (calibrationKey). */
  key: string;
  from: 'themes' | 'labels';
  /** Labelled texts, labels (themes) of two or more, the largest label, and how many texts carried a vector. */
  texts: number;
  labels: number;
  largestLabel: number;
  withVectors: number;
  sweep: CalibrationRow[];
  chosen: CalibrationRow;
  defaultThreshold: number;
  /** The threshold the database was opened with, and where it came from. */
  current: { threshold: number; source: ClusteringThresholdSource };
};

/**
 * Where a mode's calibrated threshold is kept: trigram and lexical per mode; provided and semantic per mode, model
 * and vector dimension, since another model's cosines are on another scale. `model` is the one the database's
 * vectors are bound to (null: recorded by none, i.e. the built-in encoder's or callers'); with no dimension (no
 * vector stored yet) nothing applies.
 */
export function calibrationKey(mode: SimilarityMode, dimension: number | null, model: string | null): string | null {
  if (!usesVectors(mode)) return mode;
  if (dimension === null) return null;
  return `${mode}:${model ?? (mode === 'semantic' ? BUILTIN_MODEL : PROVIDED_MODEL)}:${dimension}d`;
}

/** `f` of a store's answer, whether the store answered at once (SQLite) or with a promise. */
const afterAnswer = <T, U>(answer: T | Promise<T>, f: (value: T) => U | Promise<U>): U | Promise<U> => (answer instanceof Promise ? answer.then(f) : f(answer));

/**
 * The threshold `souls calibrate` stored for these settings' mode (and the database's vector dimension), or null:
 * none stored, or the settings set their own. At once from a synchronous store, as a promise from an asynchronous one.
 */
export function storedThreshold(store: SoulsStore, settings: Settings): number | null | Promise<number | null> {
  if (clusteringThresholdSource(settings) !== 'default') return null;
  const mode = settings.similarity;
  const lookup = (dimension: number | null, model: string | null) => {
    const key = calibrationKey(mode, dimension, model);
    return key === null ? null : afterAnswer(store.getCalibration(key), (stored) => stored?.threshold ?? null);
  };
  if (!usesVectors(mode)) return lookup(null, null);
  return afterAnswer(store.embeddingDimension(), (dimension) => afterAnswer(store.embeddingModel(), (model) => lookup(dimension, model)));
}

/** The settings to open with: a calibrated threshold replaces the mode's default, never one that was set. */
export function withStoredThreshold(settings: Settings, threshold: number | null): Settings {
  return threshold === null || clusteringThresholdSource(settings) !== 'default' ? settings : withCalibratedThreshold(settings, threshold);
}

type LabelBounds = Pick<Settings, 'maxShardContentBytes' | 'maxEmbeddingDimension' | 'maxClusteredShards'>;

/**
 * The longest line a labelled file may hold, in characters: the longest text (four times maxShardContentBytes
 * before normalization) with every character escaped as \uXXXX, the longest vector at 32 characters a number, and
 * its keys. A longer line stops the reading, so a file without line breaks is never held whole.
 */
export function maxLabelledLineLength(settings: Pick<LabelBounds, 'maxShardContentBytes' | 'maxEmbeddingDimension'>): number {
  return settings.maxShardContentBytes * 4 * 6 + settings.maxEmbeddingDimension * 32 + 1_024;
}

/** One line of a labelled file as a labelled text, or null for a blank line; a bad line is a ValidationError naming it. */
function parseLabelledLine(raw: string, field: string, settings: LabelBounds): LabelledText | null {
  const line = raw.trim();
  if (line === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    throw new ValidationError(field, `is not JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ValidationError(field, 'must be a JSON object with "text" and "label"');
  const { text, label, embedding, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new ValidationError(field, `has an unknown key "${unknown[0]}" (known: text, label, embedding)`);
  if (typeof text !== 'string') throw new ValidationError(`${field}.text`, 'must be a string');
  if (label !== null && (typeof label !== 'string' || label.trim() === '')) throw new ValidationError(`${field}.label`, 'must be a non-empty string, or null for a text that belongs with no other');
  if (embedding !== undefined && embedding !== null) encodeEmbedding(`${field}.embedding`, embedding, settings.maxEmbeddingDimension);
  return { text, label: label === null ? null : label.trim(), embedding: (embedding ?? null) as number[] | null };
}

/** Gathers a file's labelled texts line by line; the one past maxClusteredShards is refused, so reading stops there. */
function labelledLines(settings: LabelBounds) {
  const texts: LabelledText[] = [];
  let lines = 0;
  return {
    texts,
    add(raw: string): void {
      const field = `line ${++lines}`;
      if (raw.length > maxLabelledLineLength(settings)) throw new ValidationError(field, `is longer than ${maxLabelledLineLength(settings)} characters, more than the longest text and vector need`);
      const item = parseLabelledLine(raw, field, settings);
      if (item === null) return;
      texts.push(item);
      if (texts.length > settings.maxClusteredShards) throw new ValidationError(field, `one labelled text too many: calibration clusters at most ${settings.maxClusteredShards} (maxClusteredShards); the file is read no further`);
    },
    get next(): string {
      return `line ${lines + 1}`;
    },
  };
}

/**
 * Reads a labelled JSONL file: one object a line, `{"text": "…", "label": "…" | null, "embedding": [numbers]?}`;
 * blank lines are skipped. A bad line is a ValidationError naming it (`line 7`), nothing else read.
 */
export function parseLabelledJsonl(content: string, settings: LabelBounds): LabelledText[] {
  const labels = labelledLines(settings);
  for (const raw of content.split('\n')) labels.add(raw);
  return labels.texts;
}

/**
 * parseLabelledJsonl over a stream (a file's chunks, as bytes of UTF-8 or strings), read as it arrives: reading
 * stops at the first bad line, at the labelled text past maxClusteredShards and at a line longer than
 * maxLabelledLineLength, so no more than one line and the texts kept are ever held, however large the file.
 */
export async function readLabelledJsonl(source: AsyncIterable<Uint8Array | string>, settings: LabelBounds): Promise<LabelledText[]> {
  const labels = labelledLines(settings);
  const longest = maxLabelledLineLength(settings);
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of source) {
    const text = pending + (typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0; start = end + 1, end = text.indexOf('\n', start)) labels.add(text.slice(start, end));
    pending = text.slice(start);
    if (pending.length > longest) throw new ValidationError(labels.next, `is longer than ${longest} characters, more than the longest text and vector need`);
  }
  labels.add(pending + decoder.decode());
  return labels.texts;
}

/** The texts of one clustering (a soul's shards, or the whole file), each with its truth and vector. */
type Group = { texts: string[]; truth: string[]; vectors: (Float32Array | null)[] };

/**
 * Chooses the clustering threshold for the database's similarity mode from `labels`, or from the themes the
 * refiners assigned when none are given (each soul's assigned shards clustered as the engine clusters that soul,
 * the most recent maxClusteredShards of them). Nothing is stored: storeCalibration does that.
 */
export async function calibrateThreshold(db: SoulsDb, options: { labels?: readonly LabelledText[] } = {}): Promise<Calibration> {
  const mode = db.settings.similarity;
  const from = options.labels === undefined ? 'themes' : 'labels';
  const groups = from === 'themes' ? await themeGroups(db) : await labelGroups(db, options.labels!);
  const dimension = (await db.store.embeddingDimension()) ?? groups.flatMap((g) => g.vectors).find((v) => v !== null)?.length ?? null;
  const truth = groups.flatMap((g) => g.truth);
  const sizes = new Map<string, number>();
  for (const t of truth) sizes.set(t, (sizes.get(t) ?? 0) + 1);
  const labels = [...sizes.values()].filter((n) => n >= 2).length;
  const what = from === 'themes' ? 'shards assigned to themes' : 'labelled lines';
  if (truth.length < MIN_CALIBRATION_TEXTS || labels < MIN_CALIBRATION_LABELS) {
    throw new InvalidStateError(
      `calibration needs at least ${MIN_CALIBRATION_TEXTS} ${what} in at least ${MIN_CALIBRATION_LABELS} ${from === 'themes' ? 'themes' : 'labels'} of two or more; ` +
        `found ${truth.length} in ${labels}` + (from === 'themes' ? ' (assign more with theme_assign or assignThemes, or give a labelled file)' : ''),
    );
  }
  const withVectors = groups.reduce((n, g) => n + g.vectors.filter((v) => v !== null).length, 0);
  if (usesVectors(mode) && withVectors === 0) {
    throw new InvalidStateError(
      mode === 'semantic'
        ? 'similarity semantic calibrates its vectors, and none of the labelled shards has one yet: run `souls reindex` first'
        : `similarity provided calibrates your model's vectors, and none of the ${what} has one: ${from === 'themes' ? 'drop shards with their embedding' : 'give "embedding" on the lines'}`,
    );
  }
  const sweep = CALIBRATION_THRESHOLDS.map((threshold): CalibrationRow => {
    const predicted: string[] = [];
    let clusters = 0;
    let largestCluster = 0;
    groups.forEach((group, g) => {
      const partition = clusterBy(mode, group.texts, threshold, group.vectors);
      const labelOf = new Array<string>(group.texts.length);
      partition.forEach((members, c) => {
        for (const i of members) labelOf[i] = `${g}:${c}`;
        largestCluster = Math.max(largestCluster, members.length);
      });
      clusters += partition.length;
      predicted.push(...labelOf);
    });
    return { threshold, ari: Math.round(adjustedRandIndex(truth, predicted) * 1e6) / 1e6, clusters, largestCluster };
  });
  const largestLabel = Math.max(...sizes.values());
  return {
    mode,
    key: calibrationKey(mode, dimension, (await db.store.embeddingModel()) ?? (mode === 'semantic' ? (db.semantic?.embedder.model ?? null) : null))!,
    from,
    texts: truth.length,
    labels,
    largestLabel,
    withVectors,
    sweep,
    chosen: chooseThreshold(sweep, largestLabel, (row) => row),
    defaultThreshold: defaultClusteringThresholds[mode],
    current: { threshold: db.settings.clusteringThreshold, source: db.clusteringThresholdSource },
  };
}

/** Keeps the calibration's choice in the database: opened without a clusteringThreshold, it clusters at that threshold. */
export async function storeCalibration(db: SoulsDb, calibration: Calibration): Promise<StoredCalibration> {
  const stored: StoredCalibration = {
    threshold: calibration.chosen.threshold,
    ari: calibration.chosen.ari,
    from: calibration.from,
    texts: calibration.texts,
    labels: calibration.labels,
    calibratedAt: db.clock.now(),
  };
  await db.store.putCalibration(calibration.key, stored);
  return stored;
}

/** The calibration stored for the database's mode (and vector model and dimension), or null. */
export async function getStoredCalibration(db: SoulsDb): Promise<StoredCalibration | null> {
  const mode = db.settings.similarity;
  const key = usesVectors(mode) ? calibrationKey(mode, await db.store.embeddingDimension(), await db.store.embeddingModel()) : mode;
  return key === null ? null : db.store.getCalibration(key);
}

async function themeGroups(db: SoulsDb): Promise<Group[]> {
  const souls = [...(await db.store.listSouls({ dormant: false })), ...(await db.store.listSouls({ dormant: true }))].sort((a, b) => a.id - b.id);
  const themes = await db.store.listThemes(souls.map((s) => s.id));
  const bySoul = new Map<number, Array<{ shardId: number; themeId: number }>>();
  for (const theme of themes) {
    const members = bySoul.get(theme.soulId) ?? [];
    for (const shardId of theme.memberIds) members.push({ shardId, themeId: theme.id });
    bySoul.set(theme.soulId, members);
  }
  const groups: Group[] = [];
  for (const members of bySoul.values()) {
    // As the gate does: the most recently dropped maxClusteredShards.
    const kept = members.sort((a, b) => a.shardId - b.shardId).slice(-db.settings.maxClusteredShards);
    const ids = kept.map((m) => m.shardId);
    const contents = await db.store.shardContents(ids);
    const embeddings = usesVectors(db.settings.similarity) ? await db.store.shardEmbeddings(ids) : new Map<number, Uint8Array>();
    groups.push({
      texts: ids.map((id) => contents.get(id) ?? ''),
      truth: kept.map((m) => `theme ${m.themeId}`),
      vectors: ids.map((id) => (embeddings.has(id) ? decodeEmbedding(embeddings.get(id)!) : null)),
    });
  }
  return groups;
}

async function labelGroups(db: SoulsDb, labels: readonly LabelledText[]): Promise<Group[]> {
  const mode = db.settings.similarity;
  const stored = await db.store.embeddingDimension();
  let dimension = stored;
  const texts = labels.map((item, i) => {
    const field = `line ${i + 1}`;
    if (exceedsUtf8Bytes(item.text, db.settings.maxShardContentBytes * 4)) throw new ValidationError(`${field}.text`, `must be at most ${db.settings.maxShardContentBytes} bytes`);
    const text = normalizeContent(item.text);
    if (text === '') throw new ValidationError(`${field}.text`, 'must not be empty once whitespace and punctuation noise are removed');
    if (exceedsUtf8Bytes(text, db.settings.maxShardContentBytes)) throw new ValidationError(`${field}.text`, `must be at most ${db.settings.maxShardContentBytes} bytes`);
    return text;
  });
  const vectors = labels.map((item, i): Float32Array | null => {
    if (item.embedding === undefined || item.embedding === null) return null;
    const field = `line ${i + 1}.embedding`;
    if (!usesVectors(mode)) throw new ValidationError(field, `similarity ${mode} compares texts only: calibrate with similarity provided, or leave "embedding" out`);
    const vector = decodeEmbedding(encodeEmbedding(field, item.embedding, db.settings.maxEmbeddingDimension));
    if (dimension !== null && vector.length !== dimension) {
      throw new ValidationError(field, `must have ${dimension} numbers, ${stored === null ? 'the dimension of the lines before it' : "the dimension of this database's embeddings"}, got ${vector.length}`);
    }
    dimension = vector.length;
    return vector;
  });
  if (mode === 'semantic') await embedUnvectored(db, texts, vectors);
  return [{ texts, truth: labels.map((item, i) => (item.label === null ? `single ${i}` : `label ${item.label}`)), vectors }];
}

/**
 * Semantic: the vectors of the labelled texts that brought none, from the source the database embeds its shards
 * with (its endpoint, or the built-in encoder), in the embedder's batches; a text with a stored vector reuses it.
 * A line's own vector must have the model's dimension.
 */
async function embedUnvectored(db: SoulsDb, texts: readonly string[], vectors: (Float32Array | null)[]): Promise<void> {
  const semantic = db.semantic!;
  const missing = [...new Set(texts.filter((_, i) => vectors[i] === null))];
  const byHash = new Map<string, Uint8Array>();
  for (let start = 0; start < missing.length; start += semantic.embedder.batchSize) {
    for (const [hash, bytes] of await semantic.vectorsOf(db, missing.slice(start, start + semantic.embedder.batchSize))) byHash.set(hash, bytes);
  }
  const own = vectors.findIndex((v) => v !== null);
  texts.forEach((text, i) => {
    if (vectors[i] !== null) return;
    vectors[i] = decodeEmbedding(byHash.get(contentHash(text))!);
    if (own >= 0 && vectors[i].length !== vectors[own]!.length) {
      throw new ValidationError(`line ${own + 1}.embedding`, `must have ${vectors[i].length} numbers, the dimension of the model "${semantic.embedder.model}", got ${vectors[own]!.length}`);
    }
  });
}
