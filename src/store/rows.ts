// Rows as both stores read them (the same columns, the same domain objects), and the statement pieces they share.
import { InvalidStateError, NotFoundError, ValidationError } from '../engine/errors.ts';
import type { CarriedTrait, LevelEvent, Page, Shard, ShardStatus, Soul, SoulDocument, Theme, ThemeEvent, ThemeEventKind, Trait, TraitStatus } from '../engine/model.ts';
import type { CounterCitation } from '../engine/errors.ts';
import type { GateStats, LevelUpWrite, ShardAggregate, ShardFilter, StoredCalibration } from './store.ts';

export type Row = Record<string, unknown>;

export function toSoul(r: Row): Soul {
  return {
    id: Number(r.id),
    name: String(r.name),
    slug: r.slug === null ? null : String(r.slug),
    essence: String(r.essence),
    description: String(r.description),
    level: Number(r.level),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    orderedAt: Number(r.ordered_at),
    deletedAt: r.deleted_at === null ? null : Number(r.deleted_at),
    lastAttunedAt: r.last_attuned_at === null ? null : Number(r.last_attuned_at),
  };
}

export function toSoulDocument(r: Row): SoulDocument {
  return { soulId: Number(r.soul_id), format: String(r.format), file: String(r.file), text: String(r.text), storedAt: Number(r.stored_at) };
}

/** Theme rows with their members and oppositions (each list ordered by theme, then id), by id. */
export function toThemes(rows: readonly Row[], members: readonly Row[], oppositions: readonly Row[]): Map<number, Theme> {
  const themes = new Map<number, Theme>(
    rows.map((r) => [
      Number(r.id),
      { id: Number(r.id), soulId: Number(r.soul_id), name: String(r.name), createdBy: String(r.created_by), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at), memberIds: [], opposes: [] },
    ]),
  );
  for (const m of members) themes.get(Number(m.theme_id))?.memberIds.push(Number(m.shard_id));
  for (const o of oppositions) themes.get(Number(o.theme_id))?.opposes.push(Number(o.trait_id));
  return themes;
}

const orNull = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

export function toThemeEvent(r: Row): ThemeEvent {
  return {
    id: Number(r.id),
    soulId: Number(r.soul_id),
    kind: String(r.kind) as ThemeEventKind,
    themeId: orNull(r.theme_id),
    shardId: orNull(r.shard_id),
    fromThemeId: orNull(r.from_theme_id),
    toThemeId: orNull(r.to_theme_id),
    traitId: orNull(r.trait_id),
    detail: r.detail === null || r.detail === undefined ? null : String(r.detail),
    actor: String(r.actor),
    at: Number(r.at),
  };
}

export const insertThemeEventSql = `INSERT INTO theme_events (soul_id, kind, theme_id, shard_id, from_theme_id, to_theme_id, trait_id, detail, actor, at)
  VALUES (:soulId, :kind, :themeId, :shardId, :fromThemeId, :toThemeId, :traitId, :detail, :actor, :at)`;

/** The parameters of insertThemeEventSql, every optional column null unless given. */
export function themeEventParams(event: Pick<ThemeEvent, 'soulId' | 'kind' | 'actor' | 'at'> & Partial<ThemeEvent>): Record<string, string | number | null> {
  return {
    soulId: event.soulId,
    kind: event.kind,
    themeId: event.themeId ?? null,
    shardId: event.shardId ?? null,
    fromThemeId: event.fromThemeId ?? null,
    toThemeId: event.toThemeId ?? null,
    traitId: event.traitId ?? null,
    detail: event.detail ?? null,
    actor: event.actor,
    at: event.at,
  };
}

export function toTrait(r: Row): Trait {
  return {
    id: Number(r.id),
    soulId: Number(r.soul_id),
    principle: String(r.principle),
    provenance: String(r.provenance),
    generation: Number(r.generation),
    status: String(r.status) as TraitStatus,
    mergedInto: r.merged_into === null ? null : Number(r.merged_into),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

export function toLevelEvent(r: Row): LevelEvent {
  return {
    id: Number(r.id),
    soulId: Number(r.soul_id),
    level: Number(r.level),
    essenceBefore: String(r.essence_before),
    essenceAfter: String(r.essence_after),
    consolidated: JSON.parse(String(r.traits_consolidated)) as number[],
    promoted: JSON.parse(String(r.traits_promoted)) as number[],
    carried: JSON.parse(String(r.traits_carried)) as CarriedTrait[],
    merged: JSON.parse(String(r.traits_merged)) as number[],
    createdAt: Number(r.created_at),
    revertedAt: r.reverted_at === null ? null : Number(r.reverted_at),
  };
}

/** The row a level-up records, with what an exact revert restores (SPEC §6–7): the same statement in both stores. */
export const insertLevelEventSql = `INSERT INTO soul_levels (soul_id, level, essence_before, essence_after, traits_consolidated, traits_promoted, traits_carried,
    traits_merged, created_at, ordered_at_before, traits_updated_before)
  VALUES (:soulId, :level, :before, :after, :consolidated, :promoted, :carried, :merged, :now, :orderedAtBefore, :updatedBefore) RETURNING *`;

export function levelEventParams(
  soul: Soul,
  plan: LevelUpWrite,
  carried: readonly CarriedTrait[],
  merged: readonly number[],
  updatedBefore: ReadonlyArray<{ id: number; updatedAt: number }>,
  now: number,
): Record<string, string | number> {
  return {
    soulId: soul.id,
    level: soul.level + 1,
    before: soul.essence,
    after: plan.newEssence,
    consolidated: JSON.stringify(plan.consolidations.flatMap((g) => g.sourceTraitIds)),
    promoted: JSON.stringify(plan.promotedTraitIds),
    carried: JSON.stringify(carried),
    merged: JSON.stringify(merged),
    now,
    orderedAtBefore: soul.orderedAt,
    updatedBefore: JSON.stringify(updatedBefore),
  };
}

export function toAggregate(r: Row | undefined, suffix: '' | '_before'): ShardAggregate {
  if (!r) return { count: 0, distinctSources: 0, oldest: null, newest: null, latest: null };
  const time = (column: string) => {
    const value = r[`${column}${suffix}`];
    return value === null ? null : Number(value);
  };
  return {
    count: Number(r[`count${suffix}`]),
    distinctSources: Number(r[`sources${suffix}`]),
    oldest: time('oldest'),
    newest: time('newest'),
    latest: time('latest'),
  };
}

export function parseIds(value: unknown): number[] {
  if (value === null || value === undefined) return [];
  return String(value)
    .split(',')
    .map(Number)
    .sort((a, b) => a - b);
}

export function encodeCursor(createdAt: number, id: number): string {
  return Buffer.from(`${createdAt}:${id}`).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: number; id: number } {
  const match = /^(-?\d{1,16}):(\d{1,16})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match) throw new ValidationError('after', 'is not a cursor returned by this API');
  return { createdAt: Number(match[1]), id: Number(match[2]) };
}

/** A shard row with its tags and souls, each list keyed by shard id. */
export function toShard(r: Row, tags: ReadonlyMap<number, string[]>, souls: ReadonlyMap<number, number[]>): Shard {
  return {
    id: Number(r.id),
    content: String(r.content),
    source: String(r.source),
    status: String(r.status) as ShardStatus,
    sealed: Number(r.sealed) === 1,
    tags: tags.get(Number(r.id)) ?? [],
    soulIds: souls.get(Number(r.id)) ?? [],
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    recordedAt: Number(r.recorded_at),
    revealedAt: r.revealed_at === null ? null : Number(r.revealed_at),
  };
}

/** Rows grouped by an id into lists, in row order; `keys` start empty lists for ids no row names. */
export function listsBy<T>(rows: readonly Row[], key: string, value: (r: Row) => T, keys: readonly number[] = []): Map<number, T[]> {
  const lists = new Map<number, T[]>(keys.map((id) => [id, []]));
  for (const r of rows) {
    const list = lists.get(Number(r[key]));
    if (list) list.push(value(r));
    else lists.set(Number(r[key]), [value(r)]);
  }
  return lists;
}

/** A row of the gate statement: the aggregates with every considered shard, and without the write's own (the same for a read's). */
export function toGateStats(r: Row): GateStats {
  const [shardIds, after] = [parseIds(r.ids), toAggregate(r, '')];
  const read = r.count_before === undefined;
  const stats: GateStats = {
    soulId: Number(r.soul_id),
    dormant: r.deleted_at !== null,
    lastAttunedAt: r.last_attuned_at === null ? null : Number(r.last_attuned_at),
    shardIds,
    beforeShardIds: read ? shardIds : parseIds(r.ids_before),
    after,
    before: read ? after : toAggregate(r, '_before'),
  };
  if (r.themed !== undefined) stats.themed = r.themed === true || Number(r.themed) === 1;
  return stats;
}

/** A row of the readiness statement (awake souls, no write): before and after are the same. */
export function toReadiness(r: Row): GateStats {
  const agg = toAggregate(r, '');
  return {
    soulId: Number(r.soul_id),
    dormant: false,
    lastAttunedAt: r.last_attuned_at === null ? null : Number(r.last_attuned_at),
    shardIds: parseIds(r.ids),
    beforeShardIds: parseIds(r.ids),
    after: agg,
    before: agg,
  };
}

/**
 * listShards' statement pieces, newest first: its FROM, the WHERE of the count, and the WHERE of the page (the
 * cursor's clause added), each with only its own parameters. `tagsIn` writes the store's "tag in a list" test.
 */
export function shardListQuery(filter: ShardFilter, after: string | null, tagsIn: (tags: readonly string[]) => { clause: string; value: unknown }) {
  const clauses = ['s.status = :status'];
  const params: Record<string, unknown> = { status: filter.status };
  let from = 'soul_shards s';
  if (filter.soulId !== undefined) {
    from = 'shard_souls ss JOIN soul_shards s ON s.id = ss.shard_id';
    clauses.push('ss.soul_id = :soulId');
    params.soulId = filter.soulId;
  }
  if (filter.source !== undefined) {
    clauses.push('s.source = :source');
    params.source = filter.source;
  }
  if (filter.sealed !== undefined) {
    clauses.push('s.sealed = :sealed');
    params.sealed = filter.sealed ? 1 : 0;
  }
  if (filter.cutoff !== null) {
    clauses.push('s.created_at > :cutoff');
    params.cutoff = filter.cutoff;
  }
  if (filter.tags && filter.tags.length > 0) {
    const { clause, value } = tagsIn(filter.tags);
    clauses.push(`EXISTS (SELECT 1 FROM shard_tags t WHERE t.shard_id = s.id AND ${clause})`);
    params.tags = value;
  }
  const where = clauses.join(' AND ');
  const pageClauses = [where];
  // The count statement must not receive the cursor's parameters: node:sqlite refuses unknown named parameters.
  const pageParams: Record<string, unknown> = { ...params };
  if (after !== null) {
    const cursor = decodeCursor(after);
    pageClauses.push('(s.created_at < :afterCreatedAt OR (s.created_at = :afterCreatedAt AND s.id < :afterId))');
    Object.assign(pageParams, { afterCreatedAt: cursor.createdAt, afterId: cursor.id });
  }
  return { from, where, params, pageWhere: pageClauses.join(' AND '), pageParams };
}

/** A page of shards, with a cursor for each. */
export function shardPage(items: Shard[], totalCount: number, hasNextPage: boolean): Page<Shard> {
  const cursors = items.map((s) => encodeCursor(s.createdAt, s.id));
  return { items, cursors, totalCount, hasNextPage, endCursor: cursors.at(-1) ?? null };
}

/** Pending, unsealed and newer than the expiry cutoff: the shards crystallization and reports consider. */
export const considered = (alias: string) => `${alias}.status = 'pending' AND ${alias}.sealed = 0 AND ${alias}.created_at > :cutoff`;

/** A shard row's columns but its embedding, which only similarity reads. */
export const SHARD_COLUMNS = (alias: string) =>
  ['id', 'content', 'source', 'status', 'sealed', 'created_at', 'updated_at', 'recorded_at', 'revealed_at'].map((c) => `${alias}.${c}`).join(', ');

/** How a store's SQL spells what the statements both stores build from one text need. */
export type Dialect = {
  /** Ids aggregated into one comma-separated text (NULLs skipped). */
  idList(expr: string): string;
  /** The larger of two values: MAX in SQLite, GREATEST in PostgreSQL. */
  greatest: string;
  /** The join keyword: SQLite's CROSS JOIN fixes the join order; PostgreSQL plans its own. */
  join: string;
};

/**
 * When a shard became evidence the soul could see (SPEC §4 condition 5, §13): when it was recorded, or revealed if it
 * was sealed, whatever observation time (created_at) a historical import gave it; never before that time.
 */
export const evidenceTime = (dialect: Dialect, alias: string) =>
  `${dialect.greatest}(${alias}.created_at, ${alias}.recorded_at, COALESCE(${alias}.revealed_at, ${alias}.recorded_at))`;

/**
 * The cheap gate for each soul (`soulFilter` picks them) in one indexed query, once over every considered shard
 * and once over those `old` keeps (the shards before the write; null for a read, which has no write: toGateStats
 * then takes the aggregates for both); `extraJoin` is joined after the shards, and `extraColumns` are selected per soul.
 */
export function gateQuery(dialect: Dialect, { old, soulFilter, extraJoin = '', extraColumns = '' }: { old: string | null; soulFilter: string; extraJoin?: string; extraColumns?: string }): string {
  const latest = evidenceTime(dialect, 's');
  const before =
    old === null
      ? ''
      : `,
      ${dialect.idList(`CASE WHEN ${old} THEN s.id END`)} AS ids_before,
      COUNT(CASE WHEN ${old} THEN 1 END) AS count_before,
      COUNT(DISTINCT CASE WHEN ${old} THEN s.source END) AS sources_before,
      MIN(CASE WHEN ${old} THEN s.created_at END) AS oldest_before,
      MAX(CASE WHEN ${old} THEN s.created_at END) AS newest_before,
      MAX(CASE WHEN ${old} THEN ${latest} END) AS latest_before`;
  return `SELECT so.id AS soul_id, so.deleted_at, so.last_attuned_at, ${dialect.idList('s.id')} AS ids,${extraColumns === '' ? '' : ` ${extraColumns},`}
      COUNT(s.id) AS count, COUNT(DISTINCT s.source) AS sources, MIN(s.created_at) AS oldest, MAX(s.created_at) AS newest,
      MAX(${latest}) AS latest${before}
    FROM souls so
    LEFT JOIN shard_souls ss ON ss.soul_id = so.id
    LEFT JOIN soul_shards s ON s.id = ss.shard_id AND ${considered('s')}${extraJoin === '' ? '' : `\n    ${extraJoin}`}
    WHERE ${soulFilter}
    GROUP BY so.id
    ORDER BY so.id`;
}

/** Every non-dormant soul with considered shards, with the gate's aggregates over them. */
export function readinessQuery(dialect: Dialect): string {
  return `SELECT so.id AS soul_id, so.deleted_at, so.last_attuned_at, ${dialect.idList('s.id')} AS ids,
    COUNT(*) AS count, COUNT(DISTINCT s.source) AS sources, MIN(s.created_at) AS oldest, MAX(s.created_at) AS newest, MAX(${evidenceTime(dialect, 's')}) AS latest
  FROM soul_shards s
  ${dialect.join} shard_souls ss ON ss.shard_id = s.id
  ${dialect.join} souls so ON so.id = ss.soul_id AND so.deleted_at IS NULL
  WHERE ${considered('s')}
  GROUP BY so.id
  ORDER BY so.id`;
}

/**
 * The ids of shards cited by at least `:threshold` distinct traits (SPEC §3, fading). A merged trait carries its
 * sources' citations (SPEC §12); such a carried citation is the same use of the evidence, so it does not count again.
 */
const notCarried = `NOT EXISTS (SELECT 1 FROM shard_citations sc JOIN soul_traits src ON src.id = sc.trait_id WHERE sc.shard_id = c.shard_id AND src.merged_into = c.trait_id)`;
export const exhaustedShardIdsSql = `SELECT c.shard_id FROM shard_citations c WHERE ${notCarried} GROUP BY c.shard_id HAVING COUNT(DISTINCT c.trait_id) >= :threshold`;

/** How many distinct traits count as citing the shard `shardColumn` names, by the rule of exhaustedShardIdsSql. */
export const citingTraitCount = (shardColumn: string) => `(SELECT COUNT(DISTINCT c.trait_id) FROM shard_citations c WHERE c.shard_id = ${shardColumn} AND ${notCarried})`;

/** A trait's new citations start from its consolidation sources' citations, each shard once, at its earliest citation time. */
export const carrySourceCitationsSql = (sourceList: string, mergedId: string) => `INSERT INTO shard_citations (shard_id, trait_id, created_at)
  SELECT shard_id, ${mergedId}, MIN(created_at) FROM shard_citations WHERE trait_id IN ${sourceList} GROUP BY shard_id`;

/** "shard 5 is attributed to soul 2 (Bo), not to soul 1 (Ada), the soul of trait 9". */
export function foreignShardMessage(shardId: number, shardSouls: ReadonlyArray<{ id: number; name: string }>, soul: { id: number; name: string }, traitId: number | null): string {
  const owners = shardSouls.length === 0 ? 'no soul' : `${shardSouls.length === 1 ? 'soul' : 'souls'} ${shardSouls.map((s) => `${s.id} (${s.name})`).join(', ')}`;
  const whose = traitId === null ? 'the soul of the new trait' : `the soul of trait ${traitId}`;
  return `shard ${shardId} is attributed to ${owners}, not to soul ${soul.id} (${soul.name}), ${whose}: a trait cites only its own soul's shards`;
}

/**
 * Counter-citations (SPEC §13): a trait's citation of a shard held by a theme that opposes a trait; `where` picks them
 * (o: the opposition, t: its theme, st: the shard's membership, c: the citation).
 */
export const counterCitationsSql = (where: string) => `SELECT o.theme_id, t.name AS theme_name, o.trait_id AS opposed_id, c.trait_id AS citing_id, c.shard_id
  FROM theme_oppositions o
  JOIN soul_themes t ON t.id = o.theme_id
  JOIN shard_themes st ON st.theme_id = o.theme_id
  JOIN shard_citations c ON c.shard_id = st.shard_id
  WHERE ${where}
  ORDER BY o.theme_id, o.trait_id, c.trait_id, c.shard_id`;

/** The field of a shard in a theme assignment call: `assignments[i].shardIds[j]` of its first mention. */
export function assignmentField(assignments: ReadonlyArray<{ shardIds: readonly number[] }>, shardId: number): string {
  const i = assignments.findIndex((a) => a.shardIds.includes(shardId));
  return `assignments[${i}].shardIds[${assignments[i].shardIds.indexOf(shardId)}]`;
}

export const toCounterCitation = (r: Row): CounterCitation => ({
  themeId: Number(r.theme_id),
  themeName: String(r.theme_name),
  opposedTraitId: Number(r.opposed_id),
  citingTraitId: Number(r.citing_id),
  shardId: Number(r.shard_id),
});

/** "an active trait (12) already has this principle". */
export const duplicatePrincipleMessage = (traitId: number) => `active trait ${traitId} already has this principle`;

/**
 * With an event id a revert is retry-safe (SPEC §12): it reverts that event only while it is the soul's latest
 * unreverted one, so a second call with the same id is refused instead of undoing the level-up before it.
 */
export function checkRevertTarget(soulId: number, levelEventId: number, asked: Row | undefined, latest: Row | undefined): void {
  if (!asked) throw new NotFoundError('LevelEvent', levelEventId);
  if (Number(asked.soul_id) !== soulId) throw new InvalidStateError(`level-up ${levelEventId} is of soul ${Number(asked.soul_id)}, not of soul ${soulId}`);
  if (asked.reverted_at !== null) throw new InvalidStateError(`level-up ${levelEventId} is already reverted`);
  if (!latest || Number(latest.id) !== levelEventId) {
    throw new InvalidStateError(`level-up ${levelEventId} is not the latest of soul ${soulId}: revert level-up ${latest ? Number(latest.id) : '?'} first`);
  }
}

/** A vector of one model refused by a database whose vectors come from another: they would mean nothing side by side. */
export const otherModelMessage = (bound: string, model: string) =>
  `this database's vectors come from the model "${bound}", not "${model}": vectors of two models are never compared (\`souls reindex\` re-embeds every shard with a new model)`;

/** souls_meta's key of a calibration. */
export const calibrationMetaKey = (key: string): string => `calibration:${key}`;

/** A stored calibration's JSON, checked: a threshold in (0, 1] or the row is not one Souls wrote. */
export function toStoredCalibration(key: string, value: string): StoredCalibration {
  const parsed = JSON.parse(value) as StoredCalibration;
  if (typeof parsed?.threshold !== 'number' || !(parsed.threshold > 0 && parsed.threshold <= 1)) throw new Error(`souls_meta ${calibrationMetaKey(key)} holds no threshold in (0, 1]: ${value}`);
  return parsed;
}
