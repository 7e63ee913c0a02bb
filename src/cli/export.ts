// souls export <soul>: the soul as a SOUL.md of one convention, on stdout or written over a file (keeping what
// Souls does not own).
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { closeSoulsDb, SoulsError } from '../engine/index.ts';
import type { SoulMdFormat } from '../interop/document.ts';
import { exportSoulMd, soulState } from '../interop/export.ts';
import { detectFormat, parseFormat, readWorkspace, formatChoices } from '../interop/formats.ts';
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
    'and their end markers, or the convention\'s sections in a file Souls never wrote) and the name and description\n' +
    'lines change, so exporting an untouched import gives back the same bytes. The previous file is kept as FILE.bak.\n' +
    'With --out FOLDER it writes FOLDER/SOUL.md (and, for OpenClaw, an IDENTITY.md when there is none). Reads the database only.',
  options: [
    ['--format F', 'openclaw, soulmd or frontmatter (default: the convention of the --out file, else soulmd)'],
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

function formatOf(requested: string | undefined, file: string | null): SoulMdFormat {
  const choice = parseFormat('--format', requested ?? 'auto');
  if (choice !== 'auto') return choice;
  if (file && existsSync(file)) return detectFormat(new Map([[basename(file), readFileSync(file, 'utf8')]]));
  return 'soulmd';
}

export const exportCommand: Command = {
  name: 'export',
  summary: 'write a soul as a SOUL.md (OpenClaw, soul.md or frontmatter), keeping what Souls does not own',
  help,
  async run(argv, io) {
    const { positionals, values, config } = splitOptions('export', argv, ['soul'], { format: { type: 'string' }, out: { type: 'string' }, force: { type: 'boolean' } }, io.env);
    const [target] = positionals;
    const out = typeof values.out === 'string' ? targetOf(values.out) : null;
    const format = formatOf(typeof values.format === 'string' ? values.format : undefined, out?.file ?? null);
    const db = openExistingDb(config, 'export');
    try {
      const soul = await findSoul(db, target);
      const state = await soulState(db, soul.id);
      if (!out) {
        io.stdout.write(exportSoulMd(format, state, null));
        return 0;
      }
      const base = existsSync(out.file) ? readFileSync(out.file, 'utf8') : null;
      const text = exportSoulMd(format, state, base, { file: out.file, force: values.force === true });
      if (out.folder) {
        mkdirSync(out.folder, { recursive: true });
        if (format === 'openclaw' && !existsSync(join(out.folder, 'IDENTITY.md'))) writeAtomically(join(out.folder, 'IDENTITY.md'), identityCard(soul.name, soul.description));
      }
      if (text === base) {
        io.stdout.write(`${out.file} already shows "${soul.name}" (${format}); left as it is.\n`);
        return 0;
      }
      writeAtomically(out.file, text);
      io.stdout.write(`Wrote "${soul.name}" to ${out.file} (${format})${base !== null ? `; the previous version is ${out.file}.bak` : ''}.\n`);
      return 0;
    } finally {
      closeSoulsDb(db);
    }
  },
};
