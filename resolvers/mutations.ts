import {
  ConflictError,
  LevelUpPlanError,
  ValidationError,
  addTrait,
  awakenSoul,
  citeShard,
  createSoul,
  dropShard,
  dropShards,
  fadeExhaustedShards,
  getCrystallization,
  getSouls,
  getShards,
  levelUp,
  reactivateTrait,
  retireSoul,
  revealShards,
  reviseTrait,
  revertLevelUp,
  revertTrait,
  stampAttuned,
  unciteShard,
  updateSoul,
  type Shard as ShardRecord,
  type Soul as SoulRecord,
  type Trait as TraitRecord,
} from '../src/engine/index.ts';
import type { Context } from '../src/server/context.ts';
import type { SoulChangeKind } from '../src/server/pubsub.ts';
import { builder } from '../schema/builder.ts';
import { existingId, rowId, rowIds } from '../schema/ids.ts';
import { AddTraitInput, CreateSoulInput, LevelUpPlanInput, ReviseTraitInput, UpdateSoulInput } from '../schema/inputs.ts';
import {
  CiteShardResult,
  DropShardResult,
  DropShardsResult,
  FadePayload,
  LevelUpResult,
  RevealShardsResult,
  RevertLevelUpResult,
  SoulResult,
  TraitResult,
} from '../schema/results.ts';
import { DropShardInput } from '../schema/shard.ts';
import { levelUpPlan, underPlan } from './plans.ts';

/** Validation and conflict errors about an input object name the field under the argument, e.g. input.name. */
async function underArgument<T>(argument: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ValidationError) throw error.within(argument);
    if (error instanceof ConflictError) throw new ConflictError(`${argument}.${error.field}`, error.message);
    throw error;
  }
}

export function soulChanged(ctx: Context, soulId: number, kind: SoulChangeKind): void {
  ctx.pubsub.publish('soulChanged', { soulId, kind, at: ctx.db.clock.now() });
}

function soulPayload(ctx: Context, soul: SoulRecord, kind: SoulChangeKind, readySouls: SoulRecord[] = []) {
  soulChanged(ctx, soul.id, kind);
  return { __typename: 'SoulPayload' as const, soul, readySouls };
}

async function traitPayload(ctx: Context, trait: TraitRecord, kind: SoulChangeKind) {
  soulChanged(ctx, trait.soulId, kind);
  const soul = (await getSouls(ctx.db, [trait.soulId])).get(trait.soulId)!;
  return { __typename: 'TraitPayload' as const, trait, soul };
}

/** Announces new shards and every soul the write made ready (once per soul per crossing). */
async function shardsWritten(ctx: Context, shards: readonly ShardRecord[], readySoulIds: readonly number[], announceShards: boolean): Promise<SoulRecord[]> {
  const at = ctx.db.clock.now();
  if (announceShards) ctx.pubsub.publishAll('shardDropped', shards.map((shard) => ({ shardId: shard.id, soulIds: shard.soulIds, at })));
  return announceReady(ctx, readySoulIds);
}

/** Publishes crystallizationReady for every soul a write made ready (SPEC §3: every such write, not only shard writes); returns them. */
export async function announceReady(ctx: Context, readySoulIds: readonly number[]): Promise<SoulRecord[]> {
  if (readySoulIds.length === 0) return [];
  const at = ctx.db.clock.now();
  const verdicts = await getCrystallization(ctx.db, readySoulIds);
  ctx.pubsub.publishAll('crystallizationReady', readySoulIds.map((soulId) => ({ soulId, priority: verdicts.get(soulId)?.priority ?? 0, at })));
  const souls = await getSouls(ctx.db, readySoulIds);
  return readySoulIds.map((id) => souls.get(id)!);
}

type ShardArgs = { content: string; source: string; soulIds: readonly (string | number)[]; tags?: readonly string[] | null; sealed?: boolean | null; createdAt?: number | null; embedding?: readonly number[] | null };

function shardInput(field: string, input: ShardArgs) {
  return { ...input, soulIds: rowIds(`${field}.soulIds`, input.soulIds) };
}

builder.mutationType({
  fields: (t) => ({
    createSoul: t.field({
      authScopes: { admin: true },
      type: SoulResult,
      args: { input: t.arg({ type: CreateSoulInput, required: true }) },
      resolve: async (_, { input }, ctx) => soulPayload(ctx, await underArgument('input', () => createSoul(ctx.db, input)), 'CREATED'),
    }),
    updateSoul: t.field({
      authScopes: { admin: true },
      type: SoulResult,
      description: 'administrative escape hatch: overwrites fields directly, bypassing evolution',
      args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateSoulInput, required: true }) },
      resolve: async (_, args, ctx) => {
        const id = rowId('id', args.id);
        return soulPayload(ctx, await underArgument('input', () => updateSoul(ctx.db, id, args.input)), 'UPDATED');
      },
    }),
    retireSoul: t.field({
      authScopes: { admin: true },
      type: SoulResult,
      args: { id: t.arg.id({ required: true }) },
      resolve: async (_, args, ctx) => soulPayload(ctx, await retireSoul(ctx.db, rowId('id', args.id)), 'RETIRED'),
    }),
    awakenSoul: t.field({
      authScopes: { admin: true },
      type: SoulResult,
      args: { id: t.arg.id({ required: true }), name: t.arg.string({ description: 'a new name, when the old one is taken' }) },
      resolve: async (_, args, ctx) => {
        const { soul, readySoulIds } = await awakenSoul(ctx.db, rowId('id', args.id), { rename: args.name });
        const payload = soulPayload(ctx, soul, 'AWAKENED');
        return { ...payload, readySouls: await announceReady(ctx, readySoulIds) };
      },
    }),
    addTrait: t.field({
      authScopes: { refine: true },
      type: TraitResult,
      args: { soulId: t.arg.id({ required: true }), input: t.arg({ type: AddTraitInput, required: true }) },
      resolve: async (_, args, ctx) => {
        const soulId = rowId('soulId', args.soulId);
        const trait = await underArgument('input', async () =>
          addTrait(ctx.db, soulId, { ...args.input, citeShardIds: rowIds('citeShardIds', args.input.citeShardIds ?? []) }),
        );
        return traitPayload(ctx, trait, 'TRAIT_ADDED');
      },
    }),
    reviseTrait: t.field({
      authScopes: { refine: true },
      type: TraitResult,
      args: { id: t.arg.id({ required: true }), input: t.arg({ type: ReviseTraitInput, required: true }) },
      resolve: async (_, args, ctx) => {
        const id = rowId('id', args.id);
        return traitPayload(ctx, await underArgument('input', () => reviseTrait(ctx.db, id, args.input)), 'TRAIT_REVISED');
      },
    }),
    revertTrait: t.field({
      authScopes: { refine: true },
      type: TraitResult,
      args: { id: t.arg.id({ required: true }) },
      resolve: async (_, args, ctx) => traitPayload(ctx, await revertTrait(ctx.db, rowId('id', args.id)), 'TRAIT_REVERTED'),
    }),
    reactivateTrait: t.field({
      authScopes: { refine: true },
      type: TraitResult,
      args: { id: t.arg.id({ required: true }) },
      resolve: async (_, args, ctx) => traitPayload(ctx, await reactivateTrait(ctx.db, rowId('id', args.id)), 'TRAIT_REACTIVATED'),
    }),
    levelUp: t.field({
      authScopes: { refine: true },
      type: LevelUpResult,
      args: { soulId: t.arg.id({ required: true }), plan: t.arg({ type: LevelUpPlanInput, required: true }) },
      resolve: async (_, args, ctx) => {
        const soulId = existingId('Soul', args.soulId);
        const plan = levelUpPlan(args.plan);
        if (plan instanceof Error) throw plan;
        const { soul, event, warnings } = await levelUp(ctx.db, soulId, plan).catch((error: unknown) => {
          throw error instanceof LevelUpPlanError ? underPlan(error) : error;
        });
        soulChanged(ctx, soulId, 'LEVEL_UP');
        ctx.pubsub.publish('levelChanged', { soulId, eventId: event.id, kind: 'LEVEL_UP', at: ctx.db.clock.now() });
        return { __typename: 'LevelUpPayload' as const, soul, event, warnings };
      },
    }),
    revertLevelUp: t.field({
      authScopes: { refine: true },
      type: RevertLevelUpResult,
      description:
        'undoes the latest level-up exactly; never blocked by the trait limit. Give levelEventId to make a retry safe: that event is reverted ' +
        'only while it is the latest unreverted one, and a second call is an InvalidStateError ("already reverted"). Without it, a retried call ' +
        'reverts the level-up before as well.',
      args: {
        soulId: t.arg.id({ required: true }),
        levelEventId: t.arg.id({ description: 'the level-up to revert (LevelEvent.id); refused unless it is the latest unreverted one' }),
      },
      resolve: async (_, args, ctx) => {
        const soulId = existingId('Soul', args.soulId);
        const levelEventId = args.levelEventId === null || args.levelEventId === undefined ? null : existingId('LevelEvent', args.levelEventId);
        const { soul, event, readySoulIds } = await revertLevelUp(ctx.db, soulId, levelEventId);
        soulChanged(ctx, soulId, 'LEVEL_UP_REVERTED');
        ctx.pubsub.publish('levelChanged', { soulId, eventId: event.id, kind: 'REVERT', at: ctx.db.clock.now() });
        return { __typename: 'RevertLevelUpPayload' as const, soul, event, readySouls: await announceReady(ctx, readySoulIds) };
      },
    }),
    dropShard: t.field({
      authScopes: { observe: true },
      type: DropShardResult,
      args: { input: t.arg({ type: DropShardInput, required: true }) },
      resolve: async (_, { input }, ctx) => {
        const shardArgs = shardInput('input', input);
        const { shard, readySoulIds } = await underArgument('input', () =>
          dropShard(ctx.db, shardArgs.content, shardArgs.source, shardArgs.soulIds, shardArgs),
        );
        const readySouls = await shardsWritten(ctx, [shard], readySoulIds, true);
        return { __typename: 'DropShardPayload' as const, shard, readySouls };
      },
    }),
    dropShards: t.field({
      authScopes: { observe: true },
      type: DropShardsResult,
      description: 'validation errors name the failing item as field, e.g. inputs[3].content',
      args: { inputs: t.arg({ type: [DropShardInput], required: true }) },
      resolve: async (_, { inputs }, ctx) => {
        const shardArgs = inputs.map((input, i) => shardInput(`inputs[${i}]`, input));
        const { shards, readySoulIds } = await dropShards(ctx.db, shardArgs, { field: 'inputs' });
        const readySouls = await shardsWritten(ctx, shards, readySoulIds, true);
        return { __typename: 'DropShardsPayload' as const, shards, readySouls };
      },
    }),
    citeShard: t.field({
      authScopes: { refine: true },
      type: CiteShardResult,
      description: 'links a shard of the trait’s soul to the trait; a member of a theme that opposes the trait is refused (ValidationError shardId): judged counter-evidence is never support',
      args: { shardId: t.arg.id({ required: true }), traitId: t.arg.id({ required: true }) },
      resolve: async (_, args, ctx) => {
        const { shard, trait } = await citeShard(ctx.db, existingId('Shard', args.shardId), existingId('Trait', args.traitId));
        soulChanged(ctx, trait.soulId, 'SHARD_CITED');
        return { __typename: 'CiteShardPayload' as const, shard, trait, readySouls: [] };
      },
    }),
    unciteShard: t.field({
      authScopes: { refine: true },
      type: CiteShardResult,
      description: 'takes a citation back; refused when the trait does not cite that shard',
      args: { shardId: t.arg.id({ required: true }), traitId: t.arg.id({ required: true }) },
      resolve: async (_, args, ctx) => {
        const { shard, trait, readySoulIds } = await unciteShard(ctx.db, existingId('Shard', args.shardId), existingId('Trait', args.traitId));
        soulChanged(ctx, trait.soulId, 'SHARD_UNCITED');
        return { __typename: 'CiteShardPayload' as const, shard, trait, readySouls: await announceReady(ctx, readySoulIds) };
      },
    }),
    revealShards: t.field({
      authScopes: { observe: true },
      type: RevealShardsResult,
      args: { ids: t.arg.idList({ required: true }) },
      resolve: async (_, args, ctx) => {
        const { shardIds, readySoulIds } = await revealShards(ctx.db, args.ids.map((id) => existingId('Shard', id)));
        const found = await getShards(ctx.db, shardIds);
        const shards = shardIds.map((id) => found.get(id)!);
        const readySouls = await shardsWritten(ctx, shards, readySoulIds, false);
        return { __typename: 'RevealShardsPayload' as const, shards, readySouls };
      },
    }),
    stampAttuned: t.field({
      authScopes: { refine: true },
      type: SoulResult,
      description: 'marks a refinement cycle done: the soul waits for new evidence before it is ready again',
      args: { soulId: t.arg.id({ required: true }) },
      resolve: async (_, args, ctx) => soulPayload(ctx, await stampAttuned(ctx.db, rowId('soulId', args.soulId)), 'ATTUNED'),
    }),
    fadeExhaustedShards: t.field({
      authScopes: { refine: true },
      type: FadePayload,
      description: 'maintenance: shards cited by shardFadeCitations distinct traits fade',
      resolve: async (_, __, ctx) => {
        const { fadedCount, readySoulIds } = await fadeExhaustedShards(ctx.db);
        return { fadedCount, readySouls: await announceReady(ctx, readySoulIds) };
      },
    }),
  }),
});
