// souls refiner init | status — the refiner soul that operates the engine through the MCP tools and learns from its outcomes.
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from './command.ts';
import { closeSoulsDb, getCrystallization, listShards, openSoulsDb, SoulsError } from '../engine/index.ts';
import { loadConfig } from '../server/config.ts';

const help = `Usage: souls refiner init [--name NAME] [--db PATH]
       souls refiner status [--name NAME] [--db PATH]

init creates the refiner: a soul with an essence and starting traits with provenance, marked by its slug
("refiner", or "refiner-NAME" for a named one). One refiner per name per database.
status prints the refiner's outcome and regret shards and whether it is ready to be refined itself (reads only).

Run an agent as the refiner with \`souls mcp --db PATH --refiner [NAME]\`: every change it applies through the
tools deposits a refinement_outcome shard on it; a trait it added that is later reverted, or a level-up it
planned that is rolled back, deposits a refinement_regret shard.`;

function takeName(argv: readonly string[]): { name: string | null; rest: string[] } {
  const rest: string[] = [];
  let name: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--name') {
      name = argv[++i] ?? null;
      if (name === null || name.startsWith('--')) throw new SoulsError('--name needs a value');
    } else rest.push(argv[i]);
  }
  return { name, rest };
}

export const refinerCommand: Command = {
  name: 'refiner',
  summary: 'create the refiner soul (init) or show its shards and readiness (status)',
  help,
  run: async (argv, io) => {
    const [action, ...options] = argv;
    if (action === undefined || action === '--help' || action === '-h' || options.includes('--help')) {
      io.stdout.write(`${help}\n`);
      return action === undefined ? 2 : 0;
    }
    if (action !== 'init' && action !== 'status') throw new SoulsError(`unknown refiner action "${action}": use init or status`);
    const { name, rest } = takeName(options);
    const config = loadConfig(rest, io.env);
    const { findRefiner, initRefiner, OUTCOME_SOURCE, REGRET_SOURCE } = await import('../mcp/refiner.ts');
    if (action === 'init') {
      if (config.db !== ':memory:') mkdirSync(dirname(config.db), { recursive: true });
      const db = openSoulsDb({ path: config.db, settings: config.settings });
      try {
        const { soul, traits } = await initRefiner(db, { name });
        io.stdout.write(`Created the refiner ${soul.name} (soul ${soul.id}, slug ${soul.slug}) in ${config.db} with ${traits.length} starting traits.\n`);
        io.stdout.write(`Run an agent as it: souls mcp --db ${config.db} --refiner${name ? ` ${name}` : ''}\n`);
        return 0;
      } finally {
        closeSoulsDb(db);
      }
    }
    if (config.db !== ':memory:' && !statSync(config.db, { throwIfNoEntry: false })?.isFile()) {
      throw new SoulsError(`no database at ${config.db} (${config.dbFrom}): refiner status only reads an existing one`);
    }
    const db = openSoulsDb({ path: config.db, settings: config.settings, mode: 'read-only' });
    try {
      const refiner = await findRefiner(db, name);
      if (!refiner) throw new SoulsError(`no refiner${name ? ` named ${JSON.stringify(name)}` : ''} in ${config.db}: create it with \`souls refiner init\``);
      const count = async (source: string) => (await listShards(db, { soulId: refiner.id, source, includeExpired: true, first: 0 })).totalCount;
      const verdict = (await getCrystallization(db, [refiner.id])).get(refiner.id)!;
      io.stdout.write(
        `${refiner.name} (soul ${refiner.id}, level ${refiner.level}): ${await count(OUTCOME_SOURCE)} outcome shards, ${await count(REGRET_SOURCE)} regret shards pending; ` +
          `${verdict.ready ? 'ready for refinement' : `not ready (unmet: ${verdict.unmet.join(', ')})`}\n`,
      );
      return 0;
    } finally {
      closeSoulsDb(db);
    }
  },
};
