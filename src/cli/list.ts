// souls list: every soul with its level, trait count and readiness.
import { getCrystallization, listDormantSouls, listSouls, listTraitsOfSouls, pendingShardCounts, soulOrders, sortSouls, unmetNeeds, type SoulOrder } from '../engine/index.ts';
import { jsonOption, parseArguments, UsageError } from './arguments.ts';
import type { Command } from './command.ts';
import { withExistingDb } from './database.ts';
import { crystallizationJson, json, readinessText, soulJson, table } from './format.ts';
import { commandHelp } from './help.ts';
import { colours } from './terminal.ts';

const orders = soulOrders.map((o) => o.toLowerCase());

export const listCommand: Command = {
  name: 'list',
  summary: 'list the souls with their level, trait count and readiness (reads only)',
  help: commandHelp({
    usage: ['list [--all] [--order ORDER] [--json] [options]'],
    description:
      'Lists the awake souls (with --all, the dormant ones too): id, name, level, active traits out of the trait limit,\n' +
      'pending shards, and whether the soul is ready for refinement or what it lacks. Reads only: a missing database is\n' +
      'an error and nothing is created.',
    options: [
      ['--all', 'include dormant souls'],
      ['--order ORDER', `${orders.join(', ')} (default name; readiness: ready first, by priority)`],
      ['--json', 'a JSON array, one object per soul (fields as in the GraphQL API)'],
    ],
    groups: ['database', 'settings'],
    examples: [
      'souls list',
      'souls list --all --order readiness',
      "souls list --json | jq -r '.[] | select(.crystallization.ready) | .name'   # the souls to refine",
    ],
  }),
  async run(argv, io) {
    const { values, config } = parseArguments(
      'list',
      argv,
      { options: { ...jsonOption, all: { type: 'boolean' }, order: { type: 'string' } }, groups: ['database', 'settings'] },
      io.env,
    );
    const order = String(values.order ?? 'name');
    if (!orders.includes(order)) throw new UsageError(`--order must be one of ${orders.join(', ')}, got "${order}"`);
    const rows = await withExistingDb(config!, 'list', async (db) => {
      const souls = [...(await listSouls(db)), ...(values.all ? await listDormantSouls(db) : [])];
      const ids = souls.map((s) => s.id);
      const verdicts = await getCrystallization(db, ids);
      const active = Map.groupBy(await listTraitsOfSouls(db, ids, { status: 'active' }), (t) => t.soulId);
      const pending = await pendingShardCounts(db, ids);
      return sortSouls(souls, order.toUpperCase() as SoulOrder, verdicts).map((soul) => {
        const activeTraitCount = active.get(soul.id)?.length ?? 0;
        const needs = unmetNeeds(verdicts.get(soul.id)!, soul.lastAttunedAt, db.settings);
        return {
          ...soulJson(soul),
          activeTraitCount,
          traitLimit: db.settings.traitLimit,
          atCapacity: activeTraitCount >= db.settings.traitLimit,
          pendingShardCount: pending.get(soul.id) ?? 0,
          crystallization: crystallizationJson(verdicts.get(soul.id)!, needs),
          readiness: readinessText(verdicts.get(soul.id)!, needs),
        };
      });
    });
    if (values.json) {
      io.stdout.write(json(rows.map(({ readiness: _, ...row }) => row)));
      return 0;
    }
    if (rows.length === 0) {
      io.stdout.write(`No ${values.all ? '' : 'awake '}souls in ${config!.db}.\n`);
      return 0;
    }
    const paint = colours(io.stdout, io.env);
    io.stdout.write(
      table(
        ['ID', 'NAME', 'LEVEL', 'TRAITS', 'PENDING', 'READINESS'],
        rows.map((r) => [String(r.id), r.name, String(r.level), `${r.activeTraitCount}/${r.traitLimit}`, String(r.pendingShardCount), r.readiness]),
        (cell, column, row) => {
          const r = rows[row];
          if (column === 1) return r.dormant ? paint.dim(cell) : paint.bold(cell);
          if (column === 3 && r.atCapacity) return paint.yellow(cell);
          if (column === 5) return r.crystallization.ready ? paint.green(cell) : paint.dim(cell);
          return cell;
        },
      ),
    );
    return 0;
  },
};
