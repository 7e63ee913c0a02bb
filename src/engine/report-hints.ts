/** The evidence report's "never mislead" rules that need no themes (docs/evidence.md). */
import { DAY_MS } from './clock.ts';
import type { Trait } from './model.ts';
import type { Knobs, SimilarityMode } from './settings.ts';

/**
 * A promotion needs real tenure (SPEC §13): the trait is at least promotionTenureDays old. Surviving an attunement
 * does not stand in for it: a cycle can be stamped minutes after the trait was made.
 */
export function isTenured(trait: Pick<Trait, 'createdAt'>, knobs: Pick<Knobs, 'promotionTenureDays'>, now: number): boolean {
  return now - trait.createdAt >= knobs.promotionTenureDays * DAY_MS;
}

/** Below this many clustered shards a report is too small for "most are singletons" to mean anything. */
export const MIN_SHARDS_FOR_SIGNAL_CHECK = 3;

/**
 * When more than half of the clustered shards sit alone, the clusters say little: the report says so, and what to
 * do instead (judge the shards into themes, or compare them by meaning rather than spelling).
 */
export function clusterSignalWarning(clusters: readonly { memberCount: number }[], mode: SimilarityMode): { singletons: number; message: string } | null {
  const total = clusters.reduce((sum, c) => sum + c.memberCount, 0);
  const singletons = clusters.filter((c) => c.memberCount === 1).length;
  if (total < MIN_SHARDS_FOR_SIGNAL_CHECK || singletons * 2 <= total) return null;
  const advice =
    mode === 'trigram'
      ? 'trigram similarity groups only near-verbatim texts: read the shards and assign themes, or use similarity lexical (or vectors: provided, semantic)'
      : mode === 'lexical'
        ? 'read the shards and assign themes, or use vectors (similarity provided or semantic)'
        : 'read the shards and assign themes';
  return { singletons, message: `${singletons} of ${total} clustered shards resemble no other (each a cluster of one), so the clusters carry little signal (${mode}): ${advice}` };
}
