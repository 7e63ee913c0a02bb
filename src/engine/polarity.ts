/**
 * Deterministic hints that two texts may disagree or repeat each other (docs/evidence.md): suggestions
 * for whoever decides, never merges and never refusals.
 *
 * "Same topic": the overlap coefficient of the two texts' content stems (lexical's tokenization: stop words
 * dropped, Porter2 stems, cue words below left out) is at least TOPIC_OVERLAP. "Flipped polarity": a negation
 * cue on one side only, or the two words of an antonym pair split between the sides.
 */
import type { Shard, Trait } from './model.ts';
import type { Steps } from './slices.ts';
import { lexicalWords, stemWord } from './lexical.ts';
import type { Knobs, SimilarityMode } from './settings.ts';
import { textSimilarity } from './similarity-modes.ts';

/** At least a third of the shorter text's content stems are shared (and at least one). */
export const TOPIC_OVERLAP = 1 / 3;

/** Words that negate or dismiss what a text is about; matched by stem, so "avoids", "skipping", "refused" count. */
export const NEGATION_CUES = [
  'not', 'no', 'never', 'nor', 'none', 'nothing', 'neither', 'cannot', 'without',
  'refuse', 'refrain', 'avoid', 'skip', 'ignore', 'forgo', 'stop', 'overkill', 'unnecessary', 'needless', 'pointless',
] as const;

/** Pairs of opposites: one word on each side flips polarity. */
export const ANTONYM_PAIRS = [
  ['always', 'never'],
  ['more', 'less'],
  ['more', 'fewer'],
  ['many', 'few'],
  ['approve', 'reject'],
  ['accept', 'reject'],
  ['allow', 'forbid'],
  ['allow', 'prohibit'],
  ['include', 'exclude'],
  ['enable', 'disable'],
  ['add', 'remove'],
  ['increase', 'decrease'],
  ['early', 'late'],
  ['formal', 'casual'],
  ['strict', 'lenient'],
  ['require', 'optional'],
] as const;

const negationStems = new Set(NEGATION_CUES.map(stemWord));
const antonymStems = ANTONYM_PAIRS.map(([a, b]) => [stemWord(a), stemWord(b)] as const);
const cueStems = new Set([...negationStems, ...antonymStems.flat()]);

type Reading = { topic: Set<string>; negations: string[]; stems: Set<string>; words: Map<string, string> };

function read(text: string): Reading {
  const topic = new Set<string>();
  const stems = new Set<string>();
  const words = new Map<string, string>();
  const negations: string[] = [];
  for (const word of lexicalWords(text)) {
    const stem = stemWord(word);
    stems.add(stem);
    if (!words.has(stem)) words.set(stem, word);
    if (negationStems.has(stem)) negations.push(word);
    if (!cueStems.has(stem)) topic.add(stem);
  }
  return { topic, negations, stems, words };
}

/** Why two texts read as opposite, or null: a negation on one side only, or an antonym pair split between them. */
function flip(a: Reading, b: Reading): string | null {
  for (const [x, y] of antonymStems) {
    const aSide = a.stems.has(x) && !a.stems.has(y) ? 0 : a.stems.has(y) && !a.stems.has(x) ? 1 : -1;
    const bSide = b.stems.has(x) && !b.stems.has(y) ? 0 : b.stems.has(y) && !b.stems.has(x) ? 1 : -1;
    if (aSide >= 0 && bSide >= 0 && aSide !== bSide) {
      const [p, q] = aSide === 0 ? [x, y] : [y, x];
      return `antonyms "${a.words.get(p)}" / "${b.words.get(q)}"`;
    }
  }
  if ((a.negations.length > 0) !== (b.negations.length > 0)) {
    return `negation "${a.negations[0] ?? b.negations[0]}" on one side only`;
  }
  return null;
}

export type PossibleContradiction = { reason: string; overlap: number; sharedWords: string[] };

/**
 * Whether `text` may contradict a topic: a trait's principle, or a theme given as its name and its members'
 * texts (any one of them sharing the topic with flipped polarity is enough). Null when it does not.
 */
export function possibleContradiction(topic: string | readonly string[], text: string): PossibleContradiction | null {
  return contradictionOf((typeof topic === 'string' ? [topic] : topic).map(read), read(text));
}

function contradictionOf(topic: readonly Reading[], other: Reading): PossibleContradiction | null {
  for (const own of topic) {
    const shared = [...own.topic].filter((s) => other.topic.has(s));
    if (shared.length === 0) continue;
    const overlap = shared.length / Math.min(own.topic.size, other.topic.size);
    if (overlap < TOPIC_OVERLAP - 1e-9) continue;
    const why = flip(own, other);
    if (why === null) continue;
    const sharedWords = shared.map((s) => own.words.get(s)!);
    return { reason: `same topic (${sharedWords.map((w) => `"${w}"`).join(', ')}) with flipped polarity: ${why}`, overlap, sharedWords };
  }
  return null;
}

export type CounterEvidenceHint = { traitId: number; shardId: number; reason: string; overlap: number };

/**
 * Shards that may contradict a topic (a trait's principle, or a theme the trait draws on: its name and members),
 * each read once. `topics` in the order wanted; the hints come by topic, then by shard id, one per trait and shard
 * (the first topic's). `via` says what the topic is when it is not the principle itself; it leads the reason.
 */
export function* possibleCounterEvidenceSteps(
  topics: readonly { traitId: number; texts: readonly string[]; excludeShardIds?: ReadonlySet<number>; via?: string }[],
  shards: readonly Pick<Shard, 'id' | 'content'>[],
): Steps<CounterEvidenceHint[]> {
  const hints: CounterEvidenceHint[] = [];
  if (topics.length === 0) return hints;
  const readings: Reading[] = [];
  for (let i = 0; i < shards.length; i++) {
    if (i % 256 === 0) yield;
    readings.push(read(shards[i].content));
  }
  const order = shards.map((_, i) => i).sort((i, j) => shards[i].id - shards[j].id);
  const hinted = new Set<string>();
  for (const topic of topics) {
    yield;
    const own = topic.texts.map(read);
    for (const [k, i] of order.entries()) {
      // A theme's topic holds all its members: a long one must not hold the event loop either.
      if (k % 256 === 255 && own.length > 1) yield;
      const key = `${topic.traitId}:${shards[i].id}`;
      if (topic.excludeShardIds?.has(shards[i].id) || hinted.has(key)) continue;
      const found = contradictionOf(own, readings[i]);
      if (!found) continue;
      hinted.add(key);
      hints.push({ traitId: topic.traitId, shardId: shards[i].id, reason: topic.via ? `${topic.via}: ${found.reason}` : found.reason, overlap: found.overlap });
    }
  }
  return hints;
}

/** Whether two principles read as opposite (a tension rather than a consolidation), whatever their topic overlap. */
export function oppositePolarity(a: string, b: string): boolean {
  return flip(read(a), read(b)) !== null;
}

export type TraitHintCode = 'NEAR_DUPLICATE' | 'POSSIBLE_CONTRADICTION';
export type TraitHint = { kind: TraitHintCode; message: string; traitIds: number[] };

export function similarityMeasure(mode: SimilarityMode): string {
  return mode === 'trigram' ? 'trigram Jaccard' : mode === 'lexical' ? 'lexical TF-IDF cosine' : `lexical TF-IDF cosine (${mode} compares principles lexically)`;
}

/**
 * Dry-run warnings for a principle about to be active beside `others`: the most similar one when it is at least
 * `consolidationThreshold` similar (NEAR_DUPLICATE, unless the two read as opposite), and every one it may contradict.
 * `label` names the principle in messages ("add[0]", "consolidation 1").
 */
export function principleHints(
  label: string,
  principle: string,
  others: readonly Pick<Trait, 'id' | 'principle'>[],
  knobs: Pick<Knobs, 'similarity' | 'consolidationThreshold'>,
): TraitHint[] {
  const hints: TraitHint[] = [];
  let nearest: { id: number; similarity: number } | null = null;
  for (const t of others) {
    const contradiction = possibleContradiction(t.principle, principle);
    if (contradiction) {
      hints.push({ kind: 'POSSIBLE_CONTRADICTION', message: `${label} may contradict trait ${t.id}: ${contradiction.reason}`, traitIds: [t.id] });
      continue;
    }
    if (oppositePolarity(t.principle, principle)) continue;
    const similarity = textSimilarity(knobs.similarity, principle, t.principle);
    if (similarity >= knobs.consolidationThreshold && (nearest === null || similarity > nearest.similarity)) nearest = { id: t.id, similarity };
  }
  if (nearest) {
    hints.unshift({
      kind: 'NEAR_DUPLICATE',
      message: `${label} is close to trait ${nearest.id} (${similarityMeasure(knobs.similarity)} ${nearest.similarity.toFixed(2)}, at least ${knobs.consolidationThreshold}): revise or consolidate that trait instead of keeping both`,
      traitIds: [nearest.id],
    });
  }
  return hints;
}
