import type { DatabaseSync } from 'node:sqlite';
import { cleanText, collapseWhitespace, freeSlug, nameKey, slugBase } from '../engine/normalize.ts';

/** SQL, or a step that needs code (folding names) as well. */
export type Migration = string | ((db: DatabaseSync) => void);

type SoulNameRow = { id: number; name: string; slug: string | null; deleted_at: number | null };

/**
 * Version 2 (SPEC turn 2): names unique by a folded key, a slug for every soul,
 * the render's own reference time (saved and restored by level-ups), and when
 * a sealed shard was revealed. Awake souls whose names fold to one key keep
 * them in id order: the oldest keeps its name, later ones get " (2)", " (3)" …
 * so no soul is lost or retired by the upgrade; a name that is nothing but
 * invisible characters becomes "Soul <id>".
 */
function foldedNamesAndReferenceTime(db: DatabaseSync): void {
  db.exec(`
    ALTER TABLE souls ADD COLUMN ordered_at INTEGER NOT NULL DEFAULT 0;
    UPDATE souls SET ordered_at = updated_at;
    ALTER TABLE souls ADD COLUMN name_key TEXT NOT NULL DEFAULT '';
    ALTER TABLE soul_levels ADD COLUMN ordered_at_before INTEGER;
    ALTER TABLE soul_levels ADD COLUMN traits_updated_before TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE soul_shards ADD COLUMN revealed_at INTEGER;
    DROP INDEX idx_souls_name_awake;
  `);
  const rows = db.prepare('SELECT id, name, slug, deleted_at FROM souls ORDER BY deleted_at IS NOT NULL, id').all() as SoulNameRow[];
  const awakeKeys = new Set<string>();
  const slugs = new Set(rows.flatMap((r) => (r.slug === null ? [] : [r.slug])));
  const update = db.prepare('UPDATE souls SET name = :name, name_key = :key, slug = :slug WHERE id = :id');
  for (const row of rows) {
    const cleaned = collapseWhitespace(cleanText(row.name));
    let name = cleaned === '' ? `Soul ${row.id}` : cleaned;
    if (row.deleted_at === null) {
      for (let n = 2; awakeKeys.has(nameKey(name)); n++) name = `${cleaned} (${n})`;
      awakeKeys.add(nameKey(name));
    }
    let slug = row.slug;
    if (slug === null) {
      slug = freeSlug(slugBase(name), (s) => slugs.has(s));
      slugs.add(slug);
    }
    update.run({ id: row.id, name, key: nameKey(name), slug });
  }
  db.exec(`CREATE UNIQUE INDEX idx_souls_name_key_awake ON souls(name_key) WHERE deleted_at IS NULL;`);
}

/**
 * Version 8: the hash of the text each computed vector came from, so an identical text reuses the stored vector
 * instead of being embedded again (the model the vectors came from is a souls_meta row, 'embedding_model'). The
 * column is added only where missing: a file set back to an older version still has it (as in versions 6 and 7).
 */
function contentHashes(db: DatabaseSync): void {
  const columns = db.prepare('PRAGMA table_info(soul_shards)').all() as Array<{ name: string }>;
  if (!columns.some((c) => c.name === 'embedding_hash')) db.exec('ALTER TABLE soul_shards ADD COLUMN embedding_hash TEXT');
  db.exec('CREATE INDEX IF NOT EXISTS idx_shards_embedding_hash ON soul_shards(embedding_hash) WHERE embedding_hash IS NOT NULL');
}

/**
 * Version 9 (SPEC §13, recency counts arrival): when each shard was recorded, apart from the observation time a
 * historical import carries in created_at. A shard recorded before this version gets its updated_at, which is its
 * insertion unless a reveal or an un-fade came later (a reveal counts as new evidence anyway). Each gate row's
 * `latest` is computed again over the shards it covers (created after its floor, up to its `through`), by the new
 * evidence time: max(created, recorded, revealed).
 */
function recordedAt(db: DatabaseSync): void {
  const columns = db.prepare('PRAGMA table_info(soul_shards)').all() as Array<{ name: string }>;
  if (!columns.some((c) => c.name === 'recorded_at')) db.exec('ALTER TABLE soul_shards ADD COLUMN recorded_at INTEGER NOT NULL DEFAULT 0');
  db.exec(`
    UPDATE soul_shards SET recorded_at = updated_at WHERE recorded_at = 0;
    UPDATE soul_gate SET latest = (
      SELECT MAX(MAX(s.created_at, s.recorded_at, COALESCE(s.revealed_at, s.recorded_at)))
      FROM shard_souls ss JOIN soul_shards s ON s.id = ss.shard_id
      WHERE ss.soul_id = soul_gate.soul_id AND s.status = 'pending' AND s.sealed = 0 AND s.created_at > soul_gate.floor AND s.id <= soul_gate.through
    );
  `);
}

/**
 * Versioned migrations, applied in order; PRAGMA user_version records the last
 * one applied, so an existing file is upgraded in place.
 */
export const migrations: readonly Migration[] = [
  `
  CREATE TABLE souls (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    slug TEXT,
    essence TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    level INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    deleted_at INTEGER,
    last_attuned_at INTEGER
  );
  CREATE UNIQUE INDEX idx_souls_name_awake ON souls(name) WHERE deleted_at IS NULL;
  CREATE UNIQUE INDEX idx_souls_slug_awake ON souls(slug) WHERE deleted_at IS NULL AND slug IS NOT NULL;

  -- AUTOINCREMENT: reverting a level-up deletes its merged traits, and their ids must never name a later trait.
  CREATE TABLE soul_traits (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    soul_id INTEGER NOT NULL REFERENCES souls(id),
    principle TEXT NOT NULL,
    provenance TEXT NOT NULL,
    generation INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'consolidated', 'promoted', 'reverted')),
    merged_into INTEGER REFERENCES soul_traits(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX idx_traits_soul ON soul_traits(soul_id, status);

  CREATE TABLE soul_levels (
    id INTEGER PRIMARY KEY,
    soul_id INTEGER NOT NULL REFERENCES souls(id),
    level INTEGER NOT NULL,
    essence_before TEXT NOT NULL,
    essence_after TEXT NOT NULL,
    traits_consolidated TEXT NOT NULL,
    traits_promoted TEXT NOT NULL,
    traits_carried TEXT NOT NULL,
    traits_merged TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    reverted_at INTEGER
  );
  CREATE INDEX idx_levels_soul ON soul_levels(soul_id, id);

  CREATE TABLE soul_shards (
    id INTEGER PRIMARY KEY,
    content TEXT NOT NULL,
    source TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'faded')),
    sealed INTEGER NOT NULL DEFAULT 0 CHECK (sealed IN (0, 1)),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX idx_shards_pending ON soul_shards(status, sealed, created_at) WHERE status = 'pending';

  -- The primary keys serve as the seed's idx_shard_citations_shard and idx_shard_tags_shard.
  CREATE TABLE shard_souls (
    shard_id INTEGER NOT NULL REFERENCES soul_shards(id),
    soul_id INTEGER NOT NULL REFERENCES souls(id),
    PRIMARY KEY (shard_id, soul_id)
  ) WITHOUT ROWID;
  CREATE INDEX idx_shard_souls_soul ON shard_souls(soul_id, shard_id);

  CREATE TABLE shard_citations (
    shard_id INTEGER NOT NULL REFERENCES soul_shards(id),
    trait_id INTEGER NOT NULL REFERENCES soul_traits(id),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (shard_id, trait_id)
  ) WITHOUT ROWID;
  CREATE INDEX idx_shard_citations_trait ON shard_citations(trait_id);

  CREATE TABLE shard_tags (
    shard_id INTEGER NOT NULL REFERENCES soul_shards(id),
    tag TEXT NOT NULL,
    PRIMARY KEY (shard_id, tag)
  ) WITHOUT ROWID;
  CREATE INDEX idx_shard_tags_tag ON shard_tags(tag, shard_id);

  CREATE TABLE soul_attunements (
    soul_id INTEGER NOT NULL REFERENCES souls(id),
    attuned_at INTEGER NOT NULL
  );
  CREATE INDEX idx_attunements_soul ON soul_attunements(soul_id, attuned_at);

  CREATE VIRTUAL TABLE shard_fts USING fts5(content, content = soul_shards, content_rowid = id, tokenize = 'porter unicode61 remove_diacritics 2');
  CREATE TRIGGER soul_shards_fts_insert AFTER INSERT ON soul_shards BEGIN
    INSERT INTO shard_fts(rowid, content) VALUES (new.id, new.content);
  END;
  CREATE TRIGGER soul_shards_fts_delete AFTER DELETE ON soul_shards BEGIN
    INSERT INTO shard_fts(shard_fts, rowid, content) VALUES ('delete', old.id, old.content);
  END;
  CREATE TRIGGER soul_shards_fts_update AFTER UPDATE OF content ON soul_shards BEGIN
    INSERT INTO shard_fts(shard_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO shard_fts(rowid, content) VALUES (new.id, new.content);
  END;
  `,
  foldedNamesAndReferenceTime,
  // Version 3: a caller-supplied embedding per shard (L2-normalized Float32, little-endian), and the
  // database's facts, among them the embedding dimension the first stored vector fixed.
  `
  ALTER TABLE soul_shards ADD COLUMN embedding BLOB;
  CREATE TABLE souls_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
  `,
  // Version 4: the cheap gate's aggregates per soul, kept by every write that adds evidence so a write reads
  // one row per soul instead of all its shards. A row covers the considered shards created after its floor
  // (`sources`: JSON [source, count] pairs); one that is missing (every soul right after this upgrade), has a
  // higher floor or holds an expired shard is rebuilt from the shards when a write next touches the soul.
  `
  CREATE TABLE soul_gate (
    soul_id INTEGER PRIMARY KEY REFERENCES souls(id),
    floor INTEGER NOT NULL,
    count INTEGER NOT NULL,
    oldest INTEGER,
    newest INTEGER,
    latest INTEGER,
    sources TEXT NOT NULL
  );
  `,
  // Version 5: a gate row covers the soul's shards up to `through` (every shard when this version was applied). A
  // write that keeps the row in memory saves it now and then rather than every time; a reader adds the considered
  // shards past `through` to it.
  `
  ALTER TABLE soul_gate ADD COLUMN through INTEGER NOT NULL DEFAULT 0;
  UPDATE soul_gate SET through = (SELECT COALESCE(MAX(id), 0) FROM soul_shards);
  `,
  // Version 6: the SOUL.md a soul was imported from, per convention, so it can be exported anywhere with the
  // sections Souls does not own (SPEC §12). IF NOT EXISTS: a file set back to an older version still has it.
  `
  CREATE TABLE IF NOT EXISTS soul_documents (
    soul_id INTEGER NOT NULL REFERENCES souls(id),
    format TEXT NOT NULL,
    file TEXT NOT NULL,
    text TEXT NOT NULL,
    stored_at INTEGER NOT NULL,
    PRIMARY KEY (soul_id, format)
  ) WITHOUT ROWID;
  `,
  // Version 7: themes the refiner names for a soul's shards (SPEC §12): one theme per shard and soul, the traits a
  // theme contradicts, and every change to them (who, when, what it replaced). IF NOT EXISTS as in version 6.
  `
  CREATE TABLE IF NOT EXISTS soul_themes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    soul_id INTEGER NOT NULL REFERENCES souls(id),
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX IF NOT EXISTS idx_soul_themes_name ON soul_themes(soul_id, name_key);

  CREATE TABLE IF NOT EXISTS shard_themes (
    soul_id INTEGER NOT NULL REFERENCES souls(id),
    shard_id INTEGER NOT NULL REFERENCES soul_shards(id),
    theme_id INTEGER NOT NULL REFERENCES soul_themes(id),
    PRIMARY KEY (soul_id, shard_id)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS idx_shard_themes_theme ON shard_themes(theme_id, shard_id);

  CREATE TABLE IF NOT EXISTS theme_oppositions (
    theme_id INTEGER NOT NULL REFERENCES soul_themes(id),
    trait_id INTEGER NOT NULL REFERENCES soul_traits(id),
    PRIMARY KEY (theme_id, trait_id)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS idx_theme_oppositions_trait ON theme_oppositions(trait_id, theme_id);

  CREATE TABLE IF NOT EXISTS theme_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    soul_id INTEGER NOT NULL REFERENCES souls(id),
    kind TEXT NOT NULL,
    theme_id INTEGER,
    shard_id INTEGER,
    from_theme_id INTEGER,
    to_theme_id INTEGER,
    trait_id INTEGER,
    detail TEXT,
    actor TEXT NOT NULL,
    at INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS idx_theme_events_soul ON theme_events(soul_id, id);
  `,
  contentHashes,
  recordedAt,
];
