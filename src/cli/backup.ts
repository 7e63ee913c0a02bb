// souls backup: a consistent copy of the database (VACUUM INTO), safe while a server runs.
import { lstatSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { SoulsError } from '../engine/index.ts';
import { parseArguments } from './arguments.ts';
import type { Command } from './command.ts';
import { withExistingDb } from './database.ts';
import { commandHelp } from './help.ts';

/** Where a backup may be written: a new plain file in an existing folder, never through a symbolic link. */
function checkBackupTarget(target: string): void {
  if (target === ':memory:') throw new SoulsError('backup target :memory: is not a file: name a file to write the copy to');
  const existing = lstatOrNull(target);
  // VACUUM INTO would write through a link, even a dangling one, to wherever it points.
  if (existing?.isSymbolicLink()) throw new SoulsError(`backup target ${target} is a symbolic link: name a new file`);
  if (existing) throw new SoulsError(`backup target ${target} already exists: choose a new file`);
  const folder = dirname(resolve(target));
  if (!lstatOrNull(folder)?.isDirectory()) throw new SoulsError(`backup target folder ${folder} does not exist: create it first`);
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

export const backupCommand: Command = {
  name: 'backup',
  summary: 'copy the database to a new file (reads only)',
  help: commandHelp({
    usage: ['backup <file> [options]'],
    description:
      'Copies the database with VACUUM INTO to <file>, a new file in an existing folder (never an existing file or a\n' +
      'symbolic link). Safe while a server writes to the database. Reads only: a missing database is an error.',
    groups: ['database', 'settings'],
    examples: ['souls backup ./backups/souls-2026-11-23.db', 'souls backup /mnt/backup/souls.db --db /srv/souls/souls.db'],
  }),
  async run(argv, io) {
    const { args, config } = parseArguments('backup', argv, { positionals: ['file'], groups: ['database', 'settings'] }, io.env);
    const target = args.file!;
    checkBackupTarget(target);
    if (config!.db === ':memory:') throw new SoulsError('an in-memory database (:memory:) has nothing to back up: give --db FILE');
    await withExistingDb(config!, 'backup', async (db) => db.store.backup(target));
    io.stdout.write(`Backed up ${config!.db} to ${target}\n`);
    return 0;
  },
};
