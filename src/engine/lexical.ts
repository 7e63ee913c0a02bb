/**
 * The `lexical` similarity: TF-IDF cosine over words, and exact average-linkage
 * clustering that does not chain.
 *
 * A text's terms are its words (Unicode letters, marks and digits; NFKC,
 * lowercased), English stop words dropped, each stemmed with Porter2
 * (Snowball English); a negative contraction ("don't", "can't") counts as
 * "not", and negations and quantifiers are kept, so "too many tests" and "no
 * tests" stay apart. Character 4-grams of the words (unstemmed) are mixed in
 * with weight CHAR_WEIGHT, for typos and inflections the stemmer misses.
 * Weights are sublinear tf (1 + ln tf) times smoothed IDF over the pool being
 * compared, ln((1 + N) / (1 + df)) + 1; each part is L2-normalized, so the
 * cosine of two texts is (1 − CHAR_WEIGHT)·words + CHAR_WEIGHT·grams, in [0, 1].
 * Term ids follow first occurrence and every dot product sums in ascending id
 * order: the same pool gives the same bits on every run.
 */
import stem from 'wink-porter2-stemmer';
import { runSteps, type Steps } from './slices.ts';

/** Share of the cosine that comes from character 4-grams (chosen on the paraphrase corpus, see README). */
export const CHAR_WEIGHT = 0.3;
const CHAR_GRAM = 4;

/** Relative tolerance so that a similarity computed as exactly the threshold meets it (as for trigrams). */
const THRESHOLD_TOLERANCE = 1e-9;

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

/** The stem of a word: Porter2 for Latin-letter words, the word itself otherwise (other scripts, numbers). */
export function stemWord(word: string): string {
  return LATIN_WORD.test(word) ? stem(word) : word;
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

/** Each text's term counts, words then 4-grams, under ids of one dictionary (word ids "w:", gram ids "c:"). */
function termCounts(texts: readonly string[], charWeight: number): { counts: Map<number, number>[]; isGram: boolean[] } {
  const dictionary = new Map<string, number>();
  const isGram: boolean[] = [];
  const idOf = (key: string, gram: boolean): number => {
    let id = dictionary.get(key);
    if (id === undefined) {
      id = dictionary.size;
      dictionary.set(key, id);
      isGram.push(gram);
    }
    return id;
  };
  const counts = texts.map((text) => {
    const count = new Map<number, number>();
    for (const word of lexicalWords(text)) {
      const terms = termsOf(word);
      const w = idOf(terms.stemKey, false);
      count.set(w, (count.get(w) ?? 0) + 1);
      if (charWeight === 0) continue;
      for (const key of terms.gramKeys) {
        const g = idOf(key, true);
        count.set(g, (count.get(g) ?? 0) + 1);
      }
    }
    return count;
  });
  return { counts, isGram };
}

/** TF-IDF vectors of the texts, IDF smoothed over these texts (the pool being compared). */
export function lexicalVectors(texts: readonly string[], charWeight = CHAR_WEIGHT): SparseVector[] {
  const { counts, isGram } = termCounts(texts, charWeight);
  const docFreq = new Float64Array(isGram.length);
  for (const count of counts) for (const id of count.keys()) docFreq[id]++;
  const n = texts.length;
  const idf = Float64Array.from(docFreq, (df) => Math.log((1 + n) / (1 + df)) + 1);
  return counts.map((count) => {
    const ids = Int32Array.from(count.keys()).sort();
    const weights = Float64Array.from(ids, (id) => (1 + Math.log(count.get(id)!)) * idf[id]);
    let wordNorm = 0;
    let gramNorm = 0;
    ids.forEach((id, k) => {
      if (isGram[id]) gramNorm += weights[k] * weights[k];
      else wordNorm += weights[k] * weights[k];
    });
    const wordScale = wordNorm > 0 ? Math.sqrt(1 - charWeight) / Math.sqrt(wordNorm) : 0;
    const gramScale = gramNorm > 0 ? Math.sqrt(charWeight) / Math.sqrt(gramNorm) : 0;
    ids.forEach((id, k) => {
      weights[k] *= isGram[id] ? gramScale : wordScale;
    });
    return { ids, weights };
  });
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

/** The linkage lexical clustering uses (chosen on the paraphrase corpus, see README "How similarity works"). */
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
  const complete = linkage === 'complete';
  const active = new Uint8Array(n).fill(1);
  const size = new Int32Array(n).fill(1);
  const members: number[][] = Array.from({ length: n }, (_, i) => [i]);
  const done: number[][] = [];
  const link = (a: number, b: number): number => (a < b ? matrix[pairIndex(n, a, b)] : matrix[pairIndex(n, b, a)]);
  const chain: number[] = [];
  let remaining = n;
  let lowest = 0;
  while (remaining > 0) {
    yield;
    if (chain.length === 0) {
      while (!active[lowest]) lowest++;
      chain.push(lowest);
    }
    const a = chain[chain.length - 1];
    const previous = chain.length > 1 ? chain[chain.length - 2] : -1;
    let best = previous >= 0 ? link(a, previous) : -Infinity;
    let b = previous;
    // Column a above the diagonal (pairs (k, a), k < a), then row a (pairs (a, k), k > a), which is contiguous.
    for (let k = 0, at = a - 1; k < a; k++, at += n - k - 1) {
      if (active[k] && matrix[at] > best) {
        best = matrix[at];
        b = k;
      }
    }
    for (let k = a + 1, at = pairIndex(n, a, a + 1); k < n; k++, at++) {
      if (active[k] && matrix[at] > best) {
        best = matrix[at];
        b = k;
      }
    }
    if (b < 0 || !meetsCosine(best, threshold)) {
      active[a] = 0;
      remaining--;
      done.push(members[a]);
      chain.pop();
      continue;
    }
    if (b !== previous) {
      chain.push(b);
      continue;
    }
    chain.length -= 2;
    const keep = Math.min(a, b);
    const drop = Math.max(a, b);
    const total = size[keep] + size[drop];
    for (let k = 0; k < n; k++) {
      if (!active[k] || k === keep || k === drop) continue;
      const merged = complete ? Math.min(link(keep, k), link(drop, k)) : (size[keep] * link(keep, k) + size[drop] * link(drop, k)) / total;
      if (keep < k) matrix[pairIndex(n, keep, k)] = merged;
      else matrix[pairIndex(n, k, keep)] = merged;
    }
    size[keep] = total;
    members[keep] = members[keep].concat(members[drop]);
    active[drop] = 0;
    remaining--;
  }
  for (const cluster of done) cluster.sort((x, y) => x - y);
  return done.sort((x, y) => x[0] - y[0]);
}

/** Lexical clustering of texts in steps: vectors over the texts, cosines, `linkage` at `threshold`. */
export function* clusterLexicalSteps(texts: readonly string[], threshold: number, linkage: Linkage = LEXICAL_LINKAGE): Steps<number[][]> {
  if (texts.length === 0) return [];
  const vectors = lexicalVectors(texts);
  const matrix = yield* cosineMatrixSteps(vectors);
  return yield* linkageSteps(texts.length, matrix, threshold, linkage);
}

export function clusterLexical(texts: readonly string[], threshold: number, linkage: Linkage = LEXICAL_LINKAGE): number[][] {
  return runSteps(clusterLexicalSteps(texts, threshold, linkage));
}
