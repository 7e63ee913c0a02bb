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
import { findSoul, openExisting, splitOptions, wantsHelp } from './interop-options.ts';

const help = `Usage: souls export <soul id or name> [--format ${formatChoices.filter((f) => f !== 'auto').join('|')}] [--out PATH] [--force] [--db PATH]

Writes the soul as a SOUL.md: its name and description, its essence and its active traits (in render order).
Without --out it prints the file. With --out FILE it writes over that file and keeps every byte Souls does not
own: only the essence and traits regions (between <!-- souls:essence:start --> / <!-- souls:traits:start -->
and their end markers, or the convention's sections in a file Souls never wrote) and the name and description
lines change, so exporting an untouched import gives back the same bytes. The previous file is kept as FILE.bak.
With --out FOLDER it writes FOLDER/SOUL.md (and, for OpenClaw, an IDENTITY.md when there is none).

Options:
  --format F   openclaw, soulmd or frontmatter (default: the convention of the --out file, else soulmd)
  --out PATH   a file or folder to write (created when missing)
  --force      overwrite edits a person made inside the owned regions (otherwise refused; the file is kept as .bak)
  --db PATH    the database (SOULS_DB; default ./data/souls.db); only read

Examples:
  souls export Mira --format openclaw
  souls export Mira --out ~/.openclaw/workspace/SOUL.md
  souls export 7 --format frontmatter --out agents/

Exit codes: 0 written or printed, 1 no such soul or database, or an edited owned region (nothing written).`;

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
    if (wantsHelp(argv)) {
      io.stdout.write(`${help}\n`);
      return 0;
    }
    const { positionals, values, config } = splitOptions(argv, { format: { type: 'string' }, out: { type: 'string' }, force: { type: 'boolean' } });
    const [target, ...extra] = positionals;
    if (!target) throw new SoulsError('export needs a soul id or name (souls export --help)');
    if (extra.length > 0) throw new SoulsError(`export takes one soul, got also ${extra.join(' ')}`);
    const out = typeof values.out === 'string' ? targetOf(values.out) : null;
    const format = formatOf(typeof values.format === 'string' ? values.format : undefined, out?.file ?? null);
    const db = openExisting(config, 'export');
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
