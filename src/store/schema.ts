/**
 * Versioned migrations, applied in order; PRAGMA user_version records the last
 * one applied, so an existing file is upgraded in place.
 */
export const migrations: readonly string[] = [
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
];
