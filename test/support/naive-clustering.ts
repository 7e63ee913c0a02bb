/**
 * Reference ("naive") single-linkage clustering: every unordered pair is
 * compared with JS Sets of trigram strings, joined with union-find. This is
 * the baseline that `clusterTexts` must agree with exactly and that the
 * clustering benchmark compares against. Simple, but not deliberately slow.
 */
import { assertValidThreshold, meetsThreshold, trigramSet } from '../../src/engine/similarity.ts';

export function clusterTextsNaive(texts: readonly string[], threshold: number): number[][] {
  assertValidThreshold(threshold);
  const n = texts.length;
  const sets = texts.map((t) => trigramSet(t));
  const parent = Array.from({ length: n }, (_, i) => i);
  const find = (x: number): number => {
    while (parent[x] !== x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  };

  for (let i = 0; i < n; i++) {
    const a = sets[i];
    for (let j = i + 1; j < n; j++) {
      const b = sets[j];
      const small = a.size <= b.size ? a : b;
      const large = small === a ? b : a;
      let inter = 0;
      for (const g of small) if (large.has(g)) inter++;
      if (meetsThreshold(inter, a.size, b.size, threshold)) {
        const ri = find(i);
        const rj = find(j);
        if (ri !== rj) parent[Math.max(ri, rj)] = Math.min(ri, rj);
      }
    }
  }

  const byRoot = new Map<number, number[]>();
  const clusters: number[][] = [];
  for (let i = 0; i < n; i++) {
    const r = find(i);
    let cluster = byRoot.get(r);
    if (cluster === undefined) {
      cluster = [];
      byRoot.set(r, cluster);
      clusters.push(cluster);
    }
    cluster.push(i);
  }
  return clusters;
}
