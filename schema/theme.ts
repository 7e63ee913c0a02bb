import type { Theme as ThemeRecord } from '../src/engine/index.ts';
import { loadPresent } from '../resolvers/loaders.ts';
import { builder, readBeyondId } from './builder.ts';
import { EvidenceReport, ShardCluster } from './evidence.ts';
import { lookupId } from './ids.ts';
import { Shard } from './shard.ts';
import { Soul } from './soul.ts';
import { Trait } from './trait.ts';
import { pageArgs, pageIds, pageText } from './paging.ts';
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

builder.objectField(EvidenceReport, 'unjudgedCount', (t) =>
  t.exposeInt('unjudgedCount', { description: 'pending shards of this report not assigned to any theme' }),
);
