// souls show: one soul whole — essence, traits with provenance, readiness.
import { getCrystallization, getTraitSignals, listTraits, pendingShardCounts, shardCountsBySource, unmetNeeds, type TraitStatus } from '../engine/index.ts';
import { jsonOption, parseArguments } from './arguments.ts';
import type { Command } from './command.ts';
import { findSoul, withExistingDb } from './database.ts';
import { crystallizationJson, humanTime, idJson, isoTime, json, readinessText, soulJson } from './format.ts';
import { commandHelp } from './help.ts';
import { colours } from './terminal.ts';

const everyStatus: readonly TraitStatus[] = ['active', 'consolidated', 'promoted', 'reverted'];

export const showCommand: Command = {
  name: 'show',
  summary: "show a soul: essence, traits with provenance, readiness (reads only)",
  help: commandHelp({
    usage: ['show <soul> [--all] [--json] [options]'],
    description:
      'Shows one soul: name, description, level, essence, its active traits (with --all, every trait: consolidated,\n' +
      'promoted and reverted ones too) with their provenance, generation and citations, its pending shards by source, and\n' +
      'its readiness for refinement. <soul> is an id or a name (any case); dormant souls too. Reads only.',
    options: [
      ['--all', 'every trait, whatever its status'],
      ['--json', 'one JSON object: soul, traits, crystallization, shard counts (fields as in the GraphQL API)'],
    ],
    groups: ['database', 'settings'],
    examples: ['souls show Mira', 'souls show 2 --all', "souls show Relay --json | jq '.traits[] | {principle, provenance}'"],
  }),
  async run(argv, io) {
    const { args, values, config } = parseArguments('show', argv, { positionals: ['soul'], options: { ...jsonOption, all: { type: 'boolean' } }, groups: ['database', 'settings'] }, io.env);
    const view = await withExistingDb(config!, 'show', async (db) => {
      const soul = await findSoul(db, args.soul!);
      const traits = await listTraits(db, soul.id, { status: values.all ? everyStatus : 'active' });
      const signals = await getTraitSignals(db, traits.map((t) => t.id));
      const activeTraitCount = values.all ? (await listTraits(db, soul.id, { status: 'active' })).length : traits.length;
      const crystallization = (await getCrystallization(db, [soul.id])).get(soul.id)!;
      const needs = unmetNeeds(crystallization, soul.lastAttunedAt, db.settings);
      return {
        soul: soulJson(soul, { essence: true }),
        activeTraitCount,
        traitLimit: db.settings.traitLimit,
        traits: traits
          .toSorted((a, b) => a.id - b.id)
          .map((t) => ({
            id: idJson(t.id),
            principle: t.principle,
            provenance: t.provenance,
            generation: t.generation,
            status: t.status,
            mergedInto: t.mergedInto === null ? null : idJson(t.mergedInto),
            createdAt: isoTime(t.createdAt),
            updatedAt: isoTime(t.updatedAt),
            citationCount: signals.get(t.id)?.citationCount ?? 0,
            stale: signals.get(t.id)?.stale ?? false,
          })),
        pendingShardCount: (await pendingShardCounts(db, [soul.id])).get(soul.id) ?? 0,
        shardCountsBySource: (await shardCountsBySource(db, [soul.id])).get(soul.id) ?? [],
        crystallization: crystallizationJson(crystallization, needs),
        readiness: readinessText(crystallization, needs),
        createdAtMs: soul.createdAt,
      };
    });
    const { readiness, createdAtMs, ...data } = view;
    if (values.json) {
      io.stdout.write(json(data));
      return 0;
    }
    const paint = colours(io.stdout, io.env);
    const { soul } = view;
    const lines = [
      `${paint.bold(soul.name)} (#${soul.id}${soul.slug ? `, ${soul.slug}` : ''}) · level ${soul.level} · ${soul.dormant ? 'dormant' : 'awake'} · since ${humanTime(createdAtMs)} UTC`,
      ...(soul.description ? [paint.dim(soul.description)] : []),
      '',
      paint.bold('Essence'),
      ...(soul.essence ?? '').split('\n').map((l) => `  ${l}`),
      '',
      paint.bold(`Traits (${view.activeTraitCount} of ${view.traitLimit} active${values.all ? '; every status' : ''})`),
      ...(view.traits.length === 0 ? ['  none'] : []),
      ...view.traits.flatMap((t) => [
        `  #${t.id} ${t.status === 'active' ? t.principle : paint.dim(t.principle)}`,
        `      ${paint.dim(`provenance: ${t.provenance}`)}`,
        `      ${paint.dim(
          [
            ...(t.status === 'active' ? [] : [t.mergedInto === null ? t.status : `${t.status} into #${t.mergedInto}`]),
            `generation ${t.generation}`,
            `${t.citationCount} citation${t.citationCount === 1 ? '' : 's'}`,
            ...(t.stale ? ['stale'] : []),
          ].join(' · '),
        )}`,
      ]),
      '',
      `${paint.bold('Shards')}: ${view.pendingShardCount} pending${view.shardCountsBySource.length > 0 ? ` (considered by source: ${view.shardCountsBySource.map((s) => `${s.source} ${s.count}`).join(', ')})` : ''}`,
      `${paint.bold('Readiness')}: ${view.crystallization.ready ? paint.green(readiness) : readiness}`,
    ];
    io.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  },
};
