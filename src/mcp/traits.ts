// The trait tool: every verb on one trait (add, revise, revert, reactivate, cite, uncite), with a dry run for the ones that change the block.
import { z } from 'zod';
import {
  addTrait,
  citeShards,
  citeShardsOfTraits,
  getShards,
  getTrait,
  previewTraitChanges,
  reactivateTrait,
  reviseTrait,
  revertTrait,
  unciteShards,
  type Soul,
  type Trait,
  type TraitChanges,
} from '../engine/index.ts';
import { announceReady, annotations, defineTool, soulChanged, type ToolContext } from './context.ts';
import { recordOutcome } from './refiner.ts';
import { clip, fitText, ok, toolError, ToolRefusal } from './results.ts';
import { soulNamed } from './souls.ts';
import { id, ids, readySouls } from './schemas.ts';

const actions = ['add', 'revise', 'revert', 'reactivate', 'cite', 'uncite'] as const;
type Action = (typeof actions)[number];

const traitOut = z.object({ id: z.number().int(), soulId: z.number().int(), principle: z.string(), status: z.string(), generation: z.number().int() });


/** Which fields each action takes; anything else given is refused, so a model never thinks a field was used. */
const fieldsOf: Record<Action, readonly string[]> = {
  add: ['soulId', 'principle', 'provenance', 'citeShardIds'],
  revise: ['traitId', 'principle', 'provenance'],
  revert: ['traitId'],
  reactivate: ['traitId'],
  cite: ['traitId', 'citeShardIds', 'cites'],
  uncite: ['traitId', 'citeShardIds'],
};

export const traitChange = defineTool({
  name: 'trait_change',
  title: 'Change a trait',
  description:
    '"add": a trait on soulId: principle, provenance, citeShardIds; refused at the trait limit (then levelup). "revise": principle ' +
    'and/or provenance of traitId. "revert"/"reactivate" traitId. "cite"/"uncite": citeShardIds of traitId, or cites for many traits. ' +
    'dryRun (add, revise, revert, cites): writes nothing; shows the block before and after, warnings.',
  scope: 'refine',
  annotations: annotations('destructive'),
  input: z.strictObject({
    action: z.enum(actions),
    soulId: id('soul').optional().describe('add'),
    traitId: id('trait').optional().describe('all but add'),
    principle: z.string().max(10_000).optional().describe('one sentence the soul acts on'),
    provenance: z.string().max(70_000).optional(),
    citeShardIds: ids('shard', 100).optional().describe('add, cite, uncite'),
    cites: z.array(z.strictObject({ traitId: id('trait'), shardIds: ids('shard', 100) })).max(20).optional().describe('cite: all or none'),
    dryRun: z.boolean().default(false),
  }),
  output: z.object({
    trait: traitOut.optional(),
    soul: z.object({ id: z.number().int(), name: z.string() }),
    cited: z.array(z.number().int()).optional().describe('shards newly cited'),
    alreadyCited: z.array(z.number().int()).optional().describe('cite: shards the trait already cited'),
    byTrait: z.record(z.string(), z.object({ cited: z.array(z.number().int()), alreadyCited: z.array(z.number().int()) })).optional(),
    uncited: z.array(z.number().int()).optional().describe('uncite: shards whose citation was taken back'),
    readySouls: readySouls.optional(),
    preview: z.object({ before: z.string(), after: z.string() }).optional().describe('dryRun: the rendered block before and after'),
    warnings: z.array(z.string()).optional().describe('dryRun: "KIND: message", advisory'),
  }),
  async run(args, ctx) {
    try {
      const given = (['soulId', 'traitId', 'principle', 'provenance', 'citeShardIds', 'cites'] as const).filter((key) => args[key] !== undefined);
      const extra = given.find((key) => !fieldsOf[args.action].includes(key));
      if (extra) throw new ToolRefusal(extra, `is not used by action "${args.action}"`, `Action "${args.action}" takes ${fieldsOf[args.action].join(', ')}`);
      if (args.cites !== undefined) {
        const both = given.find((key) => key === 'traitId' || key === 'citeShardIds');
        if (both) throw new ToolRefusal(both, 'is not used with cites: give each trait and its shards in cites', null);
        return await citeMany(ctx, args.cites, args.dryRun);
      }
      if (args.dryRun && (args.action === 'reactivate' || args.action === 'cite' || args.action === 'uncite')) {
        throw new ToolRefusal('dryRun', `is only for add, revise and revert, not "${args.action}"`, 'Leave dryRun out');
      }
      if (args.action === 'add') return await add(ctx, args);
      if (args.traitId === undefined) throw new ToolRefusal('traitId', `is required by action "${args.action}"`, 'Call soul_read with soulId and sections ["traits"] (or "inactiveTraits") to see trait ids');
      const trait = await getTrait(ctx.db, args.traitId);
      if (!trait) throw new ToolRefusal('traitId', `there is no trait ${args.traitId}`, 'Call soul_read with soulId and sections ["traits"] to see trait ids');
      const soul = await soulNamed(ctx, trait.soulId);
      switch (args.action) {
        case 'revise':
          return await revise(ctx, soul, trait, args);
        case 'revert':
          return await revert(ctx, soul, trait, args.dryRun);
        case 'reactivate':
          return await reactivate(ctx, soul, trait);
        case 'uncite':
          return await uncite(ctx, soul, trait, args.citeShardIds ?? []);
        default:
          return await cite(ctx, soul, trait, args.citeShardIds ?? []);
      }
    } catch (error) {
      return toolError(error, {
        notFound: { Shard: { field: 'citeShardIds', hint: 'Call shard_search to find shard ids' } },
        capacity: 'Consolidate traits with levelup (read soul_evidence for candidates), or revert one with trait_change action "revert"',
        invalidState: 'Call soul_read with sections ["traits", "inactiveTraits"] to see each trait\'s status',
      });
    }
  },
});

const view = (t: Trait) => ({ id: t.id, soulId: t.soulId, principle: clip(t.principle, 400).text, status: t.status, generation: t.generation });
const soulView = (s: Soul) => ({ id: s.id, name: s.name });

async function preview(ctx: ToolContext, soul: Soul, changes: TraitChanges) {
  const { before, after, warnings } = await previewTraitChanges(ctx.db, soul.id, changes);
  // Both blocks cut at the same length when they do not fit; soul_read and the soul resource show the block now.
  return ok(
    fitText(
      (room) => ({ soul: soulView(soul), preview: { before: clip(before, room).text, after: clip(after, room).text }, warnings: warnings.map((w) => `${w.kind}: ${w.message}`) }),
      Math.max(before.length, after.length),
    ),
  );
}

async function add(ctx: ToolContext, args: { soulId?: number; principle?: string; provenance?: string; citeShardIds?: number[]; dryRun: boolean }) {
  if (args.soulId === undefined) throw new ToolRefusal('soulId', 'is required by action "add"', 'Call soul_read to find the soul id');
  for (const field of ['principle', 'provenance'] as const) {
    if (args[field] === undefined) throw new ToolRefusal(field, 'is required by action "add" (no provenance, no trait)', null);
  }
  const soul = await soulNamed(ctx, args.soulId);
  const input = { principle: args.principle!, provenance: args.provenance!, citeShardIds: args.citeShardIds ?? [] };
  if (args.dryRun) return preview(ctx, soul, { add: [input] });
  const trait = await addTrait(ctx.db, soul.id, input);
  soulChanged(ctx, soul.id, 'TRAIT_ADDED');
  await recordOutcome(ctx, {
    soul,
    action: 'add',
    traitIds: [trait.id],
    citedShardIds: input.citeShardIds,
    summary: `Added trait #${trait.id} to ${soul.name} (soul #${soul.id}): "${clip(trait.principle, 300).text}"`,
  });
  return ok({ trait: view(trait), soul: soulView(soul), cited: [...new Set(input.citeShardIds)] });
}

async function revise(ctx: ToolContext, soul: Soul, trait: Trait, args: { principle?: string; provenance?: string; dryRun: boolean }) {
  if (args.principle === undefined && args.provenance === undefined) throw new ToolRefusal('principle', 'action "revise" needs a new principle, provenance, or both', null);
  const same = (args.principle === undefined || args.principle.trim() === trait.principle) && (args.provenance === undefined || args.provenance.trim() === trait.provenance);
  if (same) throw new ToolRefusal(args.principle !== undefined ? 'principle' : 'provenance', `is the same as trait ${trait.id} has now: nothing would change`, 'Give a different text');
  if (args.dryRun) return preview(ctx, soul, { revise: [{ traitId: trait.id, principle: args.principle, provenance: args.provenance }] });
  const revised = await reviseTrait(ctx.db, trait.id, { principle: args.principle, provenance: args.provenance });
  soulChanged(ctx, soul.id, 'TRAIT_REVISED');
  await recordOutcome(ctx, { soul, action: 'revise', traitIds: [trait.id], summary: `Revised trait #${trait.id} of ${soul.name} (soul #${soul.id}) to "${clip(revised.principle, 300).text}"` });
  return ok({ trait: view(revised), soul: soulView(soul) });
}

async function revert(ctx: ToolContext, soul: Soul, trait: Trait, dryRun: boolean) {
  if (trait.status !== 'active') throw new ToolRefusal('traitId', `trait ${trait.id} is ${trait.status}, not active: nothing to revert`, 'To bring it back use action "reactivate"');
  if (dryRun) return preview(ctx, soul, { revert: [trait.id] });
  const reverted = await revertTrait(ctx.db, trait.id);
  soulChanged(ctx, soul.id, 'TRAIT_REVERTED');
  await recordOutcome(ctx, { soul, action: 'revert', summary: `Reverted trait #${trait.id} of ${soul.name} (soul #${soul.id}): "${clip(trait.principle, 300).text}"` });
  return ok({ trait: view(reverted), soul: soulView(soul) });
}

async function reactivate(ctx: ToolContext, soul: Soul, trait: Trait) {
  if (trait.status === 'active') throw new ToolRefusal('traitId', `trait ${trait.id} is already active: nothing changed`, null);
  const active = await reactivateTrait(ctx.db, trait.id);
  soulChanged(ctx, soul.id, 'TRAIT_REACTIVATED');
  await recordOutcome(ctx, { soul, action: 'reactivate', traitIds: [trait.id], summary: `Reactivated trait #${trait.id} of ${soul.name} (soul #${soul.id}): "${clip(trait.principle, 300).text}"` });
  return ok({ trait: view(active), soul: soulView(soul) });
}

async function requireShards(ctx: ToolContext, shardIds: readonly number[], field = 'citeShardIds'): Promise<void> {
  const found = await getShards(ctx.db, shardIds);
  const missing = shardIds.filter((i) => !found.has(i));
  if (missing.length > 0) throw new ToolRefusal(field, `no shard has the ids ${missing.join(', ')}`, 'Call shard_search to find shard ids');
}

async function cite(ctx: ToolContext, soul: Soul, trait: Trait, shardIds: readonly number[]) {
  const wanted = [...new Set(shardIds)];
  if (wanted.length === 0) throw new ToolRefusal('citeShardIds', 'action "cite" needs at least one shard id', 'Call shard_search to find the shards this trait rests on');
  if (trait.status !== 'active') throw new ToolRefusal('traitId', `trait ${trait.id} is ${trait.status}: only active traits cite shards`, null);
  await requireShards(ctx, wanted);
  const { trait: after, cited, alreadyCited } = await citeShards(ctx.db, trait.id, wanted);
  if (cited.length === 0) throw new ToolRefusal('citeShardIds', `trait ${trait.id} already cites shards ${wanted.join(', ')}: nothing changed`, null);
  soulChanged(ctx, soul.id, 'SHARD_CITED');
  await recordOutcome(ctx, { soul, action: 'cite', traitIds: [trait.id], citedShardIds: cited, summary: `Cited evidence for trait #${trait.id} of ${soul.name} (soul #${soul.id}).` });
  return ok({ trait: view(after), soul: soulView(soul), cited, alreadyCited });
}

/** Several traits cite their shards in one call, all or nothing; a dry run checks everything and writes nothing. */
async function citeMany(ctx: ToolContext, cites: readonly { traitId: number; shardIds: number[] }[], dryRun: boolean) {
  if (cites.length === 0) throw new ToolRefusal('cites', 'list at least one trait and its shards', null);
  const souls = new Map<number, Soul>();
  for (const [i, c] of cites.entries()) {
    const trait = await getTrait(ctx.db, c.traitId);
    if (!trait) throw new ToolRefusal(`cites[${i}].traitId`, `there is no trait ${c.traitId}`, 'Call soul_read with soulId and sections ["traits"] to see trait ids');
    if (!souls.has(trait.soulId)) souls.set(trait.soulId, await soulNamed(ctx, trait.soulId));
  }
  await requireShards(ctx, [...new Set(cites.flatMap((c) => c.shardIds))], 'cites');
  const results = await citeShardsOfTraits(ctx.db, cites, { dryRun });
  const soul = [...souls.values()][0];
  if (results.every((r) => r.cited.length === 0)) throw new ToolRefusal('cites', 'every trait already cites every shard listed: nothing changed', null);
  if (!dryRun) {
    for (const s of souls.values()) soulChanged(ctx, s.id, 'SHARD_CITED');
    for (const r of results.filter((r) => r.cited.length > 0)) {
      await recordOutcome(ctx, { soul, action: 'cite', traitIds: [r.traitId], citedShardIds: r.cited, summary: `Cited evidence for trait #${r.traitId} of ${soul.name} (soul #${soul.id}).` });
    }
  }
  return ok({ soul: soulView(soul), byTrait: Object.fromEntries(results.map((r) => [r.traitId, { cited: r.cited, alreadyCited: r.alreadyCited }])) });
}

async function uncite(ctx: ToolContext, soul: Soul, trait: Trait, shardIds: readonly number[]) {
  const wanted = [...new Set(shardIds)];
  if (wanted.length === 0) throw new ToolRefusal('citeShardIds', 'action "uncite" needs at least one shard id', 'Call soul_read with sections ["traits"] to see what each trait cites');
  await requireShards(ctx, wanted);
  const { trait: after, uncited, readySoulIds } = await unciteShards(ctx.db, trait.id, wanted);
  soulChanged(ctx, soul.id, 'SHARD_UNCITED');
  await recordOutcome(ctx, {
    soul,
    action: 'uncite',
    traitIds: [trait.id],
    summary: `Took back the citations of shards ${uncited.map((i) => `#${i}`).join(', ')} from trait #${trait.id} of ${soul.name} (soul #${soul.id}).`,
  });
  return ok({ trait: view(after), soul: soulView(soul), uncited, readySouls: await announceReady(ctx, readySoulIds) });
}
