// A labelled set whose best clustering threshold is known by construction (similarity provided).
import type { LabelledText } from '../../src/engine/index.ts';

/** Twelve words that share no stem and no character 4-gram, so their lexical similarity is 0 and only the vectors count. */
export const WORDS = ['apple', 'river', 'stone', 'cloud', 'tiger', 'piano', 'lemon', 'horse', 'grape', 'candle', 'window', 'bridge'] as const;

/**
 * Three labels of four texts, each label two pairs. Vectors are sums of orthonormal parts (global 0.45, label 0.3,
 * pair 0.15, own 0.1 of the squared norm), so the cosine of two texts is 0.9 within a pair, 0.75 within a label and
 * 0.45 across labels. Provided mixes 0.8 × cosine with 0.2 × lexical (0 here): 0.72, 0.6 and 0.36. Every threshold
 * from 0.375 to 0.6 of the sweep recovers the labels exactly (ARI 1); 0.36 and below merge everything into one
 * cluster of 12, larger than a label; above 0.6 the labels split into their pairs. The lowest perfect one wins ties.
 */
export const KNOWN_BEST_THRESHOLD = 0.375;

export function labelledVectors(): LabelledText[] {
  const dimension = 1 + 3 + 6 + 12;
  return WORDS.map((text, i) => {
    const label = Math.floor(i / 4);
    const pair = Math.floor(i / 2);
    const v = new Array<number>(dimension).fill(0);
    v[0] = Math.sqrt(0.45);
    v[1 + label] = Math.sqrt(0.3);
    v[4 + pair] = Math.sqrt(0.15);
    v[10 + i] = Math.sqrt(0.1);
    return { text, label: `label ${label}`, embedding: v };
  });
}

/** The set as a JSONL file's content. */
export function labelledJsonl(items: readonly LabelledText[] = labelledVectors()): string {
  return items.map((item) => JSON.stringify(item)).join('\n') + '\n';
}
