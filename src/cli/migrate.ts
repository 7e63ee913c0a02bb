// souls migrate: create or upgrade the database's tables, then exit (replicas can then start on a ready schema).
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SoulsError } from '../engine/index.ts';
import { migrateStore } from '../store/open.ts';
import { describeDb, isPostgresUrl } from '../store/postgres-pool.ts';
import { parseArguments } from './arguments.ts';
import type { Command } from './command.ts';
import { commandHelp } from './help.ts';

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'create or upgrade the database schema, then exit',
  help: commandHelp({
    usage: ['migrate [options]'],
    description:
      'Applies the schema migrations the database lacks, each in one transaction, and exits. With PostgreSQL, an advisory\n' +
      'lock makes replicas that start (or migrate) at the same moment take turns; `souls serve` migrates the same way on start.',
    groups: ['database'],
    examples: ['souls migrate --db postgres://souls@db.internal/souls', 'souls migrate --db ./data/souls.db'],
  }),
  async run(argv, io) {
    const { config } = parseArguments('migrate', argv, { groups: ['database'] }, io.env);
    const db = config!.db;
    if (db === ':memory:') throw new SoulsError('an in-memory database (:memory:) is created on every start: give --db FILE or --db postgres://…');
    if (!isPostgresUrl(db)) mkdirSync(dirname(db), { recursive: true });
    const { from, to } = await migrateStore(db);
    io.stdout.write(from === to ? `${describeDb(db)} is at schema version ${to}: nothing to do\n` : `Migrated ${describeDb(db)} from schema version ${from} to ${to}\n`);
    return 0;
  },
};
