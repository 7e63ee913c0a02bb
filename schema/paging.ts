// Plain lists that grow with the data keep their contract shape ([T!]!) and take `first` (and, where their items have
// ids, `after`): each returns at most its page, said in its description; the price list prices it by that page.
import type { ObjectRef } from '@pothos/core';
import { ValidationError, type Page } from '../src/engine/index.ts';
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

/** A page as a connection answers it: `after` tells whether items come before it. */
export type Connection<T> = Page<T> & { after: string | null };

export const connectionOf = <T>(page: Page<T>, after: string | null | undefined): Connection<T> => ({ ...page, after: after ?? null });

export const PageInfo = builder.objectRef<Connection<unknown>>('PageInfo').implement({
  description: 'Relay’s page info; paging is forward only (first/after).',
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage'),
    endCursor: t.exposeString('endCursor', { nullable: true }),
    startCursor: t.string({ nullable: true, resolve: (page) => page.cursors[0] ?? null }),
    hasPreviousPage: t.boolean({ description: 'true when the page was asked for after a cursor: items come before it', resolve: (page) => page.after !== null }),
  }),
});

/** `${name}Edge` and `${name}Connection` (edges, pageInfo, totalCount) over a page of `node`s. */
type Types = typeof builder.$inferSchemaTypes;

export function connectionType<T extends object>(name: string, node: ObjectRef<Types, T>, bound: PageBound, descriptions: { connection: string; totalCount?: string }): ObjectRef<Types, Connection<T>> {
  const edge = builder.objectRef<{ cursor: string; node: T }>(`${name}Edge`).implement({
    fields: (t) => ({
      cursor: t.exposeString('cursor'),
      // Pothos cannot resolve its shape through the type parameter: the node is the ref's own shape.
      node: t.field({ type: node, resolve: (e) => e.node as never }),
    }),
  });
  return builder.objectRef<Connection<T>>(`${name}Connection`).implement({
    description: descriptions.connection,
    fields: (t) => ({
      edges: t.field({
        type: [edge],
        description: `at most \`first\` of them (default ${bound.default}, at most ${bound.max})`,
        resolve: (page) => page.items.map((item, i) => ({ node: item, cursor: page.cursors[i] })),
      }),
      pageInfo: t.field({ type: PageInfo, resolve: (page) => page }),
      totalCount: t.exposeInt('totalCount', descriptions.totalCount ? { description: descriptions.totalCount } : {}),
    }),
  });
}
