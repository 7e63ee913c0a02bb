import { setMaxListeners } from 'node:events';
import { createPubSub } from 'graphql-yoga';

export const soulChangeKinds = [
  'CREATED',
  'UPDATED',
  'RETIRED',
  'AWAKENED',
  'TRAIT_ADDED',
  'TRAIT_REVISED',
  'TRAIT_REVERTED',
  'TRAIT_REACTIVATED',
  'SHARD_CITED',
  'SHARD_UNCITED',
  'LEVEL_UP',
  'LEVEL_UP_REVERTED',
  'ATTUNED',
] as const;
export type SoulChangeKind = (typeof soulChangeKinds)[number];

export type CrystallizationReadyPayload = { soulId: number; priority: number; at: number };
export type LevelChangedPayload = { soulId: number; eventId: number; kind: 'LEVEL_UP' | 'REVERT'; at: number };
export type SoulChangedPayload = { soulId: number; kind: SoulChangeKind; at: number };
export type ShardDroppedPayload = { shardId: number; soulIds: number[]; at: number };

export type SoulsEvents = {
  crystallizationReady: [CrystallizationReadyPayload];
  levelChanged: [LevelChangedPayload];
  soulChanged: [SoulChangedPayload];
  shardDropped: [ShardDroppedPayload];
};

/**
 * The typed event bus the mutations publish to and the subscriptions read from, behind an EventTarget: in-process by
 * default, or one that goes through Redis (redis-events.ts) so that every replica hears every replica's writes.
 */
export function createSoulsPubSub(eventTarget: EventTarget = new EventTarget()) {
  // Each live subscription is one listener on its topic: without this, Node warns of a possible memory leak from the 11th subscriber on.
  if (eventTarget instanceof EventTarget) setMaxListeners(0, eventTarget);
  return createPubSub<SoulsEvents>({ eventTarget });
}

export type SoulsPubSub = ReturnType<typeof createSoulsPubSub>;
