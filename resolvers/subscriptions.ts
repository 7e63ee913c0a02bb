import { filter, pipe } from 'graphql-yoga';
import { useEventLoaders, type Context } from '../src/server/context.ts';
import { builder } from '../schema/builder.ts';
import { CrystallizationReadyEvent, LevelChangedEvent, ShardDroppedEvent, SoulChangedEvent } from '../schema/events.ts';
import { rowId, rowIds } from '../schema/ids.ts';

/** Each event resolves with loaders of its own (see useEventLoaders): fresh data, read once for all subscribers. */
function fresh<E extends object>(event: E, ctx: Context): E {
  useEventLoaders(ctx, event);
  return event;
}

const optionalId = (field: string, value: string | number | null | undefined) => (value === null || value === undefined ? null : rowId(field, value));

builder.subscriptionType({
  authScopes: { read: true },
  fields: (t) => ({
    crystallizationReady: t.field({
      type: CrystallizationReadyEvent,
      description: 'fires once per soul each time a write moves it from not-ready to ready',
      args: { soulIds: t.arg.idList() },
      subscribe: (_, args, ctx) => {
        const wanted = args.soulIds ? new Set(rowIds('soulIds', args.soulIds)) : null;
        return pipe(ctx.pubsub.subscribe('crystallizationReady'), filter((e) => wanted === null || wanted.has(e.soulId)));
      },
      resolve: (event, _, ctx) => fresh(event, ctx),
    }),
    levelChanged: t.field({
      type: LevelChangedEvent,
      description: 'a level-up or its revert',
      args: { soulId: t.arg.id() },
      subscribe: (_, args, ctx) => {
        const soulId = optionalId('soulId', args.soulId);
        return pipe(ctx.pubsub.subscribe('levelChanged'), filter((e) => soulId === null || e.soulId === soulId));
      },
      resolve: (event, _, ctx) => fresh(event, ctx),
    }),
    soulChanged: t.field({
      type: SoulChangedEvent,
      description: 'every write that changes a soul (its rendered block, state or attunement)',
      args: { soulId: t.arg.id() },
      subscribe: (_, args, ctx) => {
        const soulId = optionalId('soulId', args.soulId);
        return pipe(ctx.pubsub.subscribe('soulChanged'), filter((e) => soulId === null || e.soulId === soulId));
      },
      resolve: (event, _, ctx) => fresh(event, ctx),
    }),
    shardDropped: t.field({
      type: ShardDroppedEvent,
      description: 'every new shard; with soulId, those attributed to that soul',
      args: { soulId: t.arg.id() },
      subscribe: (_, args, ctx) => {
        const soulId = optionalId('soulId', args.soulId);
        return pipe(ctx.pubsub.subscribe('shardDropped'), filter((e) => soulId === null || e.soulIds.includes(soulId)));
      },
      resolve: (event, _, ctx) => fresh(event, ctx),
    }),
  }),
});
