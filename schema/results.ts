import {
  CapacityError,
  ConflictError,
  InvalidStateError,
  LevelUpPlanError,
  NotFoundError,
  ValidationError,
  type LevelEvent as LevelEventRecord,
  type LevelUpWarning as LevelUpWarningRecord,
  type Shard as ShardRecord,
  type Soul as SoulRecord,
  type Theme as ThemeRecord,
  type Trait as TraitRecord,
} from '../src/engine/index.ts';
import { builder } from './builder.ts';
import { LevelEvent, LevelUpWarning } from './level.ts';
import { Shard } from './shard.ts';
import { Soul } from './soul.ts';
import { Theme } from './theme.ts';
import { Trait } from './trait.ts';

/** Payloads carry their GraphQL type name, which is how the result unions tell them from errors. */
type Named<N extends string, T> = T & { __typename: N };

const readySoulsDescription = 'souls this write moved from not-ready to ready (at most the souls it touched)';

export const SoulPayload = builder.objectRef<Named<'SoulPayload', { soul: SoulRecord; readySouls: SoulRecord[] }>>('SoulPayload').implement({
  fields: (t) => ({
    soul: t.field({ type: Soul, resolve: (p) => p.soul }),
    readySouls: t.field({
      type: [Soul],
      description: 'souls this write moved from not-ready to ready, at most one: awakenSoul can (a dormant soul is never ready); the other soul writes never do',
      resolve: (p) => p.readySouls,
    }),
  }),
});

export const TraitPayload = builder.objectRef<Named<'TraitPayload', { trait: TraitRecord; soul: SoulRecord }>>('TraitPayload').implement({
  fields: (t) => ({ trait: t.field({ type: Trait, resolve: (p) => p.trait }), soul: t.field({ type: Soul, resolve: (p) => p.soul }) }),
});

export const LevelUpPayload = builder
  .objectRef<Named<'LevelUpPayload', { soul: SoulRecord; event: LevelEventRecord; warnings: LevelUpWarningRecord[] }>>('LevelUpPayload')
  .implement({
    fields: (t) => ({
      soul: t.field({ type: Soul, resolve: (p) => p.soul }),
      event: t.field({ type: LevelEvent, resolve: (p) => p.event }),
      warnings: t.field({ type: [LevelUpWarning], description: 'advisory: at most a few per trait the plan names', resolve: (p) => p.warnings }),
    }),
  });

export const RevertLevelUpPayload = builder
  .objectRef<Named<'RevertLevelUpPayload', { soul: SoulRecord; event: LevelEventRecord; readySouls: SoulRecord[] }>>('RevertLevelUpPayload')
  .implement({
    fields: (t) => ({
      soul: t.field({ type: Soul, resolve: (p) => p.soul }),
      event: t.field({ type: LevelEvent, resolve: (p) => p.event }),
      readySouls: t.field({ type: [Soul], description: `${readySoulsDescription}: shards the revert un-faded count again`, resolve: (p) => p.readySouls }),
    }),
  });

export const DropShardPayload = builder.objectRef<Named<'DropShardPayload', { shard: ShardRecord; readySouls: SoulRecord[] }>>('DropShardPayload').implement({
  fields: (t) => ({
    shard: t.field({ type: Shard, resolve: (p) => p.shard }),
    readySouls: t.field({ type: [Soul], description: readySoulsDescription, resolve: (p) => p.readySouls }),
  }),
});

export const DropShardsPayload = builder.objectRef<Named<'DropShardsPayload', { shards: ShardRecord[]; readySouls: SoulRecord[] }>>('DropShardsPayload').implement({
  fields: (t) => ({
    shards: t.field({ type: [Shard], description: 'one per input, in order (at most maxBatchSize)', resolve: (p) => p.shards }),
    readySouls: t.field({ type: [Soul], description: readySoulsDescription, resolve: (p) => p.readySouls }),
  }),
});

export const CiteShardPayload = builder.objectRef<Named<'CiteShardPayload', { shard: ShardRecord; trait: TraitRecord; readySouls: SoulRecord[] }>>('CiteShardPayload').implement({
  fields: (t) => ({
    shard: t.field({ type: Shard, resolve: (p) => p.shard }),
    trait: t.field({ type: Trait, resolve: (p) => p.trait }),
    readySouls: t.field({ type: [Soul], description: `${readySoulsDescription}: a shard an uncite un-faded counts again (always empty for a cite)`, resolve: (p) => p.readySouls }),
  }),
});

export const RevealShardsPayload = builder.objectRef<Named<'RevealShardsPayload', { shards: ShardRecord[]; readySouls: SoulRecord[] }>>('RevealShardsPayload').implement({
  fields: (t) => ({
    shards: t.field({ type: [Shard], description: 'the shards revealed: at most one per id given', resolve: (p) => p.shards }),
    readySouls: t.field({ type: [Soul], description: readySoulsDescription, resolve: (p) => p.readySouls }),
  }),
});

export const FadePayload = builder.objectRef<{ fadedCount: number; readySouls: SoulRecord[] }>('FadePayload').implement({
  fields: (t) => ({
    fadedCount: t.exposeInt('fadedCount'),
    readySouls: t.field({ type: [Soul], description: `${readySoulsDescription}: a faded shard can split a chained cluster`, resolve: (p) => p.readySouls }),
  }),
});

export const SoulResult = builder.errorUnion('SoulResult', { types: [SoulPayload, NotFoundError, ValidationError, ConflictError, InvalidStateError] });
export const TraitResult = builder.errorUnion('TraitResult', { types: [TraitPayload, NotFoundError, ValidationError, CapacityError, InvalidStateError] });
export const LevelUpResult = builder.errorUnion('LevelUpResult', { types: [LevelUpPayload, NotFoundError, LevelUpPlanError, InvalidStateError] });
export const RevertLevelUpResult = builder.errorUnion('RevertLevelUpResult', { types: [RevertLevelUpPayload, NotFoundError, InvalidStateError] });
export const DropShardResult = builder.errorUnion('DropShardResult', { types: [DropShardPayload, NotFoundError, ValidationError] });
export const DropShardsResult = builder.errorUnion('DropShardsResult', { types: [DropShardsPayload, NotFoundError, ValidationError] });
export const CiteShardResult = builder.errorUnion('CiteShardResult', { types: [CiteShardPayload, NotFoundError, ValidationError, InvalidStateError] });
export const RevealShardsResult = builder.errorUnion('RevealShardsResult', { types: [RevealShardsPayload, NotFoundError] });

export const AssignThemesPayload = builder.objectRef<Named<'AssignThemesPayload', { soul: SoulRecord; themes: ThemeRecord[] }>>('AssignThemesPayload').implement({
  fields: (t) => ({
    soul: t.field({ type: Soul, resolve: (p) => p.soul }),
    themes: t.field({ type: [Theme], description: 'assignThemes: each assignment’s theme, in order; unassignShards: the themes the shards left (at most one per assignment or shard given)', resolve: (p) => p.themes }),
  }),
});

export const ThemePayload = builder.objectRef<Named<'ThemePayload', { theme: ThemeRecord }>>('ThemePayload').implement({
  fields: (t) => ({ theme: t.field({ type: Theme, resolve: (p) => p.theme }) }),
});

export const AssignThemesResult = builder.errorUnion('AssignThemesResult', { types: [AssignThemesPayload, NotFoundError, ValidationError, InvalidStateError] });
export const ThemeResult = builder.errorUnion('ThemeResult', { types: [ThemePayload, NotFoundError, ValidationError, InvalidStateError] });
