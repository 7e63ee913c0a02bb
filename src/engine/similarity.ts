/**
 * Deterministic lexical similarity and exact single-linkage clustering.
 *
 * Similarity of two texts is the Jaccard index of the SETS of character
 * trigrams (over Unicode code points) of their normalized forms (lowercased,
 * runs of whitespace collapsed to one space, trimmed). A normalized text of
 * fewer than 3 code points is a single gram: the whole string (so the empty
 * text is the one gram "", and two empty texts have similarity 1).
 *
 * `clusterTexts` computes exactly the partition of the naive all-pairs
 * algorithm (test/support/naive-clustering.ts) without comparing all pairs:
 * - grams become integer ids ranked by global rarity (document frequency),
 *   each text a sorted array of unique ids (`buildGramIndex`);
 * - texts are processed by increasing size; each probes an inverted index of
 *   the prefixes (rarest grams) of the texts before it, within the size
 *   filter, counting common prefix grams (AllPairs / PPJoin style prefix,
 *   size and positional filtering);
 * - surviving candidates not already in the same union-find set are verified
 *   by an exact count (merge of the rare grams, AND + popcount of bitsets of
 *   the frequent ones) that stops once the threshold is out of reach.
 * Every filter uses only lower bounds on the overlap that the shared
 * predicate `meetsThreshold` requires, so no qualifying pair is lost, and each
 * union is decided by that same predicate.
 */
import { collapseWhitespace } from './normalize.ts';
import { runSteps, type Steps } from './slices.ts';

/** Relative tolerance applied to the threshold, so that e.g. 7/10 >= 0.7 and
 * 1/10 >= 0.1 hold despite binary floating point. Relative (not absolute), so
 * a pair with no common gram never meets a positive threshold. */
const THRESHOLD_TOLERANCE = 1e-9;

/** Slack subtracted from the (real-valued) overlap lower bounds used by the
 * filters, so that floating-point rounding can only make them looser. */
const FILTER_SLACK = 1e-7;

/** Normalizes text for similarity: lowercase, whitespace runs -> one space, trimmed. */
export function normalizeForSimilarity(text: string): string {
  return collapseWhitespace(text.toLowerCase());
}

/** The set of character trigrams (over code points) of the normalized text. */
export function trigramSet(text: string): Set<string> {
  const chars = Array.from(normalizeForSimilarity(text));
  const grams = new Set<string>();
  if (chars.length < 3) {
    grams.add(chars.join(''));
    return grams;
  }
  for (let i = 0; i + 2 < chars.length; i++) {
    grams.add(chars[i] + chars[i + 1] + chars[i + 2]);
  }
  return grams;
}

/**
 * The single predicate deciding whether two gram sets are "similar" at a
 * threshold: Jaccard = intersection / union >= threshold (with a tiny relative
 * tolerance). Both the fast and the naive clustering use it, so they agree
 * exactly. `threshold` must be in (0, 1].
 */
export function meetsThreshold(
  intersection: number,
  sizeA: number,
  sizeB: number,
  threshold: number,
): boolean {
  const union = sizeA + sizeB - intersection;
  return intersection >= threshold * (1 - THRESHOLD_TOLERANCE) * union;
}

/** Throws a RangeError unless threshold is a number in (0, 1]. */
export function assertValidThreshold(threshold: number): void {
  if (!(threshold > 0 && threshold <= 1)) {
    throw new RangeError(`similarity threshold must be in (0, 1], got ${threshold}`);
  }
}

/** Jaccard index of the trigram sets of two texts, in [0, 1]. */
export function similarity(a: string, b: string): number {
  const sa = trigramSet(a);
  const sb = trigramSet(b);
  let small = sa;
  let large = sb;
  if (small.size > large.size) {
    small = sb;
    large = sa;
  }
  let inter = 0;
  for (const g of small) if (large.has(g)) inter++;
  return inter / (sa.size + sb.size - inter);
}

/**
 * Precomputed gram sets. `sets[i]` holds the unique gram ids of text i,
 * sorted ascending (views into one shared buffer: do not modify); ids are
 * ranked by global rarity over the indexed texts (id 0 is the rarest gram;
 * ties broken by first occurrence), the order prefix filtering needs.
 * `gramCount` is the number of distinct grams.
 */
export type GramIndex = { sets: Int32Array[]; gramCount: number };

const TWO_POW_17 = 131072;
const TWO_POW_34 = 17179869184;

/**
 * Open-addressing hash table from small non-negative integer keys (< 2^30)
 * to ids, for the common trigrams whose code points are all < 1024.
 */
type SmallKeyTable = { keys: Int32Array; ids: Int32Array; shift: number; count: number };

function newSmallKeyTable(log2Size: number): SmallKeyTable {
  const cap = 1 << log2Size;
  return { keys: new Int32Array(cap).fill(-1), ids: new Int32Array(cap), shift: 32 - log2Size, count: 0 };
}

/** The id stored for key, or -1 (then `slotOf` tells where to insert). */
function smallKeySlot(table: SmallKeyTable, key: number): number {
  const { keys } = table;
  const mask = keys.length - 1;
  let slot = Math.imul(key, 0x9e3779b1) >>> table.shift;
  for (;;) {
    const k = keys[slot];
    if (k === key || k === -1) return slot;
    slot = (slot + 1) & mask;
  }
}

function smallKeyInsert(table: SmallKeyTable, slot: number, key: number, id: number): SmallKeyTable {
  table.keys[slot] = key;
  table.ids[slot] = id;
  table.count++;
  if (table.count * 2 <= table.keys.length) return table;
  const grown = newSmallKeyTable(33 - table.shift);
  for (let k = 0; k < table.keys.length; k++) {
    const key2 = table.keys[k];
    if (key2 !== -1) smallKeyInsert(grown, smallKeySlot(grown, key2), key2, table.ids[k]);
  }
  return grown;
}

/** Whether code point c matches /\s/ (the whitespace normalizeForSimilarity collapses). */
function isWhitespace(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  if (c < 0xa0) return false;
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/**
 * Tokenizes all texts into sorted, rarity-ranked integer gram-id sets.
 * (Normalization is done inline, equivalently to normalizeForSimilarity.)
 */
export function buildGramIndex(texts: readonly string[]): GramIndex {
  return runSteps(gramIndexSteps(texts));
}

/** buildGramIndex in steps, one per text tokenized. */
export function* gramIndexSteps(texts: readonly string[]): Steps<GramIndex> {
  const n = texts.length;
  // Gram key -> provisional id (order of first occurrence). Trigrams whose
  // code points are all < 1024 go through a fast integer-keyed table; other
  // trigrams get an exact numeric key (< 2^51) when their code points are all
  // < 2^17, else a 3-code-point string key; texts shorter than 3 code points
  // use the whole string (fewer than 3 code points, so it cannot collide).
  let small = newSmallKeyTable(12);
  const ids = new Map<number | string, number>();
  const docFreq: number[] = [];
  const lastText: number[] = [];
  // Provisional ids of all texts, concatenated: text t is flat[textStart[t] .. textStart[t + 1]).
  let flat = new Int32Array(4096);
  let flatLen = 0;
  const textStart = new Int32Array(n + 1);
  let cps = new Int32Array(256);

  for (let t = 0; t < n; t++) {
    yield;
    // Code points of the normalized text: lowercased, whitespace runs -> one
    // space, trimmed.
    const lower = texts[t].toLowerCase();
    const len = lower.length;
    if (cps.length < len) cps = new Int32Array(len * 2);
    let count = 0;
    let pendingSpace = false;
    for (let k = 0; k < len; k++) {
      let c = lower.charCodeAt(k);
      if (c >= 0xd800 && c <= 0xdbff && k + 1 < len) {
        const d = lower.charCodeAt(k + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          c = ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
          k++;
        }
      }
      if (isWhitespace(c)) {
        pendingSpace = count > 0;
        continue;
      }
      if (pendingSpace) {
        cps[count++] = 32;
        pendingSpace = false;
      }
      cps[count++] = c;
    }
    if (flat.length < flatLen + count + 1) {
      const grown = new Int32Array(Math.max(flat.length * 2, flatLen + count + 1));
      grown.set(flat.subarray(0, flatLen));
      flat = grown;
    }

    if (count < 3) {
      const whole = String.fromCodePoint(...cps.subarray(0, count));
      let id = ids.get(whole);
      if (id === undefined) {
        id = docFreq.length;
        ids.set(whole, id);
        docFreq.push(0);
        lastText.push(-1);
      }
      lastText[id] = t;
      docFreq[id]++;
      flat[flatLen++] = id;
    }
    for (let k = 2; k < count; k++) {
      const p2 = cps[k - 2];
      const p1 = cps[k - 1];
      const c = cps[k];
      let id: number;
      if ((p2 | p1 | c) < 1024) {
        const key = (p2 << 20) | (p1 << 10) | c;
        const slot = smallKeySlot(small, key);
        id = small.keys[slot] === key ? small.ids[slot] : -1;
        if (id < 0) {
          id = docFreq.length;
          small = smallKeyInsert(small, slot, key, id);
          docFreq.push(0);
          lastText.push(-1);
        }
      } else {
        const key: number | string =
          p2 < TWO_POW_17 && p1 < TWO_POW_17 && c < TWO_POW_17
            ? p2 * TWO_POW_34 + p1 * TWO_POW_17 + c
            : String.fromCodePoint(p2, p1, c);
        let found = ids.get(key);
        if (found === undefined) {
          found = docFreq.length;
          ids.set(key, found);
          docFreq.push(0);
          lastText.push(-1);
        }
        id = found;
      }
      if (lastText[id] !== t) {
        lastText[id] = t;
        docFreq[id]++;
        flat[flatLen++] = id;
      }
    }
    textStart[t + 1] = flatLen;
  }

  // Rank grams by (document frequency, first occurrence): counting sort.
  const gramCount = docFreq.length;
  let maxFreq = 0;
  for (let g = 0; g < gramCount; g++) if (docFreq[g] > maxFreq) maxFreq = docFreq[g];
  const bucketStart = new Int32Array(maxFreq + 2);
  for (let g = 0; g < gramCount; g++) bucketStart[docFreq[g] + 1]++;
  for (let f = 1; f < bucketStart.length; f++) bucketStart[f] += bucketStart[f - 1];
  const byRank = new Int32Array(gramCount);
  for (let g = 0; g < gramCount; g++) byRank[bucketStart[docFreq[g]]++] = g;

  // Sort each text's ids by transposing twice: gram -> texts, then, going
  // through grams by rank, text -> ranks (so each set comes out sorted).
  const gramStart = new Int32Array(gramCount + 1);
  for (let g = 0; g < gramCount; g++) gramStart[g + 1] = gramStart[g] + docFreq[g];
  const gramFill = gramStart.slice(0, gramCount);
  const textsOf = new Int32Array(flatLen);
  for (let t = 0; t < n; t++) {
    for (let k = textStart[t]; k < textStart[t + 1]; k++) textsOf[gramFill[flat[k]]++] = t;
  }
  const ranked = new Int32Array(flatLen);
  const textFill = textStart.slice(0, n);
  for (let r = 0; r < gramCount; r++) {
    const g = byRank[r];
    for (let q = gramStart[g]; q < gramStart[g + 1]; q++) ranked[textFill[textsOf[q]]++] = r;
  }
  const sets: Int32Array[] = new Array(n);
  for (let t = 0; t < n; t++) sets[t] = ranked.subarray(textStart[t], textStart[t + 1]);
  return { sets, gramCount };
}

function intersectionSize(a: Int32Array, b: Int32Array): number {
  let i = 0;
  let j = 0;
  let inter = 0;
  const na = a.length;
  const nb = b.length;
  while (i < na && j < nb) {
    const x = a[i];
    const y = b[j];
    if (x === y) {
      inter++;
      i++;
      j++;
    } else if (x < y) {
      i++;
    } else {
      j++;
    }
  }
  return inter;
}

/** Jaccard index of texts i and j of a GramIndex; equals similarity(texts[i], texts[j]). */
export function jaccardOfIndexed(index: GramIndex, i: number, j: number): number {
  const a = index.sets[i];
  const b = index.sets[j];
  const inter = intersectionSize(a, b);
  return inter / (a.length + b.length - inter);
}

/** Mean Jaccard similarity over all unordered pairs; 1 for fewer than 2 texts. */
export function meanPairwiseSimilarity(texts: readonly string[]): number {
  const n = texts.length;
  if (n < 2) return 1;
  const index = buildGramIndex(texts);
  let sum = 0;
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) sum += jaccardOfIndexed(index, i, j);
  }
  return sum / ((n * (n - 1)) / 2);
}

function find(parent: Int32Array, x: number): number {
  while (parent[x] !== x) {
    const gp = parent[parent[x]];
    parent[x] = gp;
    x = gp;
  }
  return x;
}

/**
 * Groups 0..n-1 by union-find root (`slot[i]` is i's node in `parent`):
 * members ascending, clusters ordered by their smallest member.
 */
function partitionFromParents(parent: Int32Array, slot: Int32Array): number[][] {
  const n = slot.length;
  const clusterOfRoot = new Int32Array(parent.length).fill(-1);
  const clusters: number[][] = [];
  for (let i = 0; i < n; i++) {
    const r = find(parent, slot[i]);
    let c = clusterOfRoot[r];
    if (c < 0) {
      c = clusters.length;
      clusterOfRoot[r] = c;
      clusters.push([]);
    }
    clusters[c].push(i);
  }
  return clusters;
}

/** Single-linkage partition of texts at Jaccard >= threshold.
 *  Returns clusters as arrays of input indices, each sorted ascending,
 *  clusters ordered by their smallest index. Deterministic. */
export function clusterTexts(texts: readonly string[], threshold: number): number[][] {
  return runSteps(clusterTextsSteps(texts, threshold));
}

/** clusterTexts in steps (one per text tokenized, one per text joined), for runStepsSliced. */
export function* clusterTextsSteps(texts: readonly string[], threshold: number): Steps<number[][]> {
  assertValidThreshold(threshold);
  if (texts.length === 0) return [];
  const index = yield* gramIndexSteps(texts);
  return yield* clusterIndexedSteps(index.sets, index.gramCount, threshold);
}

/** clusterTexts over an already built GramIndex (same result, no re-tokenizing). */
export function clusterGramIndex(index: GramIndex, threshold: number): number[][] {
  assertValidThreshold(threshold);
  if (index.sets.length === 0) return [];
  return runSteps(clusterIndexedSteps(index.sets, index.gramCount, threshold));
}

/** Number of bits set in a 32-bit integer. */
function popcount32(v: number): number {
  v = v - ((v >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/** At most this many 32-bit words per text for the bitset of its most frequent grams. */
const MAX_BITSET_WORDS = 32;

/** Texts with this many distinct grams or more (over 32 KB of text) are joined
 *  by direct comparison, so that two positions pack into one int32 below. */
const LARGE_SET = 32768;

/**
 * Working state of the similarity join (one object, so the hot functions stay
 * monomorphic). Texts are renumbered by rank = position in the processing
 * order (increasing size, ties by input index); all per-text arrays below are
 * indexed by rank.
 */
type JoinState = {
  /** All gram sets concatenated; rank r is grams[start[r] .. start[r] + size[r]). */
  grams: Int32Array;
  start: Int32Array;
  size: Int32Array;
  threshold: number;
  tEff: number;
  /** tEff / (1 + tEff): overlap >= pairFactor * (a + b) for a qualifying pair. */
  pairFactor: number;
  /** Bitset words per text, and the first gram id they cover. */
  words: number;
  base: number;
  /** Per text: for each of its `words` words, the bits of its grams (ids >= base)
   *  in that word, then how many of its bits lie in the words after it. */
  bits: Int32Array;
  /** Number of ids < base in each set (they form a prefix of it). */
  rareLen: Int32Array;
  probeLen: Int32Array;
  indexLen: Int32Array;
  /** Inverted index: (rank, position) pairs per gram, flat; list g is
   *  post[listHead[g] .. listEnd[g]), in increasing rank order. */
  post: Int32Array;
  listHead: Int32Array;
  listEnd: Int32Array;
  parent: Int32Array;
  /** Per rank: common grams with the probing text counted so far. */
  acc: Int32Array;
  /** Per rank: (i << shift) | j for the positions i (in the probing text) and
   *  j (in this one) of the last common gram counted. */
  lastMatch: Int32Array;
  shift: number;
  /** The texts met by the probing text (when listed). */
  met: Int32Array;
  /** The candidates kept for the probing text, and their counts. */
  candidates: Int32Array;
  candOverlap: Int32Array;
  /** needTab[ny]: overlap needed by a text of size ny with the probing text. */
  needTab: Int32Array;
};

/** Minimum overlap (a lower bound, safe against rounding) for sizes a, b to qualify. */
function neededOverlap(pairFactor: number, a: number, b: number): number {
  return Math.ceil(pairFactor * (a + b) - FILTER_SLACK);
}

/**
 * The join: texts are processed by increasing size; each one probes an
 * inverted index of the prefixes of the texts before it, its candidates are
 * filtered and verified, then its own prefix is indexed. Filters only use
 * lower bounds on the overlap the predicate needs, so no qualifying pair is
 * lost, and every pair that is joined passed `meetsThreshold` exactly.
 */
function* clusterIndexedSteps(sets: Int32Array[], gramCount: number, threshold: number): Steps<number[][]> {
  const n = sets.length;
  const tEff = threshold * (1 - THRESHOLD_TOLERANCE);
  // For a pair of sizes (a, b) that meets the threshold, with o its overlap:
  //   o >= tEff * max(a, b)                    (the union is at least max(a, b))
  //   o >= tEff / (1 + tEff) * (a + b)         (from o >= tEff * (a + b - o))
  //   min(a, b) >= tEff * max(a, b)            (size filter)
  const pairFactor = tEff / (1 + tEff);
  const indexFactor = (2 * tEff) / (1 + tEff);

  // rank -> input index, by increasing size (ties by index).
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((a, b) => sets[a].length - sets[b].length || a - b);
  const rankOf = new Int32Array(n);
  for (let r = 0; r < n; r++) rankOf[order[r]] = r;

  const size = new Int32Array(n);
  const start = new Int32Array(n + 1);
  for (let r = 0; r < n; r++) {
    size[r] = sets[order[r]].length;
    start[r + 1] = start[r] + size[r];
  }
  const maxSize = n > 0 ? size[n - 1] : 0;
  let firstLarge = n;
  while (firstLarge > 0 && size[firstLarge - 1] >= LARGE_SET) firstLarge--;
  const maxPacked = firstLarge > 0 ? size[firstLarge - 1] : 0;
  const grams = new Int32Array(start[n]);
  for (let r = 0; r < n; r++) grams.set(sets[order[r]], start[r]);

  // The most frequent grams (the highest ids) are also kept as a bitset per
  // text, so verification counts most of the overlap with AND + popcount.
  const words = Math.min(MAX_BITSET_WORDS, Math.ceil(gramCount / 32));
  const base = Math.max(0, gramCount - 32 * words);
  const bits = new Int32Array(n * words * 2);
  const rareLen = new Int32Array(n);
  for (let r = 0; r < n; r++) {
    const row = r * words * 2;
    let k = start[r + 1];
    while (k > start[r] && grams[k - 1] >= base) {
      k--;
      const b = grams[k] - base;
      bits[row + 2 * (b >>> 5)] |= 1 << (b & 31);
    }
    rareLen[r] = k - start[r];
    let after = 0;
    for (let w = words - 1; w >= 0; w--) {
      bits[row + 2 * w + 1] = after;
      after += popcount32(bits[row + 2 * w]);
    }
  }

  // Probe prefix: size - ceil(tEff * size) + 1 (o >= tEff * size).
  // Index prefix: size - ceil(2 tEff / (1 + tEff) * size) + 1, enough because
  // every later prober is at least as large (o >= pairFactor * 2 * size).
  // Prefix principle: if o >= need, the first common gram lies within the
  // first size - need + 1 grams of each set (ids sorted by rarity).
  const probeLen = new Int32Array(n);
  const indexLen = new Int32Array(n);
  for (let r = 0; r < n; r++) {
    const s = size[r];
    const pl = s - Math.max(0, Math.ceil(tEff * s - FILTER_SLACK)) + 1;
    const il = s - Math.max(0, Math.ceil(indexFactor * s - FILTER_SLACK)) + 1;
    probeLen[r] = pl < 1 ? 1 : pl > s ? s : pl;
    indexLen[r] = il < 1 ? 1 : il > s ? s : il;
  }

  const listStart = new Int32Array(gramCount + 1);
  for (let r = 0; r < n; r++) {
    for (let k = start[r]; k < start[r] + indexLen[r]; k++) listStart[grams[k] + 1] += 2;
  }
  for (let g = 0; g < gramCount; g++) listStart[g + 1] += listStart[g];

  const parent = new Int32Array(n);
  for (let r = 0; r < n; r++) parent[r] = r;

  const state: JoinState = {
    grams,
    start,
    size,
    threshold,
    tEff,
    pairFactor,
    words,
    base,
    bits,
    rareLen,
    probeLen,
    indexLen,
    post: new Int32Array(listStart[gramCount]),
    listHead: listStart.slice(0, gramCount),
    listEnd: listStart.slice(0, gramCount),
    parent,
    acc: new Int32Array(n),
    lastMatch: new Int32Array(n),
    shift: Math.ceil(Math.log2(maxPacked + 1)),
    met: new Int32Array(n),
    candidates: new Int32Array(n),
    candOverlap: new Int32Array(n),
    needTab: new Int32Array(maxSize + 1),
  };

  // lo: the smallest rank large enough for the size filter (non-decreasing).
  let lo = 0;
  for (let x = 0; x < n; x++) {
    yield;
    const minSize = tEff * size[x] - FILTER_SLACK;
    while (lo < x && size[lo] < minSize) lo++;
    if (x < firstLarge) {
      // Dense case: count branch-free, then scan all ranks [lo, x). Sparse
      // case (few postings compared with that range): list the texts met.
      const postings = trimLists(state, x, lo);
      const dense = 2 * postings >= x - lo;
      const met = dense ? probeDense(state, x) : probeSparse(state, x);
      const candCount = collectCandidates(state, x, lo, dense ? x - lo : met, dense);
      verifyCandidates(state, x, candCount);
      indexText(state, x);
    } else {
      joinLarge(state, x, lo);
    }
  }
  return partitionFromParents(parent, rankOf);
}

/**
 * Drops from the lists of x's probe prefix the postings of ranks below lo
 * (too small for the size filter, for x and every later text); returns the
 * number of postings left in those lists.
 */
function trimLists(state: JoinState, x: number, lo: number): number {
  const { grams, post, listHead, listEnd } = state;
  const xo = state.start[x];
  const pl = state.probeLen[x];
  let total = 0;
  for (let i = 0; i < pl; i++) {
    const g = grams[xo + i];
    let h = listHead[g];
    const end = listEnd[g];
    while (h < end && post[h] < lo) h += 2;
    listHead[g] = h;
    total += (end - h) >> 1;
  }
  return total;
}

/**
 * Scans the inverted index with x's probe prefix: for every text y met,
 * counts the common grams within both prefixes and remembers the positions
 * of the last one. Branch-free on purpose; the counts of texts that cannot
 * qualify are discarded later in one sequential pass over ranks.
 */
function probeDense(state: JoinState, x: number): number {
  const { grams, post, listHead, listEnd, acc, lastMatch, shift } = state;
  const xo = state.start[x];
  const pl = state.probeLen[x];
  for (let i = 0; i < pl; i++) {
    const g = grams[xo + i];
    const end = listEnd[g];
    const iBase = i << shift;
    for (let q = listHead[g]; q < end; q += 2) {
      const y = post[q];
      acc[y]++;
      lastMatch[y] = iBase | post[q + 1];
    }
  }
  return 0;
}

/** As probeDense, also listing the texts met in state.met; returns their number. */
function probeSparse(state: JoinState, x: number): number {
  const { grams, post, listHead, listEnd, acc, lastMatch, shift, met } = state;
  const xo = state.start[x];
  const pl = state.probeLen[x];
  let count = 0;
  for (let i = 0; i < pl; i++) {
    const g = grams[xo + i];
    const end = listEnd[g];
    const iBase = i << shift;
    for (let q = listHead[g]; q < end; q += 2) {
      const y = post[q];
      const c = acc[y];
      if (c === 0) met[count++] = y;
      acc[y] = c + 1;
      lastMatch[y] = iBase | post[q + 1];
    }
  }
  return count;
}

/**
 * Resets the counts of the texts met (all ranks [lo, x) if dense, else
 * state.met[0 .. count)) and keeps, in state.candidates, those that may still
 * qualify. With c common grams counted, the last at position
 * li of x and lj of y, every common gram before it lies in both prefixes and
 * was counted, so the overlap is at most c + min(nx - li - 1, ny - lj - 1).
 * Moreover a later common gram lies beyond x's probe prefix or beyond y's
 * index prefix (else it would have been counted), and since common grams
 * come in the same order in both sets, either all later ones lie beyond y's
 * index prefix or all beyond x's probe prefix: a second upper bound.
 */
function collectCandidates(state: JoinState, x: number, lo: number, count: number, dense: boolean): number {
  const { size, acc, lastMatch, shift, candidates, candOverlap, needTab, indexLen, met } = state;
  const nx = size[x];
  const xBeyond = nx - state.probeLen[x];
  for (let ny = size[lo]; ny <= nx; ny++) needTab[ny] = neededOverlap(state.pairFactor, nx, ny);
  const jMask = (1 << shift) - 1;
  let kept = 0;
  // Branch-free: min(a, b) = b + (d & (d >> 31)) with d = a - b (small ints).
  for (let k = 0; k < count; k++) {
    const y = dense ? lo + k : met[k];
    const c = acc[y];
    acc[y] = 0;
    const ny = size[y];
    const match = lastMatch[y];
    const restX = nx - (match >>> shift) - 1;
    const restY = ny - (match & jMask) - 1;
    let d = ny - indexLen[y] - restX;
    const caseY = restX + (d & (d >> 31)); // min(grams beyond y's index prefix, restX)
    d = xBeyond - restY;
    const caseX = restY + (d & (d >> 31)); // min(grams beyond x's probe prefix, restY)
    d = caseY - caseX;
    const beyond = caseY - (d & (d >> 31)); // max(caseY, caseX)
    d = restX - restY;
    const rest = restY + (d & (d >> 31)); // min(restX, restY)
    d = rest - beyond;
    const bound = c + beyond + (d & (d >> 31)); // c + min(rest, beyond)
    // Keep y iff c > 0 and bound >= need.
    candidates[kept] = y;
    candOverlap[kept] = c;
    kept += (-c >>> 31) & ((needTab[ny] - bound - 1) >>> 31);
  }
  return kept;
}

/** Verifies x's candidates, joining x with those that qualify. */
function verifyCandidates(state: JoinState, x: number, candCount: number): void {
  const { size, parent, lastMatch, shift, candidates, candOverlap, needTab } = state;
  const nx = size[x];
  const jMask = (1 << shift) - 1;
  let rootX = find(parent, x);
  for (let k = 0; k < candCount; k++) {
    const y = candidates[k];
    const rootY = find(parent, y);
    if (rootY === rootX) continue;
    const ny = size[y];
    const match = lastMatch[y];
    const c = candOverlap[k];
    const after = commonAfter(state, x, match >>> shift, y, match & jMask, needTab[ny] - c);
    if (after >= 0 && meetsThreshold(c + after, nx, ny, state.threshold)) {
      // Union (smaller root becomes the root; any choice gives the same partition).
      if (rootX < rootY) {
        parent[rootY] = rootX;
      } else {
        parent[rootX] = rootY;
        rootX = rootY;
      }
    }
  }
}

/** Joins a very large text x with every text of rank in [lo, x) by direct comparison. */
function joinLarge(state: JoinState, x: number, lo: number): void {
  const { grams, start, size, parent } = state;
  const xo = start[x];
  const xEnd = xo + size[x];
  for (let y = lo; y < x; y++) {
    const rootX = find(parent, x);
    const rootY = find(parent, y);
    if (rootX === rootY) continue;
    const inter = intersectionSize(grams.subarray(xo, xEnd), grams.subarray(start[y], start[y] + size[y]));
    if (meetsThreshold(inter, size[x], size[y], state.threshold)) {
      if (rootX < rootY) parent[rootY] = rootX;
      else parent[rootX] = rootY;
    }
  }
}

/**
 * Number of common grams of x and y after position li of x (= position lj of
 * y, the same gram) if it is at least `required`; otherwise possibly stops
 * early and returns -1. Rare grams are merged from the sorted sets, frequent
 * ones counted with AND + popcount of the bitsets; it stops as soon as the
 * grams left cannot reach `required`.
 */
function commonAfter(state: JoinState, x: number, li: number, y: number, lj: number, required: number): number {
  const { grams, start, size, rareLen, bits, words, base } = state;
  const xo = start[x];
  const yo = start[y];
  const xEnd = xo + size[x];
  const yEnd = yo + size[y];
  let inter = 0;
  let a = xo + li + 1;
  let b = yo + lj + 1;
  const xRareEnd = xo + rareLen[x];
  const yRareEnd = yo + rareLen[y];
  while (a < xRareEnd && b < yRareEnd) {
    const remA = xEnd - a;
    const remB = yEnd - b;
    if (inter + (remA < remB ? remA : remB) < required) return -1;
    const u = grams[a];
    const v = grams[b];
    if (u === v) {
      inter++;
      a++;
      b++;
    } else if (u < v) {
      a++;
    } else {
      b++;
    }
  }
  // Frequent grams after the last one counted (all of them if it was rare):
  // AND + popcount from bit fromBit on, stopping when the bits left in the
  // following words cannot make up the difference.
  const last = grams[xo + li];
  const fromBit = last < base ? 0 : last - base + 1;
  let w = fromBit >>> 5;
  if (w < words) {
    const xRow = x * words * 2;
    const yRow = y * words * 2;
    let v = bits[xRow + 2 * w] & bits[yRow + 2 * w] & (-1 << (fromBit & 31));
    for (;;) {
      if (v !== 0) inter += popcount32(v);
      const remX = bits[xRow + 2 * w + 1];
      const remY = bits[yRow + 2 * w + 1];
      if (inter + (remX < remY ? remX : remY) < required) return -1;
      if (++w === words) break;
      v = bits[xRow + 2 * w] & bits[yRow + 2 * w];
    }
  }
  return inter < required ? -1 : inter;
}

/** Adds x's index prefix to the inverted index. */
function indexText(state: JoinState, x: number): void {
  const { grams, post, listEnd } = state;
  const xo = state.start[x];
  const il = state.indexLen[x];
  for (let k = 0; k < il; k++) {
    const g = grams[xo + k];
    const at = listEnd[g];
    listEnd[g] = at + 2;
    post[at] = x;
    post[at + 1] = k;
  }
}
