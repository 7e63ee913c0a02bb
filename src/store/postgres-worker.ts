/**
 * The worker thread behind PostgresStore: it owns the asynchronous driver and answers the main
 * thread's calls one at a time, in the order they were posted (postgres-bridge.ts explains the
 * protocol). A call's answer is posted on the port before the flag is raised, so the main thread
 * always finds it there when it wakes.
 */
import { workerData } from 'node:worker_threads';
import type { QueryResult } from 'pg';
import { SoulsError, StorageError } from '../engine/errors.ts';
import { migratePostgres, parseInt8, PostgresWorkerStore, schemaVersion, type Connection } from './postgres.ts';
import { pgMigrations } from './postgres-schema.ts';
import { ANSWERED, DOWN, EXITED, PROBE, type Answer, type Call, type SerializedError, type WorkerData } from './postgres-protocol.ts';

const { port, flags: flagBuffer, url, target, mode, connectTimeoutMs } = workerData as WorkerData;
const flags = new Int32Array(flagBuffer);
const pglite = url.startsWith('pglite:');

function raise(slot: number): void {
  Atomics.add(flags, slot, 1);
  Atomics.notify(flags, slot);
}

process.on('exit', () => {
  raise(EXITED);
  raise(ANSWERED);
});

/** Drops the current connection's socket at once (a hung server never answers the polite Terminate). */
let destroyConnection: (() => void) | null = null;

async function connect(): Promise<Connection> {
  if (pglite) {
    // For tests: the real PostgreSQL engine compiled to WebAssembly (a devDependency), in memory or in a folder.
    const { PGlite } = await import('@electric-sql/pglite');
    const where = url.slice('pglite:'.length);
    const db = await PGlite.create({ parsers: { 20: parseInt8 }, ...(where === 'memory' ? {} : { dataDir: where }) });
    return {
      // Without parameters a text may hold several statements (migrations): exec runs them all, as pg's simple protocol does.
      query: async (sql, params) => (params === undefined ? (await db.exec(sql)).at(-1)! : db.query(sql, params)),
      close: () => db.close(),
    };
  }
  const pg = (await import('pg')).default;
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: connectTimeoutMs,
    types: { getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === 20 ? parseInt8 : pg.types.getTypeParser(oid, format ?? 'text')) },
  });
  // A lost connection is reported by the next query; the next call after that connects again.
  client.on('error', () => {
    if (destroyConnection === destroy) connection = null;
  });
  const destroy = () => socketOf(client)?.destroy();
  await client.connect();
  if (mode === 'read-only') await client.query('SET default_transaction_read_only = on');
  destroyConnection = destroy;
  return {
    // A parameterless text with several statements answers one result each: the last one is the caller's.
    query: async (sql, params) => {
      const result = (await client.query(sql, params)) as QueryResult | QueryResult[];
      return Array.isArray(result) ? result.at(-1)! : result;
    },
    close: () => client.end(),
  };
}

const socketOf = (client: object) => (client as { connection?: { stream?: { destroy(): void } } }).connection?.stream;

/** Whether the server answers a new connection and a `SELECT 1`, each within the connect timeout. */
async function answersQuickly(): Promise<boolean> {
  if (pglite) return true;
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs, query_timeout: connectTimeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    await client.end();
    return true;
  } catch (error) {
    socketOf(client)?.destroy();
    // A refusal with a SQLSTATE (too many connections, shutting down) is an answer: the server is not hung.
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && /^(?=.*\d)[0-9A-Z]{5}$/.test(code);
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let probing = false;

/** Until the server answers again, the main thread fails every call at once instead of waiting for each. */
function markDown(): void {
  Atomics.store(flags, DOWN, 1);
  // PGlite runs in this thread: a new connection would be a new database.
  if (!pglite) {
    destroyConnection?.();
    destroyConnection = null;
    connection = null;
  }
  if (probing) return;
  probing = true;
  void (async () => {
    while (!(await answersQuickly())) await pause(connectTimeoutMs);
    probing = false;
    Atomics.store(flags, DOWN, 0);
  })();
}

const hungError = () =>
  new StorageError('STORAGE_UNAVAILABLE', target, 'the database does not answer: calls fail at once until it answers again', `no answer to a new connection within ${connectTimeoutMs} ms`);

/**
 * A call still running after the connect timeout may be slow or may wait on a server that no longer answers: a second
 * connection tells which, and a hung server's call fails now rather than at the caller's timeout.
 */
async function watched<T>(work: Promise<T>): Promise<T> {
  if (pglite) return work;
  let settled = false;
  const done = work.finally(() => {
    settled = true;
  });
  const watchdog = (async (): Promise<never> => {
    for (;;) {
      await Promise.race([done, pause(connectTimeoutMs)]);
      if (settled) return new Promise<never>(() => undefined);
      if (!(await answersQuickly()) && !settled) {
        markDown();
        throw hungError();
      }
    }
  })();
  return Promise.race([done, watchdog]);
}

let connection: Connection | null = null;
let store: PostgresWorkerStore | null = null;
let migrated: { from: number; to: number } | null = null;

async function open(): Promise<PostgresWorkerStore> {
  if (store && connection) return store;
  connection = await connect();
  if (mode === 'read-only') {
    const version = await schemaVersion(connection);
    if (version === 0) throw new StorageError('STORAGE_UNAVAILABLE', target, `database ${target} has no Souls tables: \`souls migrate --db URL\` creates them`);
    if (version > pgMigrations.length) throw new StorageError('STORAGE_UNAVAILABLE', target, `database schema version ${version} is newer than this Souls (${pgMigrations.length}): upgrade Souls`);
  } else if (!store) {
    migrated = await migratePostgres(connection);
  }
  const executed = store?.statementsExecuted() ?? 0;
  store = new PostgresWorkerStore(connection, target, executed);
  return store;
}

/** Connection classes: 08 (connection exception), 57P (operator intervention: shutdown), 53 (insufficient resources). */
function unavailable(error: unknown): StorageError | null {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === '53100') return new StorageError('STORAGE_FULL', target, 'the storage is full: nothing was written; retry once space has been freed', message);
  const lost = typeof code !== 'string' || /^(08|57P|53)/.test(code) || /^E[A-Z]+$/.test(code);
  if (!lost) return null;
  if (/^E[A-Z]+$/.test(String(code)) || code === undefined) connection = null;
  // The driver's words name the server's address: the operator's log has them (detail), the client only the code.
  return new StorageError('STORAGE_UNAVAILABLE', target, 'the database is unavailable: retry later', message);
}

function serialize(error: unknown): SerializedError {
  const known = error instanceof SoulsError ? error : unavailable(error);
  if (known) {
    const props: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(known)) props[key] = value;
    return { domain: true, name: known.name, message: known.message, props };
  }
  const code = (error as { code?: unknown }).code;
  return { domain: false, message: error instanceof Error ? error.message : String(error), code: typeof code === 'string' ? code : null };
}

async function answer(call: Call): Promise<Answer> {
  try {
    // A call posted before the main thread saw the server hung: its answer is dropped, so it is not run.
    if (Atomics.load(flags, DOWN) !== 0 && call.method !== 'close') throw hungError();
    const opened = await watched(open());
    if (call.method === 'open') return { id: call.id, ok: true, value: migrated };
    const method = (opened as unknown as Record<string, (...args: unknown[]) => unknown>)[call.method];
    if (typeof method !== 'function') throw new Error(`no store method ${call.method}`);
    const value = await watched(Promise.resolve(method.apply(opened, call.args)));
    if (call.method === 'close') connection = null;
    return { id: call.id, ok: true, value };
  } catch (error) {
    return { id: call.id, ok: false, error: serialize(error) };
  }
}

// One call at a time, in order: a call the main thread gave up on (timeout) still finishes before the next starts.
let queue = Promise.resolve();
port.on('message', (call: Call) => {
  if (call.method === PROBE) return markDown();
  queue = queue.then(async () => {
    port.postMessage(await answer(call));
    raise(ANSWERED);
    if (call.method === 'close') port.close();
  });
});
