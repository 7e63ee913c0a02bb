import { DAY_MS } from './clock.ts';
import type { Citation, Soul, Trait } from './model.ts';
import type { Knobs, SimilarityMode } from './settings.ts';
import { textSimilarity } from './similarity-modes.ts';

export type TraitSignals = {
  traitId: number;
  /** age / max(1 day, soul age), 0..1 */
  tenure: number;
  stale: boolean;
  citationCount: number;
  /** citations / max(1, age in days) */
  citationDensity: number;
  /** similarity of the principle to the soul's essence */
  essenceRedundancy: number;
  /** attunements of the soul since the trait was created */
  survivalCount: number;
};

export type SignalInputs = {
  soul: Soul;
  citations: readonly Citation[];
  attunedAt: readonly number[];
};

/** Rounded to 12 significant digits before ranking, so values equal up to float noise tie and fall through to the next key. */
export function rankKey(value: number): number {
  return Number(value.toPrecision(12));
}

export function citationDensity(citationCount: number, createdAt: number, at: number): number {
  return citationCount / Math.max(1, (at - createdAt) / DAY_MS);
}

/** Essence redundancies computed recently, by mode, principle and essence (a pure function of the three). Cleared when full. */
const redundancies = new Map<string, number>();
const REDUNDANCY_CACHE_SIZE = 20_000;

/** How much a principle repeats the essence: each report of a dashboard asks again for every trait. */
function essenceRedundancyOf(mode: SimilarityMode, principle: string, essence: string): number {
  const key = `${mode}\u0000${principle}\u0000${essence}`;
  let value = redundancies.get(key);
  if (value === undefined) {
    value = textSimilarity(mode, principle, essence);
    if (redundancies.size >= REDUNDANCY_CACHE_SIZE) redundancies.clear();
    redundancies.set(key, value);
  }
  return value;
}

export function traitSignals(trait: Trait, inputs: SignalInputs, knobs: Pick<Knobs, 'staleDays' | 'similarity'>, now: number): TraitSignals {
  const age = Math.max(0, now - trait.createdAt);
  const soulAge = Math.max(DAY_MS, now - inputs.soul.createdAt);
  const staleWindow = knobs.staleDays * DAY_MS;
  const ownCitations = inputs.citations.filter((c) => c.traitId === trait.id);
  const citedRecently = ownCitations.some((c) => now - c.createdAt <= staleWindow);
  let essenceRedundancy: number | undefined;
  return {
    traitId: trait.id,
    tenure: Math.min(1, age / soulAge),
    stale: now - Math.max(trait.createdAt, trait.updatedAt) > staleWindow && !citedRecently,
    citationCount: ownCitations.length,
    citationDensity: citationDensity(ownCitations.length, trait.createdAt, now),
    // The one costly signal: computed when first read, so lists that never ask for it never pay.
    get essenceRedundancy() {
      return (essenceRedundancy ??= essenceRedundancyOf(knobs.similarity, trait.principle, inputs.soul.essence));
    },
    survivalCount: inputs.attunedAt.filter((t) => t > trait.createdAt).length,
  };
}

/** (1 − avgStaleness) × (1 − activeCount / traitLimit) × min(1, pending / crystallizationThreshold) */
export function soulHealth(
  signals: readonly Pick<TraitSignals, 'stale'>[],
  pendingCount: number,
  knobs: Pick<Knobs, 'traitLimit' | 'crystallizationThreshold'>,
): number {
  const staleFraction = signals.length === 0 ? 0 : signals.filter((s) => s.stale).length / signals.length;
  const headroom = Math.max(0, 1 - signals.length / knobs.traitLimit);
  const coverage = Math.min(1, pendingCount / knobs.crystallizationThreshold);
  return (1 - staleFraction) * headroom * coverage;
}
