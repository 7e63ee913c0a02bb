// The refiner soul: a soul like any other that operates the engine through the tools and evolves from the
// quality of its own decisions. What it applies deposits refinement_outcome shards on it; a trait it added that
// is later reverted, or a level-up it planned that is rolled back, deposits a refinement_regret shard.
import {
  addTrait,
  createSoul,
  dropShard,
  getCrystallization,
  getLevelHistory,
  getSoulByName,
  getSouls,
  getTraits,
  listDormantSouls,
  listShards,
  listSouls,
  SoulsError,
  type Shard,
  type Soul,
  type SoulsDb,
  type Trait,
} from '../engine/index.ts';
import type { SoulsPubSub } from '../server/pubsub.ts';
import type { ToolContext } from './context.ts';

export const OUTCOME_SOURCE = 'refinement_outcome';
export const REGRET_SOURCE = 'refinement_regret';
/** The refiner is marked by its slug: "refiner", or "refiner-<name>" for named ones. */
export const REFINER_SLUG = 'refiner';

export function refinerSlug(name?: string | null): string {
  if (name === undefined || name === null || name === '') return REFINER_SLUG;
  const key = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (key === '') throw new SoulsError(`refiner name ${JSON.stringify(name)} has no letter or digit to make a slug from`);
  return key === REFINER_SLUG ? REFINER_SLUG : `${REFINER_SLUG}-${key}`;
}

export function isRefiner(soul: Pick<Soul, 'slug'>): boolean {
  return soul.slug === REFINER_SLUG || (soul.slug?.startsWith(`${REFINER_SLUG}-`) ?? false);
}

/** Every refiner of the database, awake or dormant, oldest first. */
export async function listRefiners(db: SoulsDb): Promise<Soul[]> {
  return [...(await listSouls(db)), ...(await listDormantSouls(db))].filter(isRefiner).sort((a, b) => a.id - b.id);
}

/** The awake refiner with this name's slug (the default refiner without a name), or null. */
export async function findRefiner(db: SoulsDb, name?: string | null): Promise<Soul | null> {
  return findRefinerBySlug(db, refinerSlug(name));
}

export async function findRefinerBySlug(db: SoulsDb, slug: string): Promise<Soul | null> {
  return (await listSouls(db)).find((s) => s.slug === slug && isRefiner(s)) ?? null;
}

export const REFINER_ESSENCE =
  'The refiner tends other souls through the Souls tools. It reads the evidence before it acts, changes a soul only where several ' +
  'sources agree, and keeps every change small enough to audit and undo. It learns from the changes people keep and the ones they take back.';

export const REFINER_TRAITS: readonly { principle: string; provenance: string }[] = [
  {
    principle: 'Propose a trait only when a cluster from at least two sources supports it, and cite those shards.',
    provenance: 'Starting trait (souls refiner init): the crystallization gate asks for source diversity, and an uncited trait cannot be audited.',
  },
  {
    principle: 'Revise an existing trait rather than add a near-duplicate of it.',
    provenance: 'Starting trait (souls refiner init): the trait limit is small, and duplicates only become consolidation work later.',
  },
  {
    principle: 'Consolidate traits only when their principles say the same thing; carry the rest unchanged.',
    provenance: 'Starting trait (souls refiner init): weak consolidations blur a soul, and the level-up preview warns of them.',
  },
  {
    principle: 'Promote a trait into the essence only when the new essence states it in its own words.',
    provenance: 'Starting trait (souls refiner init): a promoted trait leaves the list, so the essence must carry it.',
  },
  {
    principle: 'Dry-run every level-up plan and read its warnings before applying it.',
    provenance: 'Starting trait (souls refiner init): levelup with dryRun writes nothing and shows the block before and after.',
  },
];

/** Creates the refiner: a soul with its essence and starting traits, marked by its slug. Refuses a second one of the same name. */
export async function initRefiner(db: SoulsDb, options: { name?: string | null } = {}): Promise<{ soul: Soul; traits: Trait[] }> {
  const slug = refinerSlug(options.name);
  const existing = (await listRefiners(db)).find((s) => s.slug === slug);
  if (existing) throw new SoulsError(`this database already has the refiner ${JSON.stringify(existing.name)} (soul ${existing.id}, slug ${slug})${existing.deletedAt !== null ? ', dormant' : ''}`);
  const name = options.name ? `Refiner ${options.name}` : 'Refiner';
  if (await getSoulByName(db, name).then((s) => s !== null && s.deletedAt === null)) throw new SoulsError(`a soul named ${JSON.stringify(name)} already exists: give the refiner another name (--name)`);
  const soul = await createSoul(db, {
    name,
    slug,
    essence: REFINER_ESSENCE,
    description: 'Operates the evolution engine through the MCP tools, and evolves from the outcomes of its own refinements',
  });
  const traits: Trait[] = [];
  for (const trait of REFINER_TRAITS) traits.push(await addTrait(db, soul.id, trait));
  return { soul, traits };
}

export type Outcome = {
  soul: Pick<Soul, 'id' | 'name'>;
  action: 'add' | 'revise' | 'revert' | 'reactivate' | 'cite' | 'uncite' | 'levelup' | 'levelup_revert' | 'attune' | 'assign' | 'unassign' | 'rename' | 'oppose' | 'unoppose';
  summary: string;
  traitIds?: readonly number[];
  levelEventId?: number;
  citedShardIds?: readonly number[];
};

/**
 * Deposits a refinement_outcome shard on the session's refiner: what it did, to which soul, citing what.
 * Tags carry the ids (soul:N, trait:N, level:N) so a later revert can be traced back to it.
 */
export async function recordOutcome(ctx: ToolContext, outcome: Outcome): Promise<void> {
  if (ctx.refinerId === null) return;
  const tags = [`soul:${outcome.soul.id}`, `action:${outcome.action}`, ...(outcome.traitIds ?? []).map((id) => `trait:${id}`)];
  if (outcome.levelEventId !== undefined) tags.push(`level:${outcome.levelEventId}`);
  const cites = outcome.citedShardIds && outcome.citedShardIds.length > 0 ? ` Citing shards ${outcome.citedShardIds.map((id) => `#${id}`).join(', ')}.` : '';
  const { shardId, readySoulIds } = await dropShard(ctx.db, `${outcome.summary}${cites}`, OUTCOME_SOURCE, [ctx.refinerId], { tags: tags.slice(0, ctx.db.settings.maxTagsPerShard) });
  await announceShard(ctx.db, ctx.pubsub, shardId, ctx.refinerId, readySoulIds);
}

/** The refiner's own shards are announced like any other: shardDropped, and crystallizationReady when one made it ready. */
async function announceShard(db: SoulsDb, pubsub: SoulsPubSub | undefined, shardId: number, refinerId: number, readySoulIds: readonly number[]): Promise<void> {
  if (!pubsub) return;
  const at = db.clock.now();
  pubsub.publish('shardDropped', { shardId, soulIds: [refinerId], at });
  if (readySoulIds.length === 0) return;
  const verdicts = await getCrystallization(db, readySoulIds);
  pubsub.publishAll('crystallizationReady', readySoulIds.map((soulId) => ({ soulId, priority: verdicts.get(soulId)?.priority ?? 0, at })));
}

async function refinerShards(db: SoulsDb, refinerId: number, source: string): Promise<Shard[]> {
  const shards: Shard[] = [];
  for (const status of ['pending', 'faded'] as const) {
    let after: string | null = null;
    for (;;) {
      const page = await listShards(db, { soulId: refinerId, source, status, includeExpired: true, first: 500, after });
      shards.push(...page.items);
      if (!page.hasNextPage) break;
      after = page.endCursor;
    }
  }
  return shards;
}

const tagged = (shard: Shard, prefix: string) => shard.tags.filter((t) => t.startsWith(prefix)).map((t) => Number(t.slice(prefix.length)));

/** One reconciliation at a time per database: two at once could both see a regret as not yet recorded. */
const running = new WeakMap<SoulsDb, Promise<unknown>>();

/**
 * Deposits a refinement_regret shard on each refiner for every trait it added that is now reverted and every
 * level-up it planned that is now rolled back, once each. Runs after writes (any transport), so a revert made
 * by a person in the web app is noticed as well as one made through the tools. Returns the new shard ids.
 */
export function collectRegrets(db: SoulsDb, pubsub?: SoulsPubSub): Promise<number[]> {
  const previous = running.get(db) ?? Promise.resolve();
  const next = previous.catch(() => undefined).then(() => collectRegretsNow(db, pubsub));
  running.set(db, next);
  return next;
}

async function collectRegretsNow(db: SoulsDb, pubsub?: SoulsPubSub): Promise<number[]> {
  const created: number[] = [];
  for (const refiner of await listRefiners(db)) {
    if (refiner.deletedAt !== null) continue;
    const outcomes = await refinerShards(db, refiner.id, OUTCOME_SOURCE);
    if (outcomes.length === 0) continue;
    const regrets = await refinerShards(db, refiner.id, REGRET_SOURCE);
    const regrettedTraits = new Set(regrets.flatMap((s) => tagged(s, 'trait:')));
    const regrettedLevels = new Set(regrets.flatMap((s) => tagged(s, 'level:')));
    const added = outcomes.filter((s) => s.tags.includes('action:add'));
    const traitIds = [...new Set(added.flatMap((s) => tagged(s, 'trait:')))].filter((id) => !regrettedTraits.has(id));
    const traits = await getTraits(db, traitIds);
    for (const trait of [...traits.values()].sort((a, b) => a.id - b.id)) {
      if (trait.status !== 'reverted') continue;
      const soulName = (await getSouls(db, [trait.soulId])).get(trait.soulId)?.name ?? `soul ${trait.soulId}`;
      const content = `Regret: the trait #${trait.id} I added to ${soulName} (soul #${trait.soulId}) was reverted: "${trait.principle}"`;
      const written = await dropShard(db, content, REGRET_SOURCE, [refiner.id], { tags: [`soul:${trait.soulId}`, `trait:${trait.id}`, 'regret:trait'] });
      await announceShard(db, pubsub, written.shardId, refiner.id, written.readySoulIds);
      created.push(written.shardId);
    }
    const planned = outcomes.filter((s) => s.tags.includes('action:levelup'));
    for (const soulId of [...new Set(planned.flatMap((s) => tagged(s, 'soul:')))].sort((a, b) => a - b)) {
      const history = await getLevelHistory(db, soulId);
      const mine = new Set(planned.filter((s) => s.tags.includes(`soul:${soulId}`)).flatMap((s) => tagged(s, 'level:')));
      for (const event of history) {
        if (!mine.has(event.id) || event.revertedAt === null || regrettedLevels.has(event.id)) continue;
        const content = `Regret: the level-up of soul #${soulId} to level ${event.level} that I planned was rolled back`;
        const written = await dropShard(db, content, REGRET_SOURCE, [refiner.id], { tags: [`soul:${soulId}`, `level:${event.id}`, 'regret:levelup'] });
        await announceShard(db, pubsub, written.shardId, refiner.id, written.readySoulIds);
        created.push(written.shardId);
      }
    }
  }
  return created;
}
