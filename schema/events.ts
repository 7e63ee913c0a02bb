import { soulChangeKinds, type CrystallizationReadyPayload, type LevelChangedPayload, type ShardDroppedPayload, type SoulChangedPayload } from '../src/server/pubsub.ts';
import { builder } from './builder.ts';
import { LevelEvent } from './level.ts';
import { Shard } from './shard.ts';
import { Soul } from './soul.ts';

const LevelChangeKind = builder.enumType('LevelChangeKind', { values: ['LEVEL_UP', 'REVERT'] as const });
const SoulChangeKind = builder.enumType('SoulChangeKind', { values: soulChangeKinds });


export const CrystallizationReadyEvent = builder.objectRef<CrystallizationReadyPayload>('CrystallizationReadyEvent').implement({
  fields: (t) => ({
    soul: t.field({ type: Soul, resolve: async (e, _, ctx) => (await ctx.loaders.soul.load(e.soulId))! }),
    priority: t.exposeFloat('priority'),
    at: t.field({ type: 'DateTime', resolve: (e) => e.at }),
  }),
});

export const LevelChangedEvent = builder.objectRef<LevelChangedPayload>('LevelChangedEvent').implement({
  fields: (t) => ({
    soul: t.field({ type: Soul, resolve: async (e, _, ctx) => (await ctx.loaders.soul.load(e.soulId))! }),
    event: t.field({ type: LevelEvent, resolve: async (e, _, ctx) => (await ctx.loaders.levelEvent.load(e.eventId))! }),
    kind: t.field({ type: LevelChangeKind, resolve: (e) => e.kind }),
    at: t.field({ type: 'DateTime', resolve: (e) => e.at }),
  }),
});

export const SoulChangedEvent = builder.objectRef<SoulChangedPayload>('SoulChangedEvent').implement({
  fields: (t) => ({
    soul: t.field({ type: Soul, resolve: async (e, _, ctx) => (await ctx.loaders.soul.load(e.soulId))! }),
    kind: t.field({ type: SoulChangeKind, resolve: (e) => e.kind }),
    at: t.field({ type: 'DateTime', resolve: (e) => e.at }),
  }),
});

export const ShardDroppedEvent = builder.objectRef<ShardDroppedPayload>('ShardDroppedEvent').implement({
  fields: (t) => ({
    shard: t.field({ type: Shard, resolve: async (e, _, ctx) => (await ctx.loaders.shard.load(e.shardId))! }),
    at: t.field({ type: 'DateTime', resolve: (e) => e.at }),
  }),
});
