/**
 * PostgresStore: the SoulsStore over PostgreSQL, asynchronous, in the replica's own thread. Every method is one unit
 * of work on a connection of a pg.Pool (postgres.ts has the statements), so a replica overlaps the database round
 * trips of concurrent requests; nothing blocks its event loop. PGlite (`pglite:` URLs, tests) runs in this thread
 * too, its one connection taken in turns. A server that stops answering is told apart from a slow call over a second
 * connection: its calls fail then, and every call after them at once, until it answers again.
 */
import * as errors from '../engine/errors.ts';
import type { SoulsStore } from './store.ts';
import { brokenConnection, migratePostgres, parseInt8, PostgresStatements, schemaVersion, type ConnectionPool, type PooledConnection, type QueryResult } from './postgres.ts';
import { pgMigrations } from './postgres-schema.ts';
import { currentCall, gatedPool, PoolGate, type CallState, type Purpose } from './pool-gate.ts';

export type PostgresOptions = {
  /** postgres://… (or, in tests, pglite:memory or pglite:<folder>: the same engine in WebAssembly, in this thread). */
  url: string;
  /** 'create' (the default) applies pending migrations; 'read-only' needs the tables and refuses writes; 'migrate' is 'create' for `souls migrate`. */
  mode?: 'create' | 'read-only' | 'migrate';
  /** How long one call may take before it fails with STORAGE_UNAVAILABLE (its outcome then unknown). */
  timeoutMs?: number;
  /** How long connecting and migrating may take. */
  openTimeoutMs?: number;
  /**
   * How long a new connection may take to answer; also how long a call runs before the store checks, over a second
   * connection, that the server still answers (a server that does not fails the call and every call after it at
   * once, until it answers again).
   */
  connectTimeoutMs?: number;
  /** Connections the pool opens at most (a replica's concurrent units of work). */
  poolSize?: number;
};

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** Ten connections: enough to overlap the round trips of a 2-core replica's requests, few enough for many replicas. */
export const DEFAULT_POOL_SIZE = 10;

/** The store methods, every one wrapped (typed errors, the hung-server watch; ping is the class's own); the type check below fails if one is missing. */
const METHODS = [
  'insertSoul', 'updateSoul', 'setDormancy', 'stampAttuned', 'getSouls', 'getSoulByName', 'listSouls',
  'insertTrait', 'updateTrait', 'setTraitStatus', 'getTraits', 'listTraits', 'countActiveTraits', 'citeShards', 'citeShardsOfTraits', 'unciteShards', 'citationsOfTraits', 'citationsOfShards', 'attunements',
  'putSoulDocument', 'getSoulDocument',
  'assignThemes', 'unassignShards', 'renameTheme', 'setThemeOpposition', 'judgeThemes', 'getThemes', 'listThemes', 'themesOfShards', 'shardThemesOfSouls', 'counterEvidence', 'counterCitations', 'themeHistory',
  'applyLevelUp', 'revertLevelUp', 'levelHistory', 'getLevelEvents',
  'insertShards', 'revealShards', 'fadeExhaustedShards', 'getShards', 'shardContents', 'shardEmbeddings', 'embeddingDimension', 'storeEmbeddings', 'embeddingsByHash', 'embeddingModel', 'rebindEmbeddings',
  'shardsWithoutEmbedding', 'countShardsWithoutEmbedding', 'shardRowBound', 'getCalibration', 'putCalibration', 'listShards', 'searchShards', 'consideredShards', 'consideredShardVersions', 'gateStats',
  'countsBySource', 'countsByTag', 'countsByTagPerSoul', 'pendingCounts',
  'optimize', 'backup', 'explainQueryPlans',
] as const satisfies ReadonlyArray<keyof SoulsStore>;
type Wrapped = (typeof METHODS)[number];
type Missing = Exclude<keyof SoulsStore, Wrapped | 'kind' | 'close' | 'statementsExecuted' | 'ping'>;
const everyMethodWrapped: [Missing] extends [never] ? true : Missing = true;
void everyMethodWrapped;

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

/** The pool's connections now: opened, idle, held by writes, and units of work waiting for one. */
export type PoolStats = { total: number; idle: number; writing: number; waiting: number };

type Driver = {
  pool: ConnectionPool;
  /** How many connections the pool opens at most. */
  size: number;
  stats(): Pick<PoolStats, 'total' | 'idle' | 'waiting'>;
  /** Drops every open connection's socket at once (a hung server never answers the polite Terminate). */
  destroyAll(): void;
  /** Whether the server answers a new connection and a `SELECT 1`, each within the connect timeout. */
  answersQuickly(): Promise<boolean>;
};

async function pgliteDriver(where: string): Promise<Driver> {
  const { PGlite } = await import('@electric-sql/pglite');
  const db = await PGlite.create({ parsers: { 20: parseInt8 }, ...(where === 'memory' ? {} : { dataDir: where }) });
  // Without parameters a text may hold several statements (migrations): exec runs them all, as pg's simple protocol does.
  const query = async (sql: string, params?: unknown[]): Promise<QueryResult> => {
    if (params !== undefined) return db.query(sql, params);
    const results = await db.exec(sql);
    return { ...results.at(-1)!, results };
  };
  let turn: Promise<void> = Promise.resolve();
  let waiting = 0;
  let busy = false;
  const connect = async (): Promise<PooledConnection> => {
    const previous = turn;
    let done!: () => void;
    turn = new Promise((resolve) => (done = resolve));
    waiting++;
    await previous;
    waiting--;
    busy = true;
    return {
      query,
      release: () => {
        busy = false;
        done();
      },
    };
  };
  return {
    pool: { connect, end: () => db.close() },
    size: 1,
    stats: () => ({ total: 1, idle: busy ? 0 : 1, waiting }),
    destroyAll: () => undefined,
    answersQuickly: async () => true,
  };
}

/**
 * pg's Client and pg-pool's Pool, loaded apart: pg's own entry requires pg-pool, which a process resolving packages
 * with the `import` condition (Vitest's workers) would hand the ES module build, and that fails.
 */
async function loadPg() {
  const load = (specifier: string): Promise<{ default: unknown }> => import(specifier);
  const [client, pool, overrides] = await Promise.all([load('pg/lib/client.js'), load('pg-pool'), load('pg/lib/type-overrides.js')]);
  return {
    Client: client.default as typeof import('pg').Client,
    Pool: pool.default as typeof import('pg').Pool,
    TypeOverrides: overrides.default as typeof import('pg').TypeOverrides,
  };
}

async function pgDriver(url: string, options: { connectTimeoutMs: number; poolSize: number; readOnly: boolean }): Promise<Driver> {
  const pg = await loadPg();
  const config = {
    connectionString: url,
    connectionTimeoutMillis: options.connectTimeoutMs,
    keepAlive: true,
    types: new pg.TypeOverrides(),
  };
  config.types.setTypeParser(20, 'text', parseInt8);
  const pool = new pg.Pool({ ...config, Client: pg.Client, max: options.poolSize, ...(options.readOnly ? { options: '-c default_transaction_read_only=on' } : {}) });
  // An idle connection the server dropped (a restart, a cut): the pool removes it; the next unit of work opens another.
  pool.on('error', () => undefined);
  const open = new Set<import('pg').PoolClient>();
  pool.on('connect', (client) => {
    open.add(client);
    client.once('end', () => open.delete(client));
  });
  return {
    pool: {
      async connect() {
        const client = await pool.connect();
        // The pool listens to idle connections only: a checked-out one that breaks fails its query, and must not throw.
        const broke = () => undefined;
        client.on('error', broke);
        return {
          query: async (sql, params) => {
            // A parameterless text with several statements answers one result each: the last one is the caller's, with all of them.
            const result = (await client.query(sql, params)) as QueryResult | QueryResult[];
            return Array.isArray(result) ? { ...result.at(-1)!, results: result } : result;
          },
          release: (broken) => {
            client.removeListener('error', broke);
            client.release(broken === true);
          },
          abandon: () => socketOf(client)?.destroy(),
        };
      },
      end: () => pool.end(),
    },
    size: options.poolSize,
    stats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    destroyAll: () => {
      for (const client of open) socketOf(client)?.destroy();
    },
    async answersQuickly() {
      const client = new pg.Client({ ...config, query_timeout: options.connectTimeoutMs });
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
    },
  };
}

const socketOf = (client: object) => (client as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class PostgresStore implements SoulsStore {
  readonly kind = 'postgres';
  readonly target: string;
  private readonly statements: PostgresStatements;
  private readonly driver: Driver;
  private readonly gate: PoolGate;
  /** The check of the server over a second connection in flight, shared by every call that wants one meanwhile. */
  private probe: Promise<boolean> | null = null;
  private readonly timeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly pglite: boolean;
  private closed = false;
  private probing = false;
  /** Whether calls fail at once because the server did not answer (until a probe hears it again). */
  down = false;
  /** The schema versions before and after opening (null when opened read-only). */
  migration: { from: number; to: number } | null = null;

  constructor(driver: Driver, options: PostgresOptions) {
    this.target = redactUrl(options.url);
    this.driver = driver;
    this.gate = new PoolGate(driver.size);
    this.statements = new PostgresStatements(gatedPool(driver.pool, this.gate), this.target);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.pglite = options.url.startsWith('pglite:');
  }

  /** Runs one call with typed errors: a domain error as it is, a lost or hung server as STORAGE_UNAVAILABLE. */
  async call<T>(method: string, work: () => Promise<T>, timeoutMs = this.timeoutMs): Promise<T> {
    if (this.closed) throw new errors.StorageError('STORAGE_UNAVAILABLE', this.target, 'the database connection is closed');
    if (this.down) throw this.hungError();
    const abort = new AbortController();
    const call: CallState = { waiting: 0, signal: abort.signal, held: new Set() };
    try {
      return await this.watched(method, currentCall.run(call, work), timeoutMs, call, abort);
    } catch (error) {
      throw this.typed(error);
    }
  }

  /**
   * `/ready`: a query on a pooled connection when one is free for a read, else on a connection of its own (connect
   * and `SELECT 1` within the connect timeout): a pool busy with other work is not a database that does not answer.
   */
  async ping(): Promise<void> {
    if (this.pglite || this.closed || this.down || this.gate.free('read')) return this.call('ping', () => this.statements.ping());
    if (!(await this.answersQuickly())) throw new errors.StorageError('STORAGE_UNAVAILABLE', this.target, 'the database does not answer a query', `no answer to a new connection within ${this.connectTimeoutMs} ms`);
  }

  /** The pool's connections now (for metrics). */
  poolStats(): PoolStats {
    const pool = this.driver.stats();
    const gate = this.gate.stats();
    return { ...pool, writing: gate.writing, waiting: pool.waiting + gate.waiting };
  }

  /** Told how long each unit of work waited for its connection, in milliseconds (for metrics). */
  set poolWaited(hook: ((purpose: Purpose, ms: number) => void) | null) {
    this.gate.waited = hook;
  }

  /** Told how long each statement took, in milliseconds (for metrics). */
  set queried(hook: ((ms: number) => void) | null) {
    this.statements.queried = hook;
  }

  statementsExecuted(): number {
    return this.statements.statementsExecuted();
  }

  /** Empties every table and restarts the ids: tests share one database this way. */
  reset(): Promise<void> {
    return this.call('reset', () => this.statements.reset());
  }

  /** Copies whole tables into an empty database in one transaction (souls copy); answers the rows copied per table. */
  importTables(tables: Record<string, unknown[]>, idFloors: Record<string, number>, timeoutMs: number): Promise<Record<string, number>> {
    return this.call('importTables', () => this.statements.importTables(tables as Parameters<PostgresStatements['importTables']>[0], idFloors), timeoutMs);
  }

  async close(): Promise<{ checkpointDeferred: string | null }> {
    if (this.closed) return { checkpointDeferred: null };
    this.closed = true;
    if (this.down) this.driver.destroyAll();
    await this.statements.close().catch(() => undefined);
    return { checkpointDeferred: null };
  }

  /** Applies pending migrations (or, read-only, checks the schema) over one connection. */
  async open(mode: 'create' | 'read-only' | 'migrate', timeoutMs: number): Promise<void> {
    await this.call(
      'open',
      async () => {
        const conn = await this.statements.pool.connect('write');
        let broken = false;
        try {
          const connection = { query: conn.query, close: async () => undefined };
          if (mode !== 'read-only') {
            this.migration = await migratePostgres(connection);
            return;
          }
          const version = await schemaVersion(connection);
          if (version === 0) throw new errors.StorageError('STORAGE_UNAVAILABLE', this.target, `database ${this.target} has no Souls tables: \`souls migrate --db URL\` creates them`);
          if (version > pgMigrations.length) throw new errors.StorageError('STORAGE_UNAVAILABLE', this.target, `database schema version ${version} is newer than this Souls (${pgMigrations.length}): upgrade Souls`);
        } catch (error) {
          broken = brokenConnection(error) && !(error instanceof errors.SoulsError);
          throw error;
        } finally {
          conn.release(broken);
        }
      },
      timeoutMs,
    );
  }

  private hungError(): errors.StorageError {
    return new errors.StorageError('STORAGE_UNAVAILABLE', this.target, 'the database does not answer: calls fail at once until it answers again', `no answer to a new connection within ${this.connectTimeoutMs} ms`);
  }

  /** Connection classes: 08 (connection exception), 57P (operator intervention: shutdown), 53 (insufficient resources). */
  private typed(error: unknown): Error {
    if (error instanceof errors.SoulsError) return error;
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : String(error);
    if (code === '53100') return new errors.StorageError('STORAGE_FULL', this.target, 'the storage is full: nothing was written; retry once space has been freed', message);
    if (brokenConnection(error) || (typeof code === 'string' && code.startsWith('53'))) {
      // The driver's words name the server's address: the operator's log has them (detail), the client only the code.
      return new errors.StorageError('STORAGE_UNAVAILABLE', this.target, 'the database is unavailable: retry later', message);
    }
    return Object.assign(new Error(`PostgreSQL (${this.target}): ${message}`), { code: typeof code === 'string' ? code : null });
  }

  /** Until the server answers again, every call fails at once instead of waiting on it. */
  private markDown(): void {
    if (this.pglite) return;
    this.down = true;
    // Their calls wait on a server that does not answer: they fail now, and the pool opens new connections later.
    this.driver.destroyAll();
    this.gate.refuseAll(this.hungError());
    if (this.probing) return;
    this.probing = true;
    void (async () => {
      while (!this.closed && !(await this.answersQuickly())) await pause(this.connectTimeoutMs);
      this.probing = false;
      this.down = false;
    })();
  }

  /** Whether the server answers a new connection quickly; one check at a time, its answer shared by whoever asks meanwhile. */
  private answersQuickly(): Promise<boolean> {
    this.probe ??= this.driver.answersQuickly().finally(() => (this.probe = null));
    return this.probe;
  }

  /** A call that found no free connection for its whole time: the database may answer, the pool was busy. */
  private poolBusyError(method: string, timeoutMs: number): errors.StorageError {
    return new errors.StorageError(
      'STORAGE_UNAVAILABLE',
      this.target,
      `no connection of the pool came free for ${method} within ${timeoutMs} ms: every one was busy (raise --db-pool-size or --db-timeout, or find what holds them)`,
    );
  }

  /**
   * A call still running after the connect timeout may be slow or may wait on a server that no longer answers: a second
   * connection tells which, and a hung server's call fails now rather than at the call's timeout.
   */
  private watched<T>(method: string, work: Promise<T>, timeoutMs: number, call: CallState, abort: AbortController): Promise<T> {
    if (this.pglite) return work;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const deadline = performance.now() + timeoutMs;
      const settle = () => {
        settled = true;
        clearTimeout(timer);
      };
      work.then(
        (value) => {
          settle();
          resolve(value);
        },
        (error: unknown) => {
          settle();
          reject(error);
        },
      );
      const check = async () => {
        if (settled) return;
        if (deadline - performance.now() <= 0) {
          settle();
          // Still in line for a connection, it never reached the server: the call fails alone, nothing ran.
          if (call.waiting > 0) {
            const error = this.poolBusyError(method, timeoutMs);
            abort.abort(error);
            return reject(error);
          }
          reject(new errors.StorageError('STORAGE_UNAVAILABLE', this.target, `the database did not answer ${method} within ${timeoutMs} ms: its outcome is unknown`));
          // On a server that answers others (this call waited on a lock, or ran long) only this call's connections go.
          const held = [...call.held];
          if (await this.answersQuickly()) for (const abandon of held) abandon();
          else this.markDown();
          return;
        }
        // Waiting for a connection says nothing of the server: the calls holding the connections check it.
        if (call.waiting > 0) return arm();
        const answers = await this.answersQuickly();
        if (settled) return;
        if (!answers) {
          settle();
          this.markDown();
          return reject(this.hungError());
        }
        arm();
      };
      // Cleared as the call settles: a finished command does not wait for its last check.
      const arm = () => (timer = setTimeout(check, Math.max(0, Math.min(this.connectTimeoutMs, deadline - performance.now()))));
      arm();
    });
  }
}

export interface PostgresStore extends Omit<SoulsStore, 'kind' | 'close' | 'statementsExecuted' | 'ping'> {}
for (const method of METHODS) {
  Object.defineProperty(PostgresStore.prototype, method, {
    value(this: PostgresStore, ...args: unknown[]) {
      const statements = (this as unknown as { statements: Record<string, (...args: unknown[]) => Promise<unknown>> }).statements;
      return this.call(method, async () => statements[method](...args));
    },
    writable: true,
    configurable: true,
  });
}

/** Opens the pool and, unless read-only, applies pending migrations; read-only needs the tables there. */
export async function openPostgresStore(options: PostgresOptions): Promise<PostgresStore> {
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const mode = options.mode ?? 'create';
  const driver = options.url.startsWith('pglite:')
    ? await pgliteDriver(options.url.slice('pglite:'.length))
    : await pgDriver(options.url, { connectTimeoutMs, poolSize: options.poolSize ?? DEFAULT_POOL_SIZE, readOnly: mode === 'read-only' });
  const store = new PostgresStore(driver, options);
  try {
    await store.open(mode, options.openTimeoutMs ?? Math.max(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, DEFAULT_TIMEOUT_MS));
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
