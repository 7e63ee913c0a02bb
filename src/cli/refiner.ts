// souls refiner init | status — the refiner soul that operates the engine through the MCP tools and learns from its outcomes.
import type { Command } from './command.ts';
import { closeSoulsDb, getCrystallization, listShards, SoulsError, unmetNeeds } from '../engine/index.ts';
import { parseArguments, UsageError } from './arguments.ts';
import { openDb, withExistingDb } from './database.ts';
import { commandHelp } from './help.ts';

const help = commandHelp({
  usage: ['refiner init [--name NAME] [options]', 'refiner status [--name NAME] [options]'],
  description:
    'init creates the refiner: a soul with an essence and starting traits with provenance, marked by its slug\n' +
    '("refiner", or "refiner-NAME" for a named one); one refiner per name per database. status prints the refiner\'s\n' +
    'outcome and regret shards and whether it is ready to be refined itself (reads only). Run an agent as the refiner\n' +
    'with `souls mcp --refiner [NAME]`: every change it applies through the tools deposits a refinement_outcome shard\n' +
    'on it; a trait it added that is later reverted, or a level-up it planned that is rolled back, a refinement_regret shard.',
  options: [['--name NAME', 'a named refiner (slug refiner-NAME) instead of the default one']],
  groups: ['database', 'settings'],
  examples: ['souls refiner init --db ./data/souls.db', 'souls refiner init --name Scout', 'souls refiner status --name Scout'],
});

export const refinerCommand: Command = {
  name: 'refiner',
  summary: 'create the refiner soul (init) or show its shards and readiness (status)',
  help,
  run: async (argv, io) => {
    const { args, values, config } = parseArguments('refiner', argv, { positionals: ['action'], options: { name: { type: 'string' } }, groups: ['database', 'settings'] }, io.env);
    if (args.action !== 'init' && args.action !== 'status') throw new UsageError(`unknown refiner action "${args.action}": use init or status`);
    const name = typeof values.name === 'string' ? values.name : null;
    const { findRefiner, initRefiner, OUTCOME_SOURCE, REGRET_SOURCE } = await import('../mcp/refiner.ts');
    if (args.action === 'init') {
      const db = await openDb(config!);
      try {
        const { soul, traits } = await initRefiner(db, { name });
        io.stdout.write(`Created the refiner ${soul.name} (soul ${soul.id}, slug ${soul.slug}) in ${config!.db} with ${traits.length} starting traits.\n`);
        io.stdout.write(`Run an agent as it: souls mcp --db ${config!.db} --refiner${name ? ` ${name}` : ''}\n`);
        return 0;
      } finally {
        await closeSoulsDb(db);
      }
    }
    return withExistingDb(config!, 'refiner status', async (db) => {
      const refiner = await findRefiner(db, name);
      if (!refiner) throw new SoulsError(`no refiner${name ? ` named ${JSON.stringify(name)}` : ''} in ${config!.db}: create it with \`souls refiner init\``);
      const count = async (source: string) => (await listShards(db, { soulId: refiner.id, source, includeExpired: true, first: 0 })).totalCount;
      const verdict = (await getCrystallization(db, [refiner.id])).get(refiner.id)!;
      io.stdout.write(
        `${refiner.name} (soul ${refiner.id}, level ${refiner.level}): ${await count(OUTCOME_SOURCE)} outcome shards, ${await count(REGRET_SOURCE)} regret shards pending; ` +
          `${verdict.ready ? 'ready for refinement' : `not ready (needs ${unmetNeeds(verdict, refiner.lastAttunedAt, db.settings).map((n) => n.message).join('; ')})`}\n`,
      );
      return 0;
    });
  },
};
