import { statSync } from 'node:fs';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import type { CarriedTrait, Citation, LevelEvent, Page, Shard, ShardStatus, Soul, SoulDocument, SourceCount, TagCount, Theme, ThemeEvent, Trait, TraitStatus } from '../engine/model.ts';
import { freeSlug, nameKey, slugBase } from '../engine/normalize.ts';
import {
  alreadyAssigned,
  alreadyNamed,
  alreadyOpposed,
  assignedSupport,
  CapacityError,
  citedCounterEvidence,
  ConflictError,
  consolidationConflicts,
  InvalidStateError,
  LevelUpPlanError,
  NotFoundError,
  notOpposed,
  nothingToUnassign,
  opposedSupport,
  refuseThemesPastLimit,
  StorageError,
  ValidationError,
  type CounterCitation,
} from '../engine/errors.ts';
import { migrations } from './schema.ts';
import { calibrationMetaKey, otherModelMessage, carrySourceCitationsSql, assignmentField, checkRevertTarget, citingTraitCount, considered, counterCitationsSql, duplicatePrincipleMessage, evidenceTime as sharedEvidenceTime, exhaustedShardIdsSql, foreignShardMessage, gateQuery, insertLevelEventSql, insertThemeEventSql, levelEventParams, listsBy, readinessQuery, SHARD_COLUMNS, shardListQuery, shardPage, themeEventParams, toAggregate, toStoredCalibration, toCounterCitation, toGateStats, toLevelEvent, toReadiness, toShard, toSoul, toSoulDocument, toThemeEvent, toThemes, toTrait, type Dialect } from './rows.ts';
import { asStorageFull, openDatabaseFile, type OpenMode } from './sqlite-file.ts';
import { DryRunRollback, PROVIDED_MODEL } from './store.ts';
import type {
  EmbeddingWrite,
  GateStats,
  LevelUpWrite,
  NewShard,
  NewSoul,
  NewTrait,
  ShardAggregate,
  ShardFilter,
  ShardScope,
  ShardVersion,
  ShardWrite,
  SoulPatch,
  SoulsStore,
  StoredCalibration,
  TextQuery,
  ThemeAssignmentWrite,
  TraitFilter,
} from './store.ts';

type Row = Record<string, SQLInputValue>;
type TraitTime = { id: number; updatedAt: number };
type Params = Record<string, SQLInputValue>;

const json = (ids: readonly (number | string)[]): string => JSON.stringify(ids);
const inList = (param: string): string => `(SELECT value FROM json_each(:${param}))`;

const SQLITE: Dialect = { idList: (expr) => `group_concat(${expr})`, greatest: 'MAX', join: 'CROSS JOIN' };
const evidenceTime = (alias: string) => sharedEvidenceTime(SQLITE, alias);

/*
 * The hot statements. Join order is fixed with CROSS JOIN so the plan does not
 * depend on statistics: without them SQLite drove the per-soul load from the
 * global pending index, many times slower on a large file.
 */

/** The cheap gate for each soul, once over every considered shard and once leaving out those `isNew` picks. */
const gateSql = (isNew: string): string => gateQuery(SQLITE, { old: `s.id IS NOT NULL AND NOT (${isNew})`, soulFilter: `so.id IN ${inList('soulIds')}` });

/** The cheap gate of a read: no write, so the aggregates before it are those after. */
const gateReadSql = gateQuery(SQLITE, { old: null, soulFilter: `so.id IN ${inList('soulIds')}` });

/** Per soul and source, its considered shards' count and times: what a soul's gate row is rebuilt from. */
const gateSourcesSql = `SELECT ss.soul_id, s.source, COUNT(*) AS count, MIN(s.created_at) AS oldest, MAX(s.created_at) AS newest,
    MAX(${evidenceTime('s')}) AS latest
  FROM shard_souls ss CROSS JOIN soul_shards s ON s.id = ss.shard_id
  WHERE ss.soul_id IN ${inList('soulIds')} AND ${considered('s')}
  GROUP BY ss.soul_id, s.source`;

/** The considered shards past each gate row's `through`, which the row does not count yet. */
const gateCatchUpSql = `SELECT g.soul_id, s.id AS shard_id, s.source, s.created_at, ${evidenceTime('s')} AS latest
  FROM soul_gate g CROSS JOIN shard_souls ss ON ss.soul_id = g.soul_id AND ss.shard_id > g.through CROSS JOIN soul_shards s ON s.id = ss.shard_id
  WHERE g.soul_id IN ${inList('soulIds')} AND ${considered('s')}`;

/** Every awake soul's aggregates, driven by the partial pending index. */
const readinessSql = readinessQuery(SQLITE);

/** The considered shards of some souls, driven by their attributions. */
function consideredSql(extraClauses: readonly string[], columns = SHARD_COLUMNS('s')): string {
  const where = [`ss.soul_id IN ${inList('soulIds')}`, considered('s'), ...extraClauses].join(' AND ');
  return `SELECT DISTINCT ${columns} FROM shard_souls ss CROSS JOIN soul_shards s ON s.id = ss.shard_id WHERE ${where} ORDER BY s.id`;
}

/** Full-text search driven by the FTS index, ranked by bm25. */
function searchSql(bySoul: boolean): string {
  const soulClause = bySoul ? 'AND EXISTS (SELECT 1 FROM shard_souls ss WHERE ss.shard_id = s.id AND ss.soul_id = :soulId)' : '';
  return `SELECT s.id, bm25(shard_fts) AS rank FROM shard_fts CROSS JOIN soul_shards s ON s.id = shard_fts.rowid
    WHERE shard_fts MATCH :query AND ${considered('s')} ${soulClause}
    ORDER BY rank, s.id LIMIT :limit`;
}

/** The clauses and parameters narrowing the considered shards to a scope; null when the scope matches nothing. */
function consideredQuery(soulIds: readonly number[], cutoff: number, scope: ShardScope): { clauses: string[]; params: Params } | null {
  const clauses: string[] = [];
  const params: Params = { soulIds: json(soulIds), cutoff };
  if (scope.tags && scope.tags.length > 0) {
    clauses.push(`s.id IN (SELECT shard_id FROM shard_tags WHERE tag IN ${inList('tags')})`);
    params.tags = json(scope.tags);
  }
  if (scope.text) {
    if (scope.text.words.length === 0) return null;
    clauses.push('s.id IN (SELECT rowid FROM shard_fts WHERE shard_fts MATCH :query)');
    params.query = ftsQuery(scope.text);
  }
  return { clauses, params };
}

/** Told how the store meets other connections' locks (a server's metrics); hooks may be set after opening. */
export type StoreObserver = {
  /** How long a write waited to begin: for the write lock, while another connection (a process, a backup) held it; near 0 when none did. */
  writeLockWaited?(ms: number): void;
  /** SQLITE_BUSY reached a caller: the lock stayed taken for the whole busy timeout. */
  busyTimedOut?(): void;
};

export type SqliteOptions = {
  /** A file path, or ':memory:' (the default). */
  path?: string;
  busyTimeoutMs?: number;
  observer?: StoreObserver;
  /** 'create' (the default) creates or migrates the file; 'read-only' needs an existing file and never writes to it (no migration, query_only). */
  mode?: OpenMode;
};

/** Creates the tables on a fresh database and migrates an older one; safe to call on every start. */
export function initSoulsTables(db: DatabaseSync): void {
  const current = Number((db.prepare('PRAGMA user_version').get() as Row).user_version);
  if (current > migrations.length) {
    throw new Error(`database schema version ${current} is newer than this Souls (${migrations.length}): upgrade Souls`);
  }
  if (current === migrations.length) return;
  db.exec('BEGIN IMMEDIATE');
  try {
    // Read again under the write lock: another process opening the same file may have migrated while this one waited.
    const locked = Number((db.prepare('PRAGMA user_version').get() as Row).user_version);
    for (let version = locked; version < migrations.length; version++) {
      const migration = migrations[version];
      if (typeof migration === 'string') db.exec(migration);
      else migration(db);
    }
    db.exec(`PRAGMA user_version = ${migrations.length}`);
    db.exec('COMMIT');
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
  db.exec('PRAGMA optimize');
}

/**
 * Switching a new file to WAL writes its header. When two processes do that at once SQLite
 * sees a possible deadlock and answers SQLITE_BUSY without calling the busy handler, so the
 * waiting and retrying happen here, within the busy timeout.
 */
/** SQLITE_BUSY or one of its extended codes (SQLITE_BUSY_SNAPSHOT, …): a lock another connection held. */
const isBusy = (error: unknown): boolean => ((error as { errcode?: number } | null)?.errcode ?? 0) % 256 === 5;

function enableWal(db: DatabaseSync, timeoutMs: number): void {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      db.exec('PRAGMA journal_mode = WAL');
      return;
    } catch (error) {
      if (!isBusy(error) || performance.now() >= deadline) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

/** The schema version of a database file: 0 when there is no file yet. */
export function sqliteSchemaVersion(path: string): number {
  if (path === ':memory:' || statSync(path, { throwIfNoEntry: false }) === undefined) return 0;
  return openDatabaseFile(path, 'read-only', 5000, (db) => {
    try {
      return Number((db.prepare('PRAGMA user_version').get() as Row).user_version);
    } finally {
      db.close();
    }
  });
}

export function openSqliteStore(options: SqliteOptions = {}): SqliteStore {
  const path = options.path ?? ':memory:';
  const timeout = options.busyTimeoutMs ?? 5000;
  const mode = options.mode ?? 'create';
  if (path === ':memory:') {
    if (mode === 'read-only') throw new StorageError('STORAGE_UNAVAILABLE', path, 'an in-memory database (:memory:) has nothing to read');
    const db = new DatabaseSync(path, { timeout });
    db.exec('PRAGMA foreign_keys = ON');
    initSoulsTables(db);
    return new SqliteStore(db, path, options.observer);
  }
  return openDatabaseFile(path, mode, timeout, (db) => {
    if (mode === 'read-only') {
      db.exec('PRAGMA query_only = ON');
    } else {
      enableWal(db, timeout);
      db.exec('PRAGMA synchronous = NORMAL');
    }
    db.exec('PRAGMA foreign_keys = ON');
    if (mode === 'create') initSoulsTables(db);
    return new SqliteStore(db, path, options.observer, mode === 'read-only');
  });
}

const minTime = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.min(a, b));
const maxTime = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.max(a, b));

const noShards = (): ShardAggregate => ({ count: 0, distinctSources: 0, oldest: null, newest: null, latest: null });

type Aggregates = { count: number; oldest: number; newest: number; latest: number };

/** A soul's aggregates from its counts by source. */
function withSources(bySource: ReadonlyMap<string, Aggregates>): { agg: ShardAggregate; sources: Map<string, number> } {
  const agg = noShards();
  const sources = new Map<string, number>();
  for (const [source, part] of bySource) {
    agg.count += part.count;
    agg.oldest = minTime(agg.oldest, part.oldest);
    agg.newest = maxTime(agg.newest, part.newest);
    agg.latest = maxTime(agg.latest, part.latest);
    sources.set(source, part.count);
  }
  agg.distinctSources = sources.size;
  return { agg, sources };
}


/**
 * A soul's gate row as a write sees it: its subject, whether any of its shards has a theme (read with the row;
 * the write memo is dropped by any other write), and its considered shards' aggregates and counts by source at
 * the write's cutoff.
 */
type GateState = { soulId: number; dormant: boolean; lastAttunedAt: number | null; themed: boolean; agg: ShardAggregate; sources: Map<string, number> };

/** The souls' states with the shards a write made considered (those created after `cutoff`) added. */
function withEvidence(before: readonly GateState[], evidence: readonly Evidence[], cutoff: number): Map<number, GateState> {
  const after = new Map(before.map((g) => [g.soulId, { ...g, agg: { ...g.agg }, sources: new Map(g.sources) }]));
  for (const e of evidence) {
    if (e.createdAt <= cutoff) continue;
    const { agg, sources } = after.get(e.soulId)!;
    agg.count++;
    agg.oldest = minTime(agg.oldest, e.createdAt);
    agg.newest = maxTime(agg.newest, e.createdAt);
    agg.latest = maxTime(agg.latest, e.latest);
    sources.set(e.source, (sources.get(e.source) ?? 0) + 1);
    agg.distinctSources = sources.size;
  }
  return after;
}

/** A gate row as the last shard write left it: `floor` is the cutoff it was computed at. */
type SavedGate = GateState & { floor: number };

/**
 * What the last shard write left behind: its souls' gate rows and, where it read them, their considered shard ids
 * (ascending). The next shard write reuses them instead of reading the rows back, as long as nothing else has
 * written since: every other write transaction of this store drops it, and `version` (PRAGMA data_version, which
 * moves when another connection commits) must be what it was.
 */
type WriteMemo = {
  version: number;
  lastShardId: number;
  gates: Map<number, SavedGate>;
  ids: Map<number, number[]>;
  idCount: number;
  /** Souls whose row here is newer than the stored one (which a reader brings up to date from its `through`). */
  unsaved: Set<number>;
  writesUnsaved: number;
};

/** Unsaved gate rows are saved with every this-many-th write that leaves them in memory: what a reader must add up stays small. */
const SAVE_GATE_ROWS = 64;

/** Shard ids a write memo may hold, at 8 bytes each; past it the id lists are read again. */
const MEMO_IDS = 1 << 20;

/** Souls whose gate rows a write memo may hold (a few hundred bytes each); past it the memo starts afresh. */
const MEMO_SOULS = 1 << 16;

const staleGate = (floor: number | null, oldest: number | null, cutoff: number): boolean => floor === null || cutoff < floor || (oldest !== null && oldest <= cutoff);

/** A shard a write made considered, for one of its souls; `latest` is its evidence time. */
type Evidence = { soulId: number; shardId: number; source: string; createdAt: number; latest: number };

const everySoul = (): boolean => true;

/** Rows per multi-row INSERT, largest first: powers of two, so few distinct statements are ever prepared. */
const ROW_CHUNKS = [256, 128, 64, 32, 16, 8, 4, 2, 1];

/** FTS5 query from plain words: each spelling becomes a quoted string, so no input is FTS syntax. */
function ftsQuery(query: TextQuery): string {
  const phrase = (spelling: string) => `"${spelling.replaceAll('"', '""')}"`;
  const words = query.words.map((spellings) => (spellings.length === 1 ? phrase(spellings[0]) : `(${spellings.map(phrase).join(' OR ')})`));
  return words.join(query.match === 'all' ? ' AND ' : ' OR ');
}

export class SqliteStore implements SoulsStore {
  readonly kind = 'sqlite';
  /** The connection, for reads and diagnostics: a write through it would bypass the store (its write memo would not see it). */
  readonly db: DatabaseSync;
  private readonly statements = new Map<string, StatementSync>();
  /** Statements whose rows are arrays of column values, by SQL. */
  private readonly arrayStatements = new Map<string, StatementSync>();
  private inTransaction = false;
  private executed = 0;
  private readonly rowStatements = new Map<string, Map<number, StatementSync>>();
  private writeMemo: WriteMemo | null = null;

  /** The file (or ':memory:'), for messages about it. */
  readonly path: string;
  private readonly observer: StoreObserver;

  /** Opened with query_only: close() then leaves the files to the writers (no checkpoint, no statistics); backup lifts it for its copy alone. */
  private readonly readOnly: boolean;

  constructor(db: DatabaseSync, path = ':memory:', observer: StoreObserver = {}, readOnly = false) {
    this.db = db;
    this.path = path;
    this.observer = observer;
    this.readOnly = readOnly;
  }

  private stmt(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private all(sql: string, params: Params = {}): Row[] {
    this.executed++;
    return this.stmt(sql).all(params) as Row[];
  }

  /** Rows as arrays of column values in the select's order: no object with keys per row, for the largest reads. */
  private arrays(sql: string, params: Params = {}): unknown[][] {
    this.executed++;
    let statement = this.arrayStatements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      statement.setReturnArrays(true);
      this.arrayStatements.set(sql, statement);
    }
    return statement.all(params) as unknown as unknown[][];
  }

  private get(sql: string, params: Params = {}): Row | undefined {
    this.executed++;
    return this.stmt(sql).get(params) as Row | undefined;
  }

  private run(sql: string, params: Params = {}): { changes: number; lastInsertRowid: number } {
    this.executed++;
    const result = this.stmt(sql).run(params);
    return { changes: Number(result.changes), lastInsertRowid: Number(result.lastInsertRowid) };
  }

  /** One unit of work: all or nothing. Writes take the write lock up front so they never fail half way on SQLITE_BUSY. */
  private transaction<T>(work: () => T, mode: 'IMMEDIATE' | 'DEFERRED' = 'IMMEDIATE'): T {
    if (this.inTransaction) return work();
    const waiting = performance.now();
    try {
      // Prepared once, from constant strings: exec would parse the statement again for every transaction.
      this.stmt(mode === 'IMMEDIATE' ? 'BEGIN IMMEDIATE' : 'BEGIN DEFERRED').run();
    } catch (error) {
      throw this.busyCounted(error);
    }
    if (mode === 'IMMEDIATE') {
      this.observer.writeLockWaited?.(performance.now() - waiting);
      // Any write may change what the memo holds; a shard write took it before it began.
      this.writeMemo = null;
    }
    this.inTransaction = true;
    try {
      const result = work();
      this.stmt('COMMIT').run();
      return result;
    } catch (error) {
      this.writeMemo = null;
      if (this.db.isTransaction) this.stmt('ROLLBACK').run();
      throw asStorageFull(this.busyCounted(error), this.path);
    } finally {
      this.inTransaction = false;
    }
  }

  /** A write that waited past the busy timeout, counted and answered as STORAGE_BUSY (retryable); anything else unchanged. */
  private busyCounted(error: unknown): unknown {
    if (!isBusy(error)) return error;
    this.observer.busyTimedOut?.();
    return new StorageError('STORAGE_BUSY', this.path, 'the database is busy: another writer held it past the busy timeout; nothing was written, retry');
  }

  private read<T>(work: () => T): T {
    return this.transaction(work, 'DEFERRED');
  }

  // Souls

  private soulRow(id: number): Soul {
    const row = this.get('SELECT * FROM souls WHERE id = :id', { id });
    if (!row) throw new NotFoundError('Soul', id);
    return toSoul(row);
  }

  private awakeSoulRow(id: number): Soul {
    const soul = this.soulRow(id);
    if (soul.deletedAt !== null) throw new InvalidStateError(`soul ${id} is dormant: awaken it first`);
    return soul;
  }

  /** Names are unique among awake souls by their folded key; the message names the soul that holds it, as it is spelt. */
  private assertNameFree(name: string, exceptId: number): void {
    const holder = this.get('SELECT name FROM souls WHERE name_key = :key AND deleted_at IS NULL AND id != :exceptId', { key: nameKey(name), exceptId });
    if (holder) throw new ConflictError('name', `an awake soul is already named "${String(holder.name)}"`);
  }

  private slugTaken(slug: string, exceptId: number): boolean {
    return this.get('SELECT 1 AS taken FROM souls WHERE slug = :slug AND deleted_at IS NULL AND id != :exceptId', { slug, exceptId }) !== undefined;
  }

  /** A chosen slug must be free; with none chosen, the name's slug, or the first free "-2", "-3" … after it. */
  private slugFor(chosen: string | null, name: string, exceptId: number): string {
    if (chosen === null) return freeSlug(slugBase(name), (slug) => this.slugTaken(slug, exceptId));
    if (this.slugTaken(chosen, exceptId)) throw new ConflictError('slug', `an awake soul already has the slug "${chosen}"`);
    return chosen;
  }

  insertSoul(input: NewSoul, now: number): Soul {
    return this.transaction(() => {
      this.assertNameFree(input.name, 0);
      const slug = this.slugFor(input.slug, input.name, 0);
      const { lastInsertRowid } = this.run(
        `INSERT INTO souls (name, name_key, slug, essence, description, level, created_at, updated_at, ordered_at)
         VALUES (:name, :key, :slug, :essence, :description, 0, :now, :now, :now)`,
        { ...input, key: nameKey(input.name), slug, now },
      );
      return this.soulRow(lastInsertRowid);
    });
  }

  updateSoul(id: number, patch: SoulPatch, now: number): Soul {
    return this.transaction(() => {
      const soul = this.soulRow(id);
      const next = { ...soul, ...patch };
      const awake = soul.deletedAt === null;
      if (awake) this.assertNameFree(next.name, id);
      // A dormant soul's slug is checked when it awakens.
      let slug = soul.slug;
      if (patch.slug !== undefined) slug = awake || patch.slug === null ? this.slugFor(patch.slug, next.name, id) : patch.slug;
      const blockChanged = next.name !== soul.name || next.essence !== soul.essence || next.description !== soul.description;
      this.run(
        `UPDATE souls SET name = :name, name_key = :key, slug = :slug, essence = :essence, description = :description, updated_at = :now,
           ordered_at = CASE WHEN :blockChanged THEN :now ELSE ordered_at END
         WHERE id = :id`,
        { id, name: next.name, key: nameKey(next.name), slug, essence: next.essence, description: next.description, now, blockChanged: blockChanged ? 1 : 0 },
      );
      return this.soulRow(id);
    });
  }

  setDormancy(id: number, change: { dormantAt: number | null; rename?: string }, now: number): Soul {
    return this.transaction(() => {
      const soul = this.soulRow(id);
      if (change.dormantAt !== null) {
        if (soul.deletedAt !== null) throw new InvalidStateError(`soul ${id} is already dormant`);
        this.run('UPDATE souls SET deleted_at = :at WHERE id = :id', { id, at: change.dormantAt });
        return this.soulRow(id);
      }
      if (soul.deletedAt === null) throw new InvalidStateError(`soul ${id} is not dormant`);
      const name = change.rename ?? soul.name;
      this.assertNameFree(name, id);
      // Its slug may have been given to another soul while it slept: it then takes a free one from its name.
      const slug = soul.slug !== null && !this.slugTaken(soul.slug, id) ? soul.slug : this.slugFor(null, name, id);
      const renamed = name !== soul.name;
      this.run(
        `UPDATE souls SET deleted_at = NULL, name = :name, name_key = :key, slug = :slug,
           updated_at = CASE WHEN :renamed THEN :now ELSE updated_at END, ordered_at = CASE WHEN :renamed THEN :now ELSE ordered_at END
         WHERE id = :id`,
        { id, name, key: nameKey(name), slug, renamed: renamed ? 1 : 0, now },
      );
      return this.soulRow(id);
    });
  }

  stampAttuned(id: number, now: number): Soul {
    return this.transaction(() => {
      this.awakeSoulRow(id);
      this.run('UPDATE souls SET last_attuned_at = :now WHERE id = :id', { id, now });
      this.run('INSERT INTO soul_attunements (soul_id, attuned_at) VALUES (:id, :now)', { id, now });
      return this.soulRow(id);
    });
  }

  getSouls(ids: readonly number[]): Map<number, Soul> {
    const rows = this.all(`SELECT * FROM souls WHERE id IN ${inList('ids')}`, { ids: json(ids) });
    return new Map(rows.map((r) => [Number(r.id), toSoul(r)]));
  }

  getSoulByName(name: string): Soul | null {
    const row = this.get('SELECT * FROM souls WHERE name_key = :key ORDER BY deleted_at IS NOT NULL, deleted_at DESC, id DESC LIMIT 1', { key: nameKey(name) });
    return row ? toSoul(row) : null;
  }

  listSouls(filter: { dormant: boolean }): Soul[] {
    const where = filter.dormant ? 'deleted_at IS NOT NULL' : 'deleted_at IS NULL';
    return this.all(`SELECT * FROM souls WHERE ${where} ORDER BY name, id`).map(toSoul);
  }

  // Traits and citations

  private traitRow(id: number): Trait {
    const row = this.get('SELECT * FROM soul_traits WHERE id = :id', { id });
    if (!row) throw new NotFoundError('Trait', id);
    return toTrait(row);
  }

  private activeCount(soulId: number): number {
    return Number(this.get(`SELECT COUNT(*) AS n FROM soul_traits WHERE soul_id = :soulId AND status = 'active'`, { soulId })!.n);
  }

  /** A write that changes the rendered block: the last write, and the reference time the render measures ages at. */
  private touchSoul(soulId: number, now: number): void {
    this.run('UPDATE souls SET updated_at = :now, ordered_at = :now WHERE id = :soulId', { soulId, now });
  }

  private assertShardsExist(ids: readonly number[]): void {
    if (ids.length === 0) return;
    const found = new Set(this.all(`SELECT id FROM soul_shards WHERE id IN ${inList('ids')}`, { ids: json(ids) }).map((r) => Number(r.id)));
    const missing = ids.find((id) => !found.has(id));
    if (missing !== undefined) throw new NotFoundError('Shard', missing);
  }

  /** Two active traits of a soul never share a principle (compared as stored: both went through the same normalization). */
  private assertPrincipleFree(soulId: number, principle: string, exceptId: number, refusal: (holder: number) => Error): void {
    const holder = this.get(`SELECT id FROM soul_traits WHERE soul_id = :soulId AND status = 'active' AND principle = :principle AND id != :exceptId ORDER BY id LIMIT 1`, {
      soulId,
      principle,
      exceptId,
    });
    if (holder) throw refusal(Number(holder.id));
  }

  /** A trait cites only shards attributed to its own soul (SPEC §12); the refusal names the shard's souls and the trait's. */
  private assertShardsOfSoul(soul: Soul, shardIds: readonly number[], refusal: (message: string) => Error, traitId: number | null): void {
    if (shardIds.length === 0) return;
    const own = new Set(
      this.all(`SELECT shard_id FROM shard_souls WHERE soul_id = :soulId AND shard_id IN ${inList('ids')}`, { soulId: soul.id, ids: json(shardIds) }).map((r) => Number(r.shard_id)),
    );
    const foreign = shardIds.find((id) => !own.has(id));
    if (foreign === undefined) return;
    const owners = this.all('SELECT so.id, so.name FROM shard_souls ss JOIN souls so ON so.id = ss.soul_id WHERE ss.shard_id = :id ORDER BY so.id', { id: foreign }).map((r) => ({
      id: Number(r.id),
      name: String(r.name),
    }));
    throw refusal(foreignShardMessage(foreign, owners, soul, traitId));
  }

  private insertCitation(shardId: number, traitId: number, now: number): boolean {
    return this.run('INSERT OR IGNORE INTO shard_citations (shard_id, trait_id, created_at) VALUES (:shardId, :traitId, :now)', { shardId, traitId, now }).changes > 0;
  }

  insertTrait(soulId: number, input: NewTrait, now: number, traitLimit: number): Trait {
    return this.transaction(() => {
      const soul = this.awakeSoulRow(soulId);
      const active = this.activeCount(soulId);
      if (active >= traitLimit) throw new CapacityError(traitLimit, active);
      this.assertPrincipleFree(soulId, input.principle, 0, (holder) => new ValidationError('principle', duplicatePrincipleMessage(holder)));
      this.assertShardsExist(input.citeShardIds);
      this.assertShardsOfSoul(soul, input.citeShardIds, (message) => new ValidationError('citeShardIds', message), null);
      const { lastInsertRowid: id } = this.run(
        `INSERT INTO soul_traits (soul_id, principle, provenance, generation, status, created_at, updated_at)
         VALUES (:soulId, :principle, :provenance, :generation, 'active', :now, :now)`,
        { soulId, principle: input.principle, provenance: input.provenance, generation: soul.level, now },
      );
      for (const shardId of input.citeShardIds) this.insertCitation(shardId, id, now);
      this.touchSoul(soulId, now);
      return this.traitRow(id);
    });
  }

  updateTrait(id: number, patch: { principle?: string; provenance?: string }, now: number): Trait {
    return this.transaction(() => {
      const trait = this.traitRow(id);
      this.awakeSoulRow(trait.soulId);
      if (trait.status !== 'active') throw new InvalidStateError(`trait ${id} is ${trait.status}: only active traits can be revised`);
      if (patch.principle !== undefined) this.assertPrincipleFree(trait.soulId, patch.principle, id, (holder) => new ValidationError('principle', duplicatePrincipleMessage(holder)));
      this.run('UPDATE soul_traits SET principle = :principle, provenance = :provenance, updated_at = :now WHERE id = :id', {
        id,
        principle: patch.principle ?? trait.principle,
        provenance: patch.provenance ?? trait.provenance,
        now,
      });
      this.touchSoul(trait.soulId, now);
      return this.traitRow(id);
    });
  }

  setTraitStatus(id: number, status: 'active' | 'reverted', now: number, traitLimit: number): Trait {
    return this.transaction(() => {
      const trait = this.traitRow(id);
      this.awakeSoulRow(trait.soulId);
      if (status === 'reverted' && trait.status !== 'active') {
        throw new InvalidStateError(`trait ${id} is ${trait.status}: only active traits can be reverted`);
      }
      if (status === 'active') {
        if (trait.status === 'active') throw new InvalidStateError(`trait ${id} is already active`);
        const active = this.activeCount(trait.soulId);
        if (active >= traitLimit) throw new CapacityError(traitLimit, active);
        this.assertPrincipleFree(trait.soulId, trait.principle, id, (holder) => new InvalidStateError(`trait ${id} cannot be reactivated: ${duplicatePrincipleMessage(holder)}`));
      }
      this.run('UPDATE soul_traits SET status = :status, merged_into = NULL, updated_at = :now WHERE id = :id', { id, status, now });
      this.touchSoul(trait.soulId, now);
      return this.traitRow(id);
    });
  }

  getTraits(ids: readonly number[]): Map<number, Trait> {
    const rows = this.all(`SELECT * FROM soul_traits WHERE id IN ${inList('ids')}`, { ids: json(ids) });
    return new Map(rows.map((r) => [Number(r.id), toTrait(r)]));
  }

  listTraits(soulIds: readonly number[], filter: TraitFilter = {}): Trait[] {
    const clauses = [`soul_id IN ${inList('soulIds')}`];
    const params: Params = { soulIds: json(soulIds) };
    if (filter.statuses) {
      clauses.push(`status IN ${inList('statuses')}`);
      params.statuses = json(filter.statuses);
    }
    if (filter.generation !== undefined) {
      clauses.push('generation = :generation');
      params.generation = filter.generation;
    }
    return this.all(`SELECT * FROM soul_traits WHERE ${clauses.join(' AND ')} ORDER BY soul_id, created_at, id`, params).map(toTrait);
  }

  countActiveTraits(soulIds: readonly number[]): Map<number, number> {
    const rows = this.all(
      `SELECT soul_id, COUNT(*) AS n FROM soul_traits WHERE soul_id IN ${inList('soulIds')} AND status = 'active' GROUP BY soul_id`,
      { soulIds: json(soulIds) },
    );
    const counts = new Map<number, number>(soulIds.map((id) => [id, 0]));
    for (const r of rows) counts.set(Number(r.soul_id), Number(r.n));
    return counts;
  }

  citeShards(traitId: number, shardIds: readonly number[], now: number): number[] {
    return this.transaction(() => {
      const trait = this.traitRow(traitId);
      this.assertShardsExist(shardIds);
      const soul = this.awakeSoulRow(trait.soulId);
      if (trait.status !== 'active') throw new InvalidStateError(`trait ${traitId} is ${trait.status}: only active traits can cite shards`);
      this.assertShardsOfSoul(soul, shardIds, (message) => new InvalidStateError(message), traitId);
      const cited = [...new Set(shardIds)].filter((shardId) => this.insertCitation(shardId, traitId, now));
      const conflicts = this.counterCitationsWhere(`c.trait_id = :traitId AND o.trait_id = :traitId AND c.shard_id IN ${inList('ids')}`, { traitId, ids: json(shardIds) });
      if (conflicts.length > 0) throw citedCounterEvidence('shardIds', conflicts);
      if (cited.length > 0) this.touchSoul(trait.soulId, now);
      return cited;
    });
  }

  citeShardsOfTraits(cites: readonly { traitId: number; shardIds: readonly number[] }[], now: number, dryRun: boolean): number[][] {
    try {
      return this.transaction(() => {
        const fresh = cites.map((c) => this.citeShards(c.traitId, c.shardIds, now));
        if (dryRun) throw new DryRunRollback(fresh);
        return fresh;
      });
    } catch (error) {
      if (error instanceof DryRunRollback) return error.value as number[][];
      throw error;
    }
  }

  unciteShards(traitId: number, shardIds: readonly number[], now: number, shardFadeCitations: number, cutoff: number): { gate: GateStats[] } {
    return this.transaction(() => {
      const trait = this.traitRow(traitId);
      this.assertShardsExist(shardIds);
      this.awakeSoulRow(trait.soulId);
      if (trait.status !== 'active') throw new InvalidStateError(`trait ${traitId} is ${trait.status}: only an active trait's citations can be taken back`);
      const ids = [...new Set(shardIds)];
      const cited = new Set(
        this.all(`SELECT shard_id FROM shard_citations WHERE trait_id = :traitId AND shard_id IN ${inList('ids')}`, { traitId, ids: json(ids) }).map((r) => Number(r.shard_id)),
      );
      const uncited = ids.filter((id) => !cited.has(id));
      if (uncited.length > 0) throw new InvalidStateError(`trait ${traitId} does not cite ${uncited.length === 1 ? 'shard' : 'shards'} ${uncited.join(', ')}: nothing to take back`);
      this.run(`DELETE FROM shard_citations WHERE trait_id = :traitId AND shard_id IN ${inList('ids')}`, { traitId, ids: json(ids) });
      this.touchSoul(trait.soulId, now);
      return { gate: this.unfade(ids, now, shardFadeCitations, cutoff) };
    });
  }

  /** Shards among these that are faded but no longer exhausted return to pending; the cheap gate of their souls, with them as the new evidence. */
  private unfade(shardIds: readonly number[], now: number, shardFadeCitations: number, cutoff: number): GateStats[] {
    const unfaded = this.all(
      `UPDATE soul_shards SET status = 'pending', updated_at = :now
       WHERE id IN ${inList('ids')} AND status = 'faded' AND ${citingTraitCount('soul_shards.id')} < :threshold
       RETURNING id`,
      { now, ids: json(shardIds), threshold: shardFadeCitations },
    ).map((r) => Number(r.id));
    if (unfaded.length === 0) return [];
    const soulIds = this.soulsOfShards(unfaded);
    this.forgetGate(soulIds);
    return this.gate(soulIds, cutoff, `s.id IN ${inList('unfaded')}`, { unfaded: json(unfaded) });
  }

  private citations(column: 'trait_id' | 'shard_id', ids: readonly number[]): Citation[] {
    return this.all(
      `SELECT shard_id, trait_id, created_at FROM shard_citations WHERE ${column} IN ${inList('ids')} ORDER BY created_at, shard_id, trait_id`,
      { ids: json(ids) },
    ).map((r) => ({ shardId: Number(r.shard_id), traitId: Number(r.trait_id), createdAt: Number(r.created_at) }));
  }

  citationsOfTraits(traitIds: readonly number[]): Citation[] {
    return this.citations('trait_id', traitIds);
  }

  citationsOfShards(shardIds: readonly number[]): Citation[] {
    return this.citations('shard_id', shardIds);
  }

  attunements(soulIds: readonly number[]): Map<number, number[]> {
    const result = new Map<number, number[]>(soulIds.map((id) => [id, []]));
    const rows = this.all(`SELECT soul_id, attuned_at FROM soul_attunements WHERE soul_id IN ${inList('soulIds')} ORDER BY soul_id, attuned_at`, {
      soulIds: json(soulIds),
    });
    for (const r of rows) result.get(Number(r.soul_id))!.push(Number(r.attuned_at));
    return result;
  }

  // Imported documents

  putSoulDocument(soulId: number, document: { format: string; file: string; text: string }, now: number): SoulDocument {
    return this.transaction(() => {
      this.awakeSoulRow(soulId);
      this.run(
        `INSERT INTO soul_documents (soul_id, format, file, text, stored_at) VALUES (:soulId, :format, :file, :text, :now)
         ON CONFLICT (soul_id, format) DO UPDATE SET file = excluded.file, text = excluded.text, stored_at = excluded.stored_at`,
        { soulId, format: document.format, file: document.file, text: document.text, now },
      );
      return { soulId, ...document, storedAt: now };
    });
  }

  getSoulDocument(soulId: number, format: string): SoulDocument | null {
    const row = this.get('SELECT * FROM soul_documents WHERE soul_id = :soulId AND format = :format', { soulId, format });
    return row ? toSoulDocument(row) : null;
  }

  // Themes

  /** Theme writes answer a dormant soul as bad input (the themes' unions carry no state error). */
  private themeCount(soulId: number): number {
    return Number(this.get('SELECT count(*) AS n FROM soul_themes WHERE soul_id = :soulId', { soulId })!.n);
  }

  private themeSoul(soulId: number): Soul {
    const soul = this.soulRow(soulId);
    if (soul.deletedAt !== null) throw new ValidationError('soulId', `soul ${soulId} is dormant: awaken it first`);
    return soul;
  }

  /** Every shard must be attributed to the soul: an unknown one is NotFound, another soul's a ValidationError at its field. */
  private assertAttributed(soulId: number, shards: ReadonlyArray<{ id: number; field: string }>): void {
    const ids = json(shards.map((s) => s.id));
    const attributed = new Set(this.all(`SELECT shard_id FROM shard_souls WHERE soul_id = :soulId AND shard_id IN ${inList('ids')}`, { soulId, ids }).map((r) => Number(r.shard_id)));
    const stray = shards.filter((s) => !attributed.has(s.id));
    if (stray.length === 0) return;
    this.assertShardsExist(stray.map((s) => s.id));
    throw new ValidationError(stray[0]!.field, `shard ${stray[0]!.id} is not attributed to soul ${soulId}`);
  }

  private themeEvent(event: Parameters<typeof themeEventParams>[0]): void {
    this.run(insertThemeEventSql, themeEventParams(event));
  }

  private shardThemeIds(soulId: number, shardIds: readonly number[]): Map<number, number> {
    const rows = this.all(`SELECT shard_id, theme_id FROM shard_themes WHERE soul_id = :soulId AND shard_id IN ${inList('ids')}`, { soulId, ids: json(shardIds) });
    return new Map(rows.map((r) => [Number(r.shard_id), Number(r.theme_id)]));
  }

  private hydrateThemes(rows: Row[]): Map<number, Theme> {
    if (rows.length === 0) return new Map();
    const ids = json(rows.map((r) => Number(r.id)));
    const members = this.all(`SELECT theme_id, shard_id FROM shard_themes WHERE theme_id IN ${inList('ids')} ORDER BY theme_id, shard_id`, { ids });
    const oppositions = this.all(`SELECT theme_id, trait_id FROM theme_oppositions WHERE theme_id IN ${inList('ids')} ORDER BY theme_id, trait_id`, { ids });
    return toThemes(rows, members, oppositions);
  }

  private themeRow(id: number): Theme {
    const theme = this.hydrateThemes(this.all('SELECT * FROM soul_themes WHERE id = :id', { id })).get(id);
    if (!theme) throw new NotFoundError('Theme', id);
    return theme;
  }

  judgeThemes(soulId: number, assignments: readonly ThemeAssignmentWrite[], opposes: readonly (readonly number[])[], actor: string, now: number, maxThemes: number, dryRun: boolean): Theme[] {
    try {
      return this.transaction(() => {
        const themes = this.assignThemes(soulId, assignments, actor, now, maxThemes);
        opposes.forEach((traitIds, i) => {
          for (const traitId of traitIds) themes[i] = this.setThemeOpposition(themes[i].id, traitId, true, actor, now);
        });
        if (dryRun) throw new DryRunRollback(themes);
        return themes;
      });
    } catch (error) {
      if (error instanceof DryRunRollback) return error.value as Theme[];
      throw error;
    }
  }

  assignThemes(soulId: number, assignments: readonly ThemeAssignmentWrite[], actor: string, now: number, maxThemes: number): Theme[] {
    return this.transaction(() => {
      this.themeSoul(soulId);
      this.assertAttributed(
        soulId,
        assignments.flatMap((a, i) => a.shardIds.map((id, j) => ({ id, field: `assignments[${i}].shardIds[${j}]` }))),
      );
      if (assignments.some((a) => a.newThemeName !== null)) refuseThemesPastLimit(this.themeCount(soulId), maxThemes, assignments.map((a) => a.newThemeName));
      const named = this.all(`SELECT * FROM soul_themes WHERE id IN ${inList('ids')}`, { ids: json(assignments.flatMap((a) => (a.themeId === null ? [] : [a.themeId]))) });
      const existing = new Map(named.map((r) => [Number(r.id), Number(r.soul_id)]));
      assignments.forEach((a, i) => {
        if (a.themeId !== null) {
          const owner = existing.get(a.themeId);
          if (owner === undefined) throw new NotFoundError('Theme', a.themeId);
          if (owner !== soulId) throw new ValidationError(`assignments[${i}].themeId`, `theme ${a.themeId} belongs to another soul`);
        } else {
          const holder = this.get('SELECT id FROM soul_themes WHERE soul_id = :soulId AND name_key = :key', { soulId, key: nameKey(a.newThemeName!) });
          if (holder) throw new ValidationError(`assignments[${i}].newThemeName`, `the soul already has a theme named "${a.newThemeName}" (theme ${String(holder.id)}): assign to its themeId`);
        }
      });
      const current = this.shardThemeIds(soulId, assignments.flatMap((a) => a.shardIds));
      const moved: number[] = [];
      const themeIds = assignments.map((a) => {
        const themeId =
          a.themeId ??
          this.run(
            `INSERT INTO soul_themes (soul_id, name, name_key, created_by, created_at, updated_at) VALUES (:soulId, :name, :key, :actor, :now, :now)`,
            { soulId, name: a.newThemeName!, key: nameKey(a.newThemeName!), actor, now },
          ).lastInsertRowid;
        const movedBefore = moved.length;
        for (const shardId of a.shardIds) {
          const from = current.get(shardId) ?? null;
          if (from === themeId) continue;
          this.run(
            `INSERT INTO shard_themes (soul_id, shard_id, theme_id) VALUES (:soulId, :shardId, :themeId)
             ON CONFLICT (soul_id, shard_id) DO UPDATE SET theme_id = excluded.theme_id`,
            { soulId, shardId, themeId },
          );
          this.themeEvent({ soulId, kind: 'assign', themeId, shardId, fromThemeId: from, toThemeId: themeId, actor, at: now });
          if (from !== null) this.run('UPDATE soul_themes SET updated_at = :now WHERE id = :from', { from, now });
          moved.push(shardId);
        }
        if (moved.length > movedBefore) this.run('UPDATE soul_themes SET updated_at = :now WHERE id = :themeId', { themeId, now });
        return themeId;
      });
      this.assertAssignmentsChange(soulId, assignments, current, moved);
      const themes = this.hydrateThemes(this.all(`SELECT * FROM soul_themes WHERE id IN ${inList('ids')}`, { ids: json(themeIds) }));
      return themeIds.map((id) => themes.get(id)!);
    });
  }

  unassignShards(soulId: number, shardIds: readonly number[], actor: string, now: number): Theme[] {
    return this.transaction(() => {
      this.themeSoul(soulId);
      this.assertAttributed(soulId, shardIds.map((id, j) => ({ id, field: `shardIds[${j}]` })));
      const current = this.shardThemeIds(soulId, shardIds);
      if (current.size === 0) throw nothingToUnassign(soulId, shardIds);
      for (const shardId of shardIds) {
        const from = current.get(shardId);
        if (from === undefined) continue;
        this.run('DELETE FROM shard_themes WHERE soul_id = :soulId AND shard_id = :shardId', { soulId, shardId });
        this.themeEvent({ soulId, kind: 'unassign', themeId: from, shardId, fromThemeId: from, toThemeId: null, actor, at: now });
      }
      const left = [...new Set(current.values())].sort((a, b) => a - b);
      this.run(`UPDATE soul_themes SET updated_at = :now WHERE id IN ${inList('ids')}`, { ids: json(left), now });
      const themes = this.hydrateThemes(this.all(`SELECT * FROM soul_themes WHERE id IN ${inList('ids')}`, { ids: json(left) }));
      return left.map((id) => themes.get(id)!);
    });
  }

  renameTheme(themeId: number, name: string, actor: string, now: number): Theme {
    return this.transaction(() => {
      const theme = this.themeRow(themeId);
      this.awakeSoulRow(theme.soulId);
      if (theme.name === name) throw alreadyNamed(themeId, name);
      const key = nameKey(name);
      const holder = this.get('SELECT id FROM soul_themes WHERE soul_id = :soulId AND name_key = :key AND id != :themeId', { soulId: theme.soulId, key, themeId });
      if (holder) throw new ValidationError('name', `the soul already has a theme named "${name}" (theme ${String(holder.id)})`);
      this.run('UPDATE soul_themes SET name = :name, name_key = :key, updated_at = :now WHERE id = :themeId', { name, key, now, themeId });
      this.themeEvent({ soulId: theme.soulId, kind: 'rename', themeId, detail: theme.name, actor, at: now });
      return this.themeRow(themeId);
    });
  }

  setThemeOpposition(themeId: number, traitId: number, opposed: boolean, actor: string, now: number): Theme {
    return this.transaction(() => {
      const theme = this.themeRow(themeId);
      const trait = this.traitRow(traitId);
      this.awakeSoulRow(theme.soulId);
      if (trait.soulId !== theme.soulId) throw new ValidationError('traitId', `trait ${traitId} belongs to another soul than theme ${themeId}`);
      if (opposed && trait.status !== 'active') throw new InvalidStateError(`trait ${traitId} is ${trait.status}: only an active trait can be opposed`);
      const changed = opposed
        ? this.run('INSERT OR IGNORE INTO theme_oppositions (theme_id, trait_id) VALUES (:themeId, :traitId)', { themeId, traitId }).changes > 0
        : this.run('DELETE FROM theme_oppositions WHERE theme_id = :themeId AND trait_id = :traitId', { themeId, traitId }).changes > 0;
      if (!changed) throw opposed ? alreadyOpposed(themeId, traitId) : notOpposed(themeId, traitId);
      const conflicts = opposed ? this.counterCitationsWhere('o.theme_id = :themeId AND o.trait_id = :traitId AND c.trait_id = :traitId', { themeId, traitId }) : [];
      if (conflicts.length > 0) throw opposedSupport('traitId', conflicts);
      this.run('UPDATE soul_themes SET updated_at = :now WHERE id = :themeId', { themeId, now });
      this.themeEvent({ soulId: theme.soulId, kind: opposed ? 'oppose' : 'unoppose', themeId, traitId, actor, at: now });
      return this.themeRow(themeId);
    });
  }

  getThemes(ids: readonly number[]): Map<number, Theme> {
    return this.read(() => this.hydrateThemes(this.all(`SELECT * FROM soul_themes WHERE id IN ${inList('ids')} ORDER BY id`, { ids: json(ids) })));
  }

  listThemes(soulIds: readonly number[]): Theme[] {
    return this.read(() => [...this.hydrateThemes(this.all(`SELECT * FROM soul_themes WHERE soul_id IN ${inList('ids')} ORDER BY soul_id, id`, { ids: json(soulIds) })).values()]);
  }

  themesOfShards(soulId: number, shardIds: readonly number[]): Map<number, number> {
    return this.shardThemeIds(soulId, shardIds);
  }

  shardThemesOfSouls(soulIds: readonly number[]): Map<number, Map<number, number>> {
    const result = new Map<number, Map<number, number>>(soulIds.map((id) => [id, new Map()]));
    const rows = this.all(`SELECT soul_id, shard_id, theme_id FROM shard_themes WHERE soul_id IN ${inList('ids')}`, { ids: json(soulIds) });
    for (const r of rows) result.get(Number(r.soul_id))?.set(Number(r.shard_id), Number(r.theme_id));
    return result;
  }

  counterEvidence(traitIds: readonly number[]): Map<number, number[]> {
    const result = new Map<number, number[]>(traitIds.map((id) => [id, []]));
    const rows = this.all(
      `SELECT DISTINCT o.trait_id, st.shard_id FROM theme_oppositions o JOIN shard_themes st ON st.theme_id = o.theme_id
       WHERE o.trait_id IN ${inList('ids')} ORDER BY o.trait_id, st.shard_id`,
      { ids: json(traitIds) },
    );
    for (const r of rows) result.get(Number(r.trait_id))?.push(Number(r.shard_id));
    return result;
  }

  counterCitations(opposedTraitIds: readonly number[], citingTraitIds: readonly number[]): CounterCitation[] {
    return this.counterCitationsWhere(`o.trait_id IN ${inList('opposed')} AND c.trait_id IN ${inList('citing')}`, { opposed: json(opposedTraitIds), citing: json(citingTraitIds) });
  }

  private counterCitationsWhere(where: string, params: Params): CounterCitation[] {
    return this.all(counterCitationsSql(where), params).map(toCounterCitation);
  }

  /**
   * A call that moved no shard and created no theme changed nothing (SPEC §13); one that made a trait cite a shard of
   * a theme opposing it is refused at the first such shard's field. Runs after the moves, inside their transaction.
   */
  private assertAssignmentsChange(soulId: number, assignments: readonly ThemeAssignmentWrite[], current: ReadonlyMap<number, number>, moved: readonly number[]): void {
    if (moved.length === 0 && assignments.every((a) => a.themeId !== null)) throw alreadyAssigned(Map.groupBy(assignments.flatMap((a) => a.shardIds), (id) => current.get(id)!));
    const conflicts = this.counterCitationsWhere(`c.trait_id = o.trait_id AND st.soul_id = :soulId AND st.shard_id IN ${inList('moved')}`, { soulId, moved: json(moved) });
    if (conflicts.length > 0) throw assignedSupport(assignmentField(assignments, conflicts[0].shardId), conflicts);
  }

  themeHistory(soulIds: readonly number[]): ThemeEvent[] {
    return this.all(`SELECT * FROM theme_events WHERE soul_id IN ${inList('ids')} ORDER BY id`, { ids: json(soulIds) }).map(toThemeEvent);
  }

  // Level-ups

  applyLevelUp(soulId: number, plan: LevelUpWrite, now: number): LevelEvent {
    return this.transaction(() => {
      const soul = this.awakeSoulRow(soulId);
      const active = this.all(`SELECT id FROM soul_traits WHERE soul_id = :soulId AND status = 'active' ORDER BY id`, { soulId }).map((r) => Number(r.id));
      const expected = [...plan.activeTraitIds].sort((a, b) => a - b);
      if (active.length !== expected.length || active.some((id, i) => id !== expected[i])) {
        throw new InvalidStateError(`the active traits of soul ${soulId} changed while the plan was being checked: validate it again`);
      }
      const sources = plan.consolidations.flatMap((g) => g.sourceTraitIds);
      const conflicts = consolidationConflicts(plan.consolidations, this.counterCitations(sources, sources));
      if (conflicts.length > 0) throw new LevelUpPlanError({ missing: [], duplicated: [], notActive: [], problems: conflicts });
      const level = soul.level + 1;
      const touched = [...sources, ...plan.promotedTraitIds, ...plan.carriedTraitIds];
      const updatedBefore: TraitTime[] = this.all(`SELECT id, updated_at FROM soul_traits WHERE id IN ${inList('ids')} ORDER BY id`, { ids: json(touched) }).map(
        (r) => ({ id: Number(r.id), updatedAt: Number(r.updated_at) }),
      );
      const merged: number[] = [];
      for (const group of plan.consolidations) {
        const { lastInsertRowid: mergedId } = this.run(
          `INSERT INTO soul_traits (soul_id, principle, provenance, generation, status, created_at, updated_at)
           VALUES (:soulId, :principle, :provenance, :level, 'active', :now, :now)`,
          { soulId, principle: group.mergedPrinciple, provenance: group.mergedProvenance, level, now },
        );
        merged.push(mergedId);
        // Like citations, a merged trait starts with what contradicted any of its sources; a revert takes it back.
        this.run(
          `INSERT OR IGNORE INTO theme_oppositions (theme_id, trait_id) SELECT DISTINCT theme_id, :mergedId FROM theme_oppositions WHERE trait_id IN ${inList('ids')}`,
          { mergedId, ids: json(group.sourceTraitIds) },
        );
        this.run(`UPDATE soul_traits SET status = 'consolidated', merged_into = :mergedId, updated_at = :now WHERE id IN ${inList('ids')}`, {
          mergedId,
          now,
          ids: json(group.sourceTraitIds),
        });
        this.run(carrySourceCitationsSql(inList('ids'), ':mergedId'), { mergedId, ids: json(group.sourceTraitIds) });
      }
      this.run(`UPDATE soul_traits SET status = 'promoted', updated_at = :now WHERE id IN ${inList('ids')}`, { now, ids: json(plan.promotedTraitIds) });
      plan.consolidations.forEach((group, i) => this.assertPrincipleFree(soulId, group.mergedPrinciple, merged[i], (holder) => new InvalidStateError(`consolidation ${i + 1} would repeat a principle: ${duplicatePrincipleMessage(holder)}`)));
      const carried: CarriedTrait[] = this.all(`SELECT id, generation FROM soul_traits WHERE id IN ${inList('ids')} ORDER BY id`, {
        ids: json(plan.carriedTraitIds),
      }).map((r) => ({ id: Number(r.id), generation: Number(r.generation) }));
      this.run(`UPDATE soul_traits SET generation = :level, updated_at = :now WHERE id IN ${inList('ids')}`, { level, now, ids: json(plan.carriedTraitIds) });
      this.run('UPDATE souls SET essence = :essence, level = :level, updated_at = :now, ordered_at = :now WHERE id = :soulId', {
        soulId,
        essence: plan.newEssence,
        level,
        now,
      });
      return toLevelEvent(this.get(insertLevelEventSql, levelEventParams(soul, plan, carried, merged, updatedBefore, now))!);
    });
  }

  revertLevelUp(soulId: number, now: number, shardFadeCitations: number, cutoff: number, levelEventId: number | null = null): { event: LevelEvent; gate: GateStats[] } {
    return this.transaction(() => {
      const soul = this.awakeSoulRow(soulId);
      const row = this.get('SELECT * FROM soul_levels WHERE soul_id = :soulId AND reverted_at IS NULL ORDER BY id DESC LIMIT 1', { soulId });
      if (levelEventId !== null) checkRevertTarget(soulId, levelEventId, this.get('SELECT soul_id, reverted_at FROM soul_levels WHERE id = :id', { id: levelEventId }), row);
      if (!row) throw new InvalidStateError(`soul ${soulId} has no level-up to revert`);
      const event = toLevelEvent(row);
      const saved = JSON.parse(String(row.traits_updated_before)) as TraitTime[];
      // Trait times the level-up set go back to what they were, so staleness reads as before it; a trait written since keeps the revert's time.
      const untouched = new Set(
        this.all(`SELECT id FROM soul_traits WHERE id IN ${inList('ids')} AND updated_at = :levelAt`, { ids: json(saved.map((t) => t.id)), levelAt: event.createdAt }).map(
          (r) => Number(r.id),
        ),
      );
      const restored = json([...event.consolidated, ...event.promoted]);
      this.run(`UPDATE soul_traits SET status = 'active', merged_into = NULL, updated_at = :now WHERE id IN ${inList('ids')}`, { now, ids: restored });
      const merged = json(event.merged);
      const citedShards = this.all(`SELECT DISTINCT shard_id FROM shard_citations WHERE trait_id IN ${inList('ids')}`, { ids: merged }).map((r) => Number(r.shard_id));
      this.run(`UPDATE soul_traits SET merged_into = NULL WHERE merged_into IN ${inList('ids')}`, { ids: merged });
      this.run(`DELETE FROM shard_citations WHERE trait_id IN ${inList('ids')}`, { ids: merged });
      this.run(`DELETE FROM theme_oppositions WHERE trait_id IN ${inList('ids')}`, { ids: merged });
      this.run(`DELETE FROM soul_traits WHERE id IN ${inList('ids')}`, { ids: merged });
      for (const carried of event.carried) {
        this.run('UPDATE soul_traits SET generation = :generation, updated_at = :now WHERE id = :id', { ...carried, now });
      }
      for (const before of saved) if (untouched.has(before.id)) this.run('UPDATE soul_traits SET updated_at = :updatedAt WHERE id = :id', before);
      // The render's reference time comes back with the essence (level rows from before it was saved fall back to now).
      this.run('UPDATE souls SET essence = :essence, level = :level, updated_at = :now, ordered_at = COALESCE(:orderedAt, :now) WHERE id = :soulId', {
        soulId,
        essence: event.essenceBefore,
        level: soul.level - 1,
        orderedAt: row.ordered_at_before,
        now,
      });
      this.run('UPDATE soul_levels SET reverted_at = :now WHERE id = :id', { id: event.id, now });
      return { event: { ...event, revertedAt: now }, gate: this.unfade(citedShards, now, shardFadeCitations, cutoff) };
    });
  }

  levelHistory(soulIds: readonly number[]): LevelEvent[] {
    return this.all(`SELECT * FROM soul_levels WHERE soul_id IN ${inList('soulIds')} ORDER BY soul_id, id`, { soulIds: json(soulIds) }).map(toLevelEvent);
  }

  getLevelEvents(ids: readonly number[]): Map<number, LevelEvent> {
    const rows = this.all(`SELECT * FROM soul_levels WHERE id IN ${inList('ids')}`, { ids: json(ids) });
    return new Map(rows.map((r) => [Number(r.id), toLevelEvent(r)]));
  }

  // Shards

  private assertSoulsExist(ids: readonly number[]): void {
    const found = new Set(this.all(`SELECT id FROM souls WHERE id IN ${inList('ids')}`, { ids: json(ids) }).map((r) => Number(r.id)));
    const missing = ids.find((id) => !found.has(id));
    if (missing !== undefined) throw new NotFoundError('Soul', missing);
  }

  /**
   * The cheap gate (SPEC §4 conditions 1, 3, 4, 5) for each soul in one indexed
   * query, computed twice over: with every considered shard, and leaving out
   * the shards `isNew` picks (those this write inserted or revealed).
   */
  private gate(soulIds: readonly number[], cutoff: number, isNew: string, params: Params): GateStats[] {
    const rows = this.all(gateSql(isNew), { ...params, soulIds: json(soulIds), cutoff });
    return rows.map(toGateStats);
  }

  private soulsOfShards(shardIds: readonly number[]): number[] {
    return this.all(`SELECT DISTINCT soul_id FROM shard_souls WHERE shard_id IN ${inList('ids')} ORDER BY soul_id`, { ids: json(shardIds) }).map((r) =>
      Number(r.soul_id),
    );
  }

  /**
   * A few multi-row statements per table for the whole batch, with ids assigned here as SQLite would
   * (the largest plus one), and the souls' gate rows read and written once each: no per-row round trips.
   */
  insertShards(shards: readonly NewShard[], now: number, cutoff: number, withIds: (stats: GateStats) => boolean = everySoul): ShardWrite {
    if (shards.length === 0) return { shardIds: [], gate: [] };
    const held = this.writeMemo;
    return this.transaction(() => {
      const { memo, version } = this.currentWriteMemo(held);
      this.writeMemo = null;
      const attributions = shards.map((s) => [...new Set(s.soulIds)]);
      const soulIds = [...new Set(attributions.flat())].sort((a, b) => a - b);
      this.fixEmbeddingDimension(shards, PROVIDED_MODEL);
      const { states: before, lastShardId, remembered } = this.currentGate(soulIds, cutoff, memo);
      if (before.length < soulIds.length) this.assertSoulsExist(soulIds);
      const first = lastShardId + 1;
      const shardIds = shards.map((_, i) => first + i);
      this.insertRows(
        'INSERT INTO soul_shards (id, content, source, status, sealed, created_at, updated_at, recorded_at, embedding)',
        "(?, ?, ?, 'pending', ?, ?, ?, ?, ?)",
        shards.map((s, i) => [shardIds[i], s.content, s.source, s.sealed ? 1 : 0, s.createdAt, now, now, s.embedding]),
      );
      this.insertRows('INSERT INTO shard_souls (shard_id, soul_id)', '(?, ?)', attributions.flatMap((souls, i) => souls.map((soulId) => [shardIds[i], soulId])));
      this.insertRows('INSERT OR IGNORE INTO shard_tags (shard_id, tag)', '(?, ?)', shards.flatMap((s, i) => s.tags.map((tag) => [shardIds[i], tag])));
      const evidence = shards.flatMap((s, i) =>
        // As SQLite stores it: binding replaces a lone surrogate, and the rebuilt counts must use the same key.
        // Recorded now, whatever its createdAt (a historical import's): recency counts arrival (SPEC §13).
        s.sealed ? [] : attributions[i].map((soulId) => ({ soulId, shardId: shardIds[i], source: s.source.toWellFormed(), createdAt: s.createdAt, latest: Math.max(s.createdAt, now) })),
      );
      const after = withEvidence(before, evidence, cutoff);
      const through = shardIds.at(-1)!;
      // Rows read from the store are saved at once; rows the memo carried wait for the next save of them all.
      if (!remembered) this.saveGateRows([...after.values()].map((g) => ({ ...g, floor: cutoff })), through);
      const known = remembered ? this.rememberedIds(memo!, before, evidence, cutoff) : new Map<number, { before: number[]; after: number[] }>();
      const { stats, read } = this.writeGate(before, after, cutoff, (id) => id >= first, withIds, known);
      const next = this.nextWriteMemo(memo, version, after, stats, read, cutoff, through);
      if (remembered) this.keepUnsaved(next, soulIds);
      if (next.gates.size <= MEMO_SOULS) this.writeMemo = next;
      else this.saveUnsaved(next);
      return { shardIds, gate: stats };
    });
  }

  /**
   * The last shard write's memo, if nothing has written since; read inside the write's transaction. No other write
   * of this store ran since (each drops it), so only another connection's commit is left to check.
   */
  private currentWriteMemo(held: WriteMemo | null): { memo: WriteMemo | null; version: number } {
    const version = this.dataVersion();
    return { memo: held !== null && held.version === version ? held : null, version };
  }

  /** Moves when another connection commits (not with this one's own writes). */
  private dataVersion(): number {
    return Number((this.stmt('PRAGMA data_version').get() as Row).data_version);
  }

  /** Per soul whose row the memo held, its considered shard ids before and after the write (for those it remembers). */
  private rememberedIds(memo: WriteMemo, before: readonly GateState[], evidence: readonly Evidence[], cutoff: number): Map<number, { before: number[]; after: number[] }> {
    const known = new Map<number, { before: number[]; after: number[] }>();
    for (const g of before) {
      const ids = memo.ids.get(g.soulId);
      if (ids !== undefined) known.set(g.soulId, { before: ids, after: [...ids] });
    }
    for (const e of evidence) if (e.createdAt > cutoff) known.get(e.soulId)?.after.push(e.shardId);
    return known;
  }

  /** Saves the memo's unsaved rows (within the write's transaction): each is exact up to the memo's last shard, as no other write has touched its soul since. */
  private saveUnsaved(memo: WriteMemo): void {
    this.saveGateRows([...memo.unsaved].map((id) => memo.gates.get(id)!), memo.lastShardId);
    memo.unsaved.clear();
    memo.writesUnsaved = 0;
  }

  /** Marks the souls' rows unsaved, and every SAVE_GATE_ROWS-th time saves all unsaved rows (within the write's transaction). */
  private keepUnsaved(memo: WriteMemo, soulIds: readonly number[]): void {
    for (const id of soulIds) memo.unsaved.add(id);
    if (++memo.writesUnsaved >= SAVE_GATE_ROWS) this.saveUnsaved(memo);
  }

  /** What this write leaves for the next: its gate rows and id lists over what the memo already held. */
  private nextWriteMemo(memo: WriteMemo | null, version: number, after: ReadonlyMap<number, GateState>, stats: readonly GateStats[], read: ReadonlySet<number>, cutoff: number, lastShardId: number): WriteMemo {
    const next: WriteMemo = memo ?? { version: 0, lastShardId: 0, gates: new Map(), ids: new Map(), idCount: 0, unsaved: new Set(), writesUnsaved: 0 };
    next.version = version;
    next.lastShardId = lastShardId;
    for (const g of stats) {
      next.gates.set(g.soulId, { ...after.get(g.soulId)!, floor: cutoff });
      next.idCount -= next.ids.get(g.soulId)?.length ?? 0;
      next.ids.delete(g.soulId);
      if (read.has(g.soulId)) {
        next.ids.set(g.soulId, g.shardIds);
        next.idCount += g.shardIds.length;
      }
    }
    if (next.idCount > MEMO_IDS) {
      next.ids.clear();
      next.idCount = 0;
    }
    return next;
  }

  /**
   * `head` VALUES `row`, … `tail` for every row, in as few statements as ROW_CHUNKS allows. Each head is
   * written with one row shape and tail, so its statements are found by head and size without building SQL.
   */
  private insertRows(head: string, row: string, rows: readonly SQLInputValue[][], tail = ''): void {
    let bySize = this.rowStatements.get(head);
    if (bySize === undefined) this.rowStatements.set(head, (bySize = new Map()));
    let at = 0;
    for (const size of ROW_CHUNKS) {
      for (; rows.length - at >= size; at += size) {
        let statement = bySize.get(size);
        if (statement === undefined) bySize.set(size, (statement = this.stmt(`${head} VALUES ${Array(size).fill(row).join(', ')} ${tail}`)));
        this.executed++;
        statement.run(...(size === 1 ? rows[at] : rows.slice(at, at + size).flat()));
      }
    }
  }

  /**
   * The souls' gate rows (existing souls, ascending id) at `cutoff`, and the largest shard id. A row holds
   * the considered shards created after its floor, so it is exact for any cutoff from its floor up to its
   * oldest shard; one missing, with a higher floor, or holding a shard the cutoff expired is rebuilt.
   * `remembered`: every row came from the write memo, none read.
   */
  private currentGate(soulIds: readonly number[], cutoff: number, memo: WriteMemo | null = null): { states: GateState[]; lastShardId: number; remembered: boolean } {
    const saved = memo === null ? [] : soulIds.map((id) => memo.gates.get(id));
    if (memo !== null && saved.every((g) => g !== undefined && !staleGate(g.floor, g.agg.oldest, cutoff))) {
      return { states: [...(saved as SavedGate[])].sort((a, b) => a.soulId - b.soulId), lastShardId: memo.lastShardId, remembered: true };
    }
    const rows = this.all(
      `SELECT so.id AS soul_id, so.deleted_at, so.last_attuned_at, g.floor, g.count, g.oldest, g.newest, g.latest, g.sources, g.through,
         (SELECT COALESCE(MAX(id), 0) FROM soul_shards) AS last_shard_id, EXISTS (SELECT 1 FROM shard_themes st WHERE st.soul_id = so.id) AS themed
       FROM souls so LEFT JOIN soul_gate g ON g.soul_id = so.id WHERE so.id IN ${inList('soulIds')} ORDER BY so.id`,
      { soulIds: json(soulIds) },
    );
    const lastShardId = rows.length === 0 ? 0 : Number(rows[0].last_shard_id);
    const stale = rows.filter((r) => staleGate(r.floor === null ? null : Number(r.floor), r.oldest === null ? null : Number(r.oldest), cutoff)).map((r) => Number(r.soul_id));
    const rebuilt = stale.length === 0 ? new Map<number, Map<string, Aggregates>>() : this.rebuildGate(stale, cutoff);
    const states = rows.map((r) => {
      const soulId = Number(r.soul_id);
      const subject = { soulId, dormant: r.deleted_at !== null, lastAttunedAt: r.last_attuned_at === null ? null : Number(r.last_attuned_at), themed: Number(r.themed) === 1 };
      const fresh = rebuilt.get(soulId);
      if (fresh) return { ...subject, ...withSources(fresh) };
      const sources = new Map(JSON.parse(String(r.sources)) as Array<[string, number]>);
      return { ...subject, sources, agg: { ...toAggregate(r, ''), distinctSources: sources.size } };
    });
    const behind = rows.filter((r) => !rebuilt.has(Number(r.soul_id)) && Number(r.through) < lastShardId).map((r) => Number(r.soul_id));
    if (behind.length === 0) return { states, lastShardId, remembered: false };
    const evidence = this.all(gateCatchUpSql, { soulIds: json(behind), cutoff }).map((r) => ({
      soulId: Number(r.soul_id),
      shardId: Number(r.shard_id),
      source: String(r.source),
      createdAt: Number(r.created_at),
      latest: Number(r.latest),
    }));
    return { states: [...withEvidence(states, evidence, cutoff).values()], lastShardId, remembered: false };
  }

  /** What a write would read as the souls' cheap gate at `cutoff` (from their rows, or rebuilt): for tests to hold it against gateStats. */
  storedGate(soulIds: readonly number[], cutoff: number): Map<number, ShardAggregate> {
    return this.read(() => new Map(this.currentGate(soulIds, cutoff).states.map((g) => [g.soulId, g.agg])));
  }

  /** The souls' considered shards per source, recounted from the shards. */
  private rebuildGate(soulIds: readonly number[], cutoff: number): Map<number, Map<string, Aggregates>> {
    const bySoul = new Map(soulIds.map((id) => [id, new Map<string, Aggregates>()]));
    for (const r of this.all(gateSourcesSql, { soulIds: json(soulIds), cutoff })) {
      bySoul.get(Number(r.soul_id))!.set(String(r.source), { count: Number(r.count), oldest: Number(r.oldest), newest: Number(r.newest), latest: Number(r.latest) });
    }
    return bySoul;
  }

  /** Saves the souls' gate rows, each exact from its floor on for every shard up to `through`. */
  private saveGateRows(rows: Iterable<SavedGate>, through: number): void {
    this.insertRows(
      'INSERT INTO soul_gate (soul_id, floor, count, oldest, newest, latest, sources, through)',
      '(?, ?, ?, ?, ?, ?, ?, ?)',
      [...rows].map(({ soulId, floor, agg, sources }) => [soulId, floor, agg.count, agg.oldest, agg.newest, agg.latest, JSON.stringify([...sources]), through]),
      `ON CONFLICT (soul_id) DO UPDATE SET floor = excluded.floor, count = excluded.count, oldest = excluded.oldest, newest = excluded.newest,
         latest = excluded.latest, sources = excluded.sources, through = excluded.through`,
    );
  }

  /**
   * A write's GateStats; the considered shard ids are read only for the souls `withIds` picks, and not at all
   * for those in `known` (before and after, from the write memo). `read`: the souls whose ids the stats carry.
   */
  private writeGate(
    before: readonly GateState[],
    after: ReadonlyMap<number, GateState>,
    cutoff: number,
    isNew: (id: number) => boolean,
    withIds: (stats: GateStats) => boolean,
    known: ReadonlyMap<number, { before: number[]; after: number[] }> = new Map(),
  ): { stats: GateStats[]; read: Set<number> } {
    const stats: GateStats[] = before.map((g) => ({
      soulId: g.soulId,
      dormant: g.dormant,
      lastAttunedAt: g.lastAttunedAt,
      themed: g.themed,
      shardIds: [],
      beforeShardIds: [],
      after: after.get(g.soulId)!.agg,
      before: g.agg,
    }));
    const read = new Set<number>();
    const wanted = new Map<number, GateStats>();
    for (const g of stats.filter(withIds)) {
      read.add(g.soulId);
      const ids = known.get(g.soulId);
      if (ids === undefined) wanted.set(g.soulId, g);
      else {
        g.beforeShardIds = ids.before;
        g.shardIds = ids.after;
      }
    }
    if (wanted.size === 0) return { stats, read };
    // Each soul's attributions come in index order, by shard id.
    const rows = this.all(
      `SELECT ss.soul_id, ss.shard_id FROM shard_souls ss CROSS JOIN soul_shards s ON s.id = ss.shard_id WHERE ss.soul_id IN ${inList('soulIds')} AND ${considered('s')}`,
      { soulIds: json([...wanted.keys()]), cutoff },
    );
    for (const r of rows) {
      const g = wanted.get(Number(r.soul_id))!;
      const id = Number(r.shard_id);
      g.shardIds.push(id);
      if (!isNew(id)) g.beforeShardIds.push(id);
    }
    for (const g of wanted.values()) {
      g.shardIds.sort((a, b) => a - b);
      g.beforeShardIds.sort((a, b) => a - b);
    }
    return { stats, read };
  }

  /** Fading and un-fading remove evidence, which no count can subtract from a minimum: the souls' rows are rebuilt when next needed. */
  private forgetGate(soulIds: readonly number[]): void {
    this.run(`DELETE FROM soul_gate WHERE soul_id IN ${inList('soulIds')}`, { soulIds: json(soulIds) });
  }

  storeEmbeddings(entries: readonly EmbeddingWrite[], model: string): number[] {
    if (entries.length === 0) return [];
    return this.transaction(() => {
      this.fixEmbeddingDimension(entries, model);
      const stored: number[] = [];
      for (const { id, embedding, contentHash } of entries) {
        const { changes } = this.run('UPDATE soul_shards SET embedding = :embedding, embedding_hash = :hash WHERE id = :id AND embedding IS NULL', { id, embedding, hash: contentHash });
        if (changes > 0) stored.push(id);
      }
      return stored;
    });
  }

  embeddingsByHash(hashes: readonly string[]): Map<string, Uint8Array> {
    if (hashes.length === 0) return new Map();
    const rows = this.all(
      `SELECT embedding_hash AS hash, embedding FROM soul_shards WHERE embedding_hash IN ${inList('hashes')} AND embedding IS NOT NULL GROUP BY embedding_hash`,
      { hashes: json(hashes) },
    );
    return new Map(rows.map((r) => [String(r.hash), r.embedding as Uint8Array]));
  }

  embeddingModel(): string | null {
    const row = this.get(`SELECT value FROM souls_meta WHERE key = 'embedding_model'`);
    return row === undefined ? null : String(row.value);
  }

  rebindEmbeddings(model: string): number {
    return this.transaction(() => {
      const { changes } = this.run('UPDATE soul_shards SET embedding = NULL, embedding_hash = NULL WHERE embedding IS NOT NULL');
      this.run(`DELETE FROM souls_meta WHERE key = 'embedding_dimension'`);
      this.run(`INSERT INTO souls_meta (key, value) VALUES ('embedding_model', :model) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, { model });
      return changes;
    });
  }

  shardsWithoutEmbedding(afterId: number, limit: number): Array<{ id: number; content: string }> {
    return this.all('SELECT id, content FROM soul_shards WHERE id > :afterId AND embedding IS NULL ORDER BY id LIMIT :limit', { afterId, limit }).map((r) => ({
      id: Number(r.id),
      content: String(r.content),
    }));
  }

  shardRowBound(): number {
    return Number(this.get('SELECT COALESCE(MAX(id), 0) AS n FROM soul_shards')!.n);
  }

  countShardsWithoutEmbedding(): number {
    return Number(this.get('SELECT COUNT(*) AS n FROM soul_shards WHERE embedding IS NULL')!.n);
  }

  /**
   * Checked again inside the write: another process may have fixed the dimension, or bound another model, since the
   * engine looked. A database whose vectors predate the model's record adopts the first model that stores one.
   */
  private fixEmbeddingDimension(shards: ReadonlyArray<{ embedding: Uint8Array | null }>, model: string): void {
    const first = shards.find((s) => s.embedding !== null);
    if (first === undefined) return;
    this.run(`INSERT OR IGNORE INTO souls_meta (key, value) VALUES ('embedding_model', :model)`, { model });
    const bound = this.embeddingModel()!;
    if (bound !== model) throw new ValidationError('embedding', otherModelMessage(bound, model));
    const dimension = first.embedding!.byteLength / 4;
    this.run(`INSERT OR IGNORE INTO souls_meta (key, value) VALUES ('embedding_dimension', :dimension)`, { dimension: String(dimension) });
    const fixed = this.embeddingDimension()!;
    const other = shards.find((s) => s.embedding !== null && s.embedding.byteLength / 4 !== fixed);
    if (other) {
      throw new ValidationError('embedding', `must have ${fixed} numbers, the dimension of this database's embeddings, got ${other.embedding!.byteLength / 4}`);
    }
  }

  embeddingDimension(): number | null {
    const row = this.get(`SELECT value FROM souls_meta WHERE key = 'embedding_dimension'`);
    return row === undefined ? null : Number(row.value);
  }

  getCalibration(key: string): StoredCalibration | null {
    const row = this.get('SELECT value FROM souls_meta WHERE key = :key', { key: calibrationMetaKey(key) });
    return row === undefined ? null : toStoredCalibration(key, String(row.value));
  }

  putCalibration(key: string, calibration: StoredCalibration): void {
    this.transaction(() => {
      this.run('INSERT INTO souls_meta (key, value) VALUES (:key, :value) ON CONFLICT (key) DO UPDATE SET value = excluded.value', { key: calibrationMetaKey(key), value: JSON.stringify(calibration) });
    });
  }

  shardEmbeddings(ids: readonly number[]): Map<number, Uint8Array> {
    const rows = this.all(`SELECT id, embedding FROM soul_shards WHERE id IN ${inList('ids')} AND embedding IS NOT NULL`, { ids: json(ids) });
    return new Map(rows.map((r) => [Number(r.id), r.embedding as Uint8Array]));
  }

  revealShards(ids: readonly number[], now: number, cutoff: number, withIds: (stats: GateStats) => boolean = everySoul): ShardWrite {
    return this.transaction(() => {
      const unique = [...new Set(ids)];
      this.assertShardsExist(unique);
      const revealed = this.all(`SELECT id FROM soul_shards WHERE id IN ${inList('ids')} AND sealed = 1 ORDER BY id`, { ids: json(unique) }).map((r) =>
        Number(r.id),
      );
      const { states: before, lastShardId } = this.currentGate(this.soulsOfShards(revealed), cutoff);
      this.run(`UPDATE soul_shards SET sealed = 0, revealed_at = :now, updated_at = :now WHERE id IN ${inList('ids')}`, { now, ids: json(revealed) });
      const evidence = this.all(
        `SELECT ss.soul_id, s.id, s.source, s.created_at, ${evidenceTime('s')} AS latest FROM soul_shards s CROSS JOIN shard_souls ss ON ss.shard_id = s.id
         WHERE s.id IN ${inList('ids')} AND ${considered('s')}`,
        { ids: json(revealed), cutoff },
      ).map((r) => ({ soulId: Number(r.soul_id), shardId: Number(r.id), source: String(r.source), createdAt: Number(r.created_at), latest: Number(r.latest) }));
      const after = withEvidence(before, evidence, cutoff);
      this.saveGateRows([...after.values()].map((g) => ({ ...g, floor: cutoff })), lastShardId);
      const isNew = new Set(revealed);
      return { shardIds: revealed, gate: this.writeGate(before, after, cutoff, (id) => isNew.has(id), withIds).stats };
    });
  }

  fadeExhaustedShards(threshold: number, now: number, cutoff: number): { fadedCount: number; gate: GateStats[] } {
    return this.transaction(() => {
      const exhausted = this.all(
        `SELECT s.id FROM soul_shards s WHERE s.status = 'pending'
           AND s.id IN (${exhaustedShardIdsSql})`,
        { threshold },
      ).map((r) => Number(r.id));
      if (exhausted.length === 0) return { fadedCount: 0, gate: [] };
      // Fading removes evidence, and a removed shard can split a chained cluster: the souls it leaves are gated before and after.
      const soulIds = this.soulsOfShards(exhausted);
      const before = new Map(this.gate(soulIds, cutoff, '0', {}).map((g) => [g.soulId, g]));
      const { changes } = this.run(`UPDATE soul_shards SET status = 'faded', updated_at = :now WHERE id IN ${inList('ids')}`, { now, ids: json(exhausted) });
      this.forgetGate(soulIds);
      const gate = this.gate(soulIds, cutoff, '0', {}).map((g) => {
        const was = before.get(g.soulId)!;
        return { ...g, before: was.after, beforeShardIds: was.shardIds };
      });
      return { fadedCount: changes, gate };
    });
  }

  /** Adds tags and souls to shard rows: two statements, whatever the number of shards. */
  private hydrateShards(rows: Row[]): Shard[] {
    const ids = json(rows.map((r) => Number(r.id)));
    const tags = listsBy(this.all(`SELECT shard_id, tag FROM shard_tags WHERE shard_id IN ${inList('ids')} ORDER BY shard_id, tag`, { ids }), 'shard_id', (r) => String(r.tag));
    const souls = listsBy(this.all(`SELECT shard_id, soul_id FROM shard_souls WHERE shard_id IN ${inList('ids')} ORDER BY shard_id, soul_id`, { ids }), 'shard_id', (r) => Number(r.soul_id));
    return rows.map((r) => toShard(r, tags, souls));
  }

  shardContents(ids: readonly number[]): Map<number, string> {
    const rows = this.all(`SELECT id, content FROM soul_shards WHERE id IN ${inList('ids')}`, { ids: json(ids) });
    return new Map(rows.map((r) => [Number(r.id), String(r.content)]));
  }

  getShards(ids: readonly number[]): Map<number, Shard> {
    return this.read(() => {
      const shards = this.hydrateShards(this.all(`SELECT ${SHARD_COLUMNS('soul_shards')} FROM soul_shards WHERE id IN ${inList('ids')}`, { ids: json(ids) }));
      return new Map(shards.map((s) => [s.id, s]));
    });
  }

  listShards(filter: ShardFilter, page: { first: number; after: string | null }): Page<Shard> {
    const query = shardListQuery(filter, page.after, (tags) => ({ clause: `t.tag IN ${inList('tags')}`, value: json(tags) }));
    // Its values are numbers and strings (the tags as JSON text).
    const { from, where, pageWhere } = query;
    const [params, pageParams] = [query.params as Params, query.pageParams as Params];
    return this.read(() => {
      const totalCount = Number(this.get(`SELECT COUNT(*) AS n FROM ${from} WHERE ${where}`, params)!.n);
      const rows = this.all(`SELECT ${SHARD_COLUMNS('s')} FROM ${from} WHERE ${pageWhere} ORDER BY s.created_at DESC, s.id DESC LIMIT :limit`, {
        ...pageParams,
        limit: page.first + 1,
      });
      const hasNextPage = rows.length > page.first;
      const items = this.hydrateShards(rows.slice(0, page.first));
      return shardPage(items, totalCount, hasNextPage);
    });
  }

  searchShards(query: TextQuery, filter: { soulId?: number; cutoff: number; limit: number }): Array<{ shardId: number; score: number }> {
    if (query.words.length === 0) return [];
    const rows = this.all(searchSql(filter.soulId !== undefined), { query: ftsQuery(query), cutoff: filter.cutoff, limit: filter.limit, ...(filter.soulId === undefined ? {} : { soulId: filter.soulId }) },
    );
    return rows.map((r) => ({ shardId: Number(r.id), score: -Number(r.rank) }));
  }

  consideredShards(soulIds: readonly number[], cutoff: number, scope: ShardScope = {}): Shard[] {
    const query = consideredQuery(soulIds, cutoff, scope);
    if (!query) return [];
    return this.read(() => this.hydrateShards(this.all(consideredSql(query.clauses), query.params)));
  }

  consideredShardVersions(soulIds: readonly number[], cutoff: number, scope: ShardScope = {}): ShardVersion[] {
    const query = consideredQuery(soulIds, cutoff, scope);
    if (!query) return [];
    return this.arrays(consideredSql(query.clauses, 's.id, s.updated_at'), query.params).map(([id, updatedAt]) => ({ id: Number(id), updatedAt: Number(updatedAt) }));
  }

  gateStats(soulIds: readonly number[] | 'awake', cutoff: number): Map<number, GateStats> {
    if (soulIds !== 'awake') return new Map(this.all(gateReadSql, { soulIds: json(soulIds), cutoff }).map((r) => [Number(r.soul_id), toGateStats(r)]));
    const rows = this.all(readinessSql, { cutoff });
    return new Map(rows.map((r) => [Number(r.soul_id), toReadiness(r)]));
  }

  countsBySource(soulIds: readonly number[], cutoff: number): Map<number, SourceCount[]> {
    const result = new Map<number, SourceCount[]>(soulIds.map((id) => [id, []]));
    const rows = this.all(
      `SELECT ss.soul_id, s.source, COUNT(*) AS n FROM shard_souls ss JOIN soul_shards s ON s.id = ss.shard_id
       WHERE ss.soul_id IN ${inList('soulIds')} AND ${considered('s')}
       GROUP BY ss.soul_id, s.source ORDER BY ss.soul_id, n DESC, s.source`,
      { soulIds: json(soulIds), cutoff },
    );
    for (const r of rows) result.get(Number(r.soul_id))!.push({ source: String(r.source), count: Number(r.n) });
    return result;
  }

  statementsExecuted(): number {
    return this.executed;
  }

  ping(): void {
    this.stmt('SELECT count(*) AS n FROM sqlite_schema').get();
  }

  countsByTagPerSoul(soulIds: readonly number[], cutoff: number): Map<number, TagCount[]> {
    const result = new Map<number, TagCount[]>(soulIds.map((id) => [id, []]));
    const rows = this.all(
      `SELECT ss.soul_id, t.tag, COUNT(*) AS n FROM shard_souls ss CROSS JOIN soul_shards s ON s.id = ss.shard_id JOIN shard_tags t ON t.shard_id = s.id
       WHERE ss.soul_id IN ${inList('soulIds')} AND ${considered('s')} GROUP BY ss.soul_id, t.tag ORDER BY ss.soul_id, n DESC, t.tag`,
      { soulIds: json(soulIds), cutoff },
    );
    for (const r of rows) result.get(Number(r.soul_id))!.push({ tag: String(r.tag), count: Number(r.n) });
    return result;
  }

  countsByTag(soulId: number | null, cutoff: number): TagCount[] {
    const rows =
      soulId === null
        ? this.all(
            `SELECT t.tag, COUNT(*) AS n FROM soul_shards s JOIN shard_tags t ON t.shard_id = s.id
             WHERE ${considered('s')} GROUP BY t.tag ORDER BY n DESC, t.tag`,
            { cutoff },
          )
        : this.all(
            `SELECT t.tag, COUNT(*) AS n FROM shard_souls ss JOIN soul_shards s ON s.id = ss.shard_id JOIN shard_tags t ON t.shard_id = s.id
             WHERE ss.soul_id = :soulId AND ${considered('s')} GROUP BY t.tag ORDER BY n DESC, t.tag`,
            { soulId, cutoff },
          );
    return rows.map((r) => ({ tag: String(r.tag), count: Number(r.n) }));
  }

  pendingCounts(soulIds: readonly number[] | 'awake', cutoff: number): Map<number, number> {
    const stats = this.gateStats(soulIds, cutoff);
    const ids = soulIds === 'awake' ? this.listSouls({ dormant: false }).map((s) => s.id) : soulIds;
    return new Map(ids.map((id) => [id, stats.get(id)?.after.count ?? 0]));
  }

  // Maintenance

  optimize(): void {
    this.db.exec('PRAGMA analysis_limit = 1000');
    this.db.exec('PRAGMA optimize');
  }

  backup(path: string): void {
    // VACUUM INTO writes only the copy; a read-only store lifts query_only for it alone.
    if (this.readOnly) this.db.exec('PRAGMA query_only = OFF');
    try {
      this.run('VACUUM INTO :path', { path });
    } catch (error) {
      throw asStorageFull(error, path);
    } finally {
      if (this.readOnly) this.db.exec('PRAGMA query_only = ON');
    }
  }

  /** Every row of the data tables (souls copy), and the largest id each AUTOINCREMENT table ever handed out. */
  exportTables(tables: readonly string[]): { tables: Record<string, Row[]>; idFloors: Record<string, number> } {
    return this.read(() => {
      const rows: Record<string, Row[]> = {};
      for (const table of tables) rows[table] = this.all(`SELECT * FROM ${table}`);
      const floors = this.all('SELECT name, seq FROM sqlite_sequence');
      return { tables: rows, idFloors: Object.fromEntries(floors.map((r) => [String(r.name), Number(r.seq)])) };
    });
  }

  /** The plans SQLite chooses for the hot statements, for tests that guard against plan regressions. */
  explainQueryPlans(): Record<string, string[]> {
    const plan = (sql: string, params: Params) => (this.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as Row[]).map((r) => String(r.detail));
    return {
      gate: plan(gateSql('0'), { soulIds: '[1]', cutoff: 0 }),
      gateRead: plan(gateReadSql, { soulIds: '[1]', cutoff: 0 }),
      readiness: plan(readinessSql, { cutoff: 0 }),
      pendingLoad: plan(consideredSql([]), { soulIds: '[1]', cutoff: 0 }),
      ftsSearch: plan(searchSql(false), { query: '"x"', cutoff: 0, limit: 20 }),
      ftsSearchBySoul: plan(searchSql(true), { query: '"x"', cutoff: 0, limit: 20, soulId: 1 }),
    };
  }

  close(): { checkpointDeferred: string | null } {
    if (!this.db.isOpen) return { checkpointDeferred: null };
    if (this.readOnly) {
      // A checkpoint would copy a running server's commits into the main file: a reader writes nothing.
      this.db.close();
      return { checkpointDeferred: null };
    }
    // On a full disk these writes fail; the WAL then keeps every commit and is applied on the next open.
    let checkpointDeferred: string | null = null;
    try {
      this.db.exec('PRAGMA optimize');
    } catch {
      // Statistics only: optimize runs again on the next close.
    }
    try {
      this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    } catch (error) {
      checkpointDeferred = error instanceof Error ? error.message : String(error);
    }
    this.db.close();
    return { checkpointDeferred };
  }
}
