// The roster's search, orders and address (pure, so Node tests them as well).
import type { SoulCardFragment, SoulOrder } from './gql/graphql.ts';

/** Cards per roster page. */
export const ROSTER_PAGE = 12;

export const orderWords: Record<SoulOrder, string> = { READINESS: 'Readiness', NAME: 'Name', LEVEL: 'Level', UPDATED: 'Recently updated' };
export const orders = Object.keys(orderWords) as SoulOrder[];

const byName = (a: SoulCardFragment, b: SoulCardFragment) => (a.name < b.name ? -1 : a.name > b.name ? 1 : Number(a.id) - Number(b.id));

/**
 * The server's orders (Query.souls(orderBy), see sortSouls in the engine), applied again on the client so cards
 * patched by live events keep their place.
 */
export const compareBy: Record<SoulOrder, (a: SoulCardFragment, b: SoulCardFragment) => number> = {
  READINESS: (a, b) => Number(b.crystallization.ready) - Number(a.crystallization.ready) || b.crystallization.priority - a.crystallization.priority || byName(a, b),
  NAME: byName,
  LEVEL: (a, b) => b.level - a.level || byName(a, b),
  UPDATED: (a, b) => Date.parse(b.updatedAt) - Date.parse(a.updatedAt) || Number(a.id) - Number(b.id),
};

/** Case, accents and compatibility forms folded away, so "cafe" finds "Café" and "MIRA" finds "Mira". */
export function fold(text: string): string {
  return text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
}

/** Every word of the query appears in the soul's name or description. */
export function matchesSoul(soul: Pick<SoulCardFragment, 'name' | 'description'>, query: string): boolean {
  const haystack = fold(`${soul.name} ${soul.description}`);
  return fold(query)
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => haystack.includes(word));
}

export type RosterParams = { q: string; sort: SoulOrder; page: number };

/** The roster's search, order and page live in the hash (#/?q=…&sort=name&page=2): a reload or a link keeps them. */
export function readRosterParams(hash: string): RosterParams {
  const search = new URLSearchParams(hash.split('?')[1] ?? '');
  const sort = (search.get('sort') ?? '').toUpperCase() as SoulOrder;
  const page = Number(search.get('page'));
  return { q: search.get('q') ?? '', sort: orders.includes(sort) ? sort : 'READINESS', page: Number.isInteger(page) && page > 0 ? page : 1 };
}

export function rosterHash(params: RosterParams): string {
  const search = new URLSearchParams();
  if (params.q) search.set('q', params.q);
  if (params.sort !== 'READINESS') search.set('sort', params.sort.toLowerCase());
  if (params.page > 1) search.set('page', String(params.page));
  const text = search.toString();
  return text ? `#/?${text}` : '#/';
}
