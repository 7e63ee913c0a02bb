import { assignThemes, opposeTrait, renameTheme, unassignShards, unopposeTrait, type AssignThemesResult, type Theme } from '../src/engine/index.ts';
import type { Context } from '../src/server/context.ts';
import { builder } from '../schema/builder.ts';
import { ThemeAssignmentInput } from '../schema/inputs.ts';
import { AssignThemesResult as AssignThemesResultType, ThemeResult } from '../schema/results.ts';
import { announceReady, soulChanged } from './mutations.ts';

/** The judge's verbs record the caller as the actor: its token's name, or 'local'. */
const actorOf = (ctx: Context) => ({ actor: ctx.caller.name });

/** A change of assignments can make the soul ready: announced like any write's (SPEC §3). */
async function assigned(ctx: Context, result: AssignThemesResult) {
  soulChanged(ctx, result.soul.id, 'THEMES_CHANGED');
  await announceReady(ctx, result.readySoulIds);
  return { __typename: 'AssignThemesPayload' as const, soul: result.soul, themes: result.themes };
}

function themePayload(ctx: Context, theme: Theme) {
  soulChanged(ctx, theme.soulId, 'THEMES_CHANGED');
  return { __typename: 'ThemePayload' as const, theme };
}

builder.mutationFields((t) => ({
  assignThemes: t.field({
    authScopes: { refine: true },
    type: AssignThemesResultType,
    description:
      'puts shards of the soul in themes (an existing one, or a new one by name); a shard with another theme in the soul moves, recorded. ' +
      'Refused: a call that moves no shard and creates no theme (InvalidStateError), a shard a trait cites into a theme opposing that trait (ValidationError)',
    args: { soulId: t.arg.id({ required: true }), assignments: t.arg({ type: [ThemeAssignmentInput], required: true }) },
    resolve: async (_, args, ctx) => assigned(ctx, await assignThemes(ctx.db, args.soulId, args.assignments, actorOf(ctx))),
  }),
  unassignShards: t.field({
    authScopes: { refine: true },
    type: AssignThemesResultType,
    description: 'returns shards of the soul to the unjudged pool; `themes` are the themes they left; none of them in a theme: InvalidStateError',
    args: { soulId: t.arg.id({ required: true }), shardIds: t.arg.idList({ required: true }) },
    resolve: async (_, args, ctx) => assigned(ctx, await unassignShards(ctx.db, args.soulId, args.shardIds, actorOf(ctx))),
  }),
  renameTheme: t.field({
    authScopes: { refine: true },
    type: ThemeResult,
    description: 'the name it has already (after normalization) is an InvalidStateError',
    args: { id: t.arg.id({ required: true }), name: t.arg.string({ required: true }) },
    resolve: async (_, args, ctx) => themePayload(ctx, await renameTheme(ctx.db, args.id, args.name, actorOf(ctx))),
  }),
  opposeTrait: t.field({
    authScopes: { refine: true },
    type: ThemeResult,
    description:
      "the theme's members become counter-evidence for the trait (listed under it, never counted as reinforcing it); opposing twice is an " +
      'InvalidStateError, and a theme whose members the trait cites cannot oppose it (ValidationError traitId)',
    args: { themeId: t.arg.id({ required: true }), traitId: t.arg.id({ required: true }) },
    resolve: async (_, args, ctx) => themePayload(ctx, await opposeTrait(ctx.db, args.themeId, args.traitId, actorOf(ctx))),
  }),
  unopposeTrait: t.field({
    authScopes: { refine: true },
    type: ThemeResult,
    description: 'what the theme does not oppose is an InvalidStateError',
    args: { themeId: t.arg.id({ required: true }), traitId: t.arg.id({ required: true }) },
    resolve: async (_, args, ctx) => themePayload(ctx, await unopposeTrait(ctx.db, args.themeId, args.traitId, actorOf(ctx))),
  }),
}));
