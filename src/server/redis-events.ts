import { setMaxListeners } from 'node:events';
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
export type RedisCounters = { reconnects?: { inc(): void }; publishFailures?: { inc(): void } };

export type RedisEventsOptions = {
  url: string;
  /** From eventChannelPrefix: every topic's channel is this plus the topic's name. */
  channelPrefix: string;
  logger: Logger;
  counters?: RedisCounters;
};

export type RedisEvents = {
  /** The EventTarget createPubSub runs on: topics map to namespaced channels. */
  eventTarget: EventTarget;
  /** Both connections are up and Redis answers a PING in time. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
};

type Listener = EventListenerOrEventListenerObject;

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
  const { createRedisEventTarget } = require('@graphql-yoga/redis-event-target') as typeof import('@graphql-yoga/redis-event-target');
  const common = { lazyConnect: false, connectTimeout: 5000 } as const;
  // No offline queue for publishing: an event queued during an outage would arrive long after the write, out of order.
  const publisher = new Redis(options.url, { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  // Subscriptions wait for the connection however long it takes; ioredis resubscribes every channel on reconnection.
  const subscriber = new Redis(options.url, { ...common, maxRetriesPerRequest: null, autoResubscribe: true });
  watch(publisher, 'publish', logger, counters);
  watch(subscriber, 'subscribe', logger, counters);

  const channel = (topic: string) => `${options.channelPrefix}${topic}`;
  const local = new EventTarget();
  setMaxListeners(0, local);
  const publishing = {
    publish(name: string, message: string) {
      const deliverHere = () => local.dispatchEvent(new CustomEvent(name, { detail: message === '' ? null : JSON.parse(message) }));
      // While this replica is not listening to Redis, it hears its own writes here (Redis still takes them for the others).
      const deafToRedis = subscriber.status !== 'ready';
      if (deafToRedis) deliverHere();
      const failed = () => {
        counters.publishFailures?.inc();
        logger.debug({ topic: name.slice(options.channelPrefix.length) }, 'redis down: event delivered to this replica only');
        if (!deafToRedis) deliverHere();
      };
      if (publisher.status !== 'ready') return failed();
      publisher.publish(name, message).catch(failed);
    },
  };
  const subscribing = {
    on: (event: string, listener: (...args: any[]) => void) => subscriber.on(event, listener),
    // Queued while disconnected and sent on connection; a failure is the connection's, already logged.
    subscribe: (name: string) => subscriber.subscribe(name).catch(() => undefined),
    unsubscribe: (name: string) => subscriber.unsubscribe(name).catch(() => undefined),
  };
  const redisTarget = createRedisEventTarget<CustomEvent>({ publishClient: publishing as unknown as Redis, subscribeClient: subscribing as unknown as Redis });

  const eventTarget: EventTarget = {
    addEventListener(topic: string, listener: Listener | null) {
      if (!listener) return;
      redisTarget.addEventListener(channel(topic), listener);
      local.addEventListener(channel(topic), listener);
    },
    removeEventListener(topic: string, listener: Listener | null) {
      if (!listener) return;
      redisTarget.removeEventListener(channel(topic), listener);
      local.removeEventListener(channel(topic), listener);
    },
    dispatchEvent(event: Event) {
      return redisTarget.dispatchEvent(new CustomEvent(channel(event.type), { detail: (event as CustomEvent).detail }));
    },
  };

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
