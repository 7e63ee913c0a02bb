/**
 * Keeping a SOUL.md current: each change of the soul rewrites the file's owned regions, atomically (a temporary
 * file beside it, flushed, then renamed over it, so a reader or a crash sees the old file or the new one, never a
 * mix) after keeping the previous version as FILE.bak. Edits a person made inside the owned regions are refused.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { SoulMdFormat, SoulState } from './document.ts';
import { exportSoulMd } from './export.ts';

function writeDurably(path: string, text: string): void {
  const fd = openSync(path, 'w', 0o644);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Replaces `path` with `text` by rename; the previous content goes to `path.bak` the same way. */
export function writeAtomically(path: string, text: string): void {
  const folder = dirname(path);
  const temp = (what: string) => join(folder, `.${basename(path)}.${what}-${process.pid}.tmp`);
  const previous = statSync(path, { throwIfNoEntry: false })?.isFile() ? readFileSync(path) : null;
  if (previous !== null) {
    const bak = temp('bak');
    writeDurably(bak, previous.toString('utf8'));
    renameSync(bak, `${path}.bak`);
  }
  const next = temp('new');
  try {
    writeDurably(next, text);
    renameSync(next, path);
  } catch (error) {
    try {
      unlinkSync(next);
    } catch {
      // nothing to clean
    }
    throw error;
  }
  try {
    // The rename is durable once the folder's entry is.
    const dir = openSync(folder, 'r');
    fsyncSync(dir);
    closeSync(dir);
  } catch {
    // Some file systems cannot sync a folder; the rename is still atomic.
  }
}

export type SyncOutcome = { written: boolean; file: string };

/** Brings `file` up to `state`: nothing happens when it already shows it; an edited owned region throws EditedRegionError. */
export function syncFile(format: SoulMdFormat, file: string, state: SoulState, options: { force?: boolean } = {}): SyncOutcome {
  const base = statSync(file, { throwIfNoEntry: false })?.isFile() ? readFileSync(file, 'utf8') : null;
  const text = exportSoulMd(format, state, base, { file, force: options.force });
  if (text === base) return { written: false, file };
  writeAtomically(file, text);
  return { written: true, file };
}
