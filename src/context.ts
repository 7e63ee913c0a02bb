import type { SoulsDb } from './engine/index.ts';
import type { SoulsPubSub } from './pubsub.ts';
import { createLoaders, type Loaders } from '../resolvers/loaders.ts';

/** Per operation (and, for subscriptions, per event): the engine handle, fresh loaders, the event bus. */
export type Context = {
  db: SoulsDb;
  pubsub: SoulsPubSub;
  loaders: Loaders;
};

export function createContext(db: SoulsDb, pubsub: SoulsPubSub): Context {
  return { db, pubsub, loaders: createLoaders(db) };
}

/** A subscription keeps one context for its life: each event gets new loaders so it never sees cached rows. */
export function refreshLoaders(context: Context): void {
  context.loaders = createLoaders(context.db);
}
