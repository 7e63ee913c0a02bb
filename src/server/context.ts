import { localCaller, type Caller } from './auth.ts';
import type { SoulsDb } from '../engine/index.ts';
import type { SoulsPubSub } from './pubsub.ts';
import { createLoaders, type Loaders } from '../../resolvers/loaders.ts';
import { CostMeter } from './limits-cost.ts';
import { defaultLimits } from './limits.ts';

/** Per operation (and, for subscriptions, per event): the engine handle, fresh loaders, the event bus, the caller. */
export type Context = {
  db: SoulsDb;
  pubsub: SoulsPubSub;
  loaders: Loaders;
  caller: Caller;
  /** Charges evidence reports and crystallization verdicts against the cost limit as they resolve. */
  cost: CostMeter;
};

export function createContext(db: SoulsDb, pubsub: SoulsPubSub, caller: Caller = localCaller, maxCost = defaultLimits.maxCost): Context {
  return { db, pubsub, caller, loaders: createLoaders(db), cost: new CostMeter(maxCost) };
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
  context.cost.reset();
}
