import { collapseWhitespace } from './normalize.ts';
import type { Soul, Trait } from './model.ts';
import { citationDensity, rankKey } from './signals.ts';
import type { SoulsDb } from './souls-db.ts';
import { NotFoundError } from './errors.ts';

export type RenderOptions = { includeProvenance?: boolean };

/**
 * Citation density descending, then oldest first, then id. A trait's age is
 * measured at the soul's orderedAt, not at now, so the block stays
 * byte-identical between writes however far the clock moves, and a revert
 * (which restores orderedAt) gives back the block exactly. Densities are
 * rounded first, so equal ones tie whatever their last floating-point bit.
 */
export function orderForRender<T extends Pick<Trait, 'id' | 'createdAt'>>(soul: Pick<Soul, 'orderedAt'>, traits: readonly T[], citationCounts: ReadonlyMap<number, number>): T[] {
  const density = new Map(traits.map((t) => [t.id, rankKey(citationDensity(citationCounts.get(t.id) ?? 0, t.createdAt, soul.orderedAt))]));
  return [...traits].sort((a, b) => density.get(b.id)! - density.get(a.id)! || a.createdAt - b.createdAt || a.id - b.id);
}

/** The identity block: a pure function of the soul, its active traits and their citation counts. */
export function renderBlock(
  soul: Pick<Soul, 'name' | 'description' | 'essence' | 'orderedAt'>,
  activeTraits: readonly Trait[],
  citationCounts: ReadonlyMap<number, number>,
  options: RenderOptions = {},
): string {
  const blocks = [`# ${soul.name}`];
  if (soul.description.trim() !== '') blocks.push(`*${collapseWhitespace(soul.description)}*`);
  blocks.push(soul.essence.trim());
  if (activeTraits.length > 0) {
    const lines = orderForRender(soul, activeTraits, citationCounts).map((t) =>
      options.includeProvenance ? `- **${collapseWhitespace(t.principle)}** — ${collapseWhitespace(t.provenance)}` : `- ${collapseWhitespace(t.principle)}`,
    );
    blocks.push(['## Traits', ...lines].join('\n'));
  }
  return blocks.join('\n\n') + '\n';
}

export function countCitations(citations: readonly { traitId: number }[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const c of citations) counts.set(c.traitId, (counts.get(c.traitId) ?? 0) + 1);
  return counts;
}

/** Everything the block depends on, read in one go. */
export async function renderInputs(db: SoulsDb, soulIds: readonly number[]): Promise<Map<number, { soul: Soul; traits: Trait[]; citationCounts: Map<number, number> }>> {
  const souls = await db.store.getSouls(soulIds);
  const traits = await db.store.listTraits([...souls.keys()], { statuses: ['active'] });
  const citationCounts = countCitations(await db.store.citationsOfTraits(traits.map((t) => t.id)));
  const result = new Map<number, { soul: Soul; traits: Trait[]; citationCounts: Map<number, number> }>();
  for (const soul of souls.values()) result.set(soul.id, { soul, traits: [], citationCounts });
  for (const t of traits) result.get(t.soulId)!.traits.push(t);
  return result;
}

export async function renderSoul(db: SoulsDb, soulId: number, options: RenderOptions = {}): Promise<string> {
  const input = (await renderInputs(db, [soulId])).get(soulId);
  if (!input) throw new NotFoundError('Soul', soulId);
  return renderBlock(input.soul, input.traits, input.citationCounts, options);
}

/** Batch form for loaders: one rendered block per soul id, in a constant number of statements. */
export async function renderSouls(db: SoulsDb, soulIds: readonly number[], options: RenderOptions = {}): Promise<Map<number, string>> {
  const inputs = await renderInputs(db, soulIds);
  return new Map([...inputs].map(([id, input]) => [id, renderBlock(input.soul, input.traits, input.citationCounts, options)]));
}

/** Each soul's active traits in render order (SPEC §6), in a constant number of statements: what a SOUL.md export lists. */
export async function orderedActiveTraits(db: SoulsDb, soulIds: readonly number[]): Promise<Map<number, Trait[]>> {
  const inputs = await renderInputs(db, soulIds);
  return new Map([...inputs].map(([id, input]) => [id, orderForRender(input.soul, input.traits, input.citationCounts)]));
}
