/**
 * The document a soul was imported from (SPEC §12), kept whole per convention so that it can be written out
 * anywhere, from any replica, with every section Souls does not own. Replaced by the next import in that
 * convention; kept while the soul is dormant; never rendered from, only written over at export time.
 */
import { ValidationError } from './errors.ts';
import type { SoulDocument } from './model.ts';
import { exceedsUtf8Bytes, requireId } from './normalize.ts';
import type { SoulsDb } from './souls-db.ts';

/** A SOUL.md is a document, not a database: bounded as a pasted one is. */
export const MAX_DOCUMENT_BYTES = 1024 * 1024;

export type SoulDocumentInput = { format: string; file: string; text: string };

export async function storeSoulDocument(db: SoulsDb, soulId: number, input: SoulDocumentInput): Promise<SoulDocument> {
  const id = requireId('soulId', soulId);
  if (!/^[a-z][a-z0-9-]{0,31}$/.test(input.format)) throw new ValidationError('format', 'must be a convention name (lower-case letters, digits, dashes)');
  if (input.file === '' || [...input.file].length > 200 || /[\r\n\0]/.test(input.file)) throw new ValidationError('file', 'must be a file name of at most 200 characters on one line');
  // Kept byte for byte: the text is not cleaned, so an untouched import exports to the same bytes.
  if (exceedsUtf8Bytes(input.text, MAX_DOCUMENT_BYTES)) throw new ValidationError('text', `must be at most ${MAX_DOCUMENT_BYTES} bytes`);
  if (input.text.includes('\0')) throw new ValidationError('text', 'must not contain NUL characters (not text)');
  return await db.store.putSoulDocument(id, input, db.clock.now());
}

/** The document stored for the soul in that convention, or null when none was imported. */
export async function getSoulDocument(db: SoulsDb, soulId: number, format: string): Promise<SoulDocument | null> {
  return await db.store.getSoulDocument(requireId('soulId', soulId), format);
}
