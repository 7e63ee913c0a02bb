import DataLoader from 'dataloader';
import {
  formatEvidenceOfSouls,
  getCrystallization,
  getShards,
  getSouls,
  getCounterEvidence,
  getThemes,
  getTraits,
  listThemesOfSouls,
  listTraitsOfSouls,
  renderBlock,
  shardCountsBySource,
  shardCountsByTagOfSouls,
  soulHealth,
  traitSignals,
  type Citation,
  type Crystallization,
  type CrystallizationWork,
  type EvidenceReads,
  type EvidenceReport,
  type EvidenceWork,
  type LevelEvent,
  type Shard,
  type Soul,
  type SoulsDb,
  type SourceCount,
  type TagCount,
  type Theme,
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

/** A loader of lists: one statement for all keys, rows grouped by `keyOf`. */
function groupLoader<V>(load: (keys: readonly number[]) => V[] | Promise<V[]>, keyOf: (row: V) => number): DataLoader<number, V[]> {
  return new DataLoader<number, V[]>(async (keys) => {
    const groups = Map.groupBy(await load(keys), keyOf);
    return keys.map((k) => groups.get(k) ?? []);
  });
}

/**
 * A report asked for: its soul and scope, what hears its work before it is done (the asking operation's meter), and
 * the soul's verdict when the operation has judged it already.
 */
export type EvidenceKey = {
  soulId: number;
  tags: readonly string[] | null;
  query: string | null;
  price: (work: EvidenceWork) => void;
  crystallization?: Crystallization;
  /** The asking operation's rows (its loaders'), shared with its other fields. */
  reads?: EvidenceReads;
};

/**
 * Evidence reports, batched by scope: the reports of one request (a dashboard's souls) read each kind of row once
 * for all of them. A soul asked twice (aliases) is built once and charged to each asking field, as each resolves
 * it: the one its price refuses gets the error, the others the report. Made per operation, and per event for a
 * subscriber: each pays for its own reports.
 */
export function evidenceLoader(db: SoulsDb): DataLoader<EvidenceKey, EvidenceReport> {
  return new DataLoader<EvidenceKey, EvidenceReport>(
    async (keys) => {
      const answers = new Map<EvidenceKey, EvidenceReport | Error>();
      for (const group of Map.groupBy(keys, (k) => JSON.stringify([k.tags, k.query])).values()) {
        const bySoul = Map.groupBy(group, (k) => k.soulId);
        const requests = [...bySoul].map(([soulId, asking]) => ({
          soulId,
          crystallization: asking.find((key) => key.crystallization !== undefined)?.crystallization,
          price: (work: EvidenceWork) => {
            for (const key of asking) {
              try {
                key.price(work);
              } catch (error) {
                answers.set(key, error instanceof Error ? error : new Error(String(error)));
              }
            }
            // Refused for every field asking: nothing of it is built.
            if (asking.every((key) => answers.has(key))) throw answers.get(asking.at(-1)!);
          },
        }));
        const reports = await formatEvidenceOfSouls(db, requests, { tags: group[0].tags, query: group[0].query }, group[0].reads);
        requests.forEach((request, i) => {
          for (const key of bySoul.get(request.soulId)!) if (!answers.has(key)) answers.set(key, reports[i]);
        });
      }
      return keys.map((k) => answers.get(k)!);
    },
    // Every field asking is charged, so none is answered from another's load.
    { cache: false },
  );
}

export type TraitQuery = { soulId: number; statuses: readonly TraitStatus[] | null; generation: number | null };

const activeQuery = (soulId: number): TraitQuery => ({ soulId, statuses: ['active'], generation: null });

function traitQueryKey(q: TraitQuery): string {
  return JSON.stringify([q.soulId, q.statuses, q.generation]);
}

/**
 * Every derived field is read through these, batched by key and sharing rows,
 * so a query over N souls costs the same number of statements for any N.
 * Each loader is made on first use: a request pays only for those its fields read.
 */
export class Loaders {
  private readonly db: SoulsDb;
  /** Hears each batch of verdicts' work before it is done (an operation's meter); none for loaders shared between subscribers. */
  private readonly priceVerdicts: ((work: CrystallizationWork) => void) | undefined;
  /** The moment trait signals are computed at: the start of the request. */
  private readonly now: number;
  #soul: DataLoader<number, Soul | null> | undefined;
  #trait: DataLoader<number, Trait | null> | undefined;
  #citationsByTrait: DataLoader<number, Citation[]> | undefined;
  #attunements: DataLoader<number, number[]> | undefined;
  #traits: DataLoader<TraitQuery, Trait[], string> | undefined;
  #traitSignals: DataLoader<number, TraitSignals | null> | undefined;
  #shard: DataLoader<number, Shard | null> | undefined;
  #levelEvent: DataLoader<number, LevelEvent | null> | undefined;
  #citationsByShard: DataLoader<number, Citation[]> | undefined;
  #crystallization: DataLoader<number, Crystallization | null> | undefined;
  #shardCountsBySource: DataLoader<number, SourceCount[]> | undefined;
  #shardCountsByTag: DataLoader<number, TagCount[]> | undefined;
  #levelHistory: DataLoader<number, LevelEvent[]> | undefined;
  #theme: DataLoader<number, Theme | null> | undefined;
  #themesBySoul: DataLoader<number, Theme[]> | undefined;
  #shardTheme: DataLoader<{ soulId: number; shardId: number }, number | null, string> | undefined;
  #counterEvidence: DataLoader<number, number[]> | undefined;
  /** The verdicts the crystallization loader has made, by soul. */
  readonly #verdicts = new Map<number, Crystallization>();
  #evidenceReads: EvidenceReads | undefined;

  constructor(db: SoulsDb, priceVerdicts?: (work: CrystallizationWork) => void) {
    this.db = db;
    this.now = db.clock.now();
    this.priceVerdicts = priceVerdicts;
  }

  get soul(): DataLoader<number, Soul | null> {
    return (this.#soul ??= mapLoader((ids) => getSouls(this.db, ids), null));
  }

  get trait(): DataLoader<number, Trait | null> {
    return (this.#trait ??= mapLoader((ids) => getTraits(this.db, ids), null));
  }

  get citationsByTrait(): DataLoader<number, Citation[]> {
    return (this.#citationsByTrait ??= groupLoader<Citation>((ids) => this.db.store.citationsOfTraits(ids), (c) => c.traitId));
  }

  get attunements(): DataLoader<number, number[]> {
    return (this.#attunements ??= new DataLoader<number, number[]>(async (soulIds) => {
      const times = await this.db.store.attunements(soulIds);
      return soulIds.map((id) => times.get(id) ?? []);
    }));
  }

  /** Traits of a soul for one filter; souls asked with the same filter share one statement. */
  get traits(): DataLoader<TraitQuery, Trait[], string> {
    return (this.#traits ??= new DataLoader<TraitQuery, Trait[], string>(
      async (queries) => {
        const groups = Map.groupBy(queries, (q) => JSON.stringify([q.statuses, q.generation]));
        const results = new Map<string, Trait[]>();
        for (const group of groups.values()) {
          const { statuses, generation } = group[0];
          const rows = await listTraitsOfSouls(this.db, group.map((q) => q.soulId), { status: statuses, generation });
          for (const row of rows) this.trait.prime(row.id, row);
          const bySoul = Map.groupBy(rows, (t) => t.soulId);
          for (const q of group) results.set(traitQueryKey(q), bySoul.get(q.soulId) ?? []);
        }
        return queries.map((q) => results.get(traitQueryKey(q))!);
      },
      { cacheKeyFn: traitQueryKey },
    ));
  }

  get traitSignals(): DataLoader<number, TraitSignals | null> {
    return (this.#traitSignals ??= new DataLoader<number, TraitSignals | null>(async (traitIds) => {
      const traits = (await this.trait.loadMany(traitIds)).filter((row): row is Trait => row !== null && !(row instanceof Error));
      // Each kind of row loaded once for the batch, not three loads a trait.
      const soulIds = traits.map((t) => t.soulId);
      const [owners, citations, attunements] = await Promise.all([this.soul.loadMany(soulIds), this.citationsByTrait.loadMany(traits.map((t) => t.id)), this.attunements.loadMany(soulIds)]);
      const signals = new Map<number, TraitSignals | Error | null>();
      traits.forEach((trait, i) => {
        const [owner, cited, attunedAt] = [owners[i], citations[i], attunements[i]];
        const failed = [owner, cited, attunedAt].find((value) => value instanceof Error);
        signals.set(trait.id, failed ?? (owner ? traitSignals(trait, { soul: owner as Soul, citations: cited as Citation[], attunedAt: attunedAt as number[] }, this.db.settings, this.now) : null));
      });
      return traitIds.map((id) => signals.get(id) ?? null);
    }));
  }

  get shard(): DataLoader<number, Shard | null> {
    return (this.#shard ??= mapLoader((ids) => getShards(this.db, ids), null));
  }

  get levelEvent(): DataLoader<number, LevelEvent | null> {
    return (this.#levelEvent ??= mapLoader(async (ids) => this.db.store.getLevelEvents(ids), null));
  }

  get citationsByShard(): DataLoader<number, Citation[]> {
    return (this.#citationsByShard ??= groupLoader<Citation>((ids) => this.db.store.citationsOfShards(ids), (c) => c.shardId));
  }

  get crystallization(): DataLoader<number, Crystallization | null> {
    return (this.#crystallization ??= mapLoader(async (ids) => {
      const verdicts = await getCrystallization(this.db, ids, { price: this.priceVerdicts });
      for (const [id, verdict] of verdicts) this.#verdicts.set(id, verdict);
      return verdicts;
    }, null));
  }

  /** The soul's verdict if this operation has made it already (a roster in readiness order judges every soul first). */
  verdictMade(soulId: number): Crystallization | undefined {
    return this.#verdicts.get(soulId);
  }

  get shardCountsBySource(): DataLoader<number, SourceCount[]> {
    return (this.#shardCountsBySource ??= mapLoader((ids) => shardCountsBySource(this.db, ids), []));
  }

  get shardCountsByTag(): DataLoader<number, TagCount[]> {
    return (this.#shardCountsByTag ??= mapLoader((ids) => shardCountsByTagOfSouls(this.db, ids), []));
  }

  get levelHistory(): DataLoader<number, LevelEvent[]> {
    return (this.#levelHistory ??= groupLoader<LevelEvent>((ids) => this.db.store.levelHistory(ids), (e) => e.soulId));
  }

  get theme(): DataLoader<number, Theme | null> {
    return (this.#theme ??= mapLoader((ids) => getThemes(this.db, ids), null));
  }

  get themesBySoul(): DataLoader<number, Theme[]> {
    return (this.#themesBySoul ??= groupLoader<Theme>(async (ids) => {
      const themes = await listThemesOfSouls(this.db, ids);
      for (const theme of themes) this.theme.prime(theme.id, theme);
      return themes;
    }, (t) => t.soulId));
  }

  /** The theme id of a shard in a soul; one statement per soul asked about. */
  get shardTheme(): DataLoader<{ soulId: number; shardId: number }, number | null, string> {
    return (this.#shardTheme ??= new DataLoader<{ soulId: number; shardId: number }, number | null, string>(
      async (keys) => {
        const bySoul = Map.groupBy(keys, (k) => k.soulId);
        const found = new Map<string, number>();
        for (const [soulId, group] of bySoul) {
          const themes = await this.db.store.themesOfShards(soulId, group.map((k) => k.shardId));
          for (const [shardId, themeId] of themes) found.set(`${soulId}:${shardId}`, themeId);
        }
        return keys.map((k) => found.get(`${k.soulId}:${k.shardId}`) ?? null);
      },
      { cacheKeyFn: (k) => `${k.soulId}:${k.shardId}` },
    ));
  }

  /** What evidence reports read, through these loaders: the rows the operation's other fields read, read once. */
  get evidenceReads(): EvidenceReads {
    return (this.#evidenceReads ??= {
      souls: async (ids) => new Map((await loadPresent(this.soul, ids)).map((soul) => [soul.id, soul])),
      activeTraits: async (soulIds) => (await loadAll(this.traits, soulIds.map(activeQuery))).flat(),
      citations: async (traitIds) => (await loadAll(this.citationsByTrait, traitIds)).flat(),
      attunements: async (soulIds) => {
        const times = await loadAll(this.attunements, soulIds);
        return new Map(soulIds.map((id, i) => [id, times[i]]));
      },
    });
  }

  get counterEvidence(): DataLoader<number, number[]> {
    return (this.#counterEvidence ??= mapLoader((ids) => getCounterEvidence(this.db, ids), []));
  }
}

export function createLoaders(db: SoulsDb, priceVerdicts?: (work: CrystallizationWork) => void): Loaders {
  return new Loaders(db, priceVerdicts);
}


/** The values for `keys`, in the order asked; the first error met is thrown. */
async function loadAll<K, V, C>(loader: DataLoader<K, V, C>, keys: readonly K[]): Promise<V[]> {
  const values = await loader.loadMany(keys);
  const failed = values.find((v) => v instanceof Error);
  if (failed) throw failed;
  return values as V[];
}

/** The rows for `ids` that exist, in the order asked. */
export async function loadPresent<V>(loader: DataLoader<number, V | null>, ids: readonly number[]): Promise<V[]> {
  const values = await loader.loadMany(ids);
  return values.filter((v): v is V => v !== null && !(v instanceof Error));
}

export function activeTraits(loaders: Loaders, soulId: number): Promise<Trait[]> {
  return loaders.traits.load(activeQuery(soulId));
}

/** The identity block from rows the loaders share with the rest of the query. */
export async function renderedOf(loaders: Loaders, soul: Soul, includeProvenance: boolean): Promise<string> {
  const traits = await activeTraits(loaders, soul.id);
  const citations = await loaders.citationsByTrait.loadMany(traits.map((t) => t.id));
  const counts = new Map(traits.map((t, i) => [t.id, (citations[i] as Citation[]).length]));
  return renderBlock(soul, traits, counts, { includeProvenance });
}

/** The soul's verdict: the one the operation made already (no promise, no turn of the queue), else loaded. */
export function verdictOf(loaders: Loaders, soulId: number): Crystallization | Promise<Crystallization> {
  return loaders.verdictMade(soulId) ?? loaders.crystallization.load(soulId).then((verdict) => verdict!);
}

export function pendingOf(loaders: Loaders, soulId: number): number | Promise<number> {
  const made = loaders.verdictMade(soulId);
  return made ? made.pendingCount : loaders.crystallization.load(soulId).then((verdict) => verdict?.pendingCount ?? 0);
}

export async function healthOf(loaders: Loaders, soulId: number, knobs: SoulsDb['settings']): Promise<number> {
  const traits = await activeTraits(loaders, soulId);
  const signals = await loadPresent(loaders.traitSignals, traits.map((t) => t.id));
  return soulHealth(signals, await pendingOf(loaders, soulId), knobs);
}
