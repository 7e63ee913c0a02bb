/**
 * PostgresStore: the synchronous SoulsStore over PostgreSQL. Every method is posted to a worker
 * thread (postgres-worker.ts) that owns the asynchronous driver and runs it as one transaction;
 * this thread blocks on a shared flag (Atomics.wait) until the answer is on the port, then takes
 * it with receiveMessageOnPort. This thread's event loop waits during each call, as it does
 * during each SQLite statement: a replica serves one store call at a time, and throughput grows
 * with replicas. Written here rather than with synckit because the bridge needs what synckit
 * leaves to its caller: several methods over one worker, domain errors re-created as their own
 * classes, a dead worker told apart from a slow one, and answers to abandoned calls discarded.
 */
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import * as errors from '../engine/errors.ts';
import type { SoulsStore } from './store.ts';
import { ANSWERED, DOWN, EXITED, FLAG_COUNT, PROBE, type Answer, type SerializedError, type WorkerData } from './postgres-protocol.ts';

/** The store methods, every one answered by the worker; the type check below fails if one is missing. */
const METHODS = [
  'insertSoul', 'updateSoul', 'setDormancy', 'stampAttuned', 'getSouls', 'getSoulByName', 'listSouls',
  'insertTrait', 'updateTrait', 'setTraitStatus', 'getTraits', 'listTraits', 'countActiveTraits', 'citeShards', 'unciteShards', 'citationsOfTraits', 'citationsOfShards', 'attunements',
  'putSoulDocument', 'getSoulDocument',
  'assignThemes', 'unassignShards', 'renameTheme', 'setThemeOpposition', 'getThemes', 'listThemes', 'themesOfShards', 'shardThemesOfSouls', 'counterEvidence', 'themeHistory',
  'applyLevelUp', 'revertLevelUp', 'levelHistory', 'getLevelEvents',
  'insertShards', 'revealShards', 'fadeExhaustedShards', 'getShards', 'shardContents', 'shardEmbeddings', 'embeddingDimension', 'storeEmbeddings', 'embeddingsByHash', 'embeddingModel', 'rebindEmbeddings',
  'shardsWithoutEmbedding', 'countShardsWithoutEmbedding', 'getCalibration', 'putCalibration', 'listShards', 'searchShards', 'consideredShards', 'consideredShardIds', 'gateStats',
  'countsBySource', 'countsByTag', 'countsByTagPerSoul', 'pendingCounts',
  'statementsExecuted', 'ping', 'optimize', 'backup', 'explainQueryPlans',
] as const satisfies ReadonlyArray<keyof SoulsStore>;
type Bridged = (typeof METHODS)[number];
type Missing = Exclude<keyof SoulsStore, Bridged | 'kind' | 'close'>;
const everyMethodBridged: [Missing] extends [never] ? true : Missing = true;
void everyMethodBridged;

export type PostgresOptions = {
  /** postgres://… (or, in tests, pglite:memory or pglite:<folder>: the same engine in WebAssembly, in the worker). */
  url: string;
  /** 'create' (the default) applies pending migrations; 'read-only' needs the tables and refuses writes; 'migrate' is 'create' for `souls migrate`. */
  mode?: 'create' | 'read-only' | 'migrate';
  /** How long one call may take before it fails with STORAGE_UNAVAILABLE (its outcome then unknown). */
  timeoutMs?: number;
  /** How long connecting and migrating may take. */
  openTimeoutMs?: number;
  /**
   * How long a new connection may take to answer; also how long a call runs before the worker checks, over a second
   * connection, that the server still answers (a server that does not fails the call and every call after it at
   * once, until it answers again).
   */
  connectTimeoutMs?: number;
};

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

const domainClasses: Record<string, { prototype: object }> = Object.fromEntries(
  Object.values(errors)
    .filter((value): value is typeof errors.SoulsError => typeof value === 'function' && value.prototype instanceof Error)
    .map((type) => [type.name, type]),
);

/** The error as the same class it was in the worker, with its fields (field, code, entity …). */
function revive(error: SerializedError, target: string): Error {
  if (!error.domain) return Object.assign(new Error(`PostgreSQL (${target}): ${error.message}`), { code: error.code });
  const type = domainClasses[error.name] ?? errors.SoulsError;
  const revived = Object.create(type.prototype) as Error;
  Object.defineProperty(revived, 'message', { value: error.message, writable: true, configurable: true });
  Object.assign(revived, error.props);
  Error.captureStackTrace(revived, revive);
  return revived;
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@');
  }
}

/** Flags a worker accepts that may matter to it, those that take their value as the next argument marked true. */
const WORKER_FLAGS: ReadonlyMap<string, boolean> = new Map([
  ['--import', true], ['--require', true], ['-r', true], ['--loader', true], ['--experimental-loader', true], ['--disable-warning', true],
  ['--no-warnings', false], ['--enable-source-maps', false], ['--trace-warnings', false],
]);

/**
 * The parent's flags a worker thread accepts: Node refuses to start a worker given V8 or process-wide flags (`npm start`
 * runs with --max-semi-space-size), and the worker resolves packages as plain Node does (a parent started with
 * `--conditions import`, as Vitest is, would hand pg's CommonJS build the ES module of pg-pool).
 */
export function workerExecArgv(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const [name] = execArgv[i].split('=', 1);
    const valued = WORKER_FLAGS.get(name);
    const experimental = /^--(no-)?experimental-/.test(name) && name !== '--experimental-loader';
    if (valued === undefined && !experimental) continue;
    kept.push(execArgv[i]);
    if (valued && !execArgv[i].includes('=') && i + 1 < execArgv.length) kept.push(execArgv[++i]);
  }
  return kept;
}

export class PostgresStore implements SoulsStore {
  readonly kind = 'postgres';
  readonly target: string;
  private readonly worker: Worker;
  private readonly port: MessageChannel['port1'];
  private readonly flags: Int32Array;
  private readonly timeoutMs: number;
  private nextId = 1;
  private closed = false;
  /** The schema versions before and after opening (null when opened read-only). */
  readonly migration: { from: number; to: number } | null;

  constructor(options: PostgresOptions) {
    this.target = redactUrl(options.url);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const flagBuffer = new SharedArrayBuffer(4 * FLAG_COUNT);
    this.flags = new Int32Array(flagBuffer);
    const connectTimeoutMs = options.connectTimeoutMs ?? Math.min(this.timeoutMs, DEFAULT_CONNECT_TIMEOUT_MS);
    const workerData: WorkerData = { port: port2, flags: flagBuffer, url: options.url, target: this.target, mode: options.mode ?? 'create', connectTimeoutMs };
    this.worker = new Worker(new URL('./postgres-worker.ts', import.meta.url), { workerData, transferList: [port2], execArgv: workerExecArgv(process.execArgv) });
    // A replica that forgets to close its store still exits.
    this.worker.unref();
    try {
      this.migration = this.call('open', [], options.openTimeoutMs ?? Math.max(this.timeoutMs, DEFAULT_TIMEOUT_MS)) as { from: number; to: number } | null;
    } catch (error) {
      void this.worker.terminate();
      throw error;
    }
  }

  /** Posts the call and blocks until its answer; answers to calls abandoned after a timeout are dropped. */
  call(method: string, args: unknown[], timeoutMs = this.timeoutMs): unknown {
    if (this.closed) throw new errors.StorageError('STORAGE_UNAVAILABLE', this.target, 'the database connection is closed');
    if (this.down) throw new errors.StorageError('STORAGE_UNAVAILABLE', this.target, 'the database does not answer: calls fail at once until it answers again');
    const id = this.nextId++;
    const deadline = performance.now() + timeoutMs;
    this.port.postMessage({ id, method, args });
    for (;;) {
      const seen = Atomics.load(this.flags, ANSWERED);
      for (let message = receiveMessageOnPort(this.port); message; message = receiveMessageOnPort(this.port)) {
        const answer = message.message as Answer;
        if (answer.id !== id) continue;
        if (answer.ok) return answer.value;
        throw revive(answer.error, this.target);
      }
      if (Atomics.load(this.flags, EXITED) !== 0) {
        this.closed = true;
        throw new errors.StorageError('STORAGE_UNAVAILABLE', this.target, `the database worker stopped during ${method}: restart the server`);
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        // The next calls fail at once until the worker's probe hears the server again: one wait, not one per call.
        Atomics.store(this.flags, DOWN, 1);
        this.port.postMessage({ id: 0, method: PROBE, args: [] });
        throw new errors.StorageError('STORAGE_UNAVAILABLE', this.target, `the database did not answer ${method} within ${timeoutMs} ms: its outcome is unknown`);
      }
      // The worker raises ANSWERED after each answer and as it exits.
      Atomics.wait(this.flags, ANSWERED, seen, left);
    }
  }

  /** Empties every table and restarts the ids: tests share one database this way. */
  reset(): void {
    this.call('reset', []);
  }

  /** Copies whole tables into an empty database in one transaction (souls copy); answers the rows copied per table. */
  importTables(tables: Record<string, unknown[]>, idFloors: Record<string, number>, timeoutMs: number): Record<string, number> {
    return this.call('importTables', [tables, idFloors], timeoutMs) as Record<string, number>;
  }

  /** Whether calls fail at once because the server did not answer (until the worker's probe hears it again). */
  get down(): boolean {
    return Atomics.load(this.flags, DOWN) !== 0;
  }

  close(): { checkpointDeferred: string | null } {
    if (this.closed) return { checkpointDeferred: null };
    try {
      if (this.down) return { checkpointDeferred: null };
      return this.call('close', []) as { checkpointDeferred: string | null };
    } finally {
      this.closed = true;
      this.port.close();
      void this.worker.terminate();
    }
  }
}

export interface PostgresStore extends Omit<SoulsStore, 'kind' | 'close'> {}
for (const method of METHODS) {
  Object.defineProperty(PostgresStore.prototype, method, {
    value(this: PostgresStore, ...args: unknown[]) {
      // A function argument is an optional hint (insertShards' `withIds`: which souls need their shard ids) that
      // cannot cross to the worker; the PostgreSQL store answers every soul's ids, which is always correct.
      return this.call(method, args.map((arg) => (typeof arg === 'function' ? undefined : arg)));
    },
    writable: true,
    configurable: true,
  });
}

/** The database for a banner or a log line: a URL without its password. */
export function describeDb(db: string): string {
  return isPostgresUrl(db) ? redactUrl(db) : db;
}

/**
 * A URL names a PostgreSQL database; anything else is a SQLite file path (or :memory:). `pglite:memory` and
 * `pglite:<folder>` name PGlite, PostgreSQL in WebAssembly, which tests use where no server runs.
 */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db) || db.startsWith('pglite:');
}

export function openPostgresStore(options: PostgresOptions): PostgresStore {
  return new PostgresStore(options);
}
