// Three `souls serve` replicas on one database and one Redis, checked from outside: over HTTP and graphql-ws only.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cluster, exited, gql, killAll, liveSubscriptions, redisRelay, requireCluster, shuffled, startReplica, subscribe, until, type Replica, type Subscriber } from './support.ts';

const DAY_MS = 86_400_000;
const createSoul = `mutation($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } ... on Error { message } } }`;
const dropShard = `mutation($input: DropShardInput!) { dropShard(input: $input) { __typename ... on DropShardPayload { shard { id } readySouls { id } } ... on Error { message } } }`;
const dropShards = `mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { shards { id } readySouls { id } } ... on Error { message } } }`;
const readyEvents = `subscription { crystallizationReady { soul { id name } priority } }`;

let replicas: Replica[] = [];
const subscribers: Subscriber[] = [];

beforeAll(async () => {
  requireCluster();
  // At once, as a deployment starts them: migrations take turns under PostgreSQL's advisory lock.
  replicas = await Promise.all(['A', 'B', 'C'].map((name) => startReplica(name)));
});

afterAll(async () => {
  await Promise.all(subscribers.map((s) => s.client.dispose()));
  killAll();
});

async function newSoul(replica: Replica, name: string): Promise<string> {
  const data = await gql(replica, createSoul, { input: { name, description: `Test soul ${name}`, essence: `${name} exists so that the cluster test has somebody to watch.` } });
  expect(data.createSoul.__typename).toBe('SoulPayload');
  return data.createSoul.soul.id;
}

/** Two shards, two sources, a day apart, unlike each other: one shard short of ready. */
async function almostReady(replica: Replica, soulIds: string[]): Promise<void> {
  const now = Date.now();
  const inputs = soulIds.flatMap((soulId) => [
    { soulIds: [soulId], content: 'Reviewed the pull request carefully before merging it', source: 'chat', createdAt: new Date(now - 3 * DAY_MS).toISOString() },
    { soulIds: [soulId], content: 'Cooked a spicy curry for the whole team on friday', source: 'journal', createdAt: new Date(now - 2 * DAY_MS).toISOString() },
  ]);
  const data = await gql(replica, dropShards, { inputs });
  expect(data.dropShards).toMatchObject({ __typename: 'DropShardsPayload', readySouls: [] });
}

describe('three replicas', () => {
  it('a write on one replica is read on the others', async () => {
    const [a, b, c] = replicas;
    const id = await newSoul(a, 'Ferrin');
    const shard = await gql(a, dropShard, { input: { soulIds: [id], content: 'Counted the barrels twice before signing.', source: 'ledger' } });
    for (const replica of [b, c]) {
      const read = await gql(replica, `query($id: ID!) { soul(id: $id) { name pendingShardCount rendered } }`, { id });
      expect(read.soul).toMatchObject({ name: 'Ferrin', pendingShardCount: 1 });
      expect((await gql(replica, `query($id: ID!) { shard(id: $id) { content } }`, { id: shard.dropShard.shard.id })).shard.content).toBe('Counted the barrels twice before signing.');
    }
    const renders = await Promise.all(replicas.map(async (replica) => (await gql(replica, `query($id: ID!) { soul(id: $id) { rendered } }`, { id })).soul.rendered));
    expect(new Set(renders).size).toBe(1);
  });

  it('8 concurrent writers over the three replicas crossing 40 souls: each subscriber on every replica hears exactly 40 crystallizationReady', async () => {
    const [a, b] = replicas;
    const souls: string[] = [];
    for (let i = 0; i < 40; i++) souls.push(await newSoul(a, `Crossing ${i}`));
    // One soul per replica crossed after the writers, in the open: once a subscriber has heard all three, every event
    // published before them has reached it too (Redis keeps each connection's order).
    const sentinels = [await newSoul(a, 'Sentinel A'), await newSoul(a, 'Sentinel B'), await newSoul(a, 'Sentinel C')];
    // And one before them, likewise: once every subscriber has heard all three, each replica listens on Redis.
    const probes = [await newSoul(a, 'Probe A'), await newSoul(a, 'Probe B'), await newSoul(a, 'Probe C')];
    await almostReady(b, [...souls, ...sentinels, ...probes]);
    const crossOnEach = async (ids: string[], what: string) => {
      for (const [index, replica] of replicas.entries()) {
        const data = await gql(replica, dropShard, { input: { soulIds: [ids[index]], content: `The ${what} of ${replica.name}.`, source: what } });
        expect(data.dropShard.readySouls).toEqual([{ id: ids[index] }]);
      }
    };
    const heard = (subscriber: Subscriber) => subscriber.events.map((event) => event.crystallizationReady.soul.id as string);

    const listening: Subscriber[] = replicas.flatMap((replica) => [subscribe(replica, `${replica.name}1`, readyEvents), subscribe(replica, `${replica.name}2`, readyEvents)]);
    subscribers.push(...listening);
    for (const replica of replicas) await until(async () => (await liveSubscriptions(replica)) === 2, () => `2 live subscriptions on ${replica.name}`);
    await crossOnEach(probes, 'probe');
    for (const subscriber of listening) await until(() => probes.every((id) => heard(subscriber).includes(id)), () => `the probes at ${subscriber.label}`);

    const crossings: string[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, writer) => {
        const replica = replicas[writer % 3];
        for (const soulId of shuffled(souls, writer + 1)) {
          const data = await gql(replica, dropShard, { input: { soulIds: [soulId], content: `Writer ${writer} saw soul ${soulId} keep its word at the gate.`, source: `writer-${writer}` } });
          expect(data.dropShard.__typename).toBe('DropShardPayload');
          crossings.push(...data.dropShard.readySouls.map((soul: { id: string }) => soul.id));
        }
      }),
    );
    // The writes themselves: every soul crossed once, whichever writer and replica it was.
    expect(crossings.sort()).toEqual([...souls].sort());

    await crossOnEach(sentinels, 'sentinel');
    for (const subscriber of listening) {
      await until(() => sentinels.every((id) => heard(subscriber).includes(id)), () => `the sentinels at ${subscriber.label}: heard ${heard(subscriber).length} events`);
    }
    for (const subscriber of listening) {
      expect(subscriber.errors, subscriber.label).toEqual([]);
      const crossed = heard(subscriber).filter((id) => !sentinels.includes(id) && !probes.includes(id));
      expect(crossed, `${subscriber.label}: none missing, none twice`).toHaveLength(40);
      expect([...crossed].sort(), subscriber.label).toEqual([...souls].sort());
    }
  });

  it('killing a replica in the middle of a stream of writes loses no acknowledged write', async () => {
    const [a, b] = replicas;
    const victim = await startReplica('D');
    const soulId = await newSoul(a, 'Steadfast');
    const acknowledged: Array<{ id: string; content: string }> = [];
    let killed = false;
    const writer = async (replica: Replica, index: number) => {
      for (let n = 0; n < 60; n++) {
        if (replica === victim && killed) return;
        const content = `Writer ${index} wrote line ${n} through ${replica.name}.`;
        try {
          const data = await gql(replica, dropShard, { input: { soulIds: [soulId], content, source: `stream-${index}` } });
          acknowledged.push({ id: data.dropShard.shard.id, content });
        } catch (error) {
          // Only the killed replica may fail, and only after it was killed.
          if (replica !== victim) throw error;
          return;
        }
        if (replica === victim && n === 15) {
          victim.child.process.kill('SIGKILL');
          killed = true;
        }
      }
    };
    await Promise.all([writer(a, 0), writer(b, 1), writer(victim, 2), writer(victim, 3)]);
    expect((await exited(victim.child)).signal).toBe('SIGKILL');
    expect(acknowledged.filter((write) => write.content.includes('through D')).length).toBeGreaterThanOrEqual(16);

    for (const write of acknowledged) {
      const read = await gql(b, `query($id: ID!) { shard(id: $id) { content } }`, { id: write.id });
      expect(read.shard, `shard ${write.id}`).toEqual({ content: write.content });
    }
    const count = await gql(a, `query($id: ID!) { soul(id: $id) { pendingShardCount } }`, { id: soulId });
    expect(count.soul.pendingShardCount).toBeGreaterThanOrEqual(acknowledged.length);
  });

  it('a replica that loses Redis keeps serving, says so, reconnects, and hears the others again', async () => {
    const relay = await redisRelay(cluster.redisUrl);
    try {
      const [a] = replicas;
      const cut = await startReplica('E', relay.url);
      const listener = subscribe(cut, 'E', `subscription { soulChanged { kind soul { name } } }`);
      subscribers.push(listener);
      await until(async () => (await liveSubscriptions(cut)) === 1, () => 'the subscription on E');

      relay.cut();
      await until(() => cut.log().some((line) => line.msg === 'redis connection lost; reconnecting (queries and mutations go on)'), () => `E's log to say Redis is lost`);
      await until(async () => (await fetch(`${cut.base}ready`)).status === 503, () => 'E to report Redis down on /ready');
      // Writes go on, on E itself and elsewhere; E's own subscribers still hear E's writes.
      const during = await newSoul(cut, 'Written while E had no Redis');
      expect((await gql(a, `query($id: ID!) { soul(id: $id) { name } }`, { id: during })).soul.name).toBe('Written while E had no Redis');
      await until(() => listener.events.some((event) => event.soulChanged.soul.name === 'Written while E had no Redis'), () => 'E to hear its own write');

      await relay.restore();
      await until(() => cut.log().some((line) => line.msg === 'redis reconnected'), () => `E's log to say Redis is back`, 60_000);
      await until(async () => (await fetch(`${cut.base}ready`)).status === 200, () => 'E ready again');
      const metrics = await (await fetch(`${cut.base}metrics`)).text();
      expect(Number(/^souls_redis_reconnects_total (\d+)$/m.exec(metrics)![1])).toBeGreaterThanOrEqual(1);

      // Resubscribed: a write on A reaches E's subscriber again.
      await until(
        async () => {
          await newSoul(a, `After the outage ${listener.events.length}`);
          await new Promise((resolve) => setTimeout(resolve, 200));
          return listener.events.some((event) => String(event.soulChanged.soul.name).startsWith('After the outage'));
        },
        () => 'a write on A to reach E',
      );
      expect(listener.errors).toEqual([]);
    } finally {
      await relay.close();
    }
  });
  it('one write of 10,000 shards reaches a subscriber on another replica, every shard, as one message through Redis', async () => {
    const [a, b] = replicas;
    const soulId = await newSoul(a, 'Tallyman');
    const listener = subscribe(b, 'B', `subscription($soulId: ID) { shardDropped(soulId: $soulId) { shard { id } } }`, { soulId });
    subscribers.push(listener);
    await until(async () => (await liveSubscriptions(b)) >= 1, () => 'the subscription on B');
    const inputs = Array.from({ length: 10_000 }, (_, i) => ({ soulIds: [soulId], content: `Tally ${i} of the harbour ledger.`, source: 'ledger' }));
    const data = await gql(a, dropShards, { inputs });
    const ids = data.dropShards.shards.map((shard: { id: string }) => shard.id);
    await until(() => listener.events.length === 10_000, () => `B's 10,000 events (${listener.events.length} so far)`, 60_000);
    expect(listener.events.map((event) => event.shardDropped.shard.id)).toEqual(ids);
    expect(listener.errors).toEqual([]);
  });

  it('malformed messages on the replicas\' channels are dropped and counted by every replica; none goes down', async () => {
    const listeners = replicas.map((replica) => subscribe(replica, replica.name, `subscription { soulChanged { kind soul { name } } }`));
    subscribers.push(...listeners);
    await until(async () => (await Promise.all(replicas.map(liveSubscriptions))).every((n) => n >= 1), () => 'a subscription on every replica');
    const channels = /channels (\S+)\*/.exec(replicas[0].child.output().stdout)![1];
    const before = await Promise.all(replicas.map(dropped));
    const redis = new Redis(cluster.redisUrl);
    try {
      for (const message of ['not json {', '', '{"soulId":"1","kind":"CREATED","at":0}', '[{"soulId":1,"kind":"EXPLODED","at":0}]', 'null']) await redis.publish(`${channels}soulChanged`, message);
    } finally {
      redis.disconnect();
    }
    await until(async () => (await Promise.all(replicas.map(dropped))).every((now, i) => now.unparsable - before[i].unparsable === 2 && now.invalid - before[i].invalid === 3), () => 'every replica to count 2 unparsable and 3 invalid messages');
    const id = await newSoul(replicas[0], 'After the garbage');
    for (const listener of listeners) {
      await until(() => listener.events.some((event) => event.soulChanged.soul.name === 'After the garbage'), () => `${listener.label} to hear the write after the garbage`);
      expect(listener.events.filter((event) => event.soulChanged.soul.name !== 'After the garbage')).toEqual([]);
    }
    for (const replica of replicas) expect((await gql(replica, `query($id: ID!) { soul(id: $id) { name } }`, { id })).soul.name).toBe('After the garbage');
  });
});

async function dropped(replica: Replica): Promise<{ unparsable: number; invalid: number }> {
  const text = await (await fetch(`${replica.base}metrics`)).text();
  const count = (reason: string) => Number(new RegExp(`^souls_pubsub_messages_dropped_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { unparsable: count('unparsable'), invalid: count('invalid') };
}
