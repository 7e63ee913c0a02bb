import { GraphQLError } from 'graphql';

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
  'THEMES_CHANGED',
] as const;
export type SoulChangeKind = (typeof soulChangeKinds)[number];

export type CrystallizationReadyPayload = { soulId: number; priority: number; at: number };
export type LevelChangedPayload = { soulId: number; eventId: number; kind: 'LEVEL_UP' | 'REVERT'; at: number };
export type SoulChangedPayload = { soulId: number; kind: SoulChangeKind; at: number };
export type ShardDroppedPayload = { shardId: number; soulIds: number[]; at: number };

export type SoulsEvents = {
  crystallizationReady: CrystallizationReadyPayload;
  levelChanged: LevelChangedPayload;
  soulChanged: SoulChangedPayload;
  shardDropped: ShardDroppedPayload;
};
export type Topic = keyof SoulsEvents;

/**
 * How many events one subscriber may have waiting before it is closed with SUBSCRIBER_TOO_SLOW: ten full batches
 * (dropShards takes 10,000). A write's events are one message, kept by reference, so waiting events cost a pointer each.
 */
export const MAX_WAITING_EVENTS = 100_000;

/** Why a message from the event target was dropped (souls_pubsub_messages_dropped_total). */
export type DropReason = 'unparsable' | 'invalid';

export type PubSubCounters = {
  published?: { inc(labels: { topic: string }, value?: number): void };
  dropped?: { inc(labels: { reason: DropReason }): void };
  tooSlow?: { inc(): void };
};

export type PubSubOptions = { counters?: PubSubCounters; maxWaitingEvents?: number };

/** The error a subscriber that fell too far behind gets last; it must re-read what it follows and subscribe again. */
export function subscriberTooSlow(limit: number): GraphQLError {
  return new GraphQLError(`this subscriber fell ${limit} events behind and was closed; re-read what it follows (e.g. the shards since the last one it got) and subscribe again`, {
    extensions: { code: 'SUBSCRIBER_TOO_SLOW', limit },
  });
}

export function isSubscriberTooSlow(error: unknown): error is GraphQLError {
  return error instanceof GraphQLError && error.extensions.code === 'SUBSCRIBER_TOO_SLOW';
}

export type SoulsPubSub = {
  /** One event. */
  publish<T extends Topic>(topic: T, event: SoulsEvents[T]): void;
  /** A write's events as one message: however many, no subscriber's buffer fills with them at once. */
  publishAll<T extends Topic>(topic: T, events: readonly SoulsEvents[T][]): void;
  /** Every event of the topic, one at a time, at the reader's pace; ends with subscriberTooSlow() past maxWaitingEvents. */
  subscribe<T extends Topic>(topic: T): AsyncIterableIterator<SoulsEvents[T]>;
  /** The same a write at a time (its events whole), for a follower that acts once per write rather than per event. */
  subscribeWrites<T extends Topic>(topic: T): AsyncIterableIterator<readonly SoulsEvents[T][]>;
};

const isId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;
const isTime = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const validators: { [T in Topic]: (event: Record<string, unknown>) => boolean } = {
  crystallizationReady: (e) => isId(e.soulId) && typeof e.priority === 'number' && Number.isFinite(e.priority) && isTime(e.at),
  levelChanged: (e) => isId(e.soulId) && isId(e.eventId) && (e.kind === 'LEVEL_UP' || e.kind === 'REVERT') && isTime(e.at),
  soulChanged: (e) => isId(e.soulId) && (soulChangeKinds as readonly unknown[]).includes(e.kind) && isTime(e.at),
  shardDropped: (e) => isId(e.shardId) && Array.isArray(e.soulIds) && e.soulIds.every(isId) && isTime(e.at),
};

/**
 * A message's events if every one has its topic's shape, else null. A message is an array of events (one write's);
 * a lone event is read as an array of one, as replicas before batching sent it.
 */
export function validEvents<T extends Topic>(topic: T, detail: unknown): SoulsEvents[T][] | null {
  const events = Array.isArray(detail) ? detail : [detail];
  const valid = validators[topic];
  return events.every((event) => isObject(event) && valid(event)) ? (events as SoulsEvents[T][]) : null;
}

const topicOf = (type: string): Topic | null => (Object.hasOwn(validators, type) ? (type as Topic) : null);

type Subscriber = { take(events: readonly unknown[]): void };

/**
 * At most this many events are handed out in one turn of the event loop, all of a bus's subscribers together, and
 * no more once a turn has lasted TURN_BUDGET_MS: a write of 10,000 shards read by many subscribers is delivered a
 * slice per turn, and requests are answered between slices.
 */
export const EVENTS_PER_TURN = 128;
const TURN_BUDGET_MS = 10;

/**
 * Turns of the event loop shared by every subscriber of a bus. `pause()` is null while this turn may hand out one
 * more event, else a promise that resolves at the next turn (after the loop has polled for I/O). Events a subscriber
 * reads after a real wait count too: a turn is bounded whatever mix of readers it holds.
 */
function loopTurns() {
  let turn: { startedAt: number; handedOut: number } | null = null;
  let nextTurn: Promise<void> | null = null;
  return {
    pause(): Promise<void> | null {
      if (nextTurn) return nextTurn;
      if (!turn) {
        turn = { startedAt: performance.now(), handedOut: 0 };
        // This turn ends at the loop's next check phase: whoever hands out an event after it starts a new one.
        setImmediate(() => (turn = null));
      }
      if (turn.handedOut < EVENTS_PER_TURN && performance.now() - turn.startedAt < TURN_BUDGET_MS) {
        turn.handedOut++;
        return null;
      }
      nextTurn = new Promise((resolve) =>
        setImmediate(() => {
          nextTurn = null;
          resolve();
        }),
      );
      return nextTurn;
    },
  };
}

/**
 * The typed event bus the mutations publish to and the subscriptions read from, behind an EventTarget: in-process by
 * default, or one that goes through Redis (redis-events.ts) so that every replica hears every replica's writes. Each
 * topic has one listener on the target, which checks every message once and hands it to the topic's subscribers by
 * reference; each subscriber reads it one event at a time. Nothing here throws into the target's dispatch.
 */
export function createSoulsPubSub(sharedTarget?: EventTarget, options: PubSubOptions = {}): SoulsPubSub {
  const { counters = {} } = options;
  const eventTarget = sharedTarget ?? new EventTarget();
  const maxWaiting = options.maxWaitingEvents ?? MAX_WAITING_EVENTS;
  const subscribers = new Map<Topic, Set<Subscriber>>();
  const turns = loopTurns();

  const listener = (event: Event) => {
    const topic = topicOf(event.type);
    const listening = topic ? subscribers.get(topic) : undefined;
    if (!topic || !listening) return;
    const events = validEvents(topic, (event as CustomEvent).detail);
    if (!events) {
      counters.dropped?.inc({ reason: 'invalid' });
      return;
    }
    if (events.length === 0) return;
    for (const subscriber of [...listening]) subscriber.take(events);
  };

  const attach = (topic: Topic, subscriber: Subscriber) => {
    let listening = subscribers.get(topic);
    if (!listening) {
      subscribers.set(topic, (listening = new Set()));
      eventTarget.addEventListener(topic, listener);
    }
    listening.add(subscriber);
  };
  const detach = (topic: Topic, subscriber: Subscriber) => {
    const listening = subscribers.get(topic);
    if (!listening?.delete(subscriber) || listening.size > 0) return;
    subscribers.delete(topic);
    eventTarget.removeEventListener(topic, listener);
  };

  const dispatch = (topic: Topic, events: readonly unknown[]) => {
    if (events.length === 0) return;
    counters.published?.inc({ topic }, events.length);
    // A target of this bus's own has no listener but this bus's: an event nobody here subscribes to goes nowhere.
    if (sharedTarget === undefined && !subscribers.has(topic)) return;
    eventTarget.dispatchEvent(new CustomEvent(topic, { detail: events }));
  };

  const bus: Bus = { attach, detach, turns, maxWaiting, tooSlow: () => counters.tooSlow?.inc() };
  return {
    publish: (topic, event) => dispatch(topic, [event]),
    publishAll: (topic, events) => dispatch(topic, events),
    subscribe: (topic) => reader(topic, bus, 'event'),
    subscribeWrites: (topic) => reader(topic, bus, 'write'),
  };
}

/** What a reader needs of its bus. */
type Bus = { attach(topic: Topic, subscriber: Subscriber): void; detach(topic: Topic, subscriber: Subscriber): void; turns: ReturnType<typeof loopTurns>; maxWaiting: number; tooSlow(): void };

/**
 * One subscriber's stream: the messages it was handed, read an event at a time (within the turns' shares) or a write
 * at a time (whatever is left of the oldest message, whole).
 */
function reader<T extends Topic>(topic: T, bus: Bus, unit: 'event'): AsyncIterableIterator<SoulsEvents[T]>;
function reader<T extends Topic>(topic: T, bus: Bus, unit: 'write'): AsyncIterableIterator<readonly SoulsEvents[T][]>;
function reader<T extends Topic>(topic: T, bus: Bus, unit: 'event' | 'write'): AsyncIterableIterator<SoulsEvents[T] | readonly SoulsEvents[T][]> {
  // Messages waiting, the first one read from `offset` on: `waiting` events in all.
  const messages: (readonly SoulsEvents[T][])[] = [];
  let offset = 0;
  let waiting = 0;
  let started = false;
  let ended = false;
  let failure: GraphQLError | null = null;
  let wake: (() => void) | null = null;

  // Cut off as too slow, it still reads what it was owed up to the cut, then the error; gone, it reads nothing more.
  const end = (error: GraphQLError | null) => {
    if (ended) return;
    ended = true;
    failure = error;
    if (!error) {
      messages.length = 0;
      waiting = 0;
    }
    if (started) bus.detach(topic, subscriber);
    wake?.();
  };
  const subscriber: Subscriber = {
    take(events) {
      // A whole write is always taken by a subscriber that has read everything before it.
      if (waiting > 0 && waiting + events.length > bus.maxWaiting) {
        bus.tooSlow();
        end(subscriberTooSlow(bus.maxWaiting));
        return;
      }
      messages.push(events as readonly SoulsEvents[T][]);
      waiting += events.length;
      wake?.();
    },
  };
  /** The next event, or what is left of the oldest write. */
  const take = (): SoulsEvents[T] | readonly SoulsEvents[T][] => {
    const message = messages[0];
    if (unit === 'write') {
      const rest = offset === 0 ? message : message.slice(offset);
      messages.shift();
      offset = 0;
      waiting -= rest.length;
      return rest;
    }
    const event = message[offset++];
    waiting--;
    if (offset === message.length) {
      messages.shift();
      offset = 0;
    }
    return event;
  };

  const iterator: AsyncIterableIterator<SoulsEvents[T] | readonly SoulsEvents[T][]> = {
    [Symbol.asyncIterator]() {
      return iterator;
    },
    async next() {
      // Listening from the first read on: a stream never read is never attached.
      if (!started && !ended) {
        started = true;
        bus.attach(topic, subscriber);
      }
      while (waiting === 0 && !ended) await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
      // An event at hand is handed out within a turn's share: past this one's, in the next turn that has room.
      while (unit === 'event' && waiting > 0) {
        const pause = bus.turns.pause();
        if (!pause) break;
        await pause;
      }
      if (waiting > 0) return { value: take(), done: false };
      if (failure) {
        const error = failure;
        failure = null;
        throw error;
      }
      return { value: undefined, done: true };
    },
    async return() {
      end(null);
      return { value: undefined, done: true };
    },
    async throw(error: unknown) {
      end(null);
      throw error;
    },
  };
  return iterator;
}
