/**
 * The `lexical` similarity: TF-IDF cosine over words, and exact average-linkage
 * clustering that does not chain.
 *
 * A text's terms are its words (Unicode letters, marks and digits; NFKC,
 * lowercased), English stop words dropped, each stemmed with Porter2
 * (Snowball English); a negative contraction ("don't", "can't") counts as
 * "not", and negations and quantifiers are kept, so "too many tests" and "no
 * tests" stay apart. Character 4-grams of the words (unstemmed) can be mixed
 * in with a weight (CHAR_WEIGHT, 0 by default: see there).
 * Weights are sublinear tf (1 + ln tf) times smoothed IDF over the pool being
 * compared, ln((1 + N) / (1 + df)) + 1; each part is L2-normalized, so the
 * cosine of two texts is (1 − w)·words + w·grams, in [0, 1].
 * Term ids follow first occurrence and every dot product sums in ascending id
 * order: the same pool gives the same bits on every run.
 */
import stem from 'wink-porter2-stemmer';
import { runSteps, type Steps } from './slices.ts';

/**
 * Share of the cosine that comes from character 4-grams: none. On the paraphrase corpus they did not measurably
 * help (bench/lexical-variants.ts: ARI 0.069 with a share of 0.3, 0.062 without, the same nearest neighbours),
 * and on text over one vocabulary they multiply the pairs' common terms, hence clustering time, about tenfold.
 * Kept as a parameter of lexicalVectors and textTerms for the bench's sweep.
 */
export const CHAR_WEIGHT = 0;
const CHAR_GRAM = 4;

/** Relative tolerance so that a similarity computed as exactly the threshold meets it (as for trigrams). */
export const THRESHOLD_TOLERANCE = 1e-9;

export function meetsCosine(value: number, threshold: number): boolean {
  return value >= threshold * (1 - THRESHOLD_TOLERANCE);
}

// English function words. Negations (no, not, nor, never, without) and quantifiers (all, few, many, more, most,
// much, too, very, only, less, same) are deliberately absent: they are what tells hard negatives apart.
const STOP_WORDS = new Set(
  `a about above after again against am an and are as at be because been before being below between both but by
  could did do does doing down during each for from further had has have having he her here hers herself him himself
  his how i if in into is it its itself just let me my myself of off on once or other ought our ours ourselves out
  over own she should so some such than that the their theirs them themselves then there these they this those
  through to under until up upon us was we were what when where which while who whom why will with would you your
  yours yourself yourselves also can may might must shall via it's i'm i've i'd i'll you're you've you'd you'll
  he's she's we're we've we'd we'll they're they've they'd they'll that's there's here's what's who's let's`
    .split(/\s+/)
    .filter(Boolean),
);

const WORD = /[\p{L}\p{M}\p{N}]+(?:['’][\p{L}\p{M}\p{N}]+)*/gu;
const LATIN_WORD = /^[a-z']+$/;

/** The words of a text as they are weighed: stop words dropped, negative contractions as "not", the rest unstemmed. */
export function lexicalWords(text: string): string[] {
  const words: string[] = [];
  for (const match of text.normalize('NFKC').toLowerCase().matchAll(WORD)) {
    const word = match[0].replace(/’/g, "'");
    if (word.endsWith("n't")) words.push('not');
    else if (!STOP_WORDS.has(word)) words.push(word.endsWith("'s") ? word.slice(0, -2) : word);
  }
  return words;
}

/** Stems of words seen recently: Porter2 was most of an evidence report's time (its counter-evidence hints). Cleared when full. */
const stems = new Map<string, string>();
const STEM_CACHE_SIZE = 50_000;

/** The stem of a word: Porter2 for Latin-letter words, the word itself otherwise (other scripts, numbers). */
export function stemWord(word: string): string {
  let stemmed = stems.get(word);
  if (stemmed === undefined) {
    stemmed = LATIN_WORD.test(word) ? stem(word) : word;
    if (stems.size >= STEM_CACHE_SIZE) stems.clear();
    stems.set(word, stemmed);
  }
  return stemmed;
}

type WordTerms = { stemKey: string; gramKeys: string[] };
/** Words seen recently, with their term keys: stemming is most of the cost of a vector. Cleared when full. */
const wordTerms = new Map<string, WordTerms>();
const WORD_CACHE_SIZE = 50_000;

function termsOf(word: string): WordTerms {
  let terms = wordTerms.get(word);
  if (terms === undefined) {
    const chars = Array.from(`_${word}_`);
    const gramKeys: string[] = [];
    for (let k = 0; k + CHAR_GRAM <= chars.length; k++) gramKeys.push(`c:${chars.slice(k, k + CHAR_GRAM).join('')}`);
    terms = { stemKey: `w:${stemWord(word)}`, gramKeys };
    if (wordTerms.size >= WORD_CACHE_SIZE) wordTerms.clear();
    wordTerms.set(word, terms);
  }
  return terms;
}

/** A sparse L2-normalized vector: term ids ascending, with their weights. */
export type SparseVector = { ids: Int32Array; weights: Float64Array };

/**
 * A text's distinct terms in order of first occurrence (a word's stem, then its 4-grams), as ids of some
 * dictionary, with their counts and whether each is a gram. It does not depend on any pool: a memo can keep it per shard.
 */
export type TextTerms = { ids: Int32Array; counts: Int32Array; isGram: Uint8Array };

/** The terms of a text under `dictionary` (term key → id; new keys get the next id). */
export function textTerms(text: string, dictionary: Map<string, number>, charWeight = CHAR_WEIGHT): TextTerms {
  const count = new Map<number, number>();
  const gram = new Map<number, boolean>();
  const add = (key: string, isGram: boolean) => {
    let id = dictionary.get(key);
    if (id === undefined) {
      id = dictionary.size;
      dictionary.set(key, id);
    }
    count.set(id, (count.get(id) ?? 0) + 1);
    gram.set(id, isGram);
  };
  for (const word of lexicalWords(text)) {
    const terms = termsOf(word);
    add(terms.stemKey, false);
    if (charWeight === 0) continue;
    for (const key of terms.gramKeys) add(key, true);
  }
  return { ids: Int32Array.from(count.keys()), counts: Int32Array.from(count.values()), isGram: Uint8Array.from(gram.values(), Number) };
}

/** TF-IDF vectors of the texts, IDF smoothed over these texts (the pool being compared). */
export function lexicalVectors(texts: readonly string[], charWeight = CHAR_WEIGHT): SparseVector[] {
  const dictionary = new Map<string, number>();
  return vectorsOfTerms(
    texts.map((text) => textTerms(text, dictionary, charWeight)),
    dictionary.size,
    charWeight,
  );
}

/**
 * TF-IDF vectors of a pool of texts from their terms (ids below `idCount`), IDF smoothed over the pool. Terms are
 * renumbered by first occurrence over the pool, so the vectors (and every sum over them) are the same bits
 * whatever dictionary the terms came from: lexicalVectors(texts) gives exactly these.
 */
export function vectorsOfTerms(pool: readonly TextTerms[], idCount: number, charWeight = CHAR_WEIGHT): SparseVector[] {
  const weighing = new PoolWeighing(pool, idCount, charWeight);
  // A plain loop (not map's callback): a memo rebuilds every shard's vector on each change of a pool.
  const vectors: SparseVector[] = new Array(pool.length);
  for (let d = 0; d < pool.length; d++) vectors[d] = weighing.vector(pool[d]);
  return vectors;
}

/**
 * What weighs a pool's texts: its terms renumbered by first occurrence over the pool, and their IDF over it.
 * One pass over the pool's terms; then any member's vector, alone, the same bits as vectorsOfTerms gives it.
 */
export class PoolWeighing {
  private readonly local: Int32Array;
  /** The dictionary ids the pool holds, in order of first occurrence (their local ids). */
  private readonly seen: number[] = [];
  private readonly isGram: boolean[] = [];
  private readonly idf: Float64Array;
  private readonly countOf: Int32Array;
  private readonly charWeight: number;

  /**
   * `scratch`, if given: an array of at least `idCount` entries, all −1, used instead of a new one (filling one
   * the size of a large dictionary would cost more than the rest); release() gives it back so.
   */
  constructor(pool: readonly TextTerms[], idCount: number, charWeight = CHAR_WEIGHT, scratch?: Int32Array) {
    const local = scratch ?? new Int32Array(idCount).fill(-1);
    const { isGram, seen } = this;
    for (const terms of pool) {
      for (let k = 0; k < terms.ids.length; k++) {
        if (local[terms.ids[k]] >= 0) continue;
        local[terms.ids[k]] = isGram.length;
        seen.push(terms.ids[k]);
        isGram.push(terms.isGram[k] === 1);
      }
    }
    const docFreq = new Float64Array(isGram.length);
    for (const terms of pool) for (let k = 0; k < terms.ids.length; k++) docFreq[local[terms.ids[k]]]++;
    const n = pool.length;
    this.idf = Float64Array.from(docFreq, (df) => Math.log((1 + n) / (1 + df)) + 1);
    this.local = local;
    this.countOf = new Int32Array(isGram.length);
    this.charWeight = charWeight;
  }

  /** The vector of a member of the pool. */
  vector(terms: TextTerms): SparseVector {
    const { local, isGram, idf, countOf, charWeight } = this;
    const m = terms.ids.length;
    const ids = new Int32Array(m);
    for (let k = 0; k < m; k++) {
      ids[k] = local[terms.ids[k]];
      countOf[ids[k]] = terms.counts[k];
    }
    ids.sort();
    const weights = new Float64Array(m);
    let wordNorm = 0;
    let gramNorm = 0;
    for (let k = 0; k < m; k++) {
      const id = ids[k];
      weights[k] = (1 + Math.log(countOf[id])) * idf[id];
      if (isGram[id]) gramNorm += weights[k] * weights[k];
      else wordNorm += weights[k] * weights[k];
    }
    const wordScale = wordNorm > 0 ? Math.sqrt(1 - charWeight) / Math.sqrt(wordNorm) : 0;
    const gramScale = gramNorm > 0 ? Math.sqrt(charWeight) / Math.sqrt(gramNorm) : 0;
    for (let k = 0; k < m; k++) weights[k] *= isGram[ids[k]] ? gramScale : wordScale;
    return { ids, weights };
  }

  /** Sets every entry this pool used in the scratch array back to −1. */
  release(): void {
    for (const id of this.seen) this.local[id] = -1;
  }
}

/** Dot product of two sparse vectors (cosine, as both are normalized), summed in ascending id order. */
export function dot(a: SparseVector, b: SparseVector): number {
  let i = 0;
  let j = 0;
  let sum = 0;
  while (i < a.ids.length && j < b.ids.length) {
    const x = a.ids[i];
    const y = b.ids[j];
    if (x === y) sum += a.weights[i++] * b.weights[j++];
    else if (x < y) i++;
    else j++;
  }
  return sum;
}

/** Lexical similarity of two texts, in [0, 1], IDF over the two of them. */
export function lexicalSimilarity(a: string, b: string): number {
  const [va, vb] = lexicalVectors([a, b]);
  return Math.min(1, dot(va, vb));
}

/** Mean lexical similarity over all unordered pairs (IDF over these texts); 1 for fewer than 2 texts. */
export function meanPairwiseLexical(texts: readonly string[]): number {
  const n = texts.length;
  if (n < 2) return 1;
  const vectors = lexicalVectors(texts);
  let sum = 0;
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) sum += Math.min(1, dot(vectors[i], vectors[j]));
  return sum / ((n * (n - 1)) / 2);
}

/** Position of pair (i, j), i < j, in a condensed upper-triangular matrix of n items. */
function pairIndex(n: number, i: number, j: number): number {
  return i * n - ((i * (i + 1)) >> 1) + (j - i - 1);
}

/**
 * All pairwise cosines, condensed upper-triangular (pair (i, j), i < j, at
 * i·n − i(i+1)/2 + j − i − 1), through an inverted index so that pairs with no
 * common term cost nothing. Each pair sums over its common terms in ascending
 * id order, so it equals dot(vectors[i], vectors[j]) bit for bit.
 */
export function* cosineMatrixSteps(vectors: readonly SparseVector[]): Steps<Float64Array> {
  const n = vectors.length;
  const matrix = new Float64Array((n * (n - 1)) / 2);
  const postings = new Map<number, { docs: number[]; weights: number[] }>();
  // Documents are added to postings after their own row is done, so each row only meets earlier documents:
  // row j accumulates pair (i, j) for every i < j, over j's terms in ascending id order.
  for (let j = 0; j < n; j++) {
    yield;
    const v = vectors[j];
    for (let k = 0; k < v.ids.length; k++) {
      const list = postings.get(v.ids[k]);
      if (list === undefined) continue;
      const w = v.weights[k];
      for (let p = 0; p < list.docs.length; p++) {
        const i = list.docs[p];
        matrix[pairIndex(n, i, j)] += list.weights[p] * w;
      }
    }
    for (let k = 0; k < v.ids.length; k++) {
      let list = postings.get(v.ids[k]);
      if (list === undefined) {
        list = { docs: [], weights: [] };
        postings.set(v.ids[k], list);
      }
      list.docs.push(j);
      list.weights.push(v.weights[k]);
    }
  }
  return matrix;
}

/** How the similarity of two clusters follows from their members' pairs: the mean (average) or the worst pair (complete). */
export type Linkage = 'average' | 'complete';

/** The linkage lexical clustering uses (chosen on the paraphrase corpus, see docs/evidence.md and docs/performance.md). */
export const LEXICAL_LINKAGE: Linkage = 'complete';

/**
 * Exact average linkage (UPGMA) cut at `threshold`: the partition obtained by
 * repeatedly merging the two clusters whose mean pairwise similarity is
 * highest, while it meets the threshold. See linkageSteps.
 */
export function averageLinkageSteps(n: number, matrix: Float64Array, threshold: number): Steps<number[][]> {
  return linkageSteps(n, matrix, threshold, 'average');
}

/**
 * Exact agglomerative clustering cut at `threshold`: the partition obtained by
 * repeatedly merging the two clusters whose linkage similarity (mean pair for
 * average, worst pair for complete) is highest, while it meets the threshold.
 * Computed with the nearest-neighbour chain (both linkages are reducible, so
 * the merges are the same as the greedy order's), O(n²) time on the condensed
 * matrix, which it overwrites. A cluster whose best link is below the
 * threshold can never reach it again (a merged link is a weighted mean, or
 * the minimum, of links), so it is set aside at once.
 * Ties go to the chain's previous cluster, then to the lowest index (shard
 * ids ascending): deterministic. Clusters come out as sorted index arrays,
 * ordered by their smallest index.
 */
export function* linkageSteps(n: number, matrix: Float64Array, threshold: number, linkage: Linkage): Steps<number[][]> {
  const square = new Float64Array(n * n);
  for (let i = 0, at = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++, at++) {
      square[i * n + j] = matrix[at];
      square[j * n + i] = matrix[at];
    }
  }
  return yield* squareLinkageSteps(n, square, threshold, linkage);
}

/**
 * linkageSteps over a full symmetric n×n matrix (row-major, the diagonal unused), which it overwrites: every
 * scan and update reads a row, which is contiguous. The same merges, ties and result as linkageSteps.
 */
export function* squareLinkageSteps(n: number, square: Float64Array, threshold: number, linkage: Linkage, components?: ThresholdComponents): Steps<number[][]> {
  // Clusters that merge are linked by a path of pairs meeting the threshold (a mean or a minimum of pairs meets it
  // only if one pair does), so each connected component of those pairs is clustered on its own: the same
  // partition, and a pool of mostly unrelated shards costs one pass instead of the chain's scans.
  let joined = components;
  if (joined === undefined) {
    joined = new ThresholdComponents(n, threshold);
    for (let j = 1; j < n; j++) {
      if (j % 256 === 0) yield;
      joined.joinRow(square, n, j);
    }
  }
  const groups = joined.groups();
  if (groups.length === 1) return yield* chainLinkageSteps(n, square, threshold, linkage);
  const clusters: number[][] = [];
  for (const members of groups) {
    if (members.length === 1) {
      clusters.push(members);
      continue;
    }
    const m = members.length;
    const sub = new Float64Array(m * m);
    for (let p = 0; p < m; p++) {
      const row = members[p] * n;
      for (let q = 0; q < m; q++) sub[p * m + q] = square[row + members[q]];
    }
    for (const cluster of yield* chainLinkageSteps(m, sub, threshold, linkage)) clusters.push(cluster.map((p) => members[p]));
  }
  return clusters.sort((x, y) => x[0] - y[0]);
}

/**
 * The connected components of the pairs whose similarity meets a threshold (union-find), joined row by row while
 * a matrix is built, when its row is still in the cache: a second pass over n² entries costs as much as building them.
 */
export class ThresholdComponents {
  private readonly parent: Int32Array;
  private readonly bar: number;

  constructor(n: number, threshold: number) {
    this.parent = Int32Array.from({ length: n }, (_, i) => i);
    // meetsCosine(value, threshold) is value >= this bar.
    this.bar = threshold * (1 - THRESHOLD_TOLERANCE);
  }

  private find(x: number): number {
    const parent = this.parent;
    while (parent[x] !== x) x = parent[x] = parent[parent[x]];
    return x;
  }

  /** Joins a and b (a pair known to meet the threshold). */
  join(a: number, b: number): void {
    let x = this.find(a);
    let y = this.find(b);
    if (x === y) return;
    if (y < x) [x, y] = [y, x];
    this.parent[y] = x;
  }

  /** Joins j with every i < j whose similarity, square[j·n + i], meets the threshold. */
  joinRow(square: Float64Array, n: number, j: number): void {
    const row = j * n;
    const bar = this.bar;
    let root = this.find(j);
    for (let i = 0; i < j; i++) {
      if (!(square[row + i] >= bar)) continue;
      const other = this.find(i);
      if (other === root) continue;
      if (other < root) {
        this.parent[root] = other;
        root = other;
      } else this.parent[other] = root;
    }
  }

  /** The components, each ascending, in order of their smallest member. */
  groups(): number[][] {
    const byRoot = new Map<number, number[]>();
    for (let i = 0; i < this.parent.length; i++) {
      const root = this.find(i);
      const list = byRoot.get(root);
      if (list) list.push(i);
      else byRoot.set(root, [i]);
    }
    return [...byRoot.values()];
  }
}

/** The nearest-neighbour chain over a full matrix (squareLinkageSteps without the split into components). */
export function* chainLinkageSteps(n: number, square: Float64Array, threshold: number, linkage: Linkage): Steps<number[][]> {
  return yield* nearestNeighbourChainSteps(n, new SquareRows(n, square, linkage), threshold);
}

/** The chain's rows of links between clusters, however they are kept (SquareRows, ChainRows). */
interface ChainRowSource {
  /** Cluster a's links to every active cluster (its own entry −∞), up to date. */
  of(a: number): Float64Array;
  /** `drop`, just retired from `active`, merges into `keep`: keep's links become the linkage's merge of both. */
  merged(keep: number, drop: number, active: ActiveClusters): void;
  /** Cluster a is set aside: its row is no longer read. */
  release(a: number): void;
}

/**
 * The nearest-neighbour chain cut at `threshold`, over any row source: the chain goes from its last cluster to
 * that cluster's nearest active one; two clusters nearest to each other merge (into the lower index), and a
 * cluster with no link meeting the threshold is set aside. Clusters come out as sorted index arrays, ordered by
 * their smallest index.
 */
function* nearestNeighbourChainSteps(n: number, rows: ChainRowSource, threshold: number): Steps<number[][]> {
  const members: number[][] = Array.from({ length: n }, (_, i) => [i]);
  const done: number[][] = [];
  const chain: number[] = [];
  const active = new ActiveClusters(n, threshold);
  while (active.count > 0) {
    yield;
    if (chain.length === 0) chain.push(active.first());
    const a = chain[chain.length - 1];
    const previous = chain.length > 1 ? chain[chain.length - 2] : -1;
    const b = active.nearest(rows.of(a), previous);
    if (b < 0) {
      active.retire(a);
      done.push(members[a]);
      chain.pop();
      rows.release(a);
      continue;
    }
    if (b !== previous) {
      chain.push(b);
      continue;
    }
    chain.length -= 2;
    const keep = Math.min(a, b);
    const drop = Math.max(a, b);
    active.retire(drop);
    rows.merged(keep, drop, active);
    members[keep] = members[keep].concat(members[drop]);
  }
  for (const cluster of done) cluster.sort((x, y) => x - y);
  return done.sort((x, y) => x[0] - y[0]);
}

/** The chain's active clusters, ascending: scans visit them in index order (ties to the lowest). */
class ActiveClusters {
  readonly alive: Int32Array;
  count: number;
  private readonly bar: number;

  constructor(n: number, threshold: number) {
    this.alive = Int32Array.from({ length: n }, (_, i) => i);
    this.count = n;
    // meetsCosine(value, threshold) is value >= this bar.
    this.bar = threshold * (1 - THRESHOLD_TOLERANCE);
  }

  first(): number {
    return this.alive[0];
  }

  /**
   * The cluster to go to from the one whose row this is (its own entry −∞, so never chosen): the best link,
   * `previous` on a tie with it, else the lowest; −1 when none meets the threshold (the cluster is then set aside).
   */
  nearest(row: Float64Array, previous: number): number {
    const { alive, count } = this;
    let best = previous >= 0 ? row[previous] : -Infinity;
    let b = previous;
    for (let q = 0; q < count; q++) {
      const k = alive[q];
      if (row[k] > best) {
        best = row[k];
        b = k;
      }
    }
    return b >= 0 && best >= this.bar ? b : -1;
  }

  retire(x: number): void {
    const { alive } = this;
    let lo = 0;
    let hi = this.count - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (alive[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    alive.copyWithin(lo, lo + 1, this.count);
    this.count--;
  }
}

/**
 * The chain's rows as views of a full symmetric n×n matrix, which it overwrites: the diagonal becomes −∞ (a
 * cluster is never its own nearest), and a merge writes the kept cluster's row and column across the active ones.
 */
class SquareRows implements ChainRowSource {
  private readonly square: Float64Array;
  private readonly n: number;
  private readonly complete: boolean;
  private readonly rows: Float64Array[];
  private readonly size: Int32Array;

  constructor(n: number, square: Float64Array, linkage: Linkage) {
    this.square = square;
    this.n = n;
    this.complete = linkage === 'complete';
    this.rows = Array.from({ length: n }, (_, a) => square.subarray(a * n, (a + 1) * n));
    for (let a = 0; a < n; a++) square[a * n + a] = -Infinity;
    this.size = new Int32Array(n).fill(1);
  }

  of(a: number): Float64Array {
    return this.rows[a];
  }

  /** Complete linkage: the lesser of the parts' links; average: their mean weighted by the parts' sizes. */
  merged(keep: number, drop: number, active: ActiveClusters): void {
    const { square, n, size, complete } = this;
    const { alive, count } = active;
    const total = size[keep] + size[drop];
    const keepRow = keep * n;
    const dropRow = drop * n;
    for (let q = 0; q < count; q++) {
      const k = alive[q];
      if (k === keep) continue;
      const merged = complete ? Math.min(square[keepRow + k], square[dropRow + k]) : (size[keep] * square[keepRow + k] + size[drop] * square[dropRow + k]) / total;
      square[keepRow + k] = merged;
      square[k * n + keep] = merged;
    }
    size[keep] = total;
  }

  release(): void {}
}

/**
 * All pairwise cosines as a full symmetric n×n matrix (row-major, the diagonal 0), through an inverted index so
 * that pairs with no common term cost nothing. Row j accumulates pair (j, i), i < j, over j's terms in ascending
 * id order into contiguous memory, then the lower triangle is mirrored; every entry equals
 * dot(vectors[i], vectors[j]) and cosineMatrixSteps's bit for bit.
 */
export function* cosineSquareSteps(vectors: readonly SparseVector[], components?: ThresholdComponents): Steps<Float64Array> {
  const square = yield* lowerCosineSteps(vectors, components);
  yield;
  mirrorLower(square, vectors.length);
  return square;
}

/** cosineSquareSteps's lower triangle only (row j holds pairs (j, i), i < j; the rest 0), joining `components` row by row. */
export function* lowerCosineSteps(vectors: readonly SparseVector[], components?: ThresholdComponents): Steps<Float64Array> {
  const n = vectors.length;
  const square = new Float64Array(n * n);
  const postings: Array<{ docs: number[]; weights: number[] } | undefined> = [];
  for (let j = 0; j < n; j++) {
    yield;
    const v = vectors[j];
    const row = j * n;
    for (let k = 0; k < v.ids.length; k++) {
      const list = postings[v.ids[k]];
      if (list === undefined) continue;
      const w = v.weights[k];
      const { docs, weights } = list;
      for (let p = 0; p < docs.length; p++) square[row + docs[p]] += weights[p] * w;
    }
    components?.joinRow(square, n, j);
    for (let k = 0; k < v.ids.length; k++) {
      const list = postings[v.ids[k]];
      if (list === undefined) postings[v.ids[k]] = { docs: [j], weights: [v.weights[k]] };
      else {
        list.docs.push(j);
        list.weights.push(v.weights[k]);
      }
    }
  }
  return square;
}

const MIRROR_BLOCK = 64;

/** Copies the lower triangle of a row-major n×n matrix onto the upper one, block by block (cache-friendly). */
export function mirrorLower(square: Float64Array, n: number): void {
  for (let bi = 0; bi < n; bi += MIRROR_BLOCK) {
    for (let bj = 0; bj <= bi; bj += MIRROR_BLOCK) {
      const iEnd = Math.min(n, bi + MIRROR_BLOCK);
      const jEnd = Math.min(n, bj + MIRROR_BLOCK);
      for (let i = bi; i < iEnd; i++) {
        for (let j = bj; j < Math.min(jEnd, i); j++) square[j * n + i] = square[i * n + j];
      }
    }
  }
}

/** Lexical clustering of texts in steps: vectors over the texts, cosines, `linkage` at `threshold`. */
export function* clusterLexicalSteps(texts: readonly string[], threshold: number, linkage: Linkage = LEXICAL_LINKAGE): Steps<number[][]> {
  if (texts.length === 0) return [];
  return yield* clusterVectorsSteps(lexicalVectors(texts), threshold, linkage);
}

/** Lexical clustering of a pool already turned into vectors (vectorsOfTerms, from terms a memo keeps). */
export function* clusterVectorsSteps(vectors: readonly SparseVector[], threshold: number, linkage: Linkage = LEXICAL_LINKAGE): Steps<number[][]> {
  if (vectors.length === 0) return [];
  if (linkage === 'complete') return yield* completeLinkageSteps(vectors, threshold);
  const components = new ThresholdComponents(vectors.length, threshold);
  const square = yield* cosineSquareSteps(vectors, components);
  return yield* squareLinkageSteps(vectors.length, square, threshold, linkage, components);
}

export function clusterLexical(texts: readonly string[], threshold: number, linkage: Linkage = LEXICAL_LINKAGE): number[][] {
  return runSteps(clusterLexicalSteps(texts, threshold, linkage));
}

/** The pool's postings in one array per field: term t's documents (ascending) and their weights at start[t] … start[t + 1]. */
class Postings {
  readonly start: Int32Array;
  readonly docs: Int32Array;
  readonly weights: Float64Array;

  constructor(vectors: readonly SparseVector[]) {
    let terms = 0;
    for (const v of vectors) for (let k = 0; k < v.ids.length; k++) terms = Math.max(terms, v.ids[k] + 1);
    const start = new Int32Array(terms + 1);
    for (const v of vectors) for (let k = 0; k < v.ids.length; k++) start[v.ids[k] + 1]++;
    for (let t = 0; t < terms; t++) start[t + 1] += start[t];
    const next = start.slice(0, terms);
    this.docs = new Int32Array(start[terms]);
    this.weights = new Float64Array(start[terms]);
    vectors.forEach(({ ids, weights }, d) => {
      for (let k = 0; k < ids.length; k++) {
        const at = next[ids[k]]++;
        this.docs[at] = d;
        this.weights[at] = weights[k];
      }
    });
    this.start = start;
  }
}

/**
 * Exact complete linkage cut at `threshold`: squareLinkageSteps's partition, merge for merge, without its n×n
 * matrix (72 MB at 3,000 shards, most of its time spent allocating, filling and mirroring it): the same
 * nearest-neighbour chain over rows made when first needed (ChainRows). Every cosine is summed over the same
 * terms in the same order as lowerCosineSteps sums it, so the same bits. No split into the components of the
 * pairs meeting the threshold: the chain never leaves a component (a link below the threshold sets the cluster
 * aside), so the partition is the same, and finding them cost more than it saved. Still quadratic, as complete
 * linkage over a pool whose IDF moves with every shard must be: each pair sharing a term is summed twice (once
 * in each row) and each scan of the chain reads a row of the active clusters.
 */
export function* completeLinkageSteps(vectors: readonly SparseVector[], threshold: number): Steps<number[][]> {
  if (vectors.length === 0) return [];
  return yield* nearestNeighbourChainSteps(vectors.length, new ChainRows(vectors, new Postings(vectors)), threshold);
}

/**
 * Complete linkage's rows, each made when the chain first needs it: the shard's cosines with every shard (from
 * the postings), then every merge so far replayed in order, each entry of a merged cluster being the minimum of
 * its parts' (as chainLinkageSteps writes it). A merge writes the kept cluster's row only;
 * every other row catches up from the merge log when next read, instead of the chain writing a column across
 * the whole matrix on every merge. A row is let go when its cluster is set aside or merged away, so rows are
 * held only for the clusters the chain has met and not yet set aside (at most 958 of 3,000, 23 MB, on the bench's
 * observation pool, where the matrix took 72 MB).
 */
class ChainRows implements ChainRowSource {
  private readonly rows: (Float64Array | null)[];
  private readonly spare: Float64Array[] = [];
  /** How much of the merge log each row has applied. */
  private readonly applied: Int32Array;
  private readonly kept: Int32Array;
  private readonly dropped: Int32Array;
  private merges = 0;
  private readonly vectors: readonly SparseVector[];
  private readonly postings: Postings;

  constructor(vectors: readonly SparseVector[], postings: Postings) {
    const m = vectors.length;
    this.vectors = vectors;
    this.postings = postings;
    this.rows = new Array<Float64Array | null>(m).fill(null);
    this.applied = new Int32Array(m);
    this.kept = new Int32Array(m);
    this.dropped = new Int32Array(m);
  }

  of(a: number): Float64Array {
    let row = this.rows[a];
    if (row === null) {
      row = this.fresh(a);
      this.rows[a] = row;
    }
    for (let e = this.applied[a]; e < this.merges; e++) {
      const keep = this.kept[e];
      row[keep] = Math.min(row[keep], row[this.dropped[e]]);
    }
    this.applied[a] = this.merges;
    return row;
  }

  /**
   * Complete linkage: keep's link to each other active cluster becomes the lesser of its parts'. Only keep's row
   * is written; the merge is logged for the other rows, and drop's row is let go.
   */
  merged(keep: number, drop: number, active: ActiveClusters): void {
    const keepRow = this.of(keep);
    const dropRow = this.of(drop);
    const { alive, count } = active;
    for (let q = 0; q < count; q++) {
      const k = alive[q];
      if (k !== keep) keepRow[k] = Math.min(keepRow[k], dropRow[k]);
    }
    this.release(drop);
    this.kept[this.merges] = keep;
    this.dropped[this.merges++] = drop;
    this.applied[keep] = this.merges;
  }

  release(a: number): void {
    const row = this.rows[a];
    if (row === null) return;
    this.spare.push(row);
    this.rows[a] = null;
  }

  /** Shard a's cosines with every shard: over a's terms in ascending id order, as lowerCosineSteps sums each pair. */
  private fresh(a: number): Float64Array {
    const row = this.spare.pop()?.fill(0) ?? new Float64Array(this.vectors.length);
    const { start, docs, weights } = this.postings;
    const v = this.vectors[a];
    for (let k = 0; k < v.ids.length; k++) {
      const w = v.weights[k];
      for (let p = start[v.ids[k]], end = start[v.ids[k] + 1]; p < end; p++) row[docs[p]] += weights[p] * w;
    }
    row[a] = -Infinity;
    this.applied[a] = 0;
    return row;
  }
}
