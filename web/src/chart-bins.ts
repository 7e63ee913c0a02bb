// The evidence chart's numbers: shards binned by week and source (pure, so Node tests it as well).
export const WEEK_MS = 7 * 86_400_000;
/** Weeks shown, the newest ending now. */
export const CHART_WEEKS = 12;
/** Sources drawn in their own colour; the rest are summed as "other sources". */
const MAX_SERIES = 5;
const OTHER = 'other sources';

export type Point = { source: string; createdAt: string };

export type Chart = { weeks: { start: number; counts: Map<string, number>; total: number }[]; series: string[]; totals: Map<string, number>; max: number; total: number };

/** Weekly bins ending at `now`, stacked by source: the busiest sources first, the rest as one series. */
export function binEvidence(points: readonly Point[], now: number, weeks = CHART_WEEKS): Chart {
  const bySource = new Map<string, number>();
  for (const p of points) bySource.set(p.source, (bySource.get(p.source) ?? 0) + 1);
  const ranked = [...bySource.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([s]) => s);
  const named = ranked.length > MAX_SERIES ? ranked.slice(0, MAX_SERIES - 1) : ranked;
  const series = ranked.length > named.length ? [...named, OTHER] : named;
  const seriesOf = (source: string) => (named.includes(source) ? source : OTHER);
  const bins = Array.from({ length: weeks }, (_, i) => ({ start: now - (weeks - i) * WEEK_MS, counts: new Map<string, number>(), total: 0 }));
  const totals = new Map<string, number>();
  for (const p of points) {
    const index = weeks - 1 - Math.floor((now - Date.parse(p.createdAt)) / WEEK_MS);
    if (index < 0 || index >= weeks) continue;
    const key = seriesOf(p.source);
    bins[index].counts.set(key, (bins[index].counts.get(key) ?? 0) + 1);
    bins[index].total++;
    totals.set(key, (totals.get(key) ?? 0) + 1);
  }
  const total = bins.reduce((sum, b) => sum + b.total, 0);
  return { weeks: bins, series, totals, max: Math.max(1, ...bins.map((b) => b.total)), total };
}
