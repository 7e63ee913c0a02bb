import { describe, it, expect } from 'vitest';
import {
  buildGramIndex,
  clusterTexts,
  jaccardOfIndexed,
  meanPairwiseSimilarity,
  meetsThreshold,
  normalizeForSimilarity,
  similarity,
  trigramSet,
} from '../src/engine/similarity.ts';
import { makeObservationCorpus, makeRng } from '../bench/corpus.ts';
import { clusterTextsNaive } from './support/naive-clustering.ts';

const sorted = (set: Set<string>): string[] => [...set].sort();

describe('normalizeForSimilarity and trigramSet', () => {
  it('lowercases, collapses whitespace and trims', () => {
    expect(normalizeForSimilarity('  Hello \t\n  WORLD\u00a0 ')).toBe('hello world');
    expect(normalizeForSimilarity('')).toBe('');
    expect(normalizeForSimilarity(' \n\t ')).toBe('');
  });

  it('takes the set of character trigrams of the normalized text', () => {
    expect(sorted(trigramSet('abcd'))).toEqual(['abc', 'bcd']);
    expect(sorted(trigramSet('aaaa'))).toEqual(['aaa']);
    expect(sorted(trigramSet('  A   B '))).toEqual(['a b']);
    expect(sorted(trigramSet('Ab Cd'))).toEqual(['ab ', 'b c', ' cd'].sort());
  });

  it('makes a text shorter than 3 characters a single gram, the empty text included', () => {
    expect(sorted(trigramSet('Ab'))).toEqual(['ab']);
    expect(sorted(trigramSet('x'))).toEqual(['x']);
    expect(sorted(trigramSet(''))).toEqual(['']);
    expect(sorted(trigramSet('  \t'))).toEqual(['']);
  });

  it('counts code points, so emoji do not split', () => {
    expect(sorted(trigramSet('😀😀😀'))).toEqual(['😀😀😀']);
    expect(sorted(trigramSet('a😀'))).toEqual(['a😀']);
    expect(sorted(trigramSet('a😀bc'))).toEqual(['a😀b', '😀bc']);
  });
});

describe('similarity', () => {
  it('is the Jaccard index of the trigram sets (hand-computed)', () => {
    // {abc, bcd} vs {abc, bce}: 1 common of 3.
    expect(similarity('abcd', 'abce')).toBeCloseTo(1 / 3, 15);
    // {hel, ell, llo} vs {hel, elp}: 1 of 4.
    expect(similarity('hello', 'help')).toBe(1 / 4);
    // {abc, bcd, cde, def} vs {abc, bcd, cde, def, efg, fgh}: 4 of 6.
    expect(similarity('abcdef', 'abcdefgh')).toBe(4 / 6);
    expect(similarity('abcdefgh', 'cdefghij')).toBe(4 / 8);
    expect(similarity('abcdef', 'cdefghij')).toBe(2 / 8);
    expect(similarity('a😀bc', 'a😀bd')).toBe(1 / 3);
    expect(similarity('abc', 'xyz')).toBe(0);
  });

  it('ignores case and whitespace differences', () => {
    expect(similarity('The Coordinator  skipped', 'the coordinator\tskipped ')).toBe(1);
    expect(similarity('HELLO world', '  hello\n\nWORLD')).toBe(1);
  });

  it('treats short texts as one gram and empty texts as equal', () => {
    expect(similarity('ab', 'AB')).toBe(1);
    expect(similarity('ab', 'ba')).toBe(0);
    expect(similarity('ab', 'abc')).toBe(0);
    expect(similarity('', '')).toBe(1);
    expect(similarity('', '   ')).toBe(1);
    expect(similarity('', 'abc')).toBe(0);
  });

  it('is symmetric, in [0, 1], and 1 for identical texts', () => {
    const texts = makeObservationCorpus(40, 11);
    for (let i = 0; i < texts.length; i++) {
      expect(similarity(texts[i], texts[i])).toBe(1);
      for (let j = i + 1; j < texts.length; j += 3) {
        const s = similarity(texts[i], texts[j]);
        expect(s).toBe(similarity(texts[j], texts[i]));
        expect(s).toBeGreaterThanOrEqual(0);
        expect(s).toBeLessThanOrEqual(1);
      }
    }
  });
});

describe('buildGramIndex and jaccardOfIndexed', () => {
  it('gives sorted unique id sets of the trigram set sizes, and the same Jaccard as similarity', () => {
    const rng = makeRng(5);
    const texts = [...makeObservationCorpus(30, 3), ...Array.from({ length: 40 }, () => tinyString(rng))];
    const index = buildGramIndex(texts);
    for (let i = 0; i < texts.length; i++) {
      const set = index.sets[i];
      expect(set.length).toBe(trigramSet(texts[i]).size);
      for (let k = 1; k < set.length; k++) expect(set[k]).toBeGreaterThan(set[k - 1]);
      for (let k = 0; k < set.length; k++) expect(set[k]).toBeLessThan(index.gramCount);
      for (let j = 0; j < texts.length; j++) {
        expect(jaccardOfIndexed(index, i, j)).toBe(similarity(texts[i], texts[j]));
      }
    }
  });

  it('treats exactly the characters /\\s/ matches as whitespace', () => {
    const texts = ['x y'];
    for (let c = 0; c < 0x10000; c++) texts.push(`x${String.fromCharCode(c)}y`);
    const index = buildGramIndex(texts);
    const spaceGram = index.sets[0][0];
    for (let c = 0; c < 0x10000; c++) {
      const ch = String.fromCharCode(c);
      const set = index.sets[c + 1];
      const expected = trigramSet(`x${ch}y`);
      expect(set.length).toBe(expected.size);
      expect(set.length === 1 && set[0] === spaceGram).toBe(/\s/.test(ch));
    }
  });

  it('ranks ids by rarity: rarer grams get smaller ids', () => {
    const index = buildGramIndex(['abcd', 'abce', 'abcf']);
    // "abc" is in all three texts, so it has the largest id.
    const abc = index.sets[0].find((id) => index.sets[1].includes(id) && index.sets[2].includes(id));
    expect(abc).toBe(index.gramCount - 1);
  });
});

describe('meanPairwiseSimilarity', () => {
  it('is 1 for fewer than two texts', () => {
    expect(meanPairwiseSimilarity([])).toBe(1);
    expect(meanPairwiseSimilarity(['anything'])).toBe(1);
  });

  it('averages over all unordered pairs', () => {
    // abcd~abce 1/3, abcd~abcd 1, abce~abcd 1/3.
    expect(meanPairwiseSimilarity(['abcd', 'abce', 'abcd'])).toBeCloseTo(5 / 9, 12);
    expect(meanPairwiseSimilarity(['same text', 'SAME  text'])).toBe(1);
  });
});

describe('clusterTexts', () => {
  // J(a, b) = 4/6, J(b, c) = 4/8 = 0.5 exactly, J(a, c) = 2/8; d ~ e (J = 1); f alone.
  const texts = ['abcdef', 'zzzz yyyy', 'cdefghij', 'qrstuv', 'abcdefgh', 'ZZZZ\tYYYY'];

  it('joins chains by single linkage (a~b, b~c, a!~c: one cluster)', () => {
    expect(similarity(texts[0], texts[2])).toBeLessThan(0.5);
    expect(clusterTexts(texts, 0.5)).toEqual([[0, 2, 4], [1, 5], [3]]);
  });

  it('follows the threshold, inclusive', () => {
    expect(clusterTexts(texts, 0.6)).toEqual([[0, 4], [1, 5], [2], [3]]);
    expect(clusterTexts(texts, 0.7)).toEqual([[0], [1, 5], [2], [3], [4]]);
    expect(clusterTexts(texts, 1)).toEqual([[0], [1, 5], [2], [3], [4]]);
    expect(clusterTexts(texts, 0.25)).toEqual([[0, 2, 4], [1, 5], [3]]);
    expect(clusterTexts(texts, 0.01)).toEqual([[0, 2, 4], [1, 5], [3]]);
  });

  it('puts three near-duplicates in one cluster, apart from an unrelated text', () => {
    const near = [
      'The coordinator skipped the Docker context when delegating the build task.',
      'The merchant raised the price after the player haggled twice at the market square.',
      'The coordinator skipped the docker context when delegating the deploy task.',
      'the COORDINATOR skipped the Docker context while delegating the build task.',
    ];
    expect(clusterTexts(near, 0.5)).toEqual([[0, 2, 3], [1]]);
  });

  it('handles empty input, single texts, duplicates and empty strings', () => {
    expect(clusterTexts([], 0.5)).toEqual([]);
    expect(clusterTexts(['only one'], 0.5)).toEqual([[0]]);
    expect(clusterTexts(['', '  ', 'x', ''], 1)).toEqual([[0, 1, 3], [2]]);
    expect(clusterTexts(['same', 'other text', 'SAME'], 1)).toEqual([[0, 2], [1]]);
  });

  it('rejects thresholds outside (0, 1]', () => {
    for (const bad of [0, -0.5, 1.5, Number.NaN]) {
      expect(() => clusterTexts(['a', 'b'], bad)).toThrow(RangeError);
      expect(() => clusterTextsNaive(['a', 'b'], bad)).toThrow(RangeError);
    }
  });

  it('decides pairs with the shared predicate, inclusive at the threshold', () => {
    expect(meetsThreshold(7, 10, 7, 0.7)).toBe(true); // 7/10
    expect(meetsThreshold(1, 10, 1, 0.1)).toBe(true); // 1/10
    expect(meetsThreshold(3, 6, 7, 0.3)).toBe(true); // 3/10
    expect(meetsThreshold(2, 6, 6, 0.3)).toBe(false); // 2/10
    expect(meetsThreshold(0, 1, 1, 1e-12)).toBe(false);
    expect(meetsThreshold(5, 5, 5, 1)).toBe(true);
    expect(meetsThreshold(4, 5, 4, 1)).toBe(false);
  });
});

/** A short random string over a tiny alphabet: many collisions, short texts, odd whitespace. */
function tinyString(rng: () => number): string {
  const alphabet = ['a', 'b', 'c', 'A', 'B', ' ', '  ', '\t', '\n', '\u00a0', '\u3000', '😀', 'é', 'É', 'İ', '\ud800'];
  const len = Math.floor(rng() * 9);
  let s = '';
  for (let k = 0; k < len; k++) s += alphabet[Math.floor(rng() * alphabet.length)];
  return s;
}

function mixedCorpus(rng: () => number, size: number): string[] {
  const base = makeObservationCorpus(size, Math.floor(rng() * 1e9));
  return base.map((text) => {
    const roll = rng();
    if (roll < 0.15) return tinyString(rng);
    if (roll < 0.25) return text.slice(0, Math.floor(rng() * 12));
    if (roll < 0.35) return text.toUpperCase();
    return text;
  });
}

describe('clusterTexts agrees with the naive all-pairs clustering', () => {
  it('on 240 random corpora of 0..150 texts at many thresholds', () => {
    const rng = makeRng(20260101);
    const fixed = [0.2, 0.3, 0.4, 0.5, 0.7, 0.9, 1.0];
    for (let round = 0; round < 240; round++) {
      const size = Math.floor(rng() * 151);
      const kind = round % 3;
      const texts =
        kind === 0
          ? makeObservationCorpus(size, Math.floor(rng() * 1e9))
          : kind === 1
            ? Array.from({ length: size }, () => tinyString(rng))
            : mixedCorpus(rng, size);
      const threshold = round % 2 === 0 ? fixed[Math.floor(rng() * fixed.length)] : Math.max(1e-6, rng());
      const fast = clusterTexts(texts, threshold);
      const naive = clusterTextsNaive(texts, threshold);
      if (JSON.stringify(fast) !== JSON.stringify(naive)) {
        throw new Error(`mismatch in round ${round} (kind ${kind}, ${size} texts, threshold ${threshold})`);
      }
      expect(fast).toEqual(naive);
    }
  });

  it('on 1,500 observations at 0.4', { timeout: 600_000 }, () => {
    const texts = makeObservationCorpus(1500, 1234);
    const fast = clusterTexts(texts, 0.4);
    expect(fast).toEqual(clusterTextsNaive(texts, 0.4));
    expect(fast.length).toBeGreaterThan(1);
    expect(fast.length).toBeLessThan(1500);
  });

  it('with very large texts (more than 32,768 distinct trigrams) among ordinary ones', { timeout: 600_000 }, () => {
    const rng = makeRng(99);
    const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789.,;:';
    const randomText = (length: number): string => {
      let s = '';
      for (let k = 0; k < length; k++) s += alphabet[Math.floor(rng() * alphabet.length)];
      return s;
    };
    const mutate = (text: string, rate: number): string =>
      Array.from(text, (ch) => (rng() < rate ? alphabet[Math.floor(rng() * alphabet.length)] : ch)).join('');
    const big = randomText(60_000);
    const medium = randomText(40_000);
    const texts = [
      ...makeObservationCorpus(20, 5),
      big,
      mutate(big, 0.05),
      randomText(60_000),
      big.slice(0, 30_000) + randomText(30_000),
      medium,
      mutate(medium, 0.1),
      medium + big.slice(0, 20_000),
    ];
    expect(trigramSet(big).size).toBeGreaterThan(32_768);
    expect(trigramSet(medium).size).toBeLessThan(32_768);
    for (const threshold of [0.3, 0.5, 0.7]) {
      expect(clusterTexts(texts, threshold)).toEqual(clusterTextsNaive(texts, threshold));
    }
  });
});
