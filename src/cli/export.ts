// souls export <soul>: the soul as a SOUL.md of one convention, on stdout or written over a file (keeping what
// Souls does not own), or over the document it was imported from.
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { closeSoulsDb, type SoulsDb } from '../engine/index.ts';
import type { SoulMdFormat } from '../interop/document.ts';
import { exportSoulMd, importedFormat, soulState, storedDocument } from '../interop/export.ts';
import { detectFormat, parseFormat, formatChoices } from '../interop/formats.ts';
import { identityCard } from '../interop/openclaw.ts';
import { writeAtomically } from '../interop/sync.ts';
import type { Command } from './command.ts';
import { findSoul, openExistingDb } from './database.ts';
import { commandHelp } from './help.ts';
import { splitOptions } from './interop-options.ts';

const help = commandHelp({
  usage: [`export <soul> [--format ${formatChoices.filter((f) => f !== 'auto').join('|')}] [--out PATH] [--force] [options]`],
  description:
    'Writes the soul as a SOUL.md: its name and description, its essence and its active traits (in render order).\n' +
    'Without --out it prints the file. With --out FILE it writes over that file and keeps every byte Souls does not\n' +
    'own: only the essence and traits regions (between <!-- souls:essence:start --> / <!-- souls:traits:start -->\n' +
    "and their end markers, or the convention's sections in a file Souls never wrote) and the name and description\n" +
    'lines change, so exporting an untouched import gives back the same bytes. The previous file is kept as FILE.bak,\n' +
    'with the file\'s mode; a FILE that is a symbolic link is written through (the link stays). Where there is no file\n' +
    'yet (printing, or a new --out), a soul imported from a SOUL.md of that convention is written over the imported\n' +
    'document, so its other sections come along; else a new file in the convention\'s layout. With --out FOLDER it\n' +
    'writes FOLDER/SOUL.md (and, for OpenClaw, an IDENTITY.md when there is none). Reads the database only.',
  options: [
    ['--format F', 'openclaw, soulmd or frontmatter (default: the convention of the --out file, else the one the soul was imported in, else soulmd)'],
    ['--out PATH', 'a file or folder to write (created when missing)'],
    ['--force', 'overwrite edits a person made inside the owned regions (otherwise refused; the file is kept as .bak)'],
  ],
  groups: ['database', 'settings'],
  examples: ['souls export Mira --format openclaw', 'souls export Mira --out ~/.openclaw/workspace/SOUL.md', 'souls export 7 --format frontmatter --out agents/'],
});

function targetOf(out: string): { file: string; folder: string | null } {
  const stat = statSync(out, { throwIfNoEntry: false });
  if (stat?.isDirectory() || (!stat && /[/\\]$/.test(out))) return { file: join(out, 'SOUL.md'), folder: out };
  return { file: out, folder: null };
}

async function formatOf(requested: string | undefined, file: string | null, db: SoulsDb, soulId: number): Promise<SoulMdFormat> {
  const choice = parseFormat('--format', requested ?? 'auto');
  if (choice !== 'auto') return choice;
  if (file && existsSync(file)) return detectFormat(new Map([[basename(file), readFileSync(file, 'utf8')]]));
  return (await importedFormat(db, soulId)) ?? 'soulmd';
}

export const exportCommand: Command = {
  name: 'export',
  summary: 'write a soul as a SOUL.md (OpenClaw, soul.md or frontmatter), keeping what Souls does not own',
  help,
  async run(argv, io) {
    const { positionals, values, config } = splitOptions('export', argv, ['soul'], { format: { type: 'string' }, out: { type: 'string' }, force: { type: 'boolean' } }, io.env);
    const [target] = positionals;
    const out = typeof values.out === 'string' ? targetOf(values.out) : null;
    const requested = typeof values.format === 'string' ? values.format : undefined;
    if (requested !== undefined) parseFormat('--format', requested);
    const db = await openExistingDb(config, 'export');
    try {
      const soul = await findSoul(db, target);
      const format = await formatOf(requested, out?.file ?? null, db, soul.id);
      const state = await soulState(db, soul.id);
      const stored = await storedDocument(db, soul.id, format);
      if (!out) {
        io.stdout.write(exportSoulMd(format, state, null, { stored }));
        return 0;
      }
      const base = existsSync(out.file) ? readFileSync(out.file, 'utf8') : null;
      const text = exportSoulMd(format, state, base, { file: out.file, force: values.force === true, stored });
      if (out.folder) {
        mkdirSync(out.folder, { recursive: true });
        if (format === 'openclaw' && !existsSync(join(out.folder, 'IDENTITY.md'))) writeAtomically(join(out.folder, 'IDENTITY.md'), identityCard(soul.name, soul.description));
      }
      if (text === base) {
        io.stdout.write(`${out.file} already shows "${soul.name}" (${format}); left as it is.\n`);
        return 0;
      }
      const { backup } = writeAtomically(out.file, text);
      io.stdout.write(`Wrote "${soul.name}" to ${out.file} (${format})${backup !== null ? `; the previous version is ${backup}` : ''}.\n`);
      return 0;
    } finally {
      await closeSoulsDb(db);
    }
  },
};
