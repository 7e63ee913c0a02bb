import { localCaller, type Caller } from './auth.ts';
import type { CrystallizationWork, SoulsDb } from '../engine/index.ts';
import { verdictPrice } from './price-list.ts';
import type { SoulsPubSub } from './pubsub.ts';
import { createLoaders, evidenceLoader, type EvidenceKey, type Loaders } from '../../resolvers/loaders.ts';
import type DataLoader from 'dataloader';
import type { EvidenceReport } from '../engine/index.ts';
import { CostMeter } from './limits-cost.ts';
import { defaultLimits } from './limits.ts';

/** Per operation (and, for subscriptions, per event): the engine handle, fresh loaders, the event bus, the caller. */
export type Context = {
  db: SoulsDb;
  pubsub: SoulsPubSub;
  loaders: Loaders;
  caller: Caller;
  /** Charges evidence reports, crystallization verdicts and counts against the cost limit as they resolve (src/server/price-list.ts). */
  cost: CostMeter;
  /** Evidence reports, batched across the souls of the operation (of the event, for a subscriber), each charged to `cost`. */
  evidence: DataLoader<EvidenceKey, EvidenceReport>;
};

export function createContext(db: SoulsDb, pubsub: SoulsPubSub, caller: Caller = localCaller, maxCost = defaultLimits.maxCost): Context {
  const cost = new CostMeter(maxCost);
  const priceVerdicts = (work: CrystallizationWork) => cost.charge(verdictPrice(work), `${work.souls} crystallization verdict(s)`);
  return { db, pubsub, caller, loaders: createLoaders(db, priceVerdicts), cost, evidence: evidenceLoader(db) };
}

const eventLoaders = new WeakMap<object, Loaders>();

/**
 * A subscription keeps one context for its life, so each event gets loaders
 * of its own and never sees rows cached for an earlier one. Every subscriber
 * of the same event shares them: a thousand subscribers, one read.
 */
export function useEventLoaders(context: Context, event: object): void {
  let loaders = eventLoaders.get(event);
  if (!loaders) {
    loaders = createLoaders(context.db);
    eventLoaders.set(event, loaders);
  }
  context.loaders = loaders;
  context.evidence = evidenceLoader(context.db);
  context.cost.reset();
}
