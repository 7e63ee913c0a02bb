/**
 * A realistic roster for the dashboard: `souls` souls, each with a few dozen pending shards from several sources
 * over a few weeks (texts from the observation corpus), three traits (some citing shards), a theme judged in every
 * third soul, and a level-up in every fifth. Written through the engine in bulk (one dropShards per 10,000 shards),
 * so that a test can build a thousand souls in seconds.
 */
import { DAY_MS, addTrait, assignThemes, citeShards, createSoul, dropShards, levelUp, type ShardInput, type SoulsDb } from '../src/engine/index.ts';
import { makeObservationCorpus, makeRng } from './corpus.ts';

export const ROSTER_SOURCES = ['delegation', 'distillation', 'quest_turnin', 'manual_review', 'reader_feedback', 'session_observation'];

export type RosterOptions = { souls: number; seed?: number; minShards?: number; maxShards?: number };

export type Roster = { soulIds: number[]; shardCount: number };

/** How many shards each soul gets, and from how many sources: a few dozen, from three to six. */
function shape(rng: () => number, options: RosterOptions): { shards: number; sources: number } {
  const min = options.minShards ?? 24;
  const max = options.maxShards ?? 48;
  return { shards: min + Math.floor(rng() * (max - min + 1)), sources: 3 + Math.floor(rng() * 4) };
}

export async function seedRoster(db: SoulsDb, options: RosterOptions): Promise<Roster> {
  const rng = makeRng(options.seed ?? 1);
  const now = db.clock.now();
  const soulIds: number[] = [];
  const plans: { soulId: number; shards: number; sources: number }[] = [];
  for (let i = 0; i < options.souls; i++) {
    const soul = await createSoul(db, { name: `Soul ${String(i).padStart(4, '0')}`, essence: `Soul ${i} learns from what it is seen to do, steady and curious.` });
    soulIds.push(soul.id);
    plans.push({ soulId: soul.id, ...shape(rng, options) });
  }
  const texts = makeObservationCorpus(plans.reduce((n, p) => n + p.shards, 0), options.seed ?? 1);
  const inputs: ShardInput[] = [];
  for (const plan of plans) {
    for (let k = 0; k < plan.shards; k++) {
      inputs.push({
        content: texts[inputs.length],
        source: ROSTER_SOURCES[(plan.soulId + k) % plan.sources],
        soulIds: [plan.soulId],
        tags: [`topic-${k % 5}`],
        createdAt: now - 60_000 - Math.floor(rng() * 30 * DAY_MS),
      });
    }
  }
  const shardIds: number[] = [];
  for (let start = 0; start < inputs.length; start += db.settings.maxBatchSize) {
    shardIds.push(...(await dropShards(db, inputs.slice(start, start + db.settings.maxBatchSize))).shardIds);
  }
  let offset = 0;
  for (const [i, plan] of plans.entries()) {
    const own = shardIds.slice(offset, offset + plan.shards);
    offset += plan.shards;
    await judge(db, i, plan.soulId, own);
  }
  return { soulIds, shardCount: shardIds.length };
}

/** Three traits, the first two citing shards; a theme of four shards in every third soul; a level-up in every fifth. */
async function judge(db: SoulsDb, i: number, soulId: number, shardIds: number[]): Promise<void> {
  const traitIds: number[] = [];
  for (let t = 0; t < 3; t++) {
    const trait = await addTrait(db, soulId, { principle: `Principle ${t} of soul ${i}: checks the work before handing it on`, provenance: 'Seen in review.' });
    traitIds.push(trait.id);
  }
  await citeShards(db, traitIds[0], shardIds.slice(0, 2));
  await citeShards(db, traitIds[1], shardIds.slice(2, 3));
  if (i % 3 === 0) await assignThemes(db, soulId, [{ newThemeName: `Theme of soul ${i}`, shardIds: shardIds.slice(4, 8) }]);
  if (i % 5 === 0) await levelUp(db, soulId, { newEssence: `Soul ${i}, one level wiser.`, consolidations: [], promotedTraitIds: [], carriedTraitIds: traitIds });
}
