// souls seed-demo: the demo world (scripts/demo.ts), so every screen of the character sheet has content.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { closeSoulsDb, manualClock, openSoulsDb, systemClock } from '../engine/index.ts';
import { parseArguments } from './arguments.ts';
import type { Command } from './command.ts';
import { commandHelp } from './help.ts';
import { embedderOf } from './database.ts';

export const seedDemoCommand: Command = {
  name: 'seed-demo',
  summary: 'fill a database with the demo world (five souls, six weeks of shards)',
  help: commandHelp({
    usage: ['seed-demo [--force] [options]'],
    description:
      'Fills the database with the demo world: four awake souls and one dormant, traits with provenance and citations,\n' +
      "a level-up and a reverted one, shards from several sources over six weeks. Creates the file and its folder if\n" +
      'needed, and refuses a database that already has souls unless --force. A running server sees the souls at once.',
    options: [['--force', 'add the demo souls even if the database has souls already']],
    groups: ['database', 'settings'],
    examples: ['souls seed-demo', 'souls seed-demo --db /tmp/demo.db && souls serve --db /tmp/demo.db', 'souls seed-demo --force'],
  }),
  async run(argv, io) {
    const { values, config } = parseArguments('seed-demo', argv, { options: { force: { type: 'boolean' } }, groups: ['database', 'settings'] }, io.env);
    const { DEMO_SPAN_DAYS, demoNextStep, openElsewhere, seedDemo } = await import('../../scripts/demo.ts');
    const path = config!.db;
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const elsewhere = openElsewhere(path);
    // The demo's history is laid out backwards from now on a hand-moved clock, so createdAt values are real dates.
    const now = systemClock.now();
    const clock = manualClock(now);
    const db = openSoulsDb({ path, clock, settings: config!.settings, embedder: embedderOf(config!) });
    try {
      const summary = await seedDemo(db, clock, { now, force: values.force === true });
      io.stdout.write(
        `Seeded ${path}: ${Object.keys(summary.souls).join(', ')} (${summary.traitCount} traits, ${summary.shardCount} shards over ${DEMO_SPAN_DAYS} days).\n` +
          `Ready for refinement: ${summary.readySouls.join(', ') || 'none'}. Dormant: ${summary.dormantSouls.join(', ') || 'none'}.\n` +
          `${demoNextStep(path, elsewhere, `souls serve --db ${path}`)}\n`,
      );
    } finally {
      await closeSoulsDb(db);
    }
    return 0;
  },
};
