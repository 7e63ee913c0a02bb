/** Exporting a soul: its owned fields and traits (in render order) written into a SOUL.md of a convention. */
import { getSoul, getSoulDocument, NotFoundError, orderedActiveTraits, SoulsError, type SoulsDb } from '../engine/index.ts';
import { editedRegions, readSoulMd, soulMdFormats, writeSoulMd, type SoulMdFormat, type SoulState } from './document.ts';
import { conventions } from './formats.ts';

export async function soulState(db: SoulsDb, soulId: number): Promise<SoulState> {
  const soul = await getSoul(db, soulId);
  if (!soul) throw new NotFoundError('Soul', soulId);
  const traits = (await orderedActiveTraits(db, [soulId])).get(soulId) ?? [];
  return { name: soul.name, description: soul.description, essence: soul.essence, principles: traits.map((t) => t.principle) };
}

/**
 * What an export writes over when it has no file of its own: the document the soul was imported from in this
 * convention (SPEC §12), or null (then a new file in the convention's layout).
 */
export async function storedDocument(db: SoulsDb, soulId: number, format: SoulMdFormat): Promise<string | null> {
  return (await getSoulDocument(db, soulId, format))?.text ?? null;
}

/** The convention of the document stored most recently for the soul, or null when it was never imported. */
export async function importedFormat(db: SoulsDb, soulId: number): Promise<SoulMdFormat | null> {
  const stored = (await Promise.all(soulMdFormats.map((format) => getSoulDocument(db, soulId, format)))).filter((d) => d !== null);
  stored.sort((a, b) => b.storedAt - a.storedAt);
  return (stored[0]?.format as SoulMdFormat | undefined) ?? null;
}

/** The owned fields a SOUL.md shows, read back from one Souls wrote (a sync client reads the server's export this way). */
export function stateOfDocument(format: SoulMdFormat, text: string, name: string): SoulState {
  const read = readSoulMd(conventions[format], new Map([['SOUL.md', text]]));
  return { name: read.name ?? name, description: read.description, essence: read.essence, principles: read.traits.map((t) => t.principle) };
}

/** A person changed the text between a region's markers since Souls wrote it: Souls will not overwrite that. */
export class EditedRegionError extends SoulsError {
  override name = 'EditedRegionError';
  readonly regions: string[];
  constructor(file: string, regions: string[]) {
    super(
      `${file}: the ${regions.join(' and ')} ${regions.length === 1 ? 'region was' : 'regions were'} edited since Souls last wrote ${regions.length === 1 ? 'it' : 'them'} ` +
        `(between <!-- souls:${regions[0]}:start --> and its end marker); nothing was written. Move the edit outside the markers, ` +
        `or make it in the soul (a trait change, a level-up), then run again; --force overwrites it (the file is kept as ${file}.bak)`,
    );
    this.regions = regions;
  }
}

/**
 * The soul in `format`, written over `base` (keeping what Souls does not own) or as a new file. `stored`: the
 * document stored at import, used when there is no base; edits inside its markers were imported as the soul's, so
 * they are never refused there.
 */
export function exportSoulMd(format: SoulMdFormat, state: SoulState, base: string | null, options: { file?: string; force?: boolean; stored?: string | null } = {}): string {
  if (base === null && options.stored != null) return writeSoulMd(conventions[format], options.stored, state);
  if (base !== null && !options.force) {
    const edited = editedRegions(conventions[format], base);
    if (edited.length > 0) throw new EditedRegionError(options.file ?? 'SOUL.md', edited);
  }
  return writeSoulMd(conventions[format], base, state);
}
