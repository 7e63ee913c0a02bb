import type { Knobs } from '../src/engine/index.ts';
import { builder } from './builder.ts';

export const Settings = builder.objectRef<Knobs>('Settings').implement({
  description: 'The engine’s knobs, set at startup; read-only here.',
  fields: (t) => ({
    traitLimit: t.exposeInt('traitLimit'),
    crystallizationThreshold: t.exposeInt('crystallizationThreshold'),
    shardExpiryDays: t.exposeInt('shardExpiryDays'),
    shardFadeCitations: t.exposeInt('shardFadeCitations'),
    shardRelevanceHalfLife: t.exposeFloat('shardRelevanceHalfLife'),
    clusteringThreshold: t.exposeFloat('clusteringThreshold'),
    staleDays: t.exposeInt('staleDays'),
    redundancyThreshold: t.exposeFloat('redundancyThreshold'),
    consolidationThreshold: t.exposeFloat('consolidationThreshold'),
  }),
});
