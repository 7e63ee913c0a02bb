import DataLoader from 'dataloader';
import {
  getCrystallization,
  getShards,
  getSoulHealth,
  getSouls,
  getTraits,
  getTraitSignals,
  listTraitsOfSouls,
  pendingShardCounts,
  renderSouls,
  shardCountsBySource,
  shardCountsByTagOfSouls,
  type Crystallization,
  type LevelEvent,
  type Shard,
  type Soul,
  type SoulsDb,
  type SourceCount,
  type TagCount,
  type Trait,
  type TraitSignals,
  type TraitStatus,
} from '../src/engine/index.ts';

/** A loader whose batch function answers a Map keyed like the input; missing keys load as `fallback`. */
function mapLoader<K, V>(load: (keys: readonly K[]) => Promise<Map<K, V>>, fallback: V): DataLoader<K, V> {
  return new DataLoader<K, V>(async (keys) => {
    const found = await load(keys);
    return keys.map((k) => (found.has(k) ? found.get(k)! : fallback));
  });
}

export type TraitQuery = { soulId: number; statuses: readonly TraitStatus[] | null; generation: number | null };

/**
 * Every derived field is read through one of these, batched by key, so a
 * query over N souls costs the same number of statements for any N.
 */
export function createLoaders(db: SoulsDb) {
  const citationsByTrait = new DataLoader<number, Array<{ shardId: number }>>(async (traitIds) => {
    const citations = db.store.citationsOfTraits(traitIds);
    const byTrait = Map.groupBy(citations, (c) => c.traitId);
    return traitIds.map((id) => byTrait.get(id) ?? []);
  });
  const citationsByShard = new DataLoader<number, Array<{ traitId: number }>>(async (shardIds) => {
    const citations = db.store.citationsOfShards(shardIds);
    const byShard = Map.groupBy(citations, (c) => c.shardId);
    return shardIds.map((id) => byShard.get(id) ?? []);
  });
  return {
    soul: mapLoader<number, Soul | null>((ids) => getSouls(db, ids), null),
    trait: mapLoader<number, Trait | null>((ids) => getTraits(db, ids), null),
    shard: mapLoader<number, Shard | null>((ids) => getShards(db, ids), null),
    levelEvent: mapLoader<number, LevelEvent | null>(async (ids) => db.store.getLevelEvents(ids), null),
    renderedLean: mapLoader<number, string>((ids) => renderSouls(db, ids), ''),
    renderedFull: mapLoader<number, string>((ids) => renderSouls(db, ids, { includeProvenance: true }), ''),
    /** Traits of a soul for one filter; souls asked with the same filter share one statement. */
    traits: new DataLoader<TraitQuery, Trait[], string>(
      async (queries) => {
        const groups = Map.groupBy(queries, (q) => JSON.stringify([q.statuses, q.generation]));
        const results = new Map<string, Trait[]>();
        for (const group of groups.values()) {
          const { statuses, generation } = group[0];
          const traits = await listTraitsOfSouls(db, group.map((q) => q.soulId), { status: statuses, generation });
          const bySoul = Map.groupBy(traits, (t) => t.soulId);
          for (const q of group) results.set(traitQueryKey(q), bySoul.get(q.soulId) ?? []);
        }
        return queries.map((q) => results.get(traitQueryKey(q))!);
      },
      { cacheKeyFn: traitQueryKey },
    ),
    activeTraitCount: mapLoader<number, number>(async (ids) => db.store.countActiveTraits(ids), 0),
    pendingShardCount: mapLoader<number, number>((ids) => pendingShardCounts(db, ids), 0),
    shardCountsBySource: mapLoader<number, SourceCount[]>((ids) => shardCountsBySource(db, ids), []),
    shardCountsByTag: mapLoader<number, TagCount[]>((ids) => shardCountsByTagOfSouls(db, ids), []),
    crystallization: mapLoader<number, Crystallization | null>((ids) => getCrystallization(db, ids), null),
    health: mapLoader<number, number>((ids) => getSoulHealth(db, ids), 0),
    levelHistory: new DataLoader<number, LevelEvent[]>(async (soulIds) => {
      const events = db.store.levelHistory(soulIds);
      const bySoul = Map.groupBy(events, (e) => e.soulId);
      return soulIds.map((id) => bySoul.get(id) ?? []);
    }),
    traitSignals: mapLoader<number, TraitSignals | null>((ids) => getTraitSignals(db, ids), null),
    citationsByTrait,
    citationsByShard,
  };
}

function traitQueryKey(q: TraitQuery): string {
  return JSON.stringify([q.soulId, q.statuses, q.generation]);
}

export type Loaders = ReturnType<typeof createLoaders>;


/** The rows for `ids` that exist, in the order asked. */
export async function loadPresent<V>(loader: DataLoader<number, V | null>, ids: readonly number[]): Promise<V[]> {
  const values = await loader.loadMany(ids);
  return values.filter((v): v is V => v !== null && !(v instanceof Error));
}
