// souls history: a soul's level events and trait changes as a timeline.
import { getLevelHistory, listTraits, type LevelEvent, type Soul, type Trait } from '../engine/index.ts';
import { jsonOption, parseArguments } from './arguments.ts';
import type { Command } from './command.ts';
import { findSoul, withExistingDb } from './database.ts';
import { humanTime, idJson, isoTime, json } from './format.ts';
import { commandHelp } from './help.ts';
import { colours } from './terminal.ts';

export type HistoryKind = 'CREATED' | 'TRAIT_ADDED' | 'LEVEL_UP' | 'TRAIT_REVERTED' | 'TRAIT_REVISED_OR_REACTIVATED' | 'LEVEL_UP_REVERTED' | 'ATTUNED' | 'RETIRED';

/** A trait as it stands now (statusNow), so a script can tell what became of it. */
type TraitRef = { id: number; principle: string; provenance: string; generation: number; statusNow: Trait['status'] };
type Entry = { at: number; kind: HistoryKind; order: number; trait?: TraitRef; event?: LevelEvent };

/** Same-instant entries read in cause order: a soul exists before its traits, a level-up before its revert. */
const rank: Record<HistoryKind, number> = {
  CREATED: 0,
  TRAIT_ADDED: 1,
  LEVEL_UP: 2,
  TRAIT_REVERTED: 3,
  TRAIT_REVISED_OR_REACTIVATED: 3,
  LEVEL_UP_REVERTED: 4,
  ATTUNED: 5,
  RETIRED: 6,
};

const traitRef = (t: Trait): TraitRef => ({ id: t.id, principle: t.principle, provenance: t.provenance, generation: t.generation, statusNow: t.status });

/**
 * The timeline the stored rows support. Level events are kept whole; a trait keeps its creation time and its
 * latest change only, so a trait revised twice shows one change, and a latest change made by a level-up or its
 * revert is told by that event.
 */
export function soulTimeline(soul: Soul, traits: readonly Trait[], levels: readonly LevelEvent[]): Entry[] {
  const entries: Entry[] = [{ at: soul.createdAt, kind: 'CREATED', order: 0 }];
  const levelTimes = new Set(levels.flatMap((e) => [e.createdAt, ...(e.revertedAt === null ? [] : [e.revertedAt])]));
  const mergedByLevelUp = new Set(levels.filter((e) => e.revertedAt === null).flatMap((e) => e.merged));
  for (const trait of traits) {
    if (!mergedByLevelUp.has(trait.id)) entries.push({ at: trait.createdAt, kind: 'TRAIT_ADDED', order: trait.id, trait: traitRef(trait) });
    if (trait.updatedAt > trait.createdAt && !levelTimes.has(trait.updatedAt)) {
      if (trait.status === 'reverted') entries.push({ at: trait.updatedAt, kind: 'TRAIT_REVERTED', order: trait.id, trait: traitRef(trait) });
      else if (trait.status === 'active') entries.push({ at: trait.updatedAt, kind: 'TRAIT_REVISED_OR_REACTIVATED', order: trait.id, trait: traitRef(trait) });
    }
  }
  for (const event of levels) {
    entries.push({ at: event.createdAt, kind: 'LEVEL_UP', order: event.id, event });
    if (event.revertedAt !== null) entries.push({ at: event.revertedAt, kind: 'LEVEL_UP_REVERTED', order: event.id, event });
  }
  if (soul.lastAttunedAt !== null) entries.push({ at: soul.lastAttunedAt, kind: 'ATTUNED', order: 0 });
  if (soul.deletedAt !== null) entries.push({ at: soul.deletedAt, kind: 'RETIRED', order: 0 });
  return entries.sort((a, b) => a.at - b.at || rank[a.kind] - rank[b.kind] || a.order - b.order);
}

function entryJson(entry: Entry) {
  const { event, trait } = entry;
  return {
    at: isoTime(entry.at),
    kind: entry.kind,
    ...(trait ? { trait: { ...trait, id: idJson(trait.id) } } : {}),
    ...(event
      ? {
          levelEvent: {
            id: idJson(event.id),
            level: event.level,
            essenceBefore: event.essenceBefore,
            essenceAfter: event.essenceAfter,
            consolidated: event.consolidated.map(idJson),
            merged: event.merged.map(idJson),
            promoted: event.promoted.map(idJson),
            carried: event.carried.map((c) => idJson(c.id)),
            createdAt: isoTime(event.createdAt),
            revertedAt: isoTime(event.revertedAt),
          },
        }
      : {}),
  };
}

export const historyCommand: Command = {
  name: 'history',
  summary: "a soul's level events and trait changes as a timeline (reads only)",
  help: commandHelp({
    usage: ['history <soul> [--json] [options]'],
    description:
      "Prints a soul's history, oldest first, times in UTC: its creation, each trait added, each level-up (essence\n" +
      'before and after, traits consolidated, merged, promoted and carried) and its revert, traits reverted or changed\n' +
      'since, the latest attunement, and retirement. Souls stores each trait\'s creation and latest change, not every\n' +
      'edit: a trait revised twice shows one change. <soul> is an id or a name (any case). Reads only.',
    options: [['--json', 'one JSON object: { soul, events: [{ at, kind, trait?, levelEvent? }] } (trait as it stands now)']],
    groups: ['database', 'settings'],
    examples: ['souls history Relay', "souls history 1 --json | jq '.events[] | select(.kind == \"LEVEL_UP\") | .levelEvent.level'"],
  }),
  async run(argv, io) {
    const { args, values, config } = parseArguments('history', argv, { positionals: ['soul'], options: jsonOption, groups: ['database', 'settings'] }, io.env);
    const { soul, entries, traits } = await withExistingDb(config!, 'history', async (db) => {
      const soul = await findSoul(db, args.soul!);
      const traits = await listTraits(db, soul.id);
      return { soul, traits, entries: soulTimeline(soul, traits, await getLevelHistory(db, soul.id)) };
    });
    if (values.json) {
      io.stdout.write(json({ soul: { id: idJson(soul.id), name: soul.name, level: soul.level, dormant: soul.deletedAt !== null }, events: entries.map(entryJson) }));
      return 0;
    }
    const paint = colours(io.stdout, io.env);
    const byId = new Map(traits.map((t) => [t.id, t]));
    const named = (id: number) => {
      const t = byId.get(id);
      return t ? `#${id} "${t.principle}"` : `#${id} (removed by the revert)`;
    };
    const indent = (text: string) => `${' '.repeat(18)}${text}`;
    const lines = [`${paint.bold(soul.name)}: ${entries.length} event${entries.length === 1 ? '' : 's'}, oldest first (times in UTC)`, ''];
    for (const entry of entries) {
      const when = paint.dim(humanTime(entry.at));
      const { trait, event } = entry;
      switch (entry.kind) {
        case 'CREATED':
          lines.push(`${when}  ${paint.bold('created')}`);
          break;
        case 'TRAIT_ADDED':
          lines.push(`${when}  trait added ${named(trait!.id)}`, indent(paint.dim(`provenance: ${trait!.provenance}`)));
          break;
        case 'TRAIT_REVERTED':
          lines.push(`${when}  trait reverted ${named(trait!.id)}`);
          break;
        case 'TRAIT_REVISED_OR_REACTIVATED':
          lines.push(`${when}  trait revised or reactivated ${named(trait!.id)} (its latest change)`);
          break;
        case 'LEVEL_UP': {
          const merged = event!.merged.map((id) => {
            const sources = event!.revertedAt === null ? traits.filter((t) => t.mergedInto === id).map((t) => `#${t.id}`) : [];
            return `${sources.length > 0 ? `${sources.join(' + ')} → ` : ''}${named(id)}`;
          });
          lines.push(`${when}  ${paint.green(`level-up to ${event!.level}`)}${event!.revertedAt === null ? '' : paint.dim(' (reverted later)')}`);
          lines.push(indent(`essence: ${event!.essenceAfter}`));
          // Once reverted, the merged rows are gone and which sources made which merged trait with them.
          if (event!.revertedAt !== null && event!.consolidated.length > 0) lines.push(indent(`consolidated: ${event!.consolidated.map((id) => `#${id}`).join(', ')}`));
          for (const m of merged) lines.push(indent(`merged: ${m}`));
          if (event!.promoted.length > 0) lines.push(indent(`promoted into the essence: ${event!.promoted.map(named).join(', ')}`));
          if (event!.carried.length > 0) lines.push(indent(`carried: ${event!.carried.map((c) => `#${c.id}`).join(', ')}`));
          break;
        }
        case 'LEVEL_UP_REVERTED':
          lines.push(`${when}  ${paint.yellow(`level-up to ${event!.level} reverted`)}`, indent(`essence back to: ${event!.essenceBefore}`));
          break;
        case 'ATTUNED':
          lines.push(`${when}  attuned (the latest attunement)`);
          break;
        case 'RETIRED':
          lines.push(`${when}  retired (dormant)`);
          break;
      }
    }
    io.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  },
};
