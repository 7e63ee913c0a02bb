import type { Theme as ThemeRecord, UnjudgedShard as UnjudgedShardRecord } from '../src/engine/index.ts';
import { loadPresent } from '../resolvers/loaders.ts';
import { builder, readBeyondId } from './builder.ts';
import { EvidenceReport, ShardCluster } from './evidence.ts';
import { lookupId } from './ids.ts';
import { Shard } from './shard.ts';
import { Soul } from './soul.ts';
import { Trait } from './trait.ts';
import { pageArgs, pageIds, pageOf, pageText } from './paging.ts';
import { LIST_PAGE } from '../src/server/price-list.ts';

export const Theme = builder.objectRef<ThemeRecord>('Theme').implement({
  description: 'A name the refiner gave some of one soul’s shards, remembered: the evidence report clusters them as one, always (SPEC §12).',
  ...readBeyondId,
  fields: (t) => ({
    id: t.exposeID('id', { skipTypeScopes: true }),
    soul: t.field({ type: Soul, resolve: async (theme, _, ctx) => (await ctx.loaders.soul.load(theme.soulId))! }),
    name: t.exposeString('name'),
    members: t.field({
      type: [Shard],
      description: `every shard assigned to this theme, any status, ascending id: ${pageText(LIST_PAGE)}; memberCount counts them all`,
      args: pageArgs(LIST_PAGE),
      resolve: (theme, args, ctx) => loadPresent(ctx.loaders.shard, pageIds(theme.memberIds, args, LIST_PAGE)),
    }),
    memberCount: t.int({ resolve: (theme) => theme.memberIds.length }),
    opposes: t.field({
      type: [Trait],
      description: `traits this theme contradicts: its members are counter-evidence for them; ascending id, ${pageText(LIST_PAGE)}`,
      args: pageArgs(LIST_PAGE),
      resolve: (theme, args, ctx) => loadPresent(ctx.loaders.trait, pageIds(theme.opposes, args, LIST_PAGE)),
    }),
    createdBy: t.exposeString('createdBy', { description: "the caller that created it (token name, 'local', or the refiner soul's slug)" }),
    createdAt: t.field({ type: 'DateTime', resolve: (theme) => theme.createdAt }),
  }),
});

builder.objectField(Soul, 'themes', (t) =>
  t.field({
    type: [Theme],
    description: 'the themes of this soul, oldest first: at most maxThemesPerSoul (a setting, default 100), as a soul may hold',
    resolve: async (soul, _, ctx) => (await ctx.loaders.themesBySoul.load(soul.id)).slice(0, ctx.db.settings.maxThemesPerSoul),
  }),
);

builder.objectField(Shard, 'theme', (t) =>
  t.field({
    type: Theme,
    nullable: true,
    description: 'the theme this shard is assigned to in that soul, if any',
    args: { soulId: t.arg.id({ required: true }) },
    resolve: async (shard, args, ctx) => {
      const soulId = lookupId(args.soulId);
      if (soulId === null) return null;
      const themeId = await ctx.loaders.shardTheme.load({ soulId, shardId: shard.id });
      return themeId === null ? null : ctx.loaders.theme.load(themeId);
    },
  }),
);

builder.objectField(Trait, 'counterEvidence', (t) =>
  t.field({
    type: [Shard],
    description: `shards judged (through a theme that opposes this trait) to contradict it, ascending id: ${pageText(LIST_PAGE)}`,
    args: pageArgs(LIST_PAGE),
    resolve: async (trait, args, ctx) => loadPresent(ctx.loaders.shard, pageIds(await ctx.loaders.counterEvidence.load(trait.id), args, LIST_PAGE)),
  }),
);

builder.objectFields(ShardCluster, (t) => ({
  theme: t.field({
    type: Theme,
    nullable: true,
    description: 'set when this cluster is a judged theme (its pending members, exactly)',
    resolve: (c, _, ctx) => (c.themeId === null ? null : ctx.loaders.theme.load(c.themeId)),
  }),
  suggestedTheme: t.field({
    type: Theme,
    nullable: true,
    description: 'for a cluster of unjudged shards: the theme its members most resemble (a suggestion only)',
    resolve: (c, _, ctx) => (c.suggestedThemeId === null ? null : ctx.loaders.theme.load(c.suggestedThemeId)),
  }),
}));

builder.objectField(ShardCluster, 'suggestedThemeSimilarity', (t) =>
  t.float({
    nullable: true,
    description: 'the similarity behind suggestedTheme (its members’ highest to the theme’s members, in the report’s similarity mode; threshold in similarity)',
    resolve: (c) => c.suggestedThemeSimilarity,
  }),
);

const UnjudgedShard = builder.objectRef<UnjudgedShardRecord>('UnjudgedShard').implement({
  description: 'A shard of the report no theme holds, with the theme it most resembles: what is left to judge.',
  fields: (t) => ({
    shard: t.field({ type: Shard, resolve: async (u, _, ctx) => (await ctx.loaders.shard.load(u.shardId))! }),
    suggestedTheme: t.field({
      type: Theme,
      nullable: true,
      description: 'the theme holding its most similar judged shard, at or above the clustering threshold; null: it fits no theme (a new theme?)',
      resolve: (u, _, ctx) => (u.suggestion === null ? null : ctx.loaders.theme.load(u.suggestion.themeId)),
    }),
    similarity: t.float({ nullable: true, description: 'to suggestedTheme, in the report’s similarity mode', resolve: (u) => u.suggestion?.similarity ?? null }),
    opposes: t.field({
      type: [Trait],
      description: 'active traits suggestedTheme is judged against (the shard is then possible counter-evidence for them, never support): at most traitLimit',
      resolve: (u, _, ctx) => loadPresent(ctx.loaders.trait, u.suggestion?.opposes ?? []),
    }),
  }),
});

builder.objectField(EvidenceReport, 'unjudged', (t) =>
  t.field({
    type: [UnjudgedShard],
    description: `the clustered shards no theme holds, ascending id: ${pageText(LIST_PAGE, false)}`,
    args: pageArgs(LIST_PAGE),
    resolve: (r, args) => pageOf(r.unjudged, (u) => u.shardId, args, LIST_PAGE),
  }),
);

builder.objectField(EvidenceReport, 'unjudgedCount', (t) =>
  t.exposeInt('unjudgedCount', { description: 'pending shards of this report not assigned to any theme' }),
);
