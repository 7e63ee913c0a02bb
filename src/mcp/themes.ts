// The judge tool: puts a soul's shards in named themes (or takes them out), renames a theme, and marks a theme as
// counter-evidence for a trait. A dry run computes the same change from the current state and writes nothing.
import { z } from 'zod';
import {
  alreadyAssigned,
  alreadyNamed,
  alreadyOpposed,
  assignedSupport,
  assignmentCounterCitations,
  assignThemes,
  formatEvidence,
  getCitations,
  getShardCitations,
  getShards,
  getShardThemes,
  getSoul,
  getThemes,
  getTrait,
  InvalidStateError,
  listThemes,
  NotFoundError,
  nothingToUnassign,
  notOpposed,
  opposedSupport,
  opposeTrait,
  oppositionCounterCitations,
  renameTheme,
  requireThemeName,
  unassignShards,
  unopposeTrait,
  validThemeAssignments,
  ValidationError,
  type EvidenceReport,
  type Soul,
  type Theme,
} from '../engine/index.ts';
import { nameKey } from '../engine/normalize.ts';
import { announceReady, annotations, defineTool, soulChanged, type ToolContext } from './context.ts';
import { recordOutcome } from './refiner.ts';
import { clip, fitToBudget, ok, toolError, ToolRefusal } from './results.ts';
import { soulNamed } from './souls.ts';
import { id, idList, ids, readySouls } from './schemas.ts';

const actions = ['assign', 'unassign', 'rename', 'oppose', 'unoppose'] as const;
type Action = (typeof actions)[number];

const fieldsOf: Record<Action, readonly string[]> = {
  assign: ['soulId', 'assignments'],
  unassign: ['soulId', 'shardIds'],
  rename: ['themeId', 'name'],
  oppose: ['themeId', 'traitId'],
  unoppose: ['themeId', 'traitId'],
};

const themeOut = z.object({ id: z.number().int().nullable(), name: z.string(), memberCount: z.number().int(), opposes: idList });
const move = z.object({ shardId: z.number().int(), fromThemeId: z.number().int().nullable(), toThemeId: z.number().int().nullable(), toNewTheme: z.string().optional() });
type Move = z.infer<typeof move>;

export const evidenceJudge = defineTool({
  name: 'evidence_judge',
  title: 'Judge shards into themes',
  description:
    '"assign": shards of soulId to themes, each assignment naming themeId or newThemeName (a shard in another theme moves) and opposes: ' +
    'traits its shards are counter-evidence for; one unit. "unassign": shardIds back to unjudged. "rename" themeId to name. ' +
    '"oppose"/"unoppose" themeId, traitId. Refuses no-ops and counter-evidence as support. dryRun: moves, unjudgedCount after.',
  scope: 'refine',
  annotations: annotations('destructive'),
  input: z.strictObject({
    action: z.enum(actions),
    soulId: id('soul').optional(),
    assignments: z
      .array(z.strictObject({ shardIds: ids('shard', 100).min(1), themeId: id('theme').optional(), newThemeName: z.string().max(200).optional(), opposes: ids('trait', 10).optional() }))
      .max(20)
      .optional(),
    shardIds: ids('shard', 100).optional(),
    themeId: id('theme').optional(),
    name: z.string().max(200).optional(),
    traitId: id('trait').optional(),
    dryRun: z.boolean().default(false),
  }),
  output: z.object({
    soul: z.object({ id: z.number().int(), name: z.string() }),
    applied: z.boolean(),
    themes: z.array(themeOut),
    moves: z.array(move).optional(),
    unjudgedCount: z.number().int().optional(),
    readySouls: readySouls.optional(),
  }),
  async run(args, ctx) {
    try {
      const given = (['soulId', 'assignments', 'shardIds', 'themeId', 'name', 'traitId'] as const).filter((key) => args[key] !== undefined);
      const extra = given.find((key) => !fieldsOf[args.action].includes(key));
      if (extra) throw new ToolRefusal(extra, `is not used by action "${args.action}"`, `Action "${args.action}" takes ${fieldsOf[args.action].join(', ')}`);
      const missing = fieldsOf[args.action].find((key) => args[key as keyof typeof args] === undefined);
      if (missing) throw new ToolRefusal(missing, `is required by action "${args.action}"`, hintFor(missing));
      const actor = await actorOf(ctx);
      switch (args.action) {
        case 'assign':
        case 'unassign':
          return ok(await judge(ctx, args.action, args.soulId!, args.assignments ?? [{ shardIds: args.shardIds! }], args.dryRun, actor));
        case 'rename':
          return ok(await rename(ctx, args.themeId!, args.name!, args.dryRun, actor));
        default:
          return ok(await oppose(ctx, args.action, args.themeId!, args.traitId!, args.dryRun, actor));
      }
    } catch (error) {
      return toolError(error, {
        notFound: {
          Theme: { field: args.assignments ? fieldOfTheme(args.assignments, error) : 'themeId', hint: 'Call soul_evidence with soulId to see theme ids' },
          Shard: { field: fieldOfShard(args, error), hint: 'Call shard_search with soulId to find shard ids' },
        },
        invalidState: 'Call soul_evidence with soulId to see the themes, their members and what they oppose, or soul_read with sections ["traits"] for the active traits',
      });
    }
  },
});

const hintFor = (field: string): string | null =>
  ({
    soulId: 'Call soul_read to find the soul id',
    themeId: 'Call soul_evidence with soulId to see theme ids',
    traitId: 'Call soul_read with soulId and sections ["traits"] to see trait ids',
    shardIds: 'Call soul_evidence to see the unjudged shards',
    assignments: 'Give [{ shardIds, themeId }] or [{ shardIds, newThemeName }]',
  })[field] ?? null;

function fieldOfTheme(assignments: readonly { themeId?: number }[], error: unknown): string {
  const index = error instanceof NotFoundError ? assignments.findIndex((a) => a.themeId === Number(error.id)) : -1;
  return index >= 0 ? `assignments[${index}].themeId` : 'themeId';
}

function fieldOfShard(args: { assignments?: { shardIds: number[] }[]; shardIds?: number[] }, error: unknown): string {
  if (!(error instanceof NotFoundError)) return 'shardIds';
  const shardId = Number(error.id);
  const index = (args.assignments ?? []).findIndex((a) => a.shardIds.includes(shardId));
  if (index >= 0) return `assignments[${index}].shardIds[${args.assignments![index].shardIds.indexOf(shardId)}]`;
  const j = (args.shardIds ?? []).indexOf(shardId);
  return j >= 0 ? `shardIds[${j}]` : 'shardIds';
}

/** Who the theme events name: the refiner this session acts as (its slug), else the caller (a token's name, or 'local'). */
async function actorOf(ctx: ToolContext): Promise<string> {
  const refiner = ctx.refinerId === null ? null : await getSoul(ctx.db, ctx.refinerId);
  return refiner?.slug ?? ctx.caller.name;
}

function themeView(theme: Theme): ThemeOut {
  return { id: theme.id, name: theme.name, memberCount: theme.memberIds.length, opposes: theme.opposes };
}

type ThemeOut = z.infer<typeof themeOut>;
type Planned = { soul: Soul; moves: Move[]; themes: ThemeOut[]; unjudgedAfter: number | null };

/**
 * The change an assign or unassign makes, from the current state, checked as the engine checks it (the same
 * fields are named): which shards move from which theme to which, the themes after, and (`withReport`) the report's
 * unjudgedCount after.
 */
async function plan(ctx: ToolContext, action: 'assign' | 'unassign', soulId: number, assignments: readonly { shardIds: number[]; themeId?: number; newThemeName?: string }[], withReport: boolean): Promise<Planned> {
  const soul = await soulNamed(ctx, soulId);
  if (soul.deletedAt !== null) throw new ValidationError('soulId', `soul ${soul.id} is dormant: awaken it first`);
  const writes =
    action === 'assign'
      ? validThemeAssignments(ctx.db, assignments)
      : [{ shardIds: [...assignments[0].shardIds], themeId: null, newThemeName: null }];
  if (action === 'unassign') {
    if (writes[0].shardIds.length === 0) throw new ValidationError('shardIds', 'must name at least one shard');
    const seen = new Set<number>();
    writes[0].shardIds.forEach((shardId, j) => {
      if (seen.has(shardId)) throw new ValidationError(`shardIds[${j}]`, `shard ${shardId} is named more than once in this call`);
      seen.add(shardId);
    });
  }
  const fieldOf = (i: number, j: number) => (action === 'assign' ? `assignments[${i}].shardIds[${j}]` : `shardIds[${j}]`);
  const allIds = writes.flatMap((w) => w.shardIds);
  const shards = await getShards(ctx.db, allIds);
  writes.forEach((w, i) =>
    w.shardIds.forEach((shardId, j) => {
      const shard = shards.get(shardId);
      if (!shard) throw new NotFoundError('Shard', shardId);
      if (!shard.soulIds.includes(soul.id)) throw new ValidationError(fieldOf(i, j), `shard ${shardId} is not attributed to soul ${soul.id}`);
    }),
  );
  const existing = await listThemes(ctx.db, soul.id);
  const named = await getThemes(ctx.db, writes.flatMap((w) => (w.themeId === null ? [] : [w.themeId])));
  writes.forEach((w, i) => {
    if (w.themeId !== null) {
      const theme = named.get(w.themeId);
      if (!theme) throw new NotFoundError('Theme', w.themeId);
      if (theme.soulId !== soul.id) throw new ValidationError(`assignments[${i}].themeId`, `theme ${w.themeId} belongs to another soul`);
    } else if (action === 'assign') {
      const holder = existing.find((t) => nameKey(t.name) === nameKey(w.newThemeName!));
      if (holder) throw new ValidationError(`assignments[${i}].newThemeName`, `the soul already has a theme named "${w.newThemeName}" (theme ${holder.id}): assign to its themeId`);
    }
  });
  const current = await getShardThemes(ctx.db, soul.id, allIds);
  const moves: Move[] = [];
  const after = new Map(existing.map((t) => [t.id, { ...t, memberIds: [...t.memberIds] }]));
  // The assignments' themes in order (a new one with id 0 until written).
  const targets: Theme[] = [];
  for (const w of writes) {
    const newTheme = action === 'assign' && w.themeId === null ? { id: 0, soulId: soul.id, name: w.newThemeName!, createdBy: '', createdAt: 0, updatedAt: 0, memberIds: [] as number[], opposes: [] as number[] } : null;
    if (action === 'assign') targets.push(newTheme ?? after.get(w.themeId!)!);
    for (const shardId of w.shardIds) {
      const from = current.get(shardId) ?? null;
      const to = action === 'unassign' ? null : w.themeId;
      if (from !== null && from === to) continue;
      if (from === null && action === 'unassign') continue;
      moves.push({ shardId, fromThemeId: from, toThemeId: to, ...(newTheme ? { toNewTheme: newTheme.name } : {}) });
      if (from !== null) after.get(from)!.memberIds = after.get(from)!.memberIds.filter((m) => m !== shardId);
      const target = newTheme ?? (to === null ? null : after.get(to)!);
      target?.memberIds.push(shardId);
    }
  }
  await refuseNoChangeOrCounterCitation(ctx, soul.id, action, writes, current, moves, after);
  const report = withReport ? await formatEvidence(ctx.db, soul.id) : null;
  const delta = report === null ? 0 : moves.filter((m) => inReport(report, shards.get(m.shardId)!)).reduce((n, m) => n + (m.fromThemeId === null ? -1 : m.toThemeId === null && m.toNewTheme === undefined ? 1 : 0), 0);
  // The themes the call touches: the assignments' (in order), or those the shards leave.
  const touched = action === 'assign' ? targets : [...new Set(moves.map((m) => m.fromThemeId!))].sort((a, b) => a - b).map((themeId) => after.get(themeId)!);
  return { soul, moves, themes: touched.map((t) => ({ ...themeView(t), id: t.id === 0 ? null : t.id })), unjudgedAfter: report === null ? null : report.unjudgedCount + delta };
}

/** The engine's refusals (SPEC §13) for a planned assign or unassign: it moves nothing, or makes a trait cite a shard of a theme opposing it. */
async function refuseNoChangeOrCounterCitation(
  ctx: ToolContext,
  soulId: number,
  action: 'assign' | 'unassign',
  writes: ReadonlyArray<{ shardIds: readonly number[]; themeId: number | null }>,
  current: ReadonlyMap<number, number>,
  moves: readonly Move[],
  themes: ReadonlyMap<number, Theme>,
): Promise<void> {
  const allIds = writes.flatMap((w) => w.shardIds);
  if (moves.length === 0 && action === 'unassign') throw nothingToUnassign(soulId, allIds);
  if (moves.length === 0 && writes.every((w) => w.themeId !== null)) throw alreadyAssigned(Map.groupBy(allIds, (id) => current.get(id)!));
  const intoExisting = moves.filter((m) => m.toThemeId !== null);
  const citations = await getShardCitations(ctx.db, intoExisting.map((m) => m.shardId));
  for (const m of intoExisting) {
    const rows = assignmentCounterCitations(themes.get(m.toThemeId!)!, m.shardId, citations);
    const i = writes.findIndex((w) => w.shardIds.includes(m.shardId));
    if (rows.length > 0) throw assignedSupport(`assignments[${i}].shardIds[${writes[i].shardIds.indexOf(m.shardId)}]`, rows);
  }
}

/** Whether the report counts the shard: one of its clusters holds it, or (past the clustered cap) it is pending and unsealed. */
function inReport(report: EvidenceReport, shard: { id: number; status: string; sealed: boolean }): boolean {
  if (report.clusters.some((c) => c.memberIds.includes(shard.id))) return true;
  return report.clusteredShardCount < report.shardCount && shard.status === 'pending' && !shard.sealed;
}

async function judge(ctx: ToolContext, action: 'assign' | 'unassign', soulId: number, assignments: { shardIds: number[]; themeId?: number; newThemeName?: string; opposes?: number[] }[], dryRun: boolean, actor: string) {
  const planned = await plan(ctx, action, soulId, assignments, dryRun);
  const opposing = assignments.some((a) => (a.opposes ?? []).length > 0);
  if (dryRun && opposing) {
    // Oppositions are checked by the store itself, in a unit of work it rolls back: the same checks as the write.
    const checked = await assignThemes(ctx.db, planned.soul.id, assignments, { actor, dryRun: true });
    planned.themes = planned.themes.map((t) => ({ ...t, opposes: checked.themes.find((c) => c.id === t.id || (t.id === null && c.name === t.name))?.opposes ?? t.opposes }));
  }
  const soul = { id: planned.soul.id, name: planned.soul.name };
  const answer = (applied: boolean, themes: ThemeOut[], moves: Move[], unjudgedCount: number, ready: { id: number; name: string }[]) => {
    const frame = (kept: Move[]) => ({ soul, applied, themes, moves: kept, unjudgedCount, ...(applied ? { readySouls: ready } : {}) });
    return frame(moves.slice(0, fitToBudget(moves, frame)));
  };
  if (dryRun) return answer(false, planned.themes, planned.moves, planned.unjudgedAfter!, []);
  const result =
    action === 'assign'
      ? await assignThemes(ctx.db, soul.id, assignments.map((a) => ({ shardIds: a.shardIds, themeId: a.themeId, newThemeName: a.newThemeName, opposes: a.opposes })), { actor })
      : await unassignShards(ctx.db, soul.id, assignments[0].shardIds, { actor });
  soulChanged(ctx, soul.id, 'THEMES_CHANGED');
  // A new theme's id is known once written: the assignments' themes come back in order.
  const newIds = new Map(assignments.flatMap((a, i) => (a.newThemeName === undefined ? [] : [[a.newThemeName, result.themes[i].id] as const])));
  const moves = planned.moves.map((m) => (m.toNewTheme === undefined ? m : { shardId: m.shardId, fromThemeId: m.fromThemeId, toThemeId: newIds.get(m.toNewTheme) ?? null }));
  const unjudged = (await formatEvidence(ctx.db, soul.id)).unjudgedCount;
  const named = result.themes.map((t) => `#${t.id} "${clip(t.name, 80).text}"`).join(', ');
  await recordOutcome(ctx, {
    soul,
    action,
    summary: `${action === 'assign' ? 'Assigned' : 'Unassigned'} ${moves.length} shard${moves.length === 1 ? '' : 's'} of ${soul.name} (soul #${soul.id}) ${action === 'assign' ? 'to' : 'from'} themes ${named || 'none'}.`,
  });
  return answer(true, result.themes.map(themeView), moves, unjudged, await announceReady(ctx, result.readySoulIds));
}

async function themeOf(ctx: ToolContext, themeId: number): Promise<{ theme: Theme; soul: Soul }> {
  const theme = (await getThemes(ctx.db, [themeId])).get(themeId);
  if (!theme) throw new NotFoundError('Theme', themeId);
  const soul = (await getSoul(ctx.db, theme.soulId))!;
  if (soul.deletedAt !== null) throw new InvalidStateError(`soul ${soul.id} is dormant: awaken it first`);
  return { theme, soul };
}

async function rename(ctx: ToolContext, themeId: number, name: string, dryRun: boolean, actor: string) {
  const { theme, soul } = await themeOf(ctx, themeId);
  if (dryRun) {
    const trimmed = requireThemeName(ctx.db, 'name', name);
    if (trimmed === theme.name) throw alreadyNamed(theme.id, trimmed);
    const holder = (await listThemes(ctx.db, soul.id)).find((t) => t.id !== theme.id && nameKey(t.name) === nameKey(trimmed));
    if (holder) throw new ValidationError('name', `the soul already has a theme named "${trimmed}" (theme ${holder.id})`);
    return { soul: { id: soul.id, name: soul.name }, applied: false, themes: [{ ...themeView(theme), name: trimmed }] };
  }
  const renamed = await renameTheme(ctx.db, theme.id, name, { actor });
  soulChanged(ctx, soul.id, 'THEMES_CHANGED');
  await recordOutcome(ctx, { soul, action: 'rename', summary: `Renamed theme #${theme.id} of ${soul.name} (soul #${soul.id}) from "${clip(theme.name, 80).text}" to "${clip(renamed.name, 80).text}".` });
  return { soul: { id: soul.id, name: soul.name }, applied: true, themes: [themeView(renamed)] };
}

async function oppose(ctx: ToolContext, action: 'oppose' | 'unoppose', themeId: number, traitId: number, dryRun: boolean, actor: string) {
  const { theme, soul } = await themeOf(ctx, themeId);
  if (dryRun) {
    const trait = await getTrait(ctx.db, traitId);
    if (!trait) throw new NotFoundError('Trait', traitId);
    if (trait.soulId !== soul.id) throw new ValidationError('traitId', `trait ${traitId} belongs to another soul than theme ${themeId}`);
    if (action === 'oppose' && trait.status !== 'active') throw new InvalidStateError(`trait ${traitId} is ${trait.status}: only an active trait can be opposed`);
    if (action === 'oppose' && theme.opposes.includes(traitId)) throw alreadyOpposed(theme.id, traitId);
    if (action === 'unoppose' && !theme.opposes.includes(traitId)) throw notOpposed(theme.id, traitId);
    const conflicts = action === 'oppose' ? oppositionCounterCitations(theme, traitId, await getCitations(ctx.db, [traitId])) : [];
    if (conflicts.length > 0) throw opposedSupport('traitId', conflicts);
    const opposes = action === 'oppose' ? [...new Set([...theme.opposes, traitId])].sort((a, b) => a - b) : theme.opposes.filter((t) => t !== traitId);
    return { soul: { id: soul.id, name: soul.name }, applied: false, themes: [{ ...themeView(theme), opposes }] };
  }
  const after = action === 'oppose' ? await opposeTrait(ctx.db, theme.id, traitId, { actor }) : await unopposeTrait(ctx.db, theme.id, traitId, { actor });
  soulChanged(ctx, soul.id, 'THEMES_CHANGED');
  await recordOutcome(ctx, {
    soul,
    action,
    traitIds: [traitId],
    summary: `${action === 'oppose' ? 'Marked' : 'Unmarked'} theme #${theme.id} "${clip(theme.name, 80).text}" of ${soul.name} (soul #${soul.id}) as counter-evidence for trait #${traitId}.`,
  });
  return { soul: { id: soul.id, name: soul.name }, applied: true, themes: [themeView(after)] };
}
