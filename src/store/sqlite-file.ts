// Opening a database file and naming what is wrong with it: missing, a directory, read-only, damaged or full.
import { accessSync, constants, lstatSync, statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { StorageError } from '../engine/errors.ts';

/** 'create' (the default) creates a missing file and migrates an older one; 'read-only' needs an existing file and never writes to it. */
export type OpenMode = 'create' | 'read-only';

const SQLITE_CORRUPT = 11;
const SQLITE_FULL = 13;
const SQLITE_NOTADB = 26;

function errcodeOf(error: unknown): number | undefined {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' ? code & 0xff : undefined;
}

function systemCodeOf(error: unknown): string {
  return String((error as { code?: unknown }).code ?? 'error');
}

/** A SQLite "database or disk is full" as the StorageError the API answers with STORAGE_FULL; anything else unchanged. */
export function asStorageFull(error: unknown, path: string): unknown {
  if (errcodeOf(error) !== SQLITE_FULL) return error;
  // The message reaches API clients, so it does not name the file; `path` is for the server's log.
  return new StorageError('STORAGE_FULL', path, 'the storage is full: nothing was written; retry once space has been freed');
}

/** Why the file cannot be opened as asked, from the file system alone; null when nothing there explains it. */
function fileProblem(path: string, mode: OpenMode): string | null {
  let exists = true;
  try {
    if (statSync(path).isDirectory()) return `database ${path} is a directory, not a file`;
  } catch (error) {
    if (systemCodeOf(error) !== 'ENOENT') return `database ${path} cannot be read (${systemCodeOf(error)})`;
    exists = false;
    // A dangling symbolic link would have SQLite create its target somewhere else.
    if (lstatOrNull(path)?.isSymbolicLink()) return `database ${path} is a symbolic link to a missing file`;
  }
  if (!exists) {
    if (mode === 'read-only') return `database ${path} does not exist`;
    const folder = dirname(resolve(path));
    if (!lstatOrNull(folder)) return `the folder of database ${path} does not exist (${folder})`;
  }
  if (mode === 'read-only') return null;
  // SQLite needs to write the file and, for its -wal and -shm files, the folder.
  for (const target of exists ? [path, dirname(resolve(path))] : [dirname(resolve(path))]) {
    try {
      accessSync(target, constants.W_OK);
    } catch (error) {
      const code = systemCodeOf(error);
      const why = code === 'EROFS' ? 'a read-only file system' : code === 'EACCES' || code === 'EPERM' ? 'not writable by this user' : code;
      return `database ${path} cannot be written: ${target === path ? 'the file' : `its folder ${target}`} is ${why} (${code})`;
    }
  }
  return null;
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** Refuses a file with damaged pages: `PRAGMA quick_check` reads every page once, and answers "ok" or what it found. */
function quickCheck(db: DatabaseSync): string | null {
  const rows = db.prepare('PRAGMA quick_check(10)').all() as Array<Record<string, unknown>>;
  const found = rows
    .flatMap((r) => String(Object.values(r)[0]).split('\n'))
    .filter((line) => line !== 'ok' && !line.startsWith('***'));
  if (found.length === 0) return null;
  return `quick_check: ${found[0]}${found.length > 1 ? ', and more' : ''}`;
}

function damaged(path: string, detail: string): StorageError {
  return new StorageError('STORAGE_UNAVAILABLE', path, `database ${path} is damaged (${detail}): restore it from a backup`);
}

/**
 * Opens a database file as `mode` asks, checks its pages, then hands it to `prepare`
 * (pragmas, migrations). Any failure becomes a StorageError naming the file and the reason.
 */
export function openDatabaseFile<T>(path: string, mode: OpenMode, timeoutMs: number, prepare: (db: DatabaseSync) => T): T {
  const problem = fileProblem(path, mode);
  if (problem) throw new StorageError('STORAGE_UNAVAILABLE', path, problem);
  let db: DatabaseSync | null = null;
  try {
    if (mode === 'read-only') {
      // mode=rw: read and write access for this connection's own bookkeeping, but never create the file.
      const url = pathToFileURL(resolve(path));
      url.searchParams.set('mode', 'rw');
      db = new DatabaseSync(url, { timeout: timeoutMs });
    } else {
      db = new DatabaseSync(path, { timeout: timeoutMs });
    }
    const found = quickCheck(db);
    if (found) throw damaged(path, found);
    return prepare(db);
  } catch (error) {
    if (db?.isOpen) db.close();
    if (error instanceof StorageError) throw error;
    const code = errcodeOf(error);
    const message = error instanceof Error ? error.message : String(error);
    if (code === SQLITE_CORRUPT || code === SQLITE_NOTADB) throw damaged(path, message);
    if (code === SQLITE_FULL) throw asStorageFull(error, path);
    throw new StorageError('STORAGE_UNAVAILABLE', path, `cannot open database ${path}: ${fileProblem(path, mode) ?? message}`);
  }
}
