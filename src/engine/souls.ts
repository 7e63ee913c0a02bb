import { InvalidStateError, ValidationError } from './errors.ts';
import type { Soul } from './model.ts';
import { cleanText, exceedsCodePoints, MAX_SLUG_LENGTH, optionalText, requireText } from './normalize.ts';
import type { SoulsDb } from './souls-db.ts';
import { getCrystallization, type Crystallization } from './crystallization.ts';
import { pendingShardCounts } from './shards.ts';
import { soulHealth } from './signals.ts';
import { getTraitSignals } from './traits.ts';

export type CreateSoulInput = { name: string; slug?: string | null; essence: string; description?: string | null };
export type UpdateSoulInput = { name?: string | null; slug?: string | null; essence?: string | null; description?: string | null };

const slugPattern = /^[a-z0-9][a-z0-9_-]*$/;

function validName(db: SoulsDb, field: string, value: unknown): string {
  const name = requireText(field, value, db.settings.maxNameLength * 4);
  if (exceedsCodePoints(name, db.settings.maxNameLength)) throw new ValidationError(field, `must be at most ${db.settings.maxNameLength} characters`);
  if (/[\r\n]/.test(name)) throw new ValidationError(field, 'must be one line');
  return name;
}

/** A chosen slug, or null: then the store derives one from the name ("Mira Vance" → mira-vance, then mira-vance-2 …). */
function validSlug(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new ValidationError('slug', 'must be a string');
  const slug = cleanText(value).trim();
  if (slug === '') return null;
  if (slug.length > MAX_SLUG_LENGTH || !slugPattern.test(slug)) {
    throw new ValidationError('slug', `must be at most ${MAX_SLUG_LENGTH} lowercase letters, digits, "-" or "_", starting with a letter or digit`);
  }
  return slug;
}

export async function createSoul(db: SoulsDb, input: CreateSoulInput): Promise<Soul> {
  const soul = {
    name: validName(db, 'name', input.name),
    slug: validSlug(input.slug),
    essence: requireText('essence', input.essence, db.settings.maxEssenceBytes),
    description: optionalText('description', input.description, db.settings.maxDescriptionBytes) ?? '',
  };
  return await db.store.insertSoul(soul, db.clock.now());
}

/** The administrative escape hatch: overwrites fields directly, bypassing evolution. */
export async function updateSoul(db: SoulsDb, id: number, input: UpdateSoulInput): Promise<Soul> {
  const patch: { name?: string; slug?: string | null; essence?: string; description?: string } = {};
  if (input.name !== undefined && input.name !== null) patch.name = validName(db, 'name', input.name);
  if (input.slug !== undefined) patch.slug = validSlug(input.slug);
  if (input.essence !== undefined && input.essence !== null) patch.essence = requireText('essence', input.essence, db.settings.maxEssenceBytes);
  if (input.description !== undefined) patch.description = optionalText('description', input.description, db.settings.maxDescriptionBytes) ?? '';
  return await db.store.updateSoul(id, patch, db.clock.now());
}

export async function retireSoul(db: SoulsDb, id: number): Promise<Soul> {
  const now = db.clock.now();
  return await db.store.setDormancy(id, { dormantAt: now }, now);
}

/**
 * Clears dormancy, checking the name again (and accepting a rename). A dormant soul is never
 * ready, so if its considered shards pass the gate now, awakening it is the crossing.
 */
export async function awakenSoul(db: SoulsDb, id: number, options: { rename?: string | null } = {}): Promise<{ soul: Soul; readySoulIds: number[] }> {
  const rename = options.rename === undefined || options.rename === null ? undefined : validName(db, 'name', options.rename);
  const soul = await db.store.setDormancy(id, { dormantAt: null, rename }, db.clock.now());
  const verdict = (await getCrystallization(db, [id])).get(id);
  return { soul, readySoulIds: verdict?.ready ? [id] : [] };
}

/** Marks a refinement cycle done: the recency gate then waits for new evidence. */
export async function stampAttuned(db: SoulsDb, id: number): Promise<Soul> {
  return await db.store.stampAttuned(id, db.clock.now());
}

export async function getSoul(db: SoulsDb, id: number): Promise<Soul | null> {
  return (await db.store.getSouls([id])).get(id) ?? null;
}

export async function getSouls(db: SoulsDb, ids: readonly number[]): Promise<Map<number, Soul>> {
  return await db.store.getSouls(ids);
}

/** The awake soul with this name, else the most recently retired dormant one; "mira", "MIRA" and "Mi\u200bra" find "Mira". */
export async function getSoulByName(db: SoulsDb, name: string): Promise<Soul | null> {
  return await db.store.getSoulByName(name);
}

/** Non-dormant souls, by name. */
export async function listSouls(db: SoulsDb): Promise<Soul[]> {
  return await db.store.listSouls({ dormant: false });
}

export async function listDormantSouls(db: SoulsDb): Promise<Soul[]> {
  return await db.store.listSouls({ dormant: true });
}

export const soulOrders = ['READINESS', 'NAME', 'LEVEL', 'UPDATED'] as const;
export type SoulOrder = (typeof soulOrders)[number];

/**
 * Souls in the requested order. READINESS: ready souls first, then by
 * crystallization priority, then name (it needs every soul's verdict);
 * LEVEL and UPDATED: highest or newest first.
 */
export function sortSouls(souls: readonly Soul[], orderBy: SoulOrder, verdicts?: ReadonlyMap<number, Pick<Crystallization, 'ready' | 'priority'>>): Soul[] {
  const byName = (a: Soul, b: Soul) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id - b.id);
  const sorted = [...souls];
  switch (orderBy) {
    case 'NAME':
      return sorted.sort(byName);
    case 'LEVEL':
      return sorted.sort((a, b) => b.level - a.level || byName(a, b));
    case 'UPDATED':
      return sorted.sort((a, b) => b.updatedAt - a.updatedAt || a.id - b.id);
    case 'READINESS': {
      if (!verdicts) throw new InvalidStateError('ordering by readiness needs the crystallization verdicts');
      const rank = (s: Soul) => verdicts.get(s.id)!;
      return sorted.sort((a, b) => Number(rank(b).ready) - Number(rank(a).ready) || rank(b).priority - rank(a).priority || byName(a, b));
    }
    default:
      throw new ValidationError('orderBy', `unknown order "${String(orderBy)}"`);
  }
}

/** Non-dormant souls in the requested order (see sortSouls). */
export async function listSoulsOrdered(db: SoulsDb, orderBy: SoulOrder = 'READINESS'): Promise<Soul[]> {
  const souls = await db.store.listSouls({ dormant: false });
  const verdicts = orderBy === 'READINESS' ? await getCrystallization(db, souls.map((s) => s.id)) : undefined;
  return sortSouls(souls, orderBy, verdicts);
}

/** Health (SPEC §8) of each soul, in a constant number of statements. */
export async function getSoulHealth(db: SoulsDb, soulIds: readonly number[]): Promise<Map<number, number>> {
  const traits = await db.store.listTraits(soulIds, { statuses: ['active'] });
  const signals = await getTraitSignals(db, traits.map((t) => t.id));
  const pending = await pendingShardCounts(db, soulIds);
  const bySoul = Map.groupBy(traits, (t) => t.soulId);
  return new Map(soulIds.map((id) => [id, soulHealth((bySoul.get(id) ?? []).map((t) => signals.get(t.id)!), pending.get(id) ?? 0, db.settings)]));
}
