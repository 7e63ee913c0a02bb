import { resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Logger } from './log.ts';

const require = createRequire(import.meta.url);

/** How long `/ready` waits for Redis to answer a PING. */
const PING_TIMEOUT_MS = 1000;

/**
 * The start of every channel name for one database: replicas sharing a database (and a prefix) hear each other;
 * replicas of another database on the same Redis do not. A PostgreSQL URL is named by host, port and database (never
 * its credentials); a SQLite file by its absolute path; an in-memory database by a name no other process has.
 */
export function eventChannelPrefix(prefix: string, database: string): string {
  return `${prefix}${databaseKey(database)}:`;
}

function databaseKey(database: string): string {
  if (/^postgres(ql)?:\/\//i.test(database)) {
    const url = new URL(database);
    return `postgres://${url.hostname || 'localhost'}:${url.port || '5432'}${url.pathname}`;
  }
  if (database === ':memory:') return `memory:${randomUUID()}`;
  return `sqlite:${resolve(database)}`;
}

/** What the replica counts about Redis (metrics.ts); each is optional so that the events work without metrics. */
export type RedisCounters = { reconnects?: { inc(): void }; publishFailures?: { inc(): void }; dropped?: { inc(labels: { reason: 'unparsable' }): void } };

export type RedisEventsOptions = {
  url: string;
  /** From eventChannelPrefix: every topic's channel is this plus the topic's name. */
  channelPrefix: string;
  logger: Logger;
  counters?: RedisCounters;
};

export type RedisEvents = {
  /** The EventTarget createSoulsPubSub runs on: topics map to namespaced channels. */
  eventTarget: EventTarget;
  /** Both connections are up and Redis answers a PING in time. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
};

/** What redisEventTarget needs of the two connections (a seam: tests give it no Redis at all). */
export type RedisChannels = {
  /** Rejects (or throws) when Redis does not take the message. */
  publish(channel: string, message: string): Promise<unknown>;
  /** Whether this replica hears Redis now: while it does not, its own messages reach it here directly. */
  hearing(): boolean;
  subscribe(channel: string): void;
  unsubscribe(channel: string): void;
  onMessage(handler: (channel: string, message: string) => void): void;
};

type Listener = EventListenerOrEventListenerObject;
const call = (listener: Listener, event: Event) => (typeof listener === 'function' ? listener(event) : listener.handleEvent(event));

/**
 * Topics as channels: an event goes out as JSON and comes back, from every replica, as the event of its topic. A
 * message that is not JSON is dropped and counted here (its shape is the pubsub's to check); nothing a message holds
 * can throw into the connection's handler.
 */
export function redisEventTarget(channels: RedisChannels, options: { channelPrefix: string; logger: Logger; counters?: RedisCounters }): EventTarget {
  const { channelPrefix, logger, counters = {} } = options;
  const listeners = new Map<string, Set<Listener>>();
  const deliver = (channel: string, detail: unknown) => {
    const listening = listeners.get(channel);
    if (!listening) return;
    const event = new CustomEvent(channel.slice(channelPrefix.length), { detail });
    for (const listener of [...listening]) {
      try {
        call(listener, event);
      } catch (error) {
        // Thrown here it would reach the connection's handler and end the process.
        logger.error({ channel, err: error instanceof Error ? error.message : String(error) }, 'redis: an event listener failed');
      }
    }
  };
  let warned = false;
  channels.onMessage((channel, message) => {
    if (!listeners.has(channel)) return;
    let detail: unknown;
    try {
      detail = JSON.parse(message);
    } catch {
      counters.dropped?.inc({ reason: 'unparsable' });
      // Once: a flood of them must not flood the log too (the metric counts each).
      if (!warned) logger.warn({ channel, bytes: Buffer.byteLength(message) }, 'redis: dropped a message that is not JSON (the next ones are only counted, in souls_pubsub_messages_dropped_total)');
      warned = true;
      return;
    }
    deliver(channel, detail);
  });
  return {
    addEventListener(topic: string, listener: Listener | null) {
      if (!listener) return;
      const channel = `${channelPrefix}${topic}`;
      let listening = listeners.get(channel);
      if (!listening) {
        listeners.set(channel, (listening = new Set()));
        channels.subscribe(channel);
      }
      listening.add(listener);
    },
    removeEventListener(topic: string, listener: Listener | null) {
      if (!listener) return;
      const channel = `${channelPrefix}${topic}`;
      const listening = listeners.get(channel);
      if (!listening?.delete(listener) || listening.size > 0) return;
      listeners.delete(channel);
      channels.unsubscribe(channel);
    },
    dispatchEvent(event: Event) {
      const channel = `${channelPrefix}${event.type}`;
      const detail = (event as CustomEvent).detail;
      // While this replica is not listening to Redis, it hears its own writes here (Redis still takes them for the others).
      const deaf = !channels.hearing();
      if (deaf) deliver(channel, detail);
      const failed = () => {
        counters.publishFailures?.inc();
        logger.debug({ topic: event.type }, 'redis down: event delivered to this replica only');
        if (!deaf) deliver(channel, detail);
      };
      try {
        channels.publish(channel, JSON.stringify(detail)).catch(failed);
      } catch {
        failed();
      }
      return true;
    },
  };
}

/**
 * Events through Redis: one connection publishes, one subscribes (a subscribed connection can do nothing else).
 * Redis going away never fails a write: the subscribing connection reconnects and resubscribes by itself, and while
 * the publishing one is down an event reaches this replica's own subscribers only (the other replicas never get it;
 * nothing is replayed after reconnection). The log says when the connection is lost and when it is back.
 */
export function createRedisEvents(options: RedisEventsOptions): RedisEvents {
  const { logger, counters = {} } = options;
  // Required here, not imported: ioredis costs about 20 MiB resident, which a server without Redis never pays.
  const { Redis } = require('ioredis') as typeof import('ioredis');
  const common = { lazyConnect: false, connectTimeout: 5000 } as const;
  // No offline queue for publishing: an event queued during an outage would arrive long after the write, out of order.
  const publisher = new Redis(options.url, { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  // Subscriptions wait for the connection however long it takes; ioredis resubscribes every channel on reconnection.
  const subscriber = new Redis(options.url, { ...common, maxRetriesPerRequest: null, autoResubscribe: true });
  watch(publisher, 'publish', logger, counters);
  watch(subscriber, 'subscribe', logger, counters);

  const eventTarget = redisEventTarget(
    {
      publish: (channel, message) => (publisher.status === 'ready' ? publisher.publish(channel, message) : Promise.reject(new Error('not connected'))),
      hearing: () => subscriber.status === 'ready',
      // Queued while disconnected and sent on connection; a failure is the connection's, already logged.
      subscribe: (channel) => void subscriber.subscribe(channel).catch(() => undefined),
      unsubscribe: (channel) => void subscriber.unsubscribe(channel).catch(() => undefined),
      onMessage: (handler) => subscriber.on('message', handler),
    },
    { channelPrefix: options.channelPrefix, logger, counters },
  );

  return {
    eventTarget,
    async ready() {
      if (publisher.status !== 'ready' || subscriber.status !== 'ready') return false;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<false>((resolve) => (timer = setTimeout(resolve, PING_TIMEOUT_MS, false)));
      try {
        return await Promise.race([publisher.ping().then((answer) => answer === 'PONG', () => false), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      publisher.disconnect();
      subscriber.disconnect();
    },
  };
}

/** Logs a connection's state changes once each (ioredis reports an error at every retry), and counts reconnections. */
function watch(client: Redis, role: 'publish' | 'subscribe', logger: Logger, counters: RedisCounters): void {
  let connectedBefore = false;
  let down = false;
  client.on('ready', () => {
    if (connectedBefore) {
      counters.reconnects?.inc();
      logger.info({ redis: role }, 'redis reconnected');
    } else logger.info({ redis: role }, 'redis connected');
    connectedBefore = true;
    down = false;
  });
  const lost = (error?: Error) => {
    if (down) return;
    down = true;
    const reason = error?.message ?? 'connection closed';
    if (connectedBefore) logger.warn({ redis: role, reason }, 'redis connection lost; reconnecting (queries and mutations go on)');
    else logger.warn({ redis: role, reason }, 'redis unreachable; retrying (queries and mutations go on)');
  };
  client.on('error', (error: Error) => lost(error));
  client.on('close', () => {
    if (client.status !== 'end') lost();
  });
}
