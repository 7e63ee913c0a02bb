import type { Trait as TraitRecord, TraitSignals as TraitSignalsRecord } from '../src/engine/index.ts';
import { loadPresent } from '../resolvers/loaders.ts';
import { builder, readBeyondId } from './builder.ts';
import { Shard } from './shard.ts';
import { Soul } from './soul.ts';
import { pageArgs, pageIds, pageText } from './paging.ts';
import { LIST_PAGE } from '../src/server/price-list.ts';

export const TraitStatus = builder.enumType('TraitStatus', {
  values: {
    ACTIVE: { value: 'active' },
    CONSOLIDATED: { value: 'consolidated' },
    PROMOTED: { value: 'promoted' },
    REVERTED: { value: 'reverted' },
  } as const,
});

export const TraitSignals = builder.objectRef<TraitSignalsRecord>('TraitSignals').implement({
  description: 'Signals computed at read time (never stored).',
  fields: (t) => ({
    tenure: t.exposeFloat('tenure', { description: 'age / max(1 day, soul age), 0..1' }),
    stale: t.exposeBoolean('stale', { description: 'unchanged for staleDays and not cited within them' }),
    citationCount: t.exposeInt('citationCount'),
    citationDensity: t.exposeFloat('citationDensity', { description: 'citations / max(1, age in days)' }),
    essenceRedundancy: t.exposeFloat('essenceRedundancy', { description: 'trigram similarity of the principle to the essence' }),
    survivalCount: t.exposeInt('survivalCount', { description: 'attunements of the soul since the trait was created' }),
  }),
});

export const Trait = builder.objectRef<TraitRecord>('Trait');

Trait.implement({
  description: 'One cognitive principle plus the evidence chain (provenance) proving it was earned.',
  ...readBeyondId,
  fields: (t) => ({
    id: t.exposeID('id', { skipTypeScopes: true }),
    soul: t.field({ type: Soul, resolve: async (trait, _, ctx) => (await ctx.loaders.soul.load(trait.soulId))! }),
    principle: t.exposeString('principle'),
    provenance: t.exposeString('provenance'),
    generation: t.exposeInt('generation', { description: 'the soul level when the trait was added or last carried' }),
    status: t.field({ type: TraitStatus, resolve: (trait) => trait.status }),
    mergedInto: t.field({
      type: Trait,
      nullable: true,
      description: 'the merged trait that absorbed this one in a level-up',
      resolve: (trait, _, ctx) => (trait.mergedInto === null ? null : ctx.loaders.trait.load(trait.mergedInto)),
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (trait) => trait.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (trait) => trait.updatedAt }),
    signals: t.field({ type: TraitSignals, resolve: async (trait, _, ctx) => (await ctx.loaders.traitSignals.load(trait.id))! }),
    citations: t.field({
      type: [Shard],
      description: `the shards cited as evidence for this trait, oldest citation first: ${pageText(LIST_PAGE)}`,
      args: pageArgs(LIST_PAGE),
      resolve: async (trait, args, ctx) => {
        const citations = await ctx.loaders.citationsByTrait.load(trait.id);
        return loadPresent(ctx.loaders.shard, pageIds(citations.map((c) => c.shardId), args, LIST_PAGE));
      },
    }),
  }),
});
