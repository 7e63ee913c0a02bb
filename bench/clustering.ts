/**
 * Micro benchmark: exact single-linkage clustering (clusterTexts) against the
 * naive all-pairs reference (clusterTextsNaive), on the seeded observation
 * corpus, at threshold 0.4. Reports medians of several runs (one naive run at
 * 3,000 texts, which takes seconds) and the speed-ups; also checks that both
 * give the same partition.
 */
import { clusterTexts } from '../src/engine/similarity.ts';
import { clusterTextsNaive } from '../test/support/naive-clustering.ts';
import { makeObservationCorpus } from './corpus.ts';

const THRESHOLD = 0.4;

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Median ms of `runs` (≥ 1) calls of fn, and its last result. */
export function timeRuns<T>(runs: number, fn: () => T): { ms: number; result: T } {
  const times: number[] = [];
  let result!: T;
  for (let r = 0; r < runs; r++) {
    const start = performance.now();
    result = fn();
    times.push(performance.now() - start);
  }
  return { ms: median(times), result };
}

const formatMs = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));
const formatCount = (n: number): string => n.toLocaleString('en-US');

export async function benchClustering(): Promise<Array<{ name: string; value: string }>> {
  const rows: Array<{ name: string; value: string }> = [];
  const plans = [
    { n: 300, fastRuns: 15, naiveRuns: 5 },
    { n: 3000, fastRuns: 9, naiveRuns: 1 },
  ];
  // Warm up the JIT on a separate corpus.
  const warm = makeObservationCorpus(1000, 7);
  for (let r = 0; r < 5; r++) clusterTexts(warm, THRESHOLD);
  clusterTextsNaive(warm.slice(0, 200), THRESHOLD);

  for (const { n, fastRuns, naiveRuns } of plans) {
    const texts = makeObservationCorpus(n, 42);
    const fast = timeRuns(fastRuns, () => clusterTexts(texts, THRESHOLD));
    const naive = timeRuns(naiveRuns, () => clusterTextsNaive(texts, THRESHOLD));
    const agree = JSON.stringify(fast.result) === JSON.stringify(naive.result);
    const label = `${formatCount(n)} shards`;
    rows.push({ name: `clustering ${label} (ms, median)`, value: formatMs(fast.ms) });
    rows.push({
      name: `clustering ${label}, naive all-pairs (ms, ${naiveRuns === 1 ? '1 run' : 'median'})`,
      value: formatMs(naive.ms),
    });
    rows.push({ name: `clustering ${label}, speed-up vs naive`, value: `${(naive.ms / fast.ms).toFixed(1)}x` });
    rows.push({
      name: `clustering ${label}, clusters at ${THRESHOLD} (largest)`,
      value: `${formatCount(fast.result.length)} (${Math.max(...fast.result.map((c) => c.length))})${agree ? '' : ' MISMATCH with naive'}`,
    });
  }
  return rows;
}
