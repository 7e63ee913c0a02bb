import { InvalidStateError, ValidationError } from './errors.ts';
import type { Page, Soul } from './model.ts';
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

type Verdicts = ReadonlyMap<number, Pick<Crystallization, 'ready' | 'priority'>>;
/** A soul's place in an order, compared item by item ascending: descending orders are keyed by negated numbers. */
type OrderKey = (string | number)[];

function orderKey(soul: Soul, orderBy: SoulOrder, verdicts?: Verdicts): OrderKey {
  switch (orderBy) {
    case 'NAME':
      return [soul.name, soul.id];
    case 'LEVEL':
      return [-soul.level, soul.name, soul.id];
    case 'UPDATED':
      return [-soul.updatedAt, soul.id];
    case 'READINESS': {
      if (!verdicts) throw new InvalidStateError('ordering by readiness needs the crystallization verdicts');
      const verdict = verdicts.get(soul.id)!;
      return [verdict.ready ? 0 : 1, -verdict.priority, soul.name, soul.id];
    }
    default:
      throw new ValidationError('orderBy', `unknown order "${String(orderBy)}"`);
  }
}

function requireOrder(orderBy: unknown): void {
  if (!(soulOrders as readonly unknown[]).includes(orderBy)) throw new ValidationError('orderBy', `unknown order "${String(orderBy)}"`);
}

function compareKeys(a: OrderKey, b: OrderKey): number {
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

/**
 * Souls in the requested order. READINESS: ready souls first, then by
 * crystallization priority, then name (it needs every soul's verdict);
 * LEVEL and UPDATED: highest or newest first. Ties go by name, then id.
 */
export function sortSouls(souls: readonly Soul[], orderBy: SoulOrder, verdicts?: Verdicts): Soul[] {
  requireOrder(orderBy);
  const keyed = souls.map((soul) => ({ soul, key: orderKey(soul, orderBy, verdicts) }));
  return keyed.sort((a, b) => compareKeys(a.key, b.key)).map((k) => k.soul);
}

/** The most souls one page of the roster holds. */
export const MAX_SOUL_PAGE = 1000;

const encodeSoulCursor = (orderBy: SoulOrder, key: OrderKey) => Buffer.from(JSON.stringify([orderBy, ...key])).toString('base64url');

function decodeSoulCursor(orderBy: SoulOrder, cursor: string): OrderKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = null;
  }
  const key: unknown[] = Array.isArray(parsed) ? parsed : [];
  const valid = key.length >= 3 && key.every((v) => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)));
  if (!valid || !(soulOrders as readonly unknown[]).includes(key[0])) throw new ValidationError('after', 'is not a cursor of this list (pass pageInfo.endCursor as it came)');
  if (key[0] !== orderBy) throw new ValidationError('after', `is a cursor of the ${String(key[0])} order; this page is ordered by ${orderBy}`);
  return key.slice(1) as OrderKey;
}

/**
 * One page of the souls in an order, after a cursor. A cursor is the last soul's key in that order (READINESS:
 * ready, priority, name, id, as judged when its page was read), so the next page starts after that key as the souls
 * stand now: paging never repeats or skips a soul whose key did not change meanwhile; a soul whose readiness changed
 * between pages is placed by its new key.
 */
export function pageSouls(souls: readonly Soul[], orderBy: SoulOrder, page: { first: number; after?: string | null }, verdicts?: Verdicts): Page<Soul> {
  requireOrder(orderBy);
  if (!Number.isInteger(page.first) || page.first < 0 || page.first > MAX_SOUL_PAGE) throw new ValidationError('first', `must be a whole number from 0 to ${MAX_SOUL_PAGE}`);
  const keyed = souls.map((soul) => ({ soul, key: orderKey(soul, orderBy, verdicts) })).sort((a, b) => compareKeys(a.key, b.key));
  const after = page.after === undefined || page.after === null ? null : decodeSoulCursor(orderBy, page.after);
  const start = after === null ? 0 : keyed.findIndex((k) => compareKeys(k.key, after) > 0);
  const from = start < 0 ? keyed.length : start;
  const items = keyed.slice(from, from + page.first);
  const cursors = items.map((k) => encodeSoulCursor(orderBy, k.key));
  return { items: items.map((k) => k.soul), cursors, totalCount: souls.length, hasNextPage: from + items.length < keyed.length, endCursor: cursors.at(-1) ?? null };
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
