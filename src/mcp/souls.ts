// Tools over souls: read one or the roster, attune after a refinement cycle, and the administrative verbs.
import { z } from 'zod';
import {
  awakenSoul,
  createSoul,
  fadeExhaustedShards,
  getCrystallization,
  getLevelHistory,
  getSoul,
  getSoulByName,
  getTraitLimit,
  getTraitSignals,
  listDormantSouls,
  listSoulsOrdered,
  listTraits,
  listTraitsOfSouls,
  pendingShardCounts,
  renderSoul,
  retireSoul,
  shardCountsBySource,
  shardCountsByTag,
  stampAttuned,
  unmetNeedLine,
  unmetNeeds,
  updateSoul,
  type Crystallization,
  type Knobs,
  type Soul,
} from '../engine/index.ts';
import { announceReady, annotations, defineTool, soulChanged, type ToolContext } from './context.ts';
import { clip, decodeCursor, encodeCursor, fitText, fitToBudget, ok, RESPONSE_BUDGET_CHARS, responseSize, toolError, ToolRefusal } from './results.ts';
import { cursor, id, idList, iso, limit, paging, readySouls, verdict } from './schemas.ts';
import { recordOutcome } from './refiner.ts';

/** Each unmet condition with what would meet it, in the engine's words: "RECENCY needs a shard recorded … after the last attunement (…)". */
export const unmetOf = (c: Crystallization, soul: Pick<Soul, 'lastAttunedAt'>, knobs: Pick<Knobs, 'crystallizationThreshold'>) => unmetNeeds(c, soul.lastAttunedAt, knobs).map(unmetNeedLine);

export const verdictOf = (c: Crystallization, soul: Pick<Soul, 'lastAttunedAt'>, knobs: Pick<Knobs, 'crystallizationThreshold'>) => ({
  ready: c.ready,
  priority: Number(c.priority.toFixed(3)),
  unmet: unmetOf(c, soul, knobs),
  pendingCount: c.pendingCount,
  distinctSources: c.distinctSources,
  ageSpreadDays: Number(c.ageSpreadDays.toFixed(2)),
  clusterCount: c.clusterCount,
});

/** The soul an id or a name names; a refusal that says how to find one otherwise. */
export async function soulNamed(ctx: ToolContext, soulId: number | undefined, name?: string): Promise<Soul> {
  const soul = soulId !== undefined ? await getSoul(ctx.db, soulId) : name !== undefined ? await getSoulByName(ctx.db, name) : null;
  if (!soul) {
    const what = soulId !== undefined ? `there is no soul ${soulId}` : `no soul is named ${JSON.stringify(name)}`;
    throw new ToolRefusal(soulId !== undefined ? 'soulId' : 'name', what, 'Call soul_read without soulId or name to list the souls and their ids');
  }
  return soul;
}

const sectionNames = ['traits', 'inactiveTraits', 'crystallization', 'levels', 'shardCounts'] as const;
const TRAIT_TEXT_MAX = 400;
/** The block always gets at least this much of the budget. */
const MIN_BLOCK_ROOM = 600;

const traitView = z.object({
  id: z.number().int(),
  principle: z.string(),
  provenance: z.string().optional(),
  status: z.string(),
  generation: z.number().int(),
  citationCount: z.number().int().optional(),
  citationDensity: z.number().optional(),
  stale: z.boolean().optional(),
  mergedInto: z.number().int().nullable().optional(),
  clipped: z.boolean(),
});

export const soulRead = defineTool({
  name: 'soul_read',
  title: 'Read a soul or the roster',
  description:
    'Start here. One soul (soulId or name): its block ("full" adds provenance) and sections: "traits" (ids, signals), ' +
    '"inactiveTraits", "crystallization", "levels", "shardCounts"; long texts cut (souls://{id}/soul.md is whole). ' +
    'Neither: the roster, most ready first, paged.',
  scope: 'read',
  annotations: annotations('read'),
  input: z.strictObject({
    soulId: id('soul').optional(),
    name: z.string().max(200).optional().describe('case and spacing do not matter'),
    render: z.enum(['lean', 'full']).default('lean'),
    sections: z.array(z.enum(sectionNames)).max(sectionNames.length).default([]),
    orderBy: z.enum(['READINESS', 'NAME', 'LEVEL', 'UPDATED']).default('READINESS').describe('roster order'),
    dormant: z.boolean().default(false).describe('roster of retired souls'),
    cursor,
    limit: limit(50, 20),
  }),
  output: z.object({
    soul: z
      .object({
        id: z.number().int(),
        name: z.string(),
        slug: z.string().nullable(),
        level: z.number().int(),
        dormant: z.boolean(),
        activeTraitCount: z.number().int(),
        traitLimit: z.number().int(),
        rendered: z.string(),
        renderedClipped: z.boolean(),
        traits: z.array(traitView).optional(),
        inactiveTraits: z.array(traitView).optional(),
        crystallization: verdict.optional(),
        levels: z
          .array(
            z.object({
              id: z.number().int(),
              level: z.number().int(),
              at: z.string(),
              revertedAt: z.string().nullable(),
              essenceAfter: z.string(),
              consolidated: idList,
              promoted: idList,
              carried: idList,
              merged: idList,
            }),
          )
          .optional(),
        shardCounts: z
          .object({ bySource: z.array(z.object({ source: z.string(), count: z.number().int() })), byTag: z.array(z.object({ tag: z.string(), count: z.number().int() })) })
          .optional(),
      })
      .optional(),
    souls: z
      .array(
        z.object({
          id: z.number().int(),
          name: z.string(),
          level: z.number().int(),
          activeTraitCount: z.number().int(),
          pendingShardCount: z.number().int(),
          ready: z.boolean(),
          unmet: z.array(z.string()),
        }),
      )
      .optional(),
    totalCount: paging.totalCount.optional(),
    nextCursor: paging.nextCursor.optional(),
  }),
  async run(args, ctx) {
    try {
      if (args.soulId === undefined && args.name === undefined) return ok(await roster(ctx, args));
      if (args.cursor !== undefined) throw new ToolRefusal('cursor', 'pages only the roster', 'Leave cursor out when reading one soul');
      return ok({ soul: await oneSoul(ctx, await soulNamed(ctx, args.soulId, args.name), args.render, args.sections) });
    } catch (error) {
      return toolError(error);
    }
  },
});

async function roster(ctx: ToolContext, args: { orderBy: 'READINESS' | 'NAME' | 'LEVEL' | 'UPDATED'; dormant: boolean; cursor?: string; limit: number }) {
  const { o: offset } = decodeCursor(args.cursor);
  const all = args.dormant ? await listDormantSouls(ctx.db) : await listSoulsOrdered(ctx.db, args.orderBy);
  const page = all.slice(offset, offset + args.limit);
  const ids = page.map((s) => s.id);
  const [verdicts, traits, pending] = await Promise.all([getCrystallization(ctx.db, ids), listTraitsOfSouls(ctx.db, ids, { status: 'active' }), pendingShardCounts(ctx.db, ids)]);
  const active = Map.groupBy(traits, (t) => t.soulId);
  const items = page.map((s) => ({
    id: s.id,
    name: s.name,
    level: s.level,
    activeTraitCount: active.get(s.id)?.length ?? 0,
    pendingShardCount: pending.get(s.id) ?? 0,
    ready: verdicts.get(s.id)?.ready ?? false,
    unmet: verdicts.has(s.id) ? unmetOf(verdicts.get(s.id)!, s, ctx.db.settings) : [],
  }));
  const frame = (kept: typeof items) => ({
    souls: kept,
    totalCount: all.length,
    nextCursor: offset + kept.length < all.length ? encodeCursor({ o: offset + kept.length }) : null,
  });
  return frame(items.slice(0, fitToBudget(items, frame)));
}

async function oneSoul(ctx: ToolContext, soul: Soul, render: 'lean' | 'full', sections: readonly (typeof sectionNames)[number][]) {
  const { db } = ctx;
  const traits = await listTraits(db, soul.id);
  const active = traits.filter((t) => t.status === 'active');
  const want = new Set(sections);
  const signals = want.has('traits') ? await getTraitSignals(db, active.map((t) => t.id)) : new Map();
  const verdict = want.has('crystallization') ? verdictOf((await getCrystallization(db, [soul.id])).get(soul.id)!, soul, db.settings) : undefined;
  const history = want.has('levels') ? (await getLevelHistory(db, soul.id)).slice(-10) : [];
  const counts = want.has('shardCounts')
    ? { bySource: ((await shardCountsBySource(db, [soul.id])).get(soul.id) ?? []).slice(0, 20), byTag: (await shardCountsByTag(db, soul.id)).slice(0, 30) }
    : undefined;
  const block = await renderSoul(db, soul.id, { includeProvenance: render === 'full' });
  // Texts are cut shorter until the sections fit; the block gets what they leave (the resource has all of it).
  const sectionsAt = (textMax: number) => {
    const result: Record<string, unknown> = {
      id: soul.id,
      name: soul.name,
      slug: soul.slug,
      level: soul.level,
      dormant: soul.deletedAt !== null,
      activeTraitCount: active.length,
      traitLimit: getTraitLimit(db),
    };
    if (want.has('traits')) {
      result.traits = active.map((t) => {
        const principle = clip(t.principle, textMax);
        const provenance = render === 'full' ? clip(t.provenance, textMax) : null;
        return {
          id: t.id,
          principle: principle.text,
          ...(provenance ? { provenance: provenance.text } : {}),
          status: t.status,
          generation: t.generation,
          citationCount: signals.get(t.id)?.citationCount ?? 0,
          citationDensity: Number((signals.get(t.id)?.citationDensity ?? 0).toFixed(3)),
          stale: signals.get(t.id)?.stale ?? false,
          clipped: principle.clipped || (provenance?.clipped ?? false),
        };
      });
    }
    if (want.has('inactiveTraits')) {
      // Newest first: the ones a model most likely wants back.
      result.inactiveTraits = traits
        .filter((t) => t.status !== 'active')
        .reverse()
        .slice(0, 20)
        .map((t) => {
          const principle = clip(t.principle, Math.min(200, textMax));
          return { id: t.id, principle: principle.text, status: t.status, generation: t.generation, mergedInto: t.mergedInto, clipped: principle.clipped };
        });
    }
    if (verdict) result.crystallization = verdict;
    if (want.has('levels')) {
      result.levels = history.map((e) => ({
        id: e.id,
        level: e.level,
        at: iso(e.createdAt)!,
        revertedAt: iso(e.revertedAt),
        essenceAfter: clip(e.essenceAfter, Math.min(300, textMax)).text,
        consolidated: e.consolidated,
        promoted: e.promoted,
        carried: e.carried.map((c) => c.id),
        merged: e.merged,
      }));
    }
    if (counts) result.shardCounts = counts;
    return result;
  };
  let textMax = TRAIT_TEXT_MAX;
  while (textMax > 40 && responseSize({ soul: sectionsAt(textMax) }) > RESPONSE_BUDGET_CHARS - MIN_BLOCK_ROOM * 2) textMax = Math.floor(textMax / 2);
  const rest = sectionsAt(textMax);
  const fitted = fitText((room) => {
    const rendered = clip(block, room);
    return { soul: { ...rest, rendered: rendered.text, renderedClipped: rendered.clipped } };
  }, block.length);
  return fitted.soul as Record<string, unknown>;
}

export const soulAttune = defineTool({
  name: 'soul_attune',
  title: 'Close a refinement cycle',
  description:
    'Close a refinement cycle of soulId: it then waits for new evidence. fadeExhaustedShards also fades shards ' +
    'cited by enough distinct traits. Give either or both.',
  scope: 'refine',
  annotations: annotations('idempotent-write'),
  input: z.strictObject({
    soulId: id('soul').optional(),
    fadeExhaustedShards: z.boolean().default(false),
  }),
  output: z.object({
    attuned: z.object({ id: z.number().int(), name: z.string(), lastAttunedAt: z.string() }).optional(),
    fadedCount: z.number().int().optional(),
    readySouls: readySouls.optional(),
  }),
  async run(args, ctx) {
    try {
      if (args.soulId === undefined && !args.fadeExhaustedShards) {
        throw new ToolRefusal('soulId', 'give soulId, fadeExhaustedShards true, or both', 'Call soul_read to find the soul you refined');
      }
      const out: Record<string, unknown> = {};
      if (args.soulId !== undefined) {
        const soul = await soulNamed(ctx, args.soulId);
        if (soul.deletedAt !== null) throw new ToolRefusal('soulId', `soul ${soul.id} is dormant`, 'Awaken it with soul_manage (action "awaken") first');
        const stamped = await stampAttuned(ctx.db, soul.id);
        soulChanged(ctx, soul.id, 'ATTUNED');
        out.attuned = { id: stamped.id, name: stamped.name, lastAttunedAt: iso(stamped.lastAttunedAt)! };
        await recordOutcome(ctx, { soul: stamped, action: 'attune', summary: `Attuned ${stamped.name} (soul #${stamped.id}): closed a refinement cycle.` });
      }
      if (args.fadeExhaustedShards) {
        const { fadedCount, readySoulIds } = await fadeExhaustedShards(ctx.db);
        if (fadedCount === 0 && args.soulId === undefined) {
          throw new ToolRefusal('fadeExhaustedShards', `no shard is cited by ${ctx.db.settings.shardFadeCitations} distinct traits: nothing faded`, 'Nothing to do; cite shards from traits with trait_change (action "cite") as evidence is used');
        }
        out.fadedCount = fadedCount;
        out.readySouls = await announceReady(ctx, readySoulIds);
      }
      return ok(out);
    } catch (error) {
      return toolError(error);
    }
  },
});

export const soulManage = defineTool({
  name: 'soul_manage',
  title: 'Create, edit, retire or awaken a soul (admin)',
  description:
    'Admin verbs that bypass evolution: "create" (name, essence; slug, description), "update" (soulId, fields to set), ' +
    '"retire" (soulId: dormant, history kept), "awaken" (soulId; name if taken). To evolve a soul use trait_change and levelup.',
  scope: 'admin',
  annotations: annotations('destructive'),
  input: z.strictObject({
    action: z.enum(['create', 'update', 'retire', 'awaken']),
    soulId: id('soul').optional(),
    name: z.string().max(1000).optional(),
    slug: z.string().max(200).optional(),
    essence: z.string().max(70_000).optional(),
    description: z.string().max(10_000).optional(),
  }),
  output: z.object({ soul: z.object({ id: z.number().int(), name: z.string(), slug: z.string().nullable(), level: z.number().int(), dormant: z.boolean() }), readySouls: readySouls.optional() }),
  async run(args, ctx) {
    try {
      const view = (s: Soul) => ({ id: s.id, name: s.name, slug: s.slug, level: s.level, dormant: s.deletedAt !== null });
      if (args.action === 'create') {
        if (args.soulId !== undefined) throw new ToolRefusal('soulId', 'is not used by action "create"', 'Leave soulId out; the new soul gets an id');
        if (args.name === undefined || args.essence === undefined) throw new ToolRefusal(args.name === undefined ? 'name' : 'essence', 'is required by action "create"');
        const soul = await createSoul(ctx.db, { name: args.name, essence: args.essence, slug: args.slug, description: args.description });
        soulChanged(ctx, soul.id, 'CREATED');
        return ok({ soul: view(soul) });
      }
      if (args.soulId === undefined) throw new ToolRefusal('soulId', `is required by action "${args.action}"`, 'Call soul_read (dormant true for retired souls) to find the id');
      const soul = await soulNamed(ctx, args.soulId);
      if (args.action === 'update') {
        const patch = { name: args.name, slug: args.slug, essence: args.essence, description: args.description };
        const changes = Object.entries(patch).filter(([key, value]) => value !== undefined && value !== (soul as Record<string, unknown>)[key]);
        if (changes.length === 0) throw new ToolRefusal(null, 'action "update" changes nothing: give name, slug, essence or description with a new value');
        const updated = await updateSoul(ctx.db, soul.id, patch);
        soulChanged(ctx, soul.id, 'UPDATED');
        return ok({ soul: view(updated) });
      }
      if (args.action === 'retire') {
        if (soul.deletedAt !== null) throw new ToolRefusal('soulId', `soul ${soul.id} is already dormant: nothing changed`);
        const retired = await retireSoul(ctx.db, soul.id);
        soulChanged(ctx, soul.id, 'RETIRED');
        return ok({ soul: view(retired) });
      }
      if (soul.deletedAt === null) throw new ToolRefusal('soulId', `soul ${soul.id} is awake: nothing changed`);
      const { soul: awake, readySoulIds } = await awakenSoul(ctx.db, soul.id, { rename: args.name });
      soulChanged(ctx, soul.id, 'AWAKENED');
      return ok({ soul: view(awake), readySouls: await announceReady(ctx, readySoulIds) });
    } catch (error) {
      return toolError(error);
    }
  },
});
