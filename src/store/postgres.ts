/**
 * The PostgreSQL store's statements, asynchronous, over a pool of connections (postgres-pool.ts): each
 * method is one unit of work, a transaction on one pooled connection, and many run at once. The same
 * semantics as SqliteStore, method for method; writes that evaluate the crystallization gate
 * first lock the rows of the souls they touch, so two writers to one soul at once (in one replica
 * or several) are serialized and each sees the other's committed shards.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { CarriedTrait, Citation, LevelEvent, Page, Shard, Soul, SoulDocument, SourceCount, TagCount, Theme, ThemeEvent, Trait } from '../engine/model.ts';
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
  SoulsError,
  StorageError,
  ValidationError,
  type CounterCitation,
} from '../engine/errors.ts';
import { MIGRATION_LOCK_KEY, pgDataTables, pgIdentityTables, pgMigrations } from './postgres-schema.ts';
import { calibrationMetaKey, otherModelMessage, carrySourceCitationsSql, assignmentField, checkRevertTarget, citingTraitCount, considered, counterCitationsSql, duplicatePrincipleMessage, evidenceTime as sharedEvidenceTime, exhaustedShardIdsSql, foreignShardMessage, gateQuery, insertLevelEventSql, insertThemeEventSql, levelEventParams, listsBy, readinessQuery, SHARD_COLUMNS, shardListQuery, shardPage, themeEventParams, toGateStats, toLevelEvent, toReadiness, toShard, toSoul, toCounterCitation, toStoredCalibration, toSoulDocument, toThemeEvent, toThemes, toTrait, type Dialect, type Row } from './rows.ts';
import { DryRunRollback, PROVIDED_MODEL } from './store.ts';
import type { EmbeddingWrite, GateStats, LevelUpWrite, NewShard, NewSoul, NewTrait, ShardFilter, ShardScope, ShardVersion, ShardWrite, SoulPatch, StoredCalibration, TextQuery, ThemeAssignmentWrite, TraitFilter } from './store.ts';

/** `results`: each statement's, when a parameterless text held several (the fields above are the last one's). */
export type QueryResult = { rows: Row[]; rowCount?: number | null; affectedRows?: number; results?: QueryResult[] };

/** What both drivers (pg's Client, PGlite) offer: one connection, positional parameters. */
export type Connection = {
  query(sql: string, params?: unknown[]): Promise<QueryResult>;
  close(): Promise<void>;
};

/** A connection taken from the pool for one unit of work; `release(true)` when it broke, so the pool drops it. */
/** `abandon` drops the connection's socket: a statement waiting on it fails, and the connection is not used again. */
export type PooledConnection = { query(sql: string, params?: unknown[]): Promise<QueryResult>; release(broken?: boolean): void; abandon?(): void };

/** pg.Pool, or PGlite's one in-process connection taken in turns; `purpose` says whether the unit writes (pool-gate.ts). */
export type ConnectionPool = { connect(purpose?: 'read' | 'write'): Promise<PooledConnection>; end(): Promise<void> };

/** An error without a SQLSTATE (a socket's, a timeout's): the connection it came from is not used again. */
export function brokenConnection(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code !== 'string' || /^(08|57P)/.test(code) || /^E[A-Z]+$/.test(code);
}

/**
 * The unit of work running in this async context: its connection, and whether it writes (reads then lock their rows).
 * `nested`: run inside another unit's transaction, which it must not end; `committed`: its last statement carried the COMMIT.
 */
type Unit = { conn: PooledConnection; writing: boolean; nested?: boolean; committed?: boolean };

type Params = Record<string, unknown>;
type TraitTime = { id: number; updatedAt: number };

/** Serialization failures, deadlocks, and a unique index another transaction filled first: the unit is run again. */
const RETRYABLE = new Set(['40001', '40P01', '23505']);
const MAX_ATTEMPTS = 5;

/** int8 as a number: ids and millisecond timestamps fit; anything past 2^53 is refused rather than rounded. */
export function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`bigint ${text} is beyond JavaScript's safe integers`);
  return value;
}

/** `:name` placeholders to `$n`; `::type` casts are left alone. */
export function positional(sql: string, params: Params): { text: string; values: unknown[] } {
  const order: string[] = [];
  const text = sql.replace(/(?<![:\w]):([A-Za-z_]\w*)/g, (_, name: string) => {
    if (!(name in params)) throw new Error(`no value for :${name}`);
    let index = order.indexOf(name);
    if (index < 0) index = order.push(name) - 1;
    return `$${index + 1}`;
  });
  return { text, values: order.map((name) => params[name]) };
}

/** `:name` placeholders replaced by literals, for a text sent with others in one round trip: whole numbers and lists of them only. */
export function withIntegers(sql: string, params: Params): string {
  const integer = (name: string, value: unknown): string => {
    if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
    throw new Error(`:${name} is not a whole number or a list of them`);
  };
  return sql.replace(/(?<![:\w]):([A-Za-z_]\w*)/g, (_, name: string) => {
    if (!(name in params)) throw new Error(`no value for :${name}`);
    const value = params[name];
    return Array.isArray(value) ? `'{${value.map((v) => integer(name, v)).join(',')}}'` : integer(name, value);
  });
}

const POSTGRES: Dialect = { idList: (expr) => `string_agg((${expr})::text, ',')`, greatest: 'GREATEST', join: 'JOIN' };
const evidenceTime = (alias: string) => sharedEvidenceTime(POSTGRES, alias);

/** Read with the gate, so a write past it pays no statement to learn that the soul has no themes. */
const themedColumn = 'EXISTS (SELECT 1 FROM shard_themes st WHERE st.soul_id = so.id) AS themed';

/** The cheap gate for each soul, once over every considered shard and once leaving out the `newIds` (a hashed set). */
const gateSql = gateQuery(POSTGRES, {
  old: 's.id IS NOT NULL AND fresh.id IS NULL',
  soulFilter: 'so.id = ANY(:soulIds::bigint[])',
  extraJoin: 'LEFT JOIN (SELECT DISTINCT unnest(:newIds::bigint[]) AS id) fresh ON fresh.id = s.id',
  extraColumns: themedColumn,
});

/** The cheap gate of a read: no write, so the aggregates before it are those after. */
const gateReadSql = gateQuery(POSTGRES, { old: null, soulFilter: 'so.id = ANY(:soulIds::bigint[])', extraColumns: themedColumn });

const readinessSql = readinessQuery(POSTGRES);

function consideredSql(extraClauses: readonly string[], columns = SHARD_COLUMNS('s')): string {
  const where = [`ss.soul_id = ANY(:soulIds::bigint[])`, considered('s'), ...extraClauses].join(' AND ');
  return `SELECT DISTINCT ${columns} FROM shard_souls ss JOIN soul_shards s ON s.id = ss.shard_id WHERE ${where} ORDER BY s.id`;
}

/** Full-text search over the generated tsvector (GIN index), ranked by ts_rank. */
function searchSql(bySoul: boolean): string {
  const soulClause = bySoul ? 'AND EXISTS (SELECT 1 FROM shard_souls ss WHERE ss.shard_id = s.id AND ss.soul_id = :soulId)' : '';
  return `SELECT s.id, ts_rank(s.content_search, q) AS rank FROM soul_shards s, to_tsquery('souls_text', :query) q
    WHERE s.content_search @@ q AND ${considered('s')} ${soulClause}
    ORDER BY rank DESC, s.id LIMIT :limit`;
}

/**
 * The meaning of the SQLite store's FTS5 query as to_tsquery text: each spelling a quoted phrase (its words in
 * sequence, as websearch_to_tsquery reads "…"), quotes and backslashes escaped; double quotes inside separate words.
 */
function tsQuery(query: TextQuery): string {
  const phrase = (spelling: string) => `'${spelling.replaceAll('"', ' ').replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
  const words = query.words.map((spellings) => (spellings.length === 1 ? phrase(spellings[0]) : `(${spellings.map(phrase).join(' | ')})`));
  return words.join(query.match === 'all' ? ' & ' : ' | ');
}

function consideredQuery(soulIds: readonly number[], cutoff: number, scope: ShardScope): { clauses: string[]; params: Params } | null {
  const clauses: string[] = [];
  const params: Params = { soulIds: [...soulIds], cutoff };
  if (scope.tags && scope.tags.length > 0) {
    clauses.push(`s.id IN (SELECT shard_id FROM shard_tags WHERE tag = ANY(:tags::text[]))`);
    params.tags = [...scope.tags];
  }
  if (scope.text) {
    if (scope.text.words.length === 0) return null;
    clauses.push(`s.content_search @@ to_tsquery('souls_text', :query)`);
    params.query = tsQuery(scope.text);
  }
  return { clauses, params };
}

const bytes = (value: Uint8Array): Buffer => Buffer.from(value.buffer, value.byteOffset, value.byteLength);

/**
 * Applies the migrations not yet applied, each in one transaction, under an advisory lock held for the whole run, so
 * replicas starting together take turns: one applies them all, the others find nothing to do.
 */
export async function migratePostgres(conn: Connection): Promise<{ from: number; to: number }> {
  await conn.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  try {
    let from = -1;
    for (;;) {
      await conn.query('BEGIN');
      try {
        // Under the lock: two processes creating the table at once would collide in the catalog.
        await conn.query('CREATE TABLE IF NOT EXISTS souls_schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)');
        const current = Number((await conn.query('SELECT COALESCE(MAX(version), 0) AS v FROM souls_schema_migrations')).rows[0].v);
        if (from < 0) from = current;
        if (current > pgMigrations.length) {
          throw new StorageError('STORAGE_UNAVAILABLE', '', `database schema version ${current} is newer than this Souls (${pgMigrations.length}): upgrade Souls`);
        }
        if (current === pgMigrations.length) {
          await conn.query('COMMIT');
          return { from, to: current };
        }
        await conn.query(pgMigrations[current]);
        await conn.query('INSERT INTO souls_schema_migrations (version, applied_at) VALUES ($1, $2)', [current + 1, Date.now()]);
        await conn.query('COMMIT');
      } catch (error) {
        await conn.query('ROLLBACK');
        throw error;
      }
    }
  } finally {
    await conn.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
  }
}

export async function schemaVersion(conn: Connection): Promise<number> {
  const exists = await conn.query(`SELECT to_regclass('souls_schema_migrations') IS NOT NULL AS present`);
  if (!exists.rows[0].present) return 0;
  return Number((await conn.query('SELECT COALESCE(MAX(version), 0) AS v FROM souls_schema_migrations')).rows[0].v);
}

export class PostgresStatements {
  readonly pool: ConnectionPool;
  /** The database, for messages (no password). */
  readonly target: string;
  private executed = 0;
  private readonly units = new AsyncLocalStorage<Unit>();
  /** Told how long each statement took (ms). */
  queried: ((ms: number) => void) | null = null;

  constructor(pool: ConnectionPool, target: string) {
    this.pool = pool;
    this.target = target;
  }

  /** One statement: on the unit's connection inside a unit of work, else on a connection of its own. */
  private async query(text: string, values?: unknown[]): Promise<QueryResult> {
    const unit = this.units.getStore();
    if (unit) return this.timed(unit.conn, text, values);
    // Outside a unit only reads run (and the maintenance statements of tests and operators).
    const conn = await this.pool.connect('read');
    let broken = false;
    try {
      return await this.timed(conn, text, values);
    } catch (error) {
      broken = brokenConnection(error);
      throw error;
    } finally {
      conn.release(broken);
    }
  }

  private async timed(conn: PooledConnection, text: string, values?: unknown[]): Promise<QueryResult> {
    if (this.queried === null) return conn.query(text, values);
    const start = performance.now();
    try {
      return await conn.query(text, values);
    } finally {
      this.queried(performance.now() - start);
    }
  }

  private get writing(): boolean {
    return this.units.getStore()?.writing ?? false;
  }

  private async all(sql: string, params: Params = {}): Promise<Row[]> {
    this.executed++;
    const { text, values } = positional(sql, params);
    return (await this.query(text, values)).rows;
  }

  private async get(sql: string, params: Params = {}): Promise<Row | undefined> {
    return (await this.all(sql, params))[0];
  }

  private async changes(sql: string, params: Params = {}): Promise<number> {
    this.executed++;
    const { text, values } = positional(sql, params);
    const result = await this.query(text, values);
    return Number(result.rowCount ?? result.affectedRows ?? 0);
  }

  /**
   * One unit of work, all or nothing; run again (a bounded number of times) when PostgreSQL asks for it. `lockSouls`:
   * the souls whose rows the transaction locks first (in id order, so writers never wait on each other in a cycle),
   * sent with BEGIN in one round trip; `work` gets the ids of those that exist. The unit has one pooled connection
   * to itself, held until it commits or rolls back.
   */
  private async transaction<T>(work: (locked: Set<number>) => Promise<T>, mode: 'write' | 'read' = 'write', lockSouls: readonly number[] = []): Promise<T> {
    const outer = this.units.getStore();
    if (outer) return this.units.run({ ...outer, nested: true }, async () => work(await this.lockSouls(lockSouls)));
    const ids = [...new Set(lockSouls)].map((id) => {
      if (!Number.isSafeInteger(id)) throw new ValidationError('soulIds', `must be integers, got ${id}`);
      return id;
    });
    const begin = mode === 'write' ? 'BEGIN' : 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY';
    const conn = await this.pool.connect(mode);
    let broken = false;
    const unit: Unit = { conn, writing: mode === 'write' };
    try {
      return await this.units.run(unit, async () => {
        for (let attempt = 1; ; attempt++) {
          try {
            unit.committed = false;
            let locked = new Set<number>();
            if (ids.length > 0) {
              this.executed++;
              // Inlined integers, so BEGIN and the lock travel together (a parameterless text may hold several statements).
              const { rows } = await this.query(`${begin}; SELECT id FROM souls WHERE id IN (${ids.join(', ')}) ORDER BY id FOR UPDATE`);
              locked = new Set(rows.map((r) => Number(r.id)));
            } else {
              await this.query(begin);
            }
            const result = await work(locked);
            if (!unit.committed) await this.query('COMMIT');
            return result;
          } catch (error) {
            // Committed already (its last statement carried the COMMIT): nothing to roll back, and never run twice.
            if (unit.committed) throw error;
            if (brokenConnection(error) && !(error instanceof SoulsError)) {
              broken = true;
              throw error;
            }
            await conn.query('ROLLBACK').catch(() => {
              broken = true;
            });
            const code = (error as { code?: string }).code;
            if (code === undefined || !RETRYABLE.has(code) || attempt >= MAX_ATTEMPTS) throw error;
          }
        }
      });
    } finally {
      conn.release(broken);
    }
  }

  /**
   * A write's last statement, sent with its COMMIT in one round trip (its parameters whole numbers, inlined); inside
   * another unit's transaction, the statement alone. Nothing of the unit may run after it.
   */
  private async allThenCommit(sql: string, params: Params): Promise<Row[]> {
    const unit = this.units.getStore();
    if (!unit || unit.nested) return this.all(sql, params);
    this.executed++;
    const result = await this.query(`${withIntegers(sql, params)}; COMMIT`);
    unit.committed = true;
    return result.results![0].rows;
  }

  private read<T>(work: () => Promise<T>): Promise<T> {
    return this.transaction(work, 'read');
  }

  /** Locks the souls' rows (in id order, so writers never wait on each other in a cycle) for the rest of the transaction. */
  private async lockSouls(ids: readonly number[]): Promise<Set<number>> {
    const rows = await this.all('SELECT id FROM souls WHERE id = ANY(:ids::bigint[]) ORDER BY id FOR UPDATE', { ids: [...new Set(ids)] });
    return new Set(rows.map((r) => Number(r.id)));
  }

  // Souls

  private async soulRow(id: number): Promise<Soul> {
    const row = await this.get(`SELECT * FROM souls WHERE id = :id${this.writing ? ' FOR UPDATE' : ''}`, { id });
    if (!row) throw new NotFoundError('Soul', id);
    return toSoul(row);
  }

  private async awakeSoulRow(id: number): Promise<Soul> {
    const soul = await this.soulRow(id);
    if (soul.deletedAt !== null) throw new InvalidStateError(`soul ${id} is dormant: awaken it first`);
    return soul;
  }

  private async assertNameFree(name: string, exceptId: number): Promise<void> {
    const holder = await this.get('SELECT name FROM souls WHERE name_key = :key AND deleted_at IS NULL AND id <> :exceptId', { key: nameKey(name), exceptId });
    if (holder) throw new ConflictError('name', `an awake soul is already named "${String(holder.name)}"`);
  }

  private async slugTaken(slug: string, exceptId: number): Promise<boolean> {
    return (await this.get('SELECT 1 AS taken FROM souls WHERE slug = :slug AND deleted_at IS NULL AND id <> :exceptId', { slug, exceptId })) !== undefined;
  }

  private async slugFor(chosen: string | null, name: string, exceptId: number): Promise<string> {
    if (chosen === null) {
      // freeSlug asks synchronously: the taken slugs sharing the base are read first.
      const base = slugBase(name);
      const taken = new Set(
        (
          await this.all(`SELECT slug FROM souls WHERE deleted_at IS NULL AND id <> :exceptId AND (slug = :base OR slug LIKE :prefix)`, {
            exceptId,
            base,
            prefix: `${base.replaceAll('\\', '\\\\').replaceAll('%', '\\%').replaceAll('_', '\\_')}-%`,
          })
        ).map((r) => String(r.slug)),
      );
      return freeSlug(base, (slug) => taken.has(slug));
    }
    if (await this.slugTaken(chosen, exceptId)) throw new ConflictError('slug', `an awake soul already has the slug "${chosen}"`);
    return chosen;
  }

  insertSoul(input: NewSoul, now: number): Promise<Soul> {
    return this.transaction(async () => {
      await this.assertNameFree(input.name, 0);
      const slug = await this.slugFor(input.slug, input.name, 0);
      const row = await this.get(
        `INSERT INTO souls (name, name_key, slug, essence, description, level, created_at, updated_at, ordered_at)
         VALUES (:name, :key, :slug, :essence, :description, 0, :now, :now, :now) RETURNING *`,
        { name: input.name, key: nameKey(input.name), slug, essence: input.essence, description: input.description, now },
      );
      return toSoul(row!);
    });
  }

  updateSoul(id: number, patch: SoulPatch, now: number): Promise<Soul> {
    return this.transaction(async () => {
      const soul = await this.soulRow(id);
      const next = { ...soul, ...patch };
      const awake = soul.deletedAt === null;
      if (awake) await this.assertNameFree(next.name, id);
      let slug = soul.slug;
      if (patch.slug !== undefined) slug = awake || patch.slug === null ? await this.slugFor(patch.slug, next.name, id) : patch.slug;
      const blockChanged = next.name !== soul.name || next.essence !== soul.essence || next.description !== soul.description;
      const row = await this.get(
        `UPDATE souls SET name = :name, name_key = :key, slug = :slug, essence = :essence, description = :description, updated_at = :now,
           ordered_at = CASE WHEN :blockChanged::boolean THEN :now ELSE ordered_at END
         WHERE id = :id RETURNING *`,
        { id, name: next.name, key: nameKey(next.name), slug, essence: next.essence, description: next.description, now, blockChanged },
      );
      return toSoul(row!);
    });
  }

  setDormancy(id: number, change: { dormantAt: number | null; rename?: string }, now: number): Promise<Soul> {
    return this.transaction(async () => {
      const soul = await this.soulRow(id);
      if (change.dormantAt !== null) {
        if (soul.deletedAt !== null) throw new InvalidStateError(`soul ${id} is already dormant`);
        return toSoul((await this.get('UPDATE souls SET deleted_at = :at WHERE id = :id RETURNING *', { id, at: change.dormantAt }))!);
      }
      if (soul.deletedAt === null) throw new InvalidStateError(`soul ${id} is not dormant`);
      const name = change.rename ?? soul.name;
      await this.assertNameFree(name, id);
      const slug = soul.slug !== null && !(await this.slugTaken(soul.slug, id)) ? soul.slug : await this.slugFor(null, name, id);
      const renamed = name !== soul.name;
      const row = await this.get(
        `UPDATE souls SET deleted_at = NULL, name = :name, name_key = :key, slug = :slug,
           updated_at = CASE WHEN :renamed::boolean THEN :now ELSE updated_at END, ordered_at = CASE WHEN :renamed::boolean THEN :now ELSE ordered_at END
         WHERE id = :id RETURNING *`,
        { id, name, key: nameKey(name), slug, renamed, now },
      );
      return toSoul(row!);
    });
  }

  stampAttuned(id: number, now: number): Promise<Soul> {
    return this.transaction(async () => {
      await this.awakeSoulRow(id);
      const row = await this.get('UPDATE souls SET last_attuned_at = :now WHERE id = :id RETURNING *', { id, now });
      await this.changes('INSERT INTO soul_attunements (soul_id, attuned_at) VALUES (:id, :now)', { id, now });
      return toSoul(row!);
    });
  }

  async getSouls(ids: readonly number[]): Promise<Map<number, Soul>> {
    const rows = await this.all('SELECT * FROM souls WHERE id = ANY(:ids::bigint[])', { ids: [...ids] });
    return new Map(rows.map((r) => [Number(r.id), toSoul(r)]));
  }

  async getSoulByName(name: string): Promise<Soul | null> {
    const row = await this.get('SELECT * FROM souls WHERE name_key = :key ORDER BY deleted_at IS NOT NULL, deleted_at DESC, id DESC LIMIT 1', { key: nameKey(name) });
    return row ? toSoul(row) : null;
  }

  async listSouls(filter: { dormant: boolean }): Promise<Soul[]> {
    const where = filter.dormant ? 'deleted_at IS NOT NULL' : 'deleted_at IS NULL';
    // COLLATE "C": the byte order SQLite's BINARY collation gives, whatever the database's locale.
    return (await this.all(`SELECT * FROM souls WHERE ${where} ORDER BY name COLLATE "C", id`)).map(toSoul);
  }

  // Traits and citations

  private async traitRow(id: number): Promise<Trait> {
    const row = await this.get('SELECT * FROM soul_traits WHERE id = :id', { id });
    if (!row) throw new NotFoundError('Trait', id);
    return toTrait(row);
  }

  private async activeCount(soulId: number): Promise<number> {
    return Number((await this.get(`SELECT COUNT(*) AS n FROM soul_traits WHERE soul_id = :soulId AND status = 'active'`, { soulId }))!.n);
  }

  private async touchSoul(soulId: number, now: number): Promise<void> {
    await this.changes('UPDATE souls SET updated_at = :now, ordered_at = :now WHERE id = :soulId', { soulId, now });
  }

  private async assertShardsExist(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    const found = new Set((await this.all('SELECT id FROM soul_shards WHERE id = ANY(:ids::bigint[])', { ids: [...ids] })).map((r) => Number(r.id)));
    const missing = ids.find((id) => !found.has(id));
    if (missing !== undefined) throw new NotFoundError('Shard', missing);
  }

  private async assertPrincipleFree(soulId: number, principle: string, exceptId: number, refusal: (holder: number) => Error): Promise<void> {
    const holder = await this.get(`SELECT id FROM soul_traits WHERE soul_id = :soulId AND status = 'active' AND principle = :principle AND id <> :exceptId ORDER BY id LIMIT 1`, {
      soulId,
      principle,
      exceptId,
    });
    if (holder) throw refusal(Number(holder.id));
  }

  private async assertShardsOfSoul(soul: Soul, shardIds: readonly number[], refusal: (message: string) => Error, traitId: number | null): Promise<void> {
    if (shardIds.length === 0) return;
    const own = new Set(
      (await this.all('SELECT shard_id FROM shard_souls WHERE soul_id = :soulId AND shard_id = ANY(:ids::bigint[])', { soulId: soul.id, ids: [...shardIds] })).map((r) =>
        Number(r.shard_id),
      ),
    );
    const foreign = shardIds.find((id) => !own.has(id));
    if (foreign === undefined) return;
    const owners = (await this.all('SELECT so.id, so.name FROM shard_souls ss JOIN souls so ON so.id = ss.soul_id WHERE ss.shard_id = :id ORDER BY so.id', { id: foreign })).map(
      (r) => ({ id: Number(r.id), name: String(r.name) }),
    );
    throw refusal(foreignShardMessage(foreign, owners, soul, traitId));
  }

  private async insertCitation(shardId: number, traitId: number, now: number): Promise<boolean> {
    return (
      (await this.changes('INSERT INTO shard_citations (shard_id, trait_id, created_at) VALUES (:shardId, :traitId, :now) ON CONFLICT DO NOTHING', {
        shardId,
        traitId,
        now,
      })) > 0
    );
  }

  insertTrait(soulId: number, input: NewTrait, now: number, traitLimit: number): Promise<Trait> {
    return this.transaction(async () => {
      const soul = await this.awakeSoulRow(soulId);
      const active = await this.activeCount(soulId);
      if (active >= traitLimit) throw new CapacityError(traitLimit, active);
      await this.assertPrincipleFree(soulId, input.principle, 0, (holder) => new ValidationError('principle', duplicatePrincipleMessage(holder)));
      await this.assertShardsExist(input.citeShardIds);
      await this.assertShardsOfSoul(soul, input.citeShardIds, (message) => new ValidationError('citeShardIds', message), null);
      const row = await this.get(
        `INSERT INTO soul_traits (soul_id, principle, provenance, generation, status, created_at, updated_at)
         VALUES (:soulId, :principle, :provenance, :generation, 'active', :now, :now) RETURNING id`,
        { soulId, principle: input.principle, provenance: input.provenance, generation: soul.level, now },
      );
      const id = Number(row!.id);
      for (const shardId of input.citeShardIds) await this.insertCitation(shardId, id, now);
      await this.touchSoul(soulId, now);
      return this.traitRow(id);
    });
  }

  updateTrait(id: number, patch: { principle?: string; provenance?: string }, now: number): Promise<Trait> {
    return this.transaction(async () => {
      const trait = await this.traitRow(id);
      await this.awakeSoulRow(trait.soulId);
      if (trait.status !== 'active') throw new InvalidStateError(`trait ${id} is ${trait.status}: only active traits can be revised`);
      if (patch.principle !== undefined) await this.assertPrincipleFree(trait.soulId, patch.principle, id, (holder) => new ValidationError('principle', duplicatePrincipleMessage(holder)));
      await this.changes('UPDATE soul_traits SET principle = :principle, provenance = :provenance, updated_at = :now WHERE id = :id', {
        id,
        principle: patch.principle ?? trait.principle,
        provenance: patch.provenance ?? trait.provenance,
        now,
      });
      await this.touchSoul(trait.soulId, now);
      return this.traitRow(id);
    });
  }

  setTraitStatus(id: number, status: 'active' | 'reverted', now: number, traitLimit: number): Promise<Trait> {
    return this.transaction(async () => {
      const trait = await this.traitRow(id);
      await this.awakeSoulRow(trait.soulId);
      if (status === 'reverted' && trait.status !== 'active') {
        throw new InvalidStateError(`trait ${id} is ${trait.status}: only active traits can be reverted`);
      }
      if (status === 'active') {
        if (trait.status === 'active') throw new InvalidStateError(`trait ${id} is already active`);
        const active = await this.activeCount(trait.soulId);
        if (active >= traitLimit) throw new CapacityError(traitLimit, active);
        await this.assertPrincipleFree(trait.soulId, trait.principle, id, (holder) => new InvalidStateError(`trait ${id} cannot be reactivated: ${duplicatePrincipleMessage(holder)}`));
      }
      await this.changes('UPDATE soul_traits SET status = :status, merged_into = NULL, updated_at = :now WHERE id = :id', { id, status, now });
      await this.touchSoul(trait.soulId, now);
      return this.traitRow(id);
    });
  }

  async getTraits(ids: readonly number[]): Promise<Map<number, Trait>> {
    const rows = await this.all('SELECT * FROM soul_traits WHERE id = ANY(:ids::bigint[])', { ids: [...ids] });
    return new Map(rows.map((r) => [Number(r.id), toTrait(r)]));
  }

  async listTraits(soulIds: readonly number[], filter: TraitFilter = {}): Promise<Trait[]> {
    const clauses = ['soul_id = ANY(:soulIds::bigint[])'];
    const params: Params = { soulIds: [...soulIds] };
    if (filter.statuses) {
      clauses.push('status = ANY(:statuses::text[])');
      params.statuses = [...filter.statuses];
    }
    if (filter.generation !== undefined) {
      clauses.push('generation = :generation');
      params.generation = filter.generation;
    }
    return (await this.all(`SELECT * FROM soul_traits WHERE ${clauses.join(' AND ')} ORDER BY soul_id, created_at, id`, params)).map(toTrait);
  }

  async countActiveTraits(soulIds: readonly number[]): Promise<Map<number, number>> {
    const rows = await this.all(`SELECT soul_id, COUNT(*) AS n FROM soul_traits WHERE soul_id = ANY(:soulIds::bigint[]) AND status = 'active' GROUP BY soul_id`, {
      soulIds: [...soulIds],
    });
    const counts = new Map<number, number>(soulIds.map((id) => [id, 0]));
    for (const r of rows) counts.set(Number(r.soul_id), Number(r.n));
    return counts;
  }

  citeShards(traitId: number, shardIds: readonly number[], now: number): Promise<number[]> {
    return this.transaction(async () => {
      const trait = await this.traitRow(traitId);
      await this.assertShardsExist(shardIds);
      const soul = await this.awakeSoulRow(trait.soulId);
      if (trait.status !== 'active') throw new InvalidStateError(`trait ${traitId} is ${trait.status}: only active traits can cite shards`);
      await this.assertShardsOfSoul(soul, shardIds, (message) => new InvalidStateError(message), traitId);
      const cited: number[] = [];
      for (const shardId of new Set(shardIds)) if (await this.insertCitation(shardId, traitId, now)) cited.push(shardId);
      const conflicts = await this.counterCitationsWhere('c.trait_id = :traitId AND o.trait_id = :traitId AND c.shard_id = ANY(:ids::bigint[])', { traitId, ids: [...shardIds] });
      if (conflicts.length > 0) throw citedCounterEvidence('shardIds', conflicts);
      if (cited.length > 0) await this.touchSoul(trait.soulId, now);
      return cited;
    });
  }

  async citeShardsOfTraits(cites: readonly { traitId: number; shardIds: readonly number[] }[], now: number, dryRun: boolean): Promise<number[][]> {
    try {
      return await this.transaction(async () => {
        const fresh: number[][] = [];
        for (const c of cites) fresh.push(await this.citeShards(c.traitId, c.shardIds, now));
        if (dryRun) throw new DryRunRollback(fresh);
        return fresh;
      });
    } catch (error) {
      if (error instanceof DryRunRollback) return error.value as number[][];
      throw error;
    }
  }

  unciteShards(traitId: number, shardIds: readonly number[], now: number, shardFadeCitations: number, cutoff: number): Promise<{ gate: GateStats[] }> {
    return this.transaction(async () => {
      const trait = await this.traitRow(traitId);
      await this.assertShardsExist(shardIds);
      await this.awakeSoulRow(trait.soulId);
      if (trait.status !== 'active') throw new InvalidStateError(`trait ${traitId} is ${trait.status}: only an active trait's citations can be taken back`);
      const ids = [...new Set(shardIds)];
      const cited = new Set(
        (await this.all('SELECT shard_id FROM shard_citations WHERE trait_id = :traitId AND shard_id = ANY(:ids::bigint[])', { traitId, ids })).map((r) => Number(r.shard_id)),
      );
      const uncited = ids.filter((id) => !cited.has(id));
      if (uncited.length > 0) throw new InvalidStateError(`trait ${traitId} does not cite ${uncited.length === 1 ? 'shard' : 'shards'} ${uncited.join(', ')}: nothing to take back`);
      // The souls whose gate the un-faded shards change are locked before their shards are.
      await this.lockSouls(await this.soulsOfShards(ids));
      await this.changes('DELETE FROM shard_citations WHERE trait_id = :traitId AND shard_id = ANY(:ids::bigint[])', { traitId, ids });
      await this.touchSoul(trait.soulId, now);
      return { gate: await this.unfade(ids, now, shardFadeCitations, cutoff) };
    });
  }

  /** Shards among these that are faded but no longer exhausted return to pending; the cheap gate of their souls, with them as the new evidence. */
  private async unfade(shardIds: readonly number[], now: number, shardFadeCitations: number, cutoff: number): Promise<GateStats[]> {
    const unfaded = (
      await this.all(
        `UPDATE soul_shards SET status = 'pending', updated_at = :now
         WHERE id = ANY(:ids::bigint[]) AND status = 'faded' AND ${citingTraitCount('soul_shards.id')} < :threshold
         RETURNING id`,
        { now, ids: [...shardIds], threshold: shardFadeCitations },
      )
    )
      .map((r) => Number(r.id))
      .sort((a, b) => a - b);
    return unfaded.length === 0 ? [] : this.gate(await this.soulsOfShards(unfaded), cutoff, unfaded);
  }

  private async citations(column: 'trait_id' | 'shard_id', ids: readonly number[]): Promise<Citation[]> {
    const rows = await this.all(
      `SELECT shard_id, trait_id, created_at FROM shard_citations WHERE ${column} = ANY(:ids::bigint[]) ORDER BY created_at, shard_id, trait_id`,
      { ids: [...ids] },
    );
    return rows.map((r) => ({ shardId: Number(r.shard_id), traitId: Number(r.trait_id), createdAt: Number(r.created_at) }));
  }

  citationsOfTraits(traitIds: readonly number[]): Promise<Citation[]> {
    return this.citations('trait_id', traitIds);
  }

  citationsOfShards(shardIds: readonly number[]): Promise<Citation[]> {
    return this.citations('shard_id', shardIds);
  }

  async attunements(soulIds: readonly number[]): Promise<Map<number, number[]>> {
    const result = new Map<number, number[]>(soulIds.map((id) => [id, []]));
    const rows = await this.all('SELECT soul_id, attuned_at FROM soul_attunements WHERE soul_id = ANY(:soulIds::bigint[]) ORDER BY soul_id, attuned_at', {
      soulIds: [...soulIds],
    });
    for (const r of rows) result.get(Number(r.soul_id))!.push(Number(r.attuned_at));
    return result;
  }

  // Imported documents

  putSoulDocument(soulId: number, document: { format: string; file: string; text: string }, now: number): Promise<SoulDocument> {
    return this.transaction(async () => {
      await this.awakeSoulRow(soulId);
      await this.changes(
        `INSERT INTO soul_documents (soul_id, format, file, text, stored_at) VALUES (:soulId, :format, :file, :text, :now)
         ON CONFLICT (soul_id, format) DO UPDATE SET file = excluded.file, text = excluded.text, stored_at = excluded.stored_at`,
        { soulId, format: document.format, file: document.file, text: document.text, now },
      );
      return { soulId, ...document, storedAt: now };
    });
  }

  async getSoulDocument(soulId: number, format: string): Promise<SoulDocument | null> {
    const row = await this.get('SELECT * FROM soul_documents WHERE soul_id = :soulId AND format = :format', { soulId, format });
    return row ? toSoulDocument(row) : null;
  }

  // Themes

  private async themeCount(soulId: number): Promise<number> {
    return Number((await this.get('SELECT count(*) AS n FROM soul_themes WHERE soul_id = :soulId', { soulId }))!.n);
  }

  private async themeSoul(soulId: number): Promise<Soul> {
    const soul = await this.soulRow(soulId);
    if (soul.deletedAt !== null) throw new ValidationError('soulId', `soul ${soulId} is dormant: awaken it first`);
    return soul;
  }

  private async assertAttributed(soulId: number, shards: ReadonlyArray<{ id: number; field: string }>): Promise<void> {
    const rows = await this.all('SELECT shard_id FROM shard_souls WHERE soul_id = :soulId AND shard_id = ANY(:ids::bigint[])', { soulId, ids: shards.map((s) => s.id) });
    const attributed = new Set(rows.map((r) => Number(r.shard_id)));
    const stray = shards.filter((s) => !attributed.has(s.id));
    if (stray.length === 0) return;
    await this.assertShardsExist(stray.map((s) => s.id));
    throw new ValidationError(stray[0]!.field, `shard ${stray[0]!.id} is not attributed to soul ${soulId}`);
  }

  private async themeEvent(event: Parameters<typeof themeEventParams>[0]): Promise<void> {
    await this.changes(insertThemeEventSql, themeEventParams(event));
  }

  private async shardThemeIds(soulId: number, shardIds: readonly number[]): Promise<Map<number, number>> {
    const rows = await this.all('SELECT shard_id, theme_id FROM shard_themes WHERE soul_id = :soulId AND shard_id = ANY(:ids::bigint[])', { soulId, ids: [...shardIds] });
    return new Map(rows.map((r) => [Number(r.shard_id), Number(r.theme_id)]));
  }

  private async hydrateThemes(rows: Row[]): Promise<Map<number, Theme>> {
    if (rows.length === 0) return new Map();
    const ids = rows.map((r) => Number(r.id));
    const members = await this.all('SELECT theme_id, shard_id FROM shard_themes WHERE theme_id = ANY(:ids::bigint[]) ORDER BY theme_id, shard_id', { ids });
    const oppositions = await this.all('SELECT theme_id, trait_id FROM theme_oppositions WHERE theme_id = ANY(:ids::bigint[]) ORDER BY theme_id, trait_id', { ids });
    return toThemes(rows, members, oppositions);
  }

  private async themesById(ids: readonly number[]): Promise<Map<number, Theme>> {
    return this.hydrateThemes(await this.all('SELECT * FROM soul_themes WHERE id = ANY(:ids::bigint[]) ORDER BY id', { ids: [...ids] }));
  }

  private async themeRow(id: number): Promise<Theme> {
    const theme = (await this.themesById([id])).get(id);
    if (!theme) throw new NotFoundError('Theme', id);
    return theme;
  }

  async judgeThemes(soulId: number, assignments: readonly ThemeAssignmentWrite[], opposes: readonly (readonly number[])[], actor: string, now: number, maxThemes: number, dryRun: boolean): Promise<Theme[]> {
    try {
      return await this.transaction(async () => {
        const themes = await this.assignThemes(soulId, assignments, actor, now, maxThemes);
        for (const [i, traitIds] of opposes.entries()) {
          for (const traitId of traitIds) themes[i] = await this.setThemeOpposition(themes[i].id, traitId, true, actor, now);
        }
        if (dryRun) throw new DryRunRollback(themes);
        return themes;
      });
    } catch (error) {
      if (error instanceof DryRunRollback) return error.value as Theme[];
      throw error;
    }
  }

  assignThemes(soulId: number, assignments: readonly ThemeAssignmentWrite[], actor: string, now: number, maxThemes: number): Promise<Theme[]> {
    return this.transaction(async () => {
      await this.themeSoul(soulId);
      await this.assertAttributed(
        soulId,
        assignments.flatMap((a, i) => a.shardIds.map((id, j) => ({ id, field: `assignments[${i}].shardIds[${j}]` }))),
      );
      if (assignments.some((a) => a.newThemeName !== null)) refuseThemesPastLimit(await this.themeCount(soulId), maxThemes, assignments.map((a) => a.newThemeName));
      const named = await this.all('SELECT id, soul_id FROM soul_themes WHERE id = ANY(:ids::bigint[])', { ids: assignments.flatMap((a) => (a.themeId === null ? [] : [a.themeId])) });
      const existing = new Map(named.map((r) => [Number(r.id), Number(r.soul_id)]));
      for (const [i, a] of assignments.entries()) {
        if (a.themeId !== null) {
          const owner = existing.get(a.themeId);
          if (owner === undefined) throw new NotFoundError('Theme', a.themeId);
          if (owner !== soulId) throw new ValidationError(`assignments[${i}].themeId`, `theme ${a.themeId} belongs to another soul`);
        } else {
          const holder = await this.get('SELECT id FROM soul_themes WHERE soul_id = :soulId AND name_key = :key', { soulId, key: nameKey(a.newThemeName!) });
          if (holder) throw new ValidationError(`assignments[${i}].newThemeName`, `the soul already has a theme named "${a.newThemeName}" (theme ${String(holder.id)}): assign to its themeId`);
        }
      }
      const current = await this.shardThemeIds(soulId, assignments.flatMap((a) => a.shardIds));
      const moved: number[] = [];
      const themeIds: number[] = [];
      for (const a of assignments) {
        const themeId =
          a.themeId ??
          Number(
            (await this.get(
              'INSERT INTO soul_themes (soul_id, name, name_key, created_by, created_at, updated_at) VALUES (:soulId, :name, :key, :actor, :now, :now) RETURNING id',
              { soulId, name: a.newThemeName!, key: nameKey(a.newThemeName!), actor, now },
            ))!.id,
          );
        const movedBefore = moved.length;
        for (const shardId of a.shardIds) {
          const from = current.get(shardId) ?? null;
          if (from === themeId) continue;
          await this.changes(
            `INSERT INTO shard_themes (soul_id, shard_id, theme_id) VALUES (:soulId, :shardId, :themeId)
             ON CONFLICT (soul_id, shard_id) DO UPDATE SET theme_id = excluded.theme_id`,
            { soulId, shardId, themeId },
          );
          await this.themeEvent({ soulId, kind: 'assign', themeId, shardId, fromThemeId: from, toThemeId: themeId, actor, at: now });
          if (from !== null) await this.changes('UPDATE soul_themes SET updated_at = :now WHERE id = :from', { from, now });
          moved.push(shardId);
        }
        if (moved.length > movedBefore) await this.changes('UPDATE soul_themes SET updated_at = :now WHERE id = :themeId', { themeId, now });
        themeIds.push(themeId);
      }
      await this.assertAssignmentsChange(soulId, assignments, current, moved);
      const themes = await this.themesById(themeIds);
      return themeIds.map((id) => themes.get(id)!);
    }, 'write', [soulId]);
  }

  unassignShards(soulId: number, shardIds: readonly number[], actor: string, now: number): Promise<Theme[]> {
    return this.transaction(async () => {
      await this.themeSoul(soulId);
      await this.assertAttributed(soulId, shardIds.map((id, j) => ({ id, field: `shardIds[${j}]` })));
      const current = await this.shardThemeIds(soulId, shardIds);
      if (current.size === 0) throw nothingToUnassign(soulId, shardIds);
      for (const shardId of shardIds) {
        const from = current.get(shardId);
        if (from === undefined) continue;
        await this.changes('DELETE FROM shard_themes WHERE soul_id = :soulId AND shard_id = :shardId', { soulId, shardId });
        await this.themeEvent({ soulId, kind: 'unassign', themeId: from, shardId, fromThemeId: from, toThemeId: null, actor, at: now });
      }
      const left = [...new Set(current.values())].sort((a, b) => a - b);
      await this.changes('UPDATE soul_themes SET updated_at = :now WHERE id = ANY(:ids::bigint[])', { ids: left, now });
      const themes = await this.themesById(left);
      return left.map((id) => themes.get(id)!);
    }, 'write', [soulId]);
  }

  renameTheme(themeId: number, name: string, actor: string, now: number): Promise<Theme> {
    return this.transaction(async () => {
      const theme = await this.themeRow(themeId);
      await this.awakeSoulRow(theme.soulId);
      if (theme.name === name) throw alreadyNamed(themeId, name);
      const key = nameKey(name);
      const holder = await this.get('SELECT id FROM soul_themes WHERE soul_id = :soulId AND name_key = :key AND id != :themeId', { soulId: theme.soulId, key, themeId });
      if (holder) throw new ValidationError('name', `the soul already has a theme named "${name}" (theme ${String(holder.id)})`);
      await this.changes('UPDATE soul_themes SET name = :name, name_key = :key, updated_at = :now WHERE id = :themeId', { name, key, now, themeId });
      await this.themeEvent({ soulId: theme.soulId, kind: 'rename', themeId, detail: theme.name, actor, at: now });
      return this.themeRow(themeId);
    });
  }

  setThemeOpposition(themeId: number, traitId: number, opposed: boolean, actor: string, now: number): Promise<Theme> {
    return this.transaction(async () => {
      const theme = await this.themeRow(themeId);
      const trait = await this.traitRow(traitId);
      await this.awakeSoulRow(theme.soulId);
      if (trait.soulId !== theme.soulId) throw new ValidationError('traitId', `trait ${traitId} belongs to another soul than theme ${themeId}`);
      if (opposed && trait.status !== 'active') throw new InvalidStateError(`trait ${traitId} is ${trait.status}: only an active trait can be opposed`);
      const changed = opposed
        ? (await this.changes('INSERT INTO theme_oppositions (theme_id, trait_id) VALUES (:themeId, :traitId) ON CONFLICT DO NOTHING', { themeId, traitId })) > 0
        : (await this.changes('DELETE FROM theme_oppositions WHERE theme_id = :themeId AND trait_id = :traitId', { themeId, traitId })) > 0;
      if (!changed) throw opposed ? alreadyOpposed(themeId, traitId) : notOpposed(themeId, traitId);
      const conflicts = opposed ? await this.counterCitationsWhere('o.theme_id = :themeId AND o.trait_id = :traitId AND c.trait_id = :traitId', { themeId, traitId }) : [];
      if (conflicts.length > 0) throw opposedSupport('traitId', conflicts);
      await this.changes('UPDATE soul_themes SET updated_at = :now WHERE id = :themeId', { themeId, now });
      await this.themeEvent({ soulId: theme.soulId, kind: opposed ? 'oppose' : 'unoppose', themeId, traitId, actor, at: now });
      return this.themeRow(themeId);
    });
  }

  getThemes(ids: readonly number[]): Promise<Map<number, Theme>> {
    return this.read(() => this.themesById(ids));
  }

  listThemes(soulIds: readonly number[]): Promise<Theme[]> {
    return this.read(async () => [...(await this.hydrateThemes(await this.all('SELECT * FROM soul_themes WHERE soul_id = ANY(:ids::bigint[]) ORDER BY soul_id, id', { ids: [...soulIds] }))).values()]);
  }

  themesOfShards(soulId: number, shardIds: readonly number[]): Promise<Map<number, number>> {
    return this.shardThemeIds(soulId, shardIds);
  }

  async shardThemesOfSouls(soulIds: readonly number[]): Promise<Map<number, Map<number, number>>> {
    const result = new Map<number, Map<number, number>>(soulIds.map((id) => [id, new Map()]));
    const rows = await this.all('SELECT soul_id, shard_id, theme_id FROM shard_themes WHERE soul_id = ANY(:ids::bigint[])', { ids: [...soulIds] });
    for (const r of rows) result.get(Number(r.soul_id))?.set(Number(r.shard_id), Number(r.theme_id));
    return result;
  }

  async counterEvidence(traitIds: readonly number[]): Promise<Map<number, number[]>> {
    const result = new Map<number, number[]>(traitIds.map((id) => [id, []]));
    const rows = await this.all(
      `SELECT DISTINCT o.trait_id, st.shard_id FROM theme_oppositions o JOIN shard_themes st ON st.theme_id = o.theme_id
       WHERE o.trait_id = ANY(:ids::bigint[]) ORDER BY o.trait_id, st.shard_id`,
      { ids: [...traitIds] },
    );
    for (const r of rows) result.get(Number(r.trait_id))?.push(Number(r.shard_id));
    return result;
  }

  counterCitations(opposedTraitIds: readonly number[], citingTraitIds: readonly number[]): Promise<CounterCitation[]> {
    return this.counterCitationsWhere('o.trait_id = ANY(:opposed::bigint[]) AND c.trait_id = ANY(:citing::bigint[])', { opposed: [...opposedTraitIds], citing: [...citingTraitIds] });
  }

  private async counterCitationsWhere(where: string, params: Params): Promise<CounterCitation[]> {
    return (await this.all(counterCitationsSql(where), params)).map(toCounterCitation);
  }

  /**
   * A call that moved no shard and created no theme changed nothing (SPEC §13); one that made a trait cite a shard of
   * a theme opposing it is refused at the first such shard's field. Runs after the moves, inside their transaction.
   */
  private async assertAssignmentsChange(soulId: number, assignments: readonly ThemeAssignmentWrite[], current: ReadonlyMap<number, number>, moved: readonly number[]): Promise<void> {
    if (moved.length === 0 && assignments.every((a) => a.themeId !== null)) throw alreadyAssigned(Map.groupBy(assignments.flatMap((a) => a.shardIds), (id) => current.get(id)!));
    const conflicts = await this.counterCitationsWhere('c.trait_id = o.trait_id AND st.soul_id = :soulId AND st.shard_id = ANY(:moved::bigint[])', { soulId, moved: [...moved] });
    if (conflicts.length > 0) throw assignedSupport(assignmentField(assignments, conflicts[0].shardId), conflicts);
  }

  async themeHistory(soulIds: readonly number[]): Promise<ThemeEvent[]> {
    return (await this.all('SELECT * FROM theme_events WHERE soul_id = ANY(:ids::bigint[]) ORDER BY id', { ids: [...soulIds] })).map(toThemeEvent);
  }

  // Level-ups

  applyLevelUp(soulId: number, plan: LevelUpWrite, now: number): Promise<LevelEvent> {
    return this.transaction(async () => {
      const soul = await this.awakeSoulRow(soulId);
      const active = (await this.all(`SELECT id FROM soul_traits WHERE soul_id = :soulId AND status = 'active' ORDER BY id`, { soulId })).map((r) => Number(r.id));
      const expected = [...plan.activeTraitIds].sort((a, b) => a - b);
      if (active.length !== expected.length || active.some((id, i) => id !== expected[i])) {
        throw new InvalidStateError(`the active traits of soul ${soulId} changed while the plan was being checked: validate it again`);
      }
      const sources = plan.consolidations.flatMap((g) => g.sourceTraitIds);
      const conflicts = consolidationConflicts(plan.consolidations, await this.counterCitations(sources, sources));
      if (conflicts.length > 0) throw new LevelUpPlanError({ missing: [], duplicated: [], notActive: [], problems: conflicts });
      const level = soul.level + 1;
      const touched = [...sources, ...plan.promotedTraitIds, ...plan.carriedTraitIds];
      const updatedBefore: TraitTime[] = (await this.all('SELECT id, updated_at FROM soul_traits WHERE id = ANY(:ids::bigint[]) ORDER BY id', { ids: touched })).map(
        (r) => ({ id: Number(r.id), updatedAt: Number(r.updated_at) }),
      );
      const merged: number[] = [];
      for (const group of plan.consolidations) {
        const row = await this.get(
          `INSERT INTO soul_traits (soul_id, principle, provenance, generation, status, created_at, updated_at)
           VALUES (:soulId, :principle, :provenance, :level, 'active', :now, :now) RETURNING id`,
          { soulId, principle: group.mergedPrinciple, provenance: group.mergedProvenance, level, now },
        );
        const mergedId = Number(row!.id);
        merged.push(mergedId);
        await this.changes(
          'INSERT INTO theme_oppositions (theme_id, trait_id) SELECT DISTINCT theme_id, :mergedId::bigint FROM theme_oppositions WHERE trait_id = ANY(:ids::bigint[]) ON CONFLICT DO NOTHING',
          { mergedId, ids: [...group.sourceTraitIds] },
        );
        await this.changes(`UPDATE soul_traits SET status = 'consolidated', merged_into = :mergedId, updated_at = :now WHERE id = ANY(:ids::bigint[])`, {
          mergedId,
          now,
          ids: [...group.sourceTraitIds],
        });
        await this.changes(carrySourceCitationsSql('(SELECT unnest(:ids::bigint[]))', ':mergedId::bigint'), { mergedId, ids: [...group.sourceTraitIds] });
      }
      await this.changes(`UPDATE soul_traits SET status = 'promoted', updated_at = :now WHERE id = ANY(:ids::bigint[])`, { now, ids: [...plan.promotedTraitIds] });
      for (const [i, group] of plan.consolidations.entries()) {
        await this.assertPrincipleFree(soulId, group.mergedPrinciple, merged[i], (holder) => new InvalidStateError(`consolidation ${i + 1} would repeat a principle: ${duplicatePrincipleMessage(holder)}`));
      }
      const carried: CarriedTrait[] = (
        await this.all('SELECT id, generation FROM soul_traits WHERE id = ANY(:ids::bigint[]) ORDER BY id', { ids: [...plan.carriedTraitIds] })
      ).map((r) => ({ id: Number(r.id), generation: Number(r.generation) }));
      await this.changes('UPDATE soul_traits SET generation = :level, updated_at = :now WHERE id = ANY(:ids::bigint[])', {
        level,
        now,
        ids: [...plan.carriedTraitIds],
      });
      await this.changes('UPDATE souls SET essence = :essence, level = :level, updated_at = :now, ordered_at = :now WHERE id = :soulId', {
        soulId,
        essence: plan.newEssence,
        level,
        now,
      });
      return toLevelEvent((await this.get(insertLevelEventSql, levelEventParams(soul, plan, carried, merged, updatedBefore, now)))!);
    });
  }

  revertLevelUp(soulId: number, now: number, shardFadeCitations: number, cutoff: number, levelEventId: number | null = null): Promise<{ event: LevelEvent; gate: GateStats[] }> {
    return this.transaction(async () => {
      const soul = await this.awakeSoulRow(soulId);
      const row = await this.get('SELECT * FROM soul_levels WHERE soul_id = :soulId AND reverted_at IS NULL ORDER BY id DESC LIMIT 1', { soulId });
      if (levelEventId !== null) checkRevertTarget(soulId, levelEventId, await this.get('SELECT soul_id, reverted_at FROM soul_levels WHERE id = :id', { id: levelEventId }), row);
      if (!row) throw new InvalidStateError(`soul ${soulId} has no level-up to revert`);
      const event = toLevelEvent(row);
      const saved = JSON.parse(String(row.traits_updated_before)) as TraitTime[];
      const untouched = new Set(
        (await this.all('SELECT id FROM soul_traits WHERE id = ANY(:ids::bigint[]) AND updated_at = :levelAt', { ids: saved.map((t) => t.id), levelAt: event.createdAt })).map(
          (r) => Number(r.id),
        ),
      );
      await this.changes(`UPDATE soul_traits SET status = 'active', merged_into = NULL, updated_at = :now WHERE id = ANY(:ids::bigint[])`, {
        now,
        ids: [...event.consolidated, ...event.promoted],
      });
      const merged = event.merged;
      const citedShards = (await this.all('SELECT DISTINCT shard_id FROM shard_citations WHERE trait_id = ANY(:ids::bigint[])', { ids: merged })).map((r) =>
        Number(r.shard_id),
      );
      // The souls whose gate the un-faded shards change are locked before their shards are.
      await this.lockSouls(await this.soulsOfShards(citedShards));
      await this.changes('UPDATE soul_traits SET merged_into = NULL WHERE merged_into = ANY(:ids::bigint[])', { ids: merged });
      await this.changes('DELETE FROM shard_citations WHERE trait_id = ANY(:ids::bigint[])', { ids: merged });
      await this.changes('DELETE FROM theme_oppositions WHERE trait_id = ANY(:ids::bigint[])', { ids: merged });
      await this.changes('DELETE FROM soul_traits WHERE id = ANY(:ids::bigint[])', { ids: merged });
      for (const carried of event.carried) {
        await this.changes('UPDATE soul_traits SET generation = :generation, updated_at = :now WHERE id = :id', { id: carried.id, generation: carried.generation, now });
      }
      for (const before of saved) {
        if (untouched.has(before.id)) await this.changes('UPDATE soul_traits SET updated_at = :updatedAt WHERE id = :id', { id: before.id, updatedAt: before.updatedAt });
      }
      await this.changes('UPDATE souls SET essence = :essence, level = :level, updated_at = :now, ordered_at = COALESCE(:orderedAt::bigint, :now) WHERE id = :soulId', {
        soulId,
        essence: event.essenceBefore,
        level: soul.level - 1,
        orderedAt: row.ordered_at_before,
        now,
      });
      await this.changes('UPDATE soul_levels SET reverted_at = :now WHERE id = :id', { id: event.id, now });
      return { event: { ...event, revertedAt: now }, gate: await this.unfade(citedShards, now, shardFadeCitations, cutoff) };
    });
  }

  async levelHistory(soulIds: readonly number[]): Promise<LevelEvent[]> {
    return (await this.all('SELECT * FROM soul_levels WHERE soul_id = ANY(:soulIds::bigint[]) ORDER BY soul_id, id', { soulIds: [...soulIds] })).map(toLevelEvent);
  }

  async getLevelEvents(ids: readonly number[]): Promise<Map<number, LevelEvent>> {
    const rows = await this.all('SELECT * FROM soul_levels WHERE id = ANY(:ids::bigint[])', { ids: [...ids] });
    return new Map(rows.map((r) => [Number(r.id), toLevelEvent(r)]));
  }

  // Shards

  /** The cheap gate for each soul, over every considered shard and over those but `newIds`. */
  private async gate(soulIds: readonly number[], cutoff: number, newIds: readonly number[], then: 'commit' | 'continue' = 'continue'): Promise<GateStats[]> {
    const params = { soulIds: [...soulIds], cutoff, newIds: [...newIds] };
    const rows = then === 'commit' ? await this.allThenCommit(gateSql, params) : await this.all(gateSql, params);
    return rows.map(toGateStats);
  }

  private async soulsOfShards(shardIds: readonly number[]): Promise<number[]> {
    if (shardIds.length === 0) return [];
    return (await this.all('SELECT DISTINCT soul_id FROM shard_souls WHERE shard_id = ANY(:ids::bigint[]) ORDER BY soul_id', { ids: [...shardIds] })).map((r) =>
      Number(r.soul_id),
    );
  }

  insertShards(shards: readonly NewShard[], now: number, cutoff: number): Promise<ShardWrite> {
    const soulIds = [...new Set(shards.flatMap((s) => s.soulIds))];
    // The lock serializes this soul's gate with every other writer's, on any replica; it also finds a missing soul.
    return this.transaction(
      async (found) => {
        const missing = soulIds.find((id) => !found.has(id));
        if (missing !== undefined) throw new NotFoundError('Soul', missing);
        await this.fixEmbeddingDimension(shards, PROVIDED_MODEL);
        if (shards.length === 0) return { shardIds: [], gate: await this.gate(soulIds, cutoff, []) };
        const pairs = shards.flatMap((s, i) => [...new Set(s.soulIds)].map((soulId) => [i + 1, soulId] as const));
        const tags = shards.flatMap((s, i) => s.tags.map((tag) => [i + 1, tag] as const));
        // Every row in one statement whatever the count; ids drawn in input order, so ascending as the input goes.
        const rows = await this.all(
          `WITH input AS (
             SELECT * FROM unnest(:contents::text[], :sources::text[], :sealed::integer[], :createdAt::bigint[]) WITH ORDINALITY AS t(content, source, sealed, created_at, n)
           ), ids AS (
             SELECT n, nextval(pg_get_serial_sequence('soul_shards', 'id')) AS id FROM input
           ), shards AS (
             INSERT INTO soul_shards (id, content, source, status, sealed, created_at, updated_at, recorded_at)
             SELECT ids.id, input.content, input.source, 'pending', input.sealed, input.created_at, :now, :now FROM input JOIN ids USING (n)
           ), attributions AS (
             INSERT INTO shard_souls (shard_id, soul_id) SELECT ids.id, p.soul_id FROM unnest(:pairShards::bigint[], :pairSouls::bigint[]) AS p(n, soul_id) JOIN ids USING (n)
           ), tagged AS (
             INSERT INTO shard_tags (shard_id, tag) SELECT ids.id, t.tag FROM unnest(:tagShards::bigint[], :tags::text[]) AS t(n, tag) JOIN ids USING (n) ON CONFLICT DO NOTHING
           )
           SELECT id FROM ids ORDER BY n`,
          {
            now,
            contents: shards.map((s) => s.content),
            sources: shards.map((s) => s.source),
            sealed: shards.map((s) => (s.sealed ? 1 : 0)),
            createdAt: shards.map((s) => s.createdAt),
            pairShards: pairs.map((p) => p[0]),
            pairSouls: pairs.map((p) => p[1]),
            tagShards: tags.map((t) => t[0]),
            tags: tags.map((t) => t[1]),
          },
        );
        const shardIds = rows.map((r) => Number(r.id));
        for (const [i, shard] of shards.entries()) {
          if (shard.embedding !== null) await this.changes('UPDATE soul_shards SET embedding = :embedding WHERE id = :id', { id: shardIds[i], embedding: bytes(shard.embedding) });
        }
        return { shardIds, gate: await this.gate(soulIds, cutoff, shardIds, 'commit') };
      },
      'write',
      soulIds,
    );
  }

  storeEmbeddings(entries: readonly EmbeddingWrite[], model: string): Promise<number[]> {
    if (entries.length === 0) return Promise.resolve([]);
    return this.transaction(async () => {
      await this.fixEmbeddingDimension(entries, model);
      const stored: number[] = [];
      for (const { id, embedding, contentHash } of entries) {
        const changed = await this.changes('UPDATE soul_shards SET embedding = :embedding, embedding_hash = :hash WHERE id = :id AND embedding IS NULL', {
          id,
          embedding: bytes(embedding),
          hash: contentHash,
        });
        if (changed > 0) stored.push(id);
      }
      return stored;
    });
  }

  async embeddingsByHash(hashes: readonly string[]): Promise<Map<string, Uint8Array>> {
    if (hashes.length === 0) return new Map();
    const rows = await this.all(
      'SELECT DISTINCT ON (embedding_hash) embedding_hash AS hash, embedding FROM soul_shards WHERE embedding_hash = ANY(:hashes::text[]) AND embedding IS NOT NULL ORDER BY embedding_hash, id',
      { hashes: [...hashes] },
    );
    return new Map(rows.map((r) => [String(r.hash), new Uint8Array(r.embedding as Uint8Array)]));
  }

  async embeddingModel(): Promise<string | null> {
    const row = await this.get(`SELECT value FROM souls_meta WHERE key = 'embedding_model'`);
    return row === undefined ? null : String(row.value);
  }

  rebindEmbeddings(model: string): Promise<number> {
    return this.transaction(async () => {
      const cleared = await this.changes('UPDATE soul_shards SET embedding = NULL, embedding_hash = NULL WHERE embedding IS NOT NULL');
      await this.changes(`DELETE FROM souls_meta WHERE key = 'embedding_dimension'`);
      await this.changes(`INSERT INTO souls_meta (key, value) VALUES ('embedding_model', :model) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, { model });
      return cleared;
    });
  }

  async shardsWithoutEmbedding(afterId: number, limit: number): Promise<Array<{ id: number; content: string }>> {
    const rows = await this.all('SELECT id, content FROM soul_shards WHERE id > :afterId AND embedding IS NULL ORDER BY id LIMIT :limit', { afterId, limit });
    return rows.map((r) => ({ id: Number(r.id), content: String(r.content) }));
  }

  async shardRowBound(): Promise<number> {
    return Number((await this.get('SELECT COALESCE(MAX(id), 0) AS n FROM soul_shards'))!.n);
  }

  async countShardsWithoutEmbedding(): Promise<number> {
    return Number((await this.get('SELECT COUNT(*) AS n FROM soul_shards WHERE embedding IS NULL'))!.n);
  }

  /** As SQLite's: checked inside the write, and a database whose vectors predate the model's record adopts the first model that stores one. */
  private async fixEmbeddingDimension(shards: ReadonlyArray<{ embedding: Uint8Array | null }>, model: string): Promise<void> {
    const first = shards.find((s) => s.embedding !== null);
    if (first === undefined) return;
    await this.changes(`INSERT INTO souls_meta (key, value) VALUES ('embedding_model', :model) ON CONFLICT DO NOTHING`, { model });
    const bound = (await this.embeddingModel())!;
    if (bound !== model) throw new ValidationError('embedding', otherModelMessage(bound, model));
    const dimension = first.embedding!.byteLength / 4;
    await this.changes(`INSERT INTO souls_meta (key, value) VALUES ('embedding_dimension', :dimension) ON CONFLICT DO NOTHING`, { dimension: String(dimension) });
    const fixed = (await this.embeddingDimension())!;
    const other = shards.find((s) => s.embedding !== null && s.embedding.byteLength / 4 !== fixed);
    if (other) {
      throw new ValidationError('embedding', `must have ${fixed} numbers, the dimension of this database's embeddings, got ${other.embedding!.byteLength / 4}`);
    }
  }

  async embeddingDimension(): Promise<number | null> {
    const row = await this.get(`SELECT value FROM souls_meta WHERE key = 'embedding_dimension'`);
    return row === undefined ? null : Number(row.value);
  }

  async getCalibration(key: string): Promise<StoredCalibration | null> {
    const row = await this.get('SELECT value FROM souls_meta WHERE key = :key', { key: calibrationMetaKey(key) });
    return row === undefined ? null : toStoredCalibration(key, String(row.value));
  }

  putCalibration(key: string, calibration: StoredCalibration): Promise<void> {
    return this.transaction(async () => {
      await this.changes('INSERT INTO souls_meta (key, value) VALUES (:key, :value) ON CONFLICT (key) DO UPDATE SET value = excluded.value', { key: calibrationMetaKey(key), value: JSON.stringify(calibration) });
    });
  }

  async shardEmbeddings(ids: readonly number[]): Promise<Map<number, Uint8Array>> {
    const rows = await this.all('SELECT id, embedding FROM soul_shards WHERE id = ANY(:ids::bigint[]) AND embedding IS NOT NULL', { ids: [...ids] });
    // A copy of its own: a driver's buffer may be a view into a larger one, which a cache holding this would keep alive.
    return new Map(rows.map((r) => [Number(r.id), new Uint8Array(r.embedding as Uint8Array)]));
  }

  revealShards(ids: readonly number[], now: number, cutoff: number): Promise<ShardWrite> {
    return this.transaction(async () => {
      const unique = [...new Set(ids)];
      await this.assertShardsExist(unique);
      await this.lockSouls(await this.soulsOfShards(unique));
      const revealed = (
        await this.all(
          'UPDATE soul_shards SET sealed = 0, revealed_at = :now, updated_at = :now WHERE id = ANY(:ids::bigint[]) AND sealed = 1 RETURNING id',
          { now, ids: unique },
        )
      )
        .map((r) => Number(r.id))
        .sort((a, b) => a - b);
      const gate = await this.gate(await this.soulsOfShards(revealed), cutoff, revealed, 'commit');
      return { shardIds: revealed, gate };
    });
  }

  fadeExhaustedShards(threshold: number, now: number, cutoff: number): Promise<{ fadedCount: number; gate: GateStats[] }> {
    return this.transaction(async () => {
      const exhaustedSql = `SELECT s.id FROM soul_shards s WHERE s.status = 'pending'
           AND s.id IN (${exhaustedShardIdsSql}) ORDER BY s.id`;
      const exhausted = (await this.all(exhaustedSql, { threshold })).map((r) => Number(r.id));
      if (exhausted.length === 0) return { fadedCount: 0, gate: [] };
      const soulIds = await this.soulsOfShards(exhausted);
      await this.lockSouls(soulIds);
      const before = new Map((await this.gate(soulIds, cutoff, [])).map((g) => [g.soulId, g]));
      // Another replica may have faded some of them while this one waited for the locks.
      const fadedCount = await this.changes(`UPDATE soul_shards SET status = 'faded', updated_at = :now WHERE id = ANY(:ids::bigint[]) AND status = 'pending'`, {
        now,
        ids: exhausted,
      });
      const gate = (await this.gate(soulIds, cutoff, [])).map((g) => {
        const was = before.get(g.soulId)!;
        return { ...g, before: was.after, beforeShardIds: was.shardIds };
      });
      return { fadedCount, gate };
    });
  }

  private async hydrateShards(rows: Row[]): Promise<Shard[]> {
    const ids = rows.map((r) => Number(r.id));
    const tags = listsBy(await this.all('SELECT shard_id, tag FROM shard_tags WHERE shard_id = ANY(:ids::bigint[]) ORDER BY shard_id, tag COLLATE "C"', { ids }), 'shard_id', (r) => String(r.tag));
    const souls = listsBy(await this.all('SELECT shard_id, soul_id FROM shard_souls WHERE shard_id = ANY(:ids::bigint[]) ORDER BY shard_id, soul_id', { ids }), 'shard_id', (r) => Number(r.soul_id));
    return rows.map((r) => toShard(r, tags, souls));
  }

  async shardContents(ids: readonly number[]): Promise<Map<number, string>> {
    const rows = await this.all('SELECT id, content FROM soul_shards WHERE id = ANY(:ids::bigint[])', { ids: [...ids] });
    return new Map(rows.map((r) => [Number(r.id), String(r.content)]));
  }

  /** One statement, its tags and souls as arrays: a write's answer reads its shard back in one round trip. */
  async getShards(ids: readonly number[]): Promise<Map<number, Shard>> {
    const rows = await this.all(
      `SELECT ${SHARD_COLUMNS('s')},
         ARRAY(SELECT t.tag FROM shard_tags t WHERE t.shard_id = s.id ORDER BY t.tag COLLATE "C") AS tags,
         ARRAY(SELECT a.soul_id FROM shard_souls a WHERE a.shard_id = s.id ORDER BY a.soul_id) AS soul_ids
       FROM soul_shards s WHERE s.id = ANY(:ids::bigint[])`,
      { ids: [...ids] },
    );
    const tags = new Map(rows.map((r) => [Number(r.id), (r.tags as unknown[]).map(String)]));
    const souls = new Map(rows.map((r) => [Number(r.id), (r.soul_ids as unknown[]).map(Number)]));
    return new Map(rows.map((r) => [Number(r.id), toShard(r, tags, souls)]));
  }

  listShards(filter: ShardFilter, page: { first: number; after: string | null }): Promise<Page<Shard>> {
    const { from, where, params, pageWhere, pageParams } = shardListQuery(filter, page.after, (tags) => ({ clause: 't.tag = ANY(:tags::text[])', value: [...tags] }));
    return this.read(async () => {
      const totalCount = Number((await this.get(`SELECT COUNT(*) AS n FROM ${from} WHERE ${where}`, params))!.n);
      const rows = await this.all(`SELECT ${SHARD_COLUMNS('s')} FROM ${from} WHERE ${pageWhere} ORDER BY s.created_at DESC, s.id DESC LIMIT :limit`, {
        ...pageParams,
        limit: page.first + 1,
      });
      const hasNextPage = rows.length > page.first;
      const items = await this.hydrateShards(rows.slice(0, page.first));
      return shardPage(items, totalCount, hasNextPage);
    });
  }

  async searchShards(query: TextQuery, filter: { soulId?: number; cutoff: number; limit: number }): Promise<Array<{ shardId: number; score: number }>> {
    if (query.words.length === 0) return [];
    const rows = await this.all(searchSql(filter.soulId !== undefined), {
      query: tsQuery(query),
      cutoff: filter.cutoff,
      limit: filter.limit,
      ...(filter.soulId === undefined ? {} : { soulId: filter.soulId }),
    });
    return rows.map((r) => ({ shardId: Number(r.id), score: Number(r.rank) }));
  }

  consideredShards(soulIds: readonly number[], cutoff: number, scope: ShardScope = {}): Promise<Shard[]> {
    const query = consideredQuery(soulIds, cutoff, scope);
    if (!query) return Promise.resolve([]);
    return this.read(async () => this.hydrateShards(await this.all(consideredSql(query.clauses), query.params)));
  }

  async consideredShardVersions(soulIds: readonly number[], cutoff: number, scope: ShardScope = {}): Promise<ShardVersion[]> {
    const query = consideredQuery(soulIds, cutoff, scope);
    if (!query) return [];
    return (await this.all(consideredSql(query.clauses, 's.id, s.updated_at'), query.params)).map((r) => ({ id: Number(r.id), updatedAt: Number(r.updated_at) }));
  }

  async gateStats(soulIds: readonly number[] | 'awake', cutoff: number): Promise<Map<number, GateStats>> {
    if (soulIds !== 'awake') return new Map((await this.all(gateReadSql, { soulIds: [...soulIds], cutoff })).map((r) => [Number(r.soul_id), toGateStats(r)]));
    const rows = await this.all(readinessSql, { cutoff });
    return new Map(rows.map((r) => [Number(r.soul_id), toReadiness(r)]));
  }

  async countsBySource(soulIds: readonly number[], cutoff: number): Promise<Map<number, SourceCount[]>> {
    const result = new Map<number, SourceCount[]>(soulIds.map((id) => [id, []]));
    const rows = await this.all(
      `SELECT ss.soul_id, s.source, COUNT(*) AS n FROM shard_souls ss JOIN soul_shards s ON s.id = ss.shard_id
       WHERE ss.soul_id = ANY(:soulIds::bigint[]) AND ${considered('s')}
       GROUP BY ss.soul_id, s.source ORDER BY ss.soul_id, n DESC, s.source COLLATE "C"`,
      { soulIds: [...soulIds], cutoff },
    );
    for (const r of rows) result.get(Number(r.soul_id))!.push({ source: String(r.source), count: Number(r.n) });
    return result;
  }

  async countsByTagPerSoul(soulIds: readonly number[], cutoff: number): Promise<Map<number, TagCount[]>> {
    const result = new Map<number, TagCount[]>(soulIds.map((id) => [id, []]));
    const rows = await this.all(
      `SELECT ss.soul_id, t.tag, COUNT(*) AS n FROM shard_souls ss JOIN soul_shards s ON s.id = ss.shard_id JOIN shard_tags t ON t.shard_id = s.id
       WHERE ss.soul_id = ANY(:soulIds::bigint[]) AND ${considered('s')} GROUP BY ss.soul_id, t.tag ORDER BY ss.soul_id, n DESC, t.tag COLLATE "C"`,
      { soulIds: [...soulIds], cutoff },
    );
    for (const r of rows) result.get(Number(r.soul_id))!.push({ tag: String(r.tag), count: Number(r.n) });
    return result;
  }

  async countsByTag(soulId: number | null, cutoff: number): Promise<TagCount[]> {
    const rows =
      soulId === null
        ? await this.all(
            `SELECT t.tag, COUNT(*) AS n FROM soul_shards s JOIN shard_tags t ON t.shard_id = s.id
             WHERE ${considered('s')} GROUP BY t.tag ORDER BY n DESC, t.tag COLLATE "C"`,
            { cutoff },
          )
        : await this.all(
            `SELECT t.tag, COUNT(*) AS n FROM shard_souls ss JOIN soul_shards s ON s.id = ss.shard_id JOIN shard_tags t ON t.shard_id = s.id
             WHERE ss.soul_id = :soulId AND ${considered('s')} GROUP BY t.tag ORDER BY n DESC, t.tag COLLATE "C"`,
            { soulId, cutoff },
          );
    return rows.map((r) => ({ tag: String(r.tag), count: Number(r.n) }));
  }

  async pendingCounts(soulIds: readonly number[] | 'awake', cutoff: number): Promise<Map<number, number>> {
    const stats = await this.gateStats(soulIds, cutoff);
    const ids = soulIds === 'awake' ? (await this.listSouls({ dormant: false })).map((s) => s.id) : soulIds;
    return new Map(ids.map((id) => [id, stats.get(id)?.after.count ?? 0]));
  }

  // Maintenance and diagnostics

  statementsExecuted(): number {
    return this.executed;
  }

  async ping(): Promise<void> {
    await this.query('SELECT COUNT(*) AS n FROM souls_schema_migrations');
  }

  async optimize(): Promise<void> {
    await this.query('ANALYZE');
  }

  backup(path: string): Promise<void> {
    throw new InvalidStateError(`a PostgreSQL database is backed up with its own tools, not written to ${path}: run pg_dump (e.g. pg_dump --format=custom --file=souls.dump "$SOULS_DB")`);
  }

  /**
   * The plans PostgreSQL chooses for the hot statements, one line per plan node. The planner weighs the data, so
   * they are explained at a typical cutoff: a week before the newest shard (most evidence older than the window).
   */
  async explainQueryPlans(): Promise<Record<string, string[]>> {
    const cutoff = Number((await this.query('SELECT COALESCE(MAX(created_at), 0) - 7 * 86400000 AS cutoff FROM soul_shards')).rows[0].cutoff);
    const plan = async (sql: string, params: Params) => {
      const { text, values } = positional(sql, { ...params, cutoff });
      return (await this.query(`EXPLAIN (COSTS OFF) ${text}`, values)).rows.map((r) => String(r['QUERY PLAN']));
    };
    return {
      gate: await plan(gateSql, { soulIds: [1], newIds: [] }),
      gateRead: await plan(gateReadSql, { soulIds: [1] }),
      readiness: await plan(readinessSql, {}),
      pendingLoad: await plan(consideredSql([]), { soulIds: [1] }),
      ftsSearch: await plan(searchSql(false), { query: '"x"', limit: 20 }),
      ftsSearchBySoul: await plan(searchSql(true), { query: '"x"', limit: 20, soulId: 1 }),
    };
  }

  /** Empties every table and restarts the ids, as a fresh database: for tests sharing one server. */
  async reset(): Promise<void> {
    await this.query(`TRUNCATE ${pgDataTables.join(', ')} RESTART IDENTITY`);
    this.executed = 0;
  }

  /**
   * Copies whole tables in (souls copy), ids and all, in one transaction: refused unless every table is empty.
   * Each identity sequence then starts past the largest id copied, or past `idFloors[table]` (ids SQLite
   * handed out and later deleted, which must never name a new row).
   */
  importTables(tables: Readonly<Record<string, readonly Row[]>>, idFloors: Readonly<Record<string, number>>): Promise<Record<string, number>> {
    return this.transaction(async () => {
      for (const table of pgDataTables) await this.query(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
      const occupied = await this.get(`SELECT ${pgDataTables.map((t) => `EXISTS (SELECT 1 FROM ${t}) AS ${t}`).join(', ')}`);
      const filled = pgDataTables.filter((t) => occupied![t] === true);
      if (filled.length > 0) throw new InvalidStateError(`the target database is not empty (${filled.join(', ')} hold rows): copy into a new, empty database`);
      const copied: Record<string, number> = {};
      for (const table of pgDataTables) {
        const rows = tables[table] ?? [];
        copied[table] = rows.length;
        if (rows.length === 0) continue;
        const columns = Object.keys(rows[0]).map((c) => `"${c.replaceAll('"', '""')}"`).join(', ');
        // One statement per table: a trait's merged_into names a later trait, checked at the statement's end.
        const json = JSON.stringify(rows, (_, value: unknown) => (value instanceof Uint8Array ? `\\x${Buffer.from(value).toString('hex')}` : value));
        await this.changes(`INSERT INTO ${table} (${columns}) SELECT ${columns} FROM json_populate_recordset(NULL::${table}, :rows::json)`, { rows: json });
      }
      for (const table of pgIdentityTables) {
        await this.all(`SELECT setval(pg_get_serial_sequence('${table}', 'id'), GREATEST(COALESCE((SELECT MAX(id) FROM ${table}), 0), :floor::bigint) + 1, false)`, {
          floor: idFloors[table] ?? 0,
        });
      }
      return copied;
    });
  }

  async close(): Promise<{ checkpointDeferred: string | null }> {
    await this.pool.end();
    return { checkpointDeferred: null };
  }
}
