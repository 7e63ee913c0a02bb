/**
 * Keeping a SOUL.md current: each change of the soul rewrites the file's owned regions, atomically (a temporary
 * file beside it, flushed, then renamed over it, so a reader or a crash sees the old file or the new one, never a
 * mix) after keeping the previous version as FILE.bak. Edits a person made inside the owned regions are refused.
 */
import { closeSync, fchmodSync, fsyncSync, openSync, readFileSync, realpathSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { SoulMdFormat, SoulState } from './document.ts';
import { exportSoulMd } from './export.ts';

/** A new file gets the usual mode (less the umask); a rewritten one keeps its own, so a private SOUL.md stays private. */
function writeDurably(path: string, text: string | Buffer, mode: number | null): void {
  const fd = openSync(path, 'w', mode ?? 0o644);
  try {
    if (mode !== null) fchmodSync(fd, mode);
    writeFileSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The file a path names: through a symbolic link (a SOUL.md linked from elsewhere stays a link), else the path itself. */
function throughLinks(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Replaces `path` with `text` by rename; the previous content goes to `path.bak` the same way, with the file's mode.
 * A link is written through: the file it points to is replaced (its .bak beside it), the link is left as it is.
 * Returns the .bak written, or null when there was no previous file.
 */
export function writeAtomically(path: string, text: string): { backup: string | null } {
  const target = throughLinks(path);
  const folder = dirname(target);
  const temp = (what: string) => join(folder, `.${basename(target)}.${what}-${process.pid}.tmp`);
  const stat = statSync(target, { throwIfNoEntry: false });
  const previous = stat?.isFile() ? readFileSync(target) : null;
  const mode = stat?.isFile() ? stat.mode & 0o7777 : null;
  let backup: string | null = null;
  if (previous !== null) {
    const bak = temp('bak');
    writeDurably(bak, previous, mode);
    backup = `${target}.bak`;
    renameSync(bak, backup);
  }
  const next = temp('new');
  try {
    writeDurably(next, text, mode);
    renameSync(next, target);
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
  return { backup };
}

export type SyncOutcome = { written: boolean; file: string };

/**
 * Brings `file` up to `state`: nothing happens when it already shows it; an edited owned region throws
 * EditedRegionError. A file not there yet is written over `stored` (the imported document), when there is one.
 */
export function syncFile(format: SoulMdFormat, file: string, state: SoulState, options: { force?: boolean; stored?: string | null } = {}): SyncOutcome {
  const base = statSync(file, { throwIfNoEntry: false })?.isFile() ? readFileSync(file, 'utf8') : null;
  const text = exportSoulMd(format, state, base, { file, force: options.force, stored: options.stored });
  if (text === base) return { written: false, file };
  writeAtomically(file, text);
  return { written: true, file };
}
