// Plain lists that grow with the data keep their contract shape ([T!]!) and take `first` (and, where their items have
// ids, `after`): each returns at most its page, said in its description; the price list prices it by that page.
import { ValidationError } from '../src/engine/index.ts';
import type { PageBound } from '../src/server/price-list.ts';
import { builder } from './builder.ts';
import { lookupId } from './ids.ts';

/** `first` alone: lists ranked by a count or a score, where "after" means nothing. */
export const firstArg = (bound: PageBound) => builder.args((t) => ({ first: t.int({ defaultValue: bound.default, description: `at most ${bound.max}` }) }));

/** `first` and `after`: the items after the one with that id, in the list's order. */
export const pageArgs = (bound: PageBound) =>
  builder.args((t) => ({
    first: t.int({ defaultValue: bound.default, description: `at most ${bound.max}` }),
    after: t.id({ description: 'the id of the last item of the previous page' }),
  }));

/** The bound said in a list's description. */
export const pageText = (bound: PageBound, paged = true) =>
  `at most \`first\` of them (default ${bound.default}, at most ${bound.max})${paged ? ', after the item whose id is `after`' : ''}`;

type PageArgs = { first?: number | null; after?: string | number | null };

function firstOf(args: PageArgs, bound: PageBound): number {
  const first = args.first ?? bound.default;
  if (!Number.isInteger(first) || first < 0 || first > bound.max) throw new ValidationError('first', `must be a whole number from 0 to ${bound.max}`);
  return first;
}

/** Up to `first` items after the one whose id is `after` (a ValidationError when none is). */
export function pageOf<T>(items: readonly T[], idOf: (item: T) => number, args: PageArgs, bound: PageBound): T[] {
  const first = firstOf(args, bound);
  let start = 0;
  if (args.after !== undefined && args.after !== null) {
    const id = lookupId(args.after);
    start = id === null ? -1 : items.findIndex((item) => idOf(item) === id) + 1;
    if (start <= 0) throw new ValidationError('after', `${String(args.after)} is not an item of this list`);
  }
  return items.slice(start, start + first);
}

export const pageIds = (ids: readonly number[], args: PageArgs, bound: PageBound) => pageOf(ids, (id) => id, args, bound);

/** The first `first` items. */
export function firstItems<T>(items: readonly T[], args: PageArgs, bound: PageBound): T[] {
  return items.slice(0, firstOf(args, bound));
}
