// The event bus through its event-target seam, without a Redis server: a write's events as one message read one at a
// time, the bound on what a subscriber may leave unread, and messages from Redis checked (dropped and counted when
// they are not JSON or not the shape of their topic's events) without anything thrown into the connection's handler.
import { afterEach, describe, expect, it } from 'vitest';
import { createSoulsPubSub, EVENTS_PER_TURN, type DropReason } from '../src/server/pubsub.ts';
import { redisEventTarget, type RedisChannels } from '../src/server/redis-events.ts';
import { createLogger } from '../src/server/log.ts';
import { manualClock } from '../src/engine/index.ts';
import { serverPerTest } from './support/server.ts';
import { followSoulChanges } from '../src/mcp/server.ts';
import { mcpEndpoint } from '../src/mcp/endpoint.ts';
import { closeSoulsDb, openSoulsDb } from '../src/engine/index.ts';
import { defaultLimits } from '../src/server/limits.ts';

const start = serverPerTest(afterEach);

function counters() {
  const dropped: DropReason[] = [];
  let tooSlow = 0;
  let publishFailures = 0;
  return {
    dropped,
    tooSlow: () => tooSlow,
    publishFailures: () => publishFailures,
    pubsub: { dropped: { inc: ({ reason }: { reason: DropReason }) => void dropped.push(reason) }, tooSlow: { inc: () => void tooSlow++ } },
    redis: { dropped: { inc: ({ reason }: { reason: 'unparsable' }) => void dropped.push(reason) }, publishFailures: { inc: () => void publishFailures++ } },
  };
}

/** Channels with no Redis behind them: what was published, and a way to hand the replica a message as Redis would. */
function fakeRedis(options: { hearing: boolean; takes: boolean }) {
  const published: Array<[string, string]> = [];
  const subscribed = new Set<string>();
  let handler: ((channel: string, message: string) => void) | null = null;
  const channels: RedisChannels = {
    publish: async (channel, message) => {
      if (!options.takes) throw new Error('Connection is closed.');
      published.push([channel, message]);
    },
    hearing: () => options.hearing,
    subscribe: (channel) => void subscribed.add(channel),
    unsubscribe: (channel) => void subscribed.delete(channel),
    onMessage: (h) => void (handler = h),
  };
  return { channels, published, subscribed, receive: (channel: string, message: string) => handler!(channel, message) };
}

const logger = createLogger({ level: 'silent', clock: manualClock(0) });
const shard = (shardId: number, soulIds = [1]) => ({ shardId, soulIds, at: 1_000 });

async function take<T>(iterator: AsyncIterator<T>, n: number): Promise<T[]> {
  const values: T[] = [];
  for (let i = 0; i < n; i++) values.push((await iterator.next()).value as T);
  return values;
}

describe('in process', () => {
  it('a write of 10,000 events is one message: a subscriber that has not read yet gets every one, in order, one at a time', async () => {
    const pubsub = createSoulsPubSub();
    const drops = pubsub.subscribe('shardDropped');
    const first = drops.next();
    const batch = Array.from({ length: 10_000 }, (_, i) => shard(i + 1));
    expect(() => pubsub.publishAll('shardDropped', batch)).not.toThrow();
    expect(() => pubsub.publishAll('shardDropped', [shard(10_001)])).not.toThrow();
    expect((await first).value).toEqual(shard(1));
    const rest = await take(drops, 10_000);
    expect(rest.map((event) => event.shardId)).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 2));
    await drops.return!();
  });

  it('hands a big write out a turn of the event loop at a time, to all its readers together, every event in order', async () => {
    const pubsub = createSoulsPubSub();
    const readers = [pubsub.subscribe('shardDropped'), pubsub.subscribe('shardDropped'), pubsub.subscribe('shardDropped')];
    const firsts = readers.map((reader) => reader.next());
    pubsub.publishAll('shardDropped', Array.from({ length: 5_000 }, (_, i) => shard(i + 1)));
    let read = 0;
    // Each reader reads as fast as it can; what they have read when the loop next turns is what the turn handed out.
    const readAll = async (reader: AsyncIterator<{ shardId: number }>, first: Promise<IteratorResult<{ shardId: number }>>) => {
      const ids = [(await first).value.shardId];
      read++;
      while (ids.length < 5_000) {
        ids.push((await reader.next()).value.shardId);
        read++;
      }
      return ids;
    };
    const turns: number[] = [];
    const everyTurn = () => {
      turns.push(read);
      if (read < 15_000) setImmediate(everyTurn);
    };
    setImmediate(everyTurn);
    const all = await Promise.all(readers.map((reader, i) => readAll(reader, firsts[i])));
    await new Promise((resolve) => setImmediate(resolve));
    for (const ids of all) expect(ids).toEqual(Array.from({ length: 5_000 }, (_, i) => i + 1));
    expect(turns.at(-1)).toBe(15_000);
    const perTurn = turns.map((n, i) => n - (turns[i - 1] ?? 0));
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(EVENTS_PER_TURN);
    for (const reader of readers) await reader.return!();
  });

  it('a follower reading writes gets each write whole, in order, however many events it holds', async () => {
    const pubsub = createSoulsPubSub();
    const writes = pubsub.subscribeWrites('shardDropped');
    const first = writes.next();
    pubsub.publishAll('shardDropped', Array.from({ length: 10_000 }, (_, i) => shard(i + 1)));
    pubsub.publish('shardDropped', shard(10_001));
    expect((await first).value?.map((event: { shardId: number }) => event.shardId)).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 1));
    expect((await writes.next()).value).toEqual([shard(10_001)]);
    await writes.return!();
    expect(await writes.next()).toEqual({ value: undefined, done: true });
  });

  it('a subscriber too far behind is cut off: it reads what it was owed, then SUBSCRIBER_TOO_SLOW; the others go on', async () => {
    const count = counters();
    const pubsub = createSoulsPubSub(new EventTarget(), { counters: count.pubsub, maxWaitingEvents: 5 });
    const slow = pubsub.subscribe('shardDropped');
    const fast = pubsub.subscribe('shardDropped');
    const slowFirst = slow.next();
    const fastFirst = fast.next();
    // A whole write is taken by a subscriber that has read everything before it, however many events it holds.
    pubsub.publishAll('shardDropped', [shard(1), shard(2), shard(3), shard(4), shard(5), shard(6), shard(7)]);
    expect((await slowFirst).value).toEqual(shard(1));
    expect((await fastFirst).value).toEqual(shard(1));
    expect(await take(fast, 6)).toEqual([2, 3, 4, 5, 6, 7].map((id) => shard(id)));
    // 6 waiting for the slow one, 1 more is over 5.
    pubsub.publish('shardDropped', shard(8));
    expect(count.tooSlow()).toBe(1);
    expect((await fast.next()).value).toEqual(shard(8));
    expect(await take(slow, 6)).toEqual([2, 3, 4, 5, 6, 7].map((id) => shard(id)));
    const cut = await slow.next().then(
      () => null,
      (error: unknown) => error,
    );
    expect(cut).toMatchObject({ extensions: { code: 'SUBSCRIBER_TOO_SLOW', limit: 5 } });
    expect(await slow.next()).toEqual({ value: undefined, done: true });
    pubsub.publish('shardDropped', shard(9));
    expect((await fast.next()).value).toEqual(shard(9));
    await fast.return!();
  });

  it('a message the target carries that is not its topic\'s events is dropped and counted, and no listener throws', async () => {
    const count = counters();
    const target = new EventTarget();
    const pubsub = createSoulsPubSub(target, { counters: count.pubsub });
    const changes = pubsub.subscribe('soulChanged');
    const next = changes.next();
    for (const detail of [null, 'CREATED', { soulId: '1', kind: 'CREATED', at: 0 }, [{ soulId: 1, kind: 'EXPLODED', at: 0 }], [{ soulId: 1, kind: 'CREATED', at: 0 }, 7]]) {
      expect(target.dispatchEvent(new CustomEvent('soulChanged', { detail }))).toBe(true);
    }
    expect(count.dropped).toEqual(['invalid', 'invalid', 'invalid', 'invalid', 'invalid']);
    target.dispatchEvent(new CustomEvent('soulChanged', { detail: { soulId: 4, kind: 'UPDATED', at: 9 } }));
    expect((await next).value).toEqual({ soulId: 4, kind: 'UPDATED', at: 9 });
    await changes.return!();
  });
});

describe('through Redis channels (no Redis server)', () => {
  it('a message that is not JSON, or not the shape of its topic\'s events, is dropped and counted; good ones, batched or not, are delivered', async () => {
    const count = counters();
    const redis = fakeRedis({ hearing: true, takes: true });
    const target = redisEventTarget(redis.channels, { channelPrefix: 'souls:test:', logger, counters: count.redis });
    const pubsub = createSoulsPubSub(target, { counters: count.pubsub });
    const drops = pubsub.subscribe('shardDropped');
    const first = drops.next();
    expect([...redis.subscribed]).toEqual(['souls:test:shardDropped']);

    const channel = 'souls:test:shardDropped';
    for (const message of ['not json {', '', '{"shardId":', '\u0000'.repeat(3)]) expect(() => redis.receive(channel, message)).not.toThrow();
    for (const message of ['null', '42', '"x"', '{}', '[{"shardId":1,"soulIds":[1],"at":5},{"shardId":-1,"soulIds":[],"at":5}]', '{"shardId":1,"soulIds":"1","at":5}', '{"shardId":1,"soulIds":[1],"at":"soon"}', '{"__proto__":{"shardId":1}}']) {
      expect(() => redis.receive(channel, message)).not.toThrow();
    }
    expect(count.dropped.filter((reason) => reason === 'unparsable')).toHaveLength(4);
    expect(count.dropped.filter((reason) => reason === 'invalid')).toHaveLength(8);
    // Channels nobody here listens to are not this replica's business.
    redis.receive('souls:test:levelChanged', 'garbage');
    redis.receive('elsewhere:shardDropped', 'garbage');
    expect(count.dropped).toHaveLength(12);

    redis.receive(channel, JSON.stringify([shard(1), shard(2)]));
    redis.receive(channel, JSON.stringify(shard(3)));
    expect((await first).value).toEqual(shard(1));
    expect(await take(drops, 2)).toEqual([shard(2), shard(3)]);
    await drops.return!();
    expect([...redis.subscribed]).toEqual([]);
  });

  it('publishes a write as one message; while Redis is unreachable, a 10,000-event write reaches this replica\'s subscribers, every event', async () => {
    const count = counters();
    const up = fakeRedis({ hearing: true, takes: true });
    const upPubsub = createSoulsPubSub(redisEventTarget(up.channels, { channelPrefix: 'p:', logger, counters: count.redis }));
    upPubsub.publishAll('shardDropped', [shard(1), shard(2)]);
    expect(up.published).toEqual([['p:shardDropped', JSON.stringify([shard(1), shard(2)])]]);

    const down = fakeRedis({ hearing: false, takes: false });
    const pubsub = createSoulsPubSub(redisEventTarget(down.channels, { channelPrefix: 'p:', logger, counters: count.redis }));
    const reader = pubsub.subscribe('shardDropped');
    const stalled = pubsub.subscribe('shardDropped');
    const first = reader.next();
    void stalled.next();
    const batch = Array.from({ length: 10_000 }, (_, i) => shard(i + 1));
    expect(() => pubsub.publishAll('shardDropped', batch)).not.toThrow();
    expect((await first).value).toEqual(shard(1));
    expect((await take(reader, 9_999)).map((event) => event.shardId)).toEqual(batch.slice(1).map((event) => event.shardId));
    await new Promise((resolve) => setImmediate(resolve));
    expect(count.publishFailures()).toBe(1);
    await reader.return!();
    await stalled.return!();
  });
});

describe('the server\'s own followers (MCP resource updates, refiners\' regrets)', () => {
  /** Rejections nobody handled while `work` ran (each would end a real server). */
  async function unhandled(work: () => Promise<void>): Promise<unknown[]> {
    const seen: unknown[] = [];
    const listener = (reason: unknown) => void seen.push(reason);
    process.on('unhandledRejection', listener);
    try {
      await work();
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off('unhandledRejection', listener);
    }
    return seen;
  }

  it('cut off as too slow, resource updates follow the bus again instead of failing', async () => {
    const pubsub = createSoulsPubSub(new EventTarget(), { maxWaitingEvents: 2 });
    const changed: Array<[number, string]> = [];
    let stop = () => {};
    const rejections = await unhandled(async () => {
      stop = followSoulChanges(pubsub, (soulId, what) => changed.push([soulId, what]));
      // Five writes in one turn: the follower cannot read between them.
      for (let soulId = 1; soulId <= 5; soulId++) pubsub.publish('soulChanged', { soulId, kind: 'UPDATED', at: 0 });
      await new Promise((resolve) => setTimeout(resolve, 20));
      pubsub.publish('soulChanged', { soulId: 9, kind: 'UPDATED', at: 0 });
      await new Promise((resolve) => setTimeout(resolve, 20));
    });
    stop();
    expect(rejections).toEqual([]);
    expect(changed).toContainEqual([9, 'soul']);
  });

  it('cut off as too slow, the refiners\' regrets follow the bus again instead of failing', async () => {
    const db = openSoulsDb({ clock: manualClock(0), path: ':memory:' });
    const pubsub = createSoulsPubSub(new EventTarget(), { maxWaitingEvents: 2 });
    const endpoint = mcpEndpoint({ db, pubsub, callerOf: () => null, maxBodyBytes: 1024, limits: defaultLimits });
    const rejections = await unhandled(async () => {
      for (let soulId = 1; soulId <= 5; soulId++) pubsub.publish('soulChanged', { soulId, kind: 'TRAIT_REVERTED', at: 0 });
    });
    await endpoint.close();
    closeSoulsDb(db);
    expect(rejections).toEqual([]);
  });
});

describe('/metrics', () => {
  it('counts dropped messages by reason and subscribers cut off as too slow', async () => {
    const server = await start();
    const text = await (await fetch(server.url.replace(/graphql$/, 'metrics'))).text();
    expect(text).toMatch(/^souls_pubsub_messages_dropped_total\{reason="unparsable"\} 0$/m);
    expect(text).toMatch(/^souls_pubsub_messages_dropped_total\{reason="invalid"\} 0$/m);
    expect(text).toMatch(/^souls_subscribers_too_slow_total 0$/m);
  });
});
