import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { startServer, type LiveServer } from './support/server.ts';
import { trackListeners, type Topic } from './support/listeners.ts';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const WAIT_MS = 3_000;

/** Sentences about unrelated things: pairwise below the default clusteringThreshold, so each is its own cluster. */
const distinct = [
  'Reviewed the pull request carefully before merging it',
  'Cooked a spicy curry for the whole team on friday',
  'Jogged five kilometres along the river at dawn',
  'Sketched a floor plan for the new community library',
  'Argued that meetings should never exceed thirty minutes',
  'Planted tomatoes and basil in the balcony garden',
];


type Result = { data?: any; errors?: ReadonlyArray<{ message: string; extensions?: any }> };

/** Collects what one graphql-ws operation sends; `next(n)` awaits the next n results, bounded by WAIT_MS. */
class Collector {
  readonly results: Result[] = [];
  error: unknown = null;
  completed = false;
  private consumed = 0;
  private wake: (() => void) | null = null;
  readonly label: string;
  readonly unsubscribe: () => void;

  constructor(client: Client, label: string, query: string, variables?: Record<string, unknown>) {
    this.label = label;
    this.unsubscribe = client.subscribe(
      { query, variables },
      {
        next: (result) => this.notify(() => this.results.push(result as Result)),
        error: (error) => this.notify(() => (this.error = error)),
        complete: () => this.notify(() => (this.completed = true)),
      },
    );
  }

  private notify(update: () => void): void {
    update();
    this.wake?.();
  }

  private describe(): string {
    const error = this.error === null ? '' : `; error ${JSON.stringify(this.error)}`;
    return `${this.results.length} result(s) so far: ${JSON.stringify(this.results.slice(this.consumed))}${error}${this.completed ? '; completed' : ''}`;
  }

  /** The next n results, each without errors. */
  async next(n = 1): Promise<Result[]> {
    const deadline = Date.now() + WAIT_MS;
    while (this.results.length < this.consumed + n) {
      if (this.error !== null || this.completed) throw new Error(`${this.label}: wanted ${n} more result(s) but the operation ended; ${this.describe()}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.label}: timed out after ${WAIT_MS} ms waiting for ${n} more result(s); ${this.describe()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
    const taken = this.results.slice(this.consumed, this.consumed + n);
    this.consumed += n;
    for (const result of taken) if (result.errors) throw new Error(`${this.label}: result with errors ${JSON.stringify(result.errors)}`);
    return taken;
  }

  /** The payload of the next n events of a subscription field. */
  async events(field: string, n = 1): Promise<any[]> {
    return (await this.next(n)).map((result) => result.data[field]);
  }

  /** Waits until the operation ends with an error or completes. */
  async ended(): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    while (this.error === null && !this.completed) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.label}: still running after ${WAIT_MS} ms; ${this.describe()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  /** Results received beyond those already taken. */
  get unread(): Result[] {
    return this.results.slice(this.consumed);
  }
}

let server: LiveServer;
let listeners: ReturnType<typeof trackListeners>;
let clients: Client[] = [];

beforeEach(async () => {
  server = await startServer();
  listeners = trackListeners(server);
});

afterEach(async () => {
  await Promise.all(clients.map((client) => client.dispose()));
  clients = [];
  await server.stop();
});

function connect(): Client {
  const client = createClient({ url: server.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
  clients.push(client);
  return client;
}

/** Subscribes and resolves once the server listens on the topic (`listening` counts every subscriber of that topic). */
async function subscribe(client: Client, topic: Topic, label: string, query: string, variables?: Record<string, unknown>): Promise<Collector> {
  const before = listeners.count(topic);
  const collector = new Collector(client, label, query, variables);
  await listeners.until(topic, before + 1);
  return collector;
}

/** One HTTP operation that must succeed without GraphQL errors. */
function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  return server.data(query, variables);
}

async function createSoul(name: string): Promise<string> {
  const data = await gql(
    `mutation($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } ... on Error { message } } }`,
    { input: { name, essence: `The essence of ${name}.` } },
  );
  expect(data.createSoul.__typename).toBe('SoulPayload');
  return data.createSoul.soul.id;
}

const dropShardMutation = `mutation($input: DropShardInput!) {
  dropShard(input: $input) {
    __typename
    ... on DropShardPayload { shard { id } readySouls { id } }
    ... on Error { message }
  }
}`;

/** Drops one shard created `daysAgo` before the server clock's now; returns its id and the souls it made ready. */
async function drop(soulIds: string[], content: string, source: string, daysAgo = 0, sealed = false): Promise<{ shardId: string; ready: string[] }> {
  const createdAt = new Date(server.clock.now() - daysAgo * DAY_MS).toISOString();
  const data = await gql(dropShardMutation, { input: { soulIds, content, source, createdAt, sealed } });
  expect(data.dropShard.__typename).toBe('DropShardPayload');
  return { shardId: data.dropShard.shard.id, ready: data.dropShard.readySouls.map((s: { id: string }) => s.id) };
}

/** Two shards, two sources, one day apart: one shard short of ready. */
async function almostReady(soulId: string): Promise<void> {
  expect((await drop([soulId], distinct[0], 'chat', 3)).ready).toEqual([]);
  expect((await drop([soulId], distinct[1], 'journal', 2)).ready).toEqual([]);
}

/** Three shards, three sources, 3, 2 and 1 days old: the third crosses the threshold (priority 3 × 3 × 2 × 1 = 18). */
async function crossReady(soulId: string): Promise<void> {
  await almostReady(soulId);
  expect((await drop([soulId], distinct[2], 'email', 1)).ready).toEqual([soulId]);
}

async function crystallization(soulId: string): Promise<{ ready: boolean; priority: number; unmet: string[] }> {
  return (await gql(`query($id: ID!) { soul(id: $id) { crystallization { ready priority unmet } } }`, { id: soulId })).soul.crystallization;
}

async function addTrait(soulId: string, principle: string): Promise<string> {
  const data = await gql(
    `mutation($soulId: ID!, $input: AddTraitInput!) { addTrait(soulId: $soulId, input: $input) { __typename ... on TraitPayload { trait { id } } ... on Error { message } } }`,
    { soulId, input: { principle, provenance: `seen in review ${principle.length}` } },
  );
  expect(data.addTrait).toMatchObject({ __typename: 'TraitPayload' });
  return data.addTrait.trait.id;
}

async function levelUp(soulId: string, carried: string[], newEssence: string): Promise<void> {
  const data = await gql(
    `mutation($soulId: ID!, $plan: LevelUpPlanInput!) { levelUp(soulId: $soulId, plan: $plan) { __typename ... on Error { message } } }`,
    { soulId, plan: { newEssence, consolidations: [], promotedTraitIds: [], carriedTraitIds: carried } },
  );
  expect(data.levelUp).toEqual({ __typename: 'LevelUpPayload' });
}

async function revertLevelUp(soulId: string): Promise<void> {
  const data = await gql(`mutation($soulId: ID!) { revertLevelUp(soulId: $soulId) { __typename ... on Error { message } } }`, { soulId });
  expect(data.revertLevelUp).toEqual({ __typename: 'RevertLevelUpPayload' });
}

async function stampAttuned(soulId: string): Promise<void> {
  const data = await gql(`mutation($soulId: ID!) { stampAttuned(soulId: $soulId) { __typename ... on Error { message } } }`, { soulId });
  expect(data.stampAttuned).toEqual({ __typename: 'SoulPayload' });
}

const crystallizationReadySubscription = `subscription($soulIds: [ID!]) { crystallizationReady(soulIds: $soulIds) { soul { id name } priority at } }`;

describe('crystallizationReady', () => {
  it('fires once when a write moves a soul to ready, with the soul and its crystallization priority; not again while it stays ready', async () => {
    const a = await createSoul('Ada');
    const b = await createSoul('Bo');
    const ready = await subscribe(connect(), 'crystallizationReady', 'crystallizationReady', crystallizationReadySubscription);

    await crossReady(a);
    const [first] = await ready.events('crystallizationReady');
    const verdict = await crystallization(a);
    expect(verdict.ready).toBe(true);
    expect(first).toEqual({ soul: { id: a, name: 'Ada' }, priority: verdict.priority, at: new Date(server.clock.now()).toISOString() });
    expect(first.priority).toBe(18);

    // Still ready: a further shard is no crossing.
    expect((await drop([a], distinct[3], 'chat', 0)).ready).toEqual([]);
    expect((await crystallization(a)).ready).toBe(true);

    // The next event is B's crossing, so A's extra shard published nothing in between.
    await crossReady(b);
    const [second] = await ready.events('crystallizationReady');
    expect(second.soul).toEqual({ id: b, name: 'Bo' });
    expect(ready.unread).toEqual([]);
  });

  it('fires again after stampAttuned and a new shard', async () => {
    const a = await createSoul('Ada');
    const ready = await subscribe(connect(), 'crystallizationReady', 'crystallizationReady', crystallizationReadySubscription, { soulIds: [a] });
    await crossReady(a);
    expect((await ready.events('crystallizationReady'))[0].soul.id).toBe(a);

    await stampAttuned(a);
    const attuned = await crystallization(a);
    expect(attuned.ready).toBe(false);
    expect(attuned.unmet).toEqual(['RECENCY']);

    server.clock.advance(HOUR_MS);
    expect((await drop([a], distinct[4], 'forum', 0)).ready).toEqual([a]);
    const [again] = await ready.events('crystallizationReady');
    const verdict = await crystallization(a);
    expect(again.soul.id).toBe(a);
    expect(again.priority).toBe(verdict.priority);
    expect(again.priority).not.toBe(18);
    expect(ready.unread).toEqual([]);
  });

  it('dropShards crossing two souls at once: one event each', async () => {
    const c = await createSoul('Cy');
    const d = await createSoul('Di');
    const e = await createSoul('Ed');
    const ready = await subscribe(connect(), 'crystallizationReady', 'crystallizationReady', crystallizationReadySubscription);
    await almostReady(c);
    await almostReady(d);

    const createdAt = new Date(server.clock.now() - DAY_MS).toISOString();
    const data = await gql(
      `mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { shards { id } readySouls { id } } ... on Error { message } } }`,
      {
        inputs: [
          { soulIds: [c], content: distinct[2], source: 'email', createdAt },
          { soulIds: [c, d], content: distinct[3], source: 'email', createdAt },
          { soulIds: [d], content: distinct[4], source: 'forum', createdAt },
        ],
      },
    );
    expect(data.dropShards.__typename).toBe('DropShardsPayload');
    expect(data.dropShards.readySouls.map((s: { id: string }) => s.id).sort()).toEqual([c, d].sort());

    const pair = await ready.events('crystallizationReady', 2);
    expect(pair.map((event) => event.soul.id).sort()).toEqual([c, d].sort());
    for (const event of pair) expect(event.priority).toBe((await crystallization(event.soul.id)).priority);

    // No duplicate for C or D: the next event is E's.
    await crossReady(e);
    expect((await ready.events('crystallizationReady'))[0].soul.id).toBe(e);
    expect(ready.unread).toEqual([]);
  });

  it('revealShards crossing fires; dropping the sealed shard did not', async () => {
    const r = await createSoul('Rae');
    const m = await createSoul('Mo');
    const ready = await subscribe(connect(), 'crystallizationReady', 'crystallizationReady', crystallizationReadySubscription);
    await almostReady(r);
    const sealed = await drop([r], distinct[2], 'email', 1, true);
    expect(sealed.ready).toEqual([]);
    expect((await crystallization(r)).ready).toBe(false);

    await crossReady(m);
    const data = await gql(`mutation($ids: [ID!]!) { revealShards(ids: $ids) { __typename ... on RevealShardsPayload { readySouls { id } } } }`, {
      ids: [sealed.shardId],
    });
    expect(data.revealShards).toEqual({ __typename: 'RevealShardsPayload', readySouls: [{ id: r }] });

    const events = await ready.events('crystallizationReady', 2);
    expect(events.map((event) => event.soul.id)).toEqual([m, r]);
    expect(events[1].priority).toBe((await crystallization(r)).priority);
  });

  it('awakenSoul crossing fires, and its payload lists the soul in readySouls', async () => {
    const w = await createSoul('Wren');
    const ready = await subscribe(connect(), 'crystallizationReady', 'crystallizationReady', crystallizationReadySubscription);
    const retired = await gql(`mutation($id: ID!) { retireSoul(id: $id) { __typename } }`, { id: w });
    expect(retired.retireSoul.__typename).toBe('SoulPayload');
    // Evidence arrives while the soul sleeps: a dormant soul is never ready, so nothing fires.
    await almostReady(w);
    expect((await drop([w], distinct[2], 'email', 1)).ready).toEqual([]);

    const data = await gql(`mutation($id: ID!) { awakenSoul(id: $id) { __typename ... on SoulPayload { soul { id } readySouls { id } } } }`, { id: w });
    expect(data.awakenSoul).toEqual({ __typename: 'SoulPayload', soul: { id: w }, readySouls: [{ id: w }] });
    const [event] = await ready.events('crystallizationReady');
    expect(event.soul.id).toBe(w);
    expect(event.priority).toBe((await crystallization(w)).priority);
    expect(ready.unread).toEqual([]);
  });

  it('revertLevelUp crossing fires when the shards it un-fades make the soul ready again', async () => {
    const v = await createSoul('Vale');
    const ready = await subscribe(connect(), 'crystallizationReady', 'crystallizationReady', crystallizationReadySubscription, { soulIds: [v] });
    await almostReady(v);
    const third = await drop([v], distinct[2], 'email', 1);
    expect(third.ready).toEqual([v]);
    expect((await ready.events('crystallizationReady'))[0].soul.id).toBe(v);

    // The shard's second citation comes from the merged trait itself (not inherited from its source), so the revert takes it back.
    const trait = await addTrait(v, 'Cooks for the team');
    const singer = await addTrait(v, 'Sings while cooking');
    const cite = `mutation($shardId: ID!, $traitId: ID!) { citeShard(shardId: $shardId, traitId: $traitId) { __typename } }`;
    await gql(cite, { shardId: third.shardId, traitId: singer });
    const leveled = await gql(
      `mutation($soulId: ID!, $plan: LevelUpPlanInput!) { levelUp(soulId: $soulId, plan: $plan) { __typename ... on LevelUpPayload { event { merged { id } } } } }`,
      { soulId: v, plan: { newEssence: 'A cook.', consolidations: [{ sourceTraitIds: [trait], mergedPrinciple: 'Feeds the team', mergedProvenance: 'fridays' }], promotedTraitIds: [], carriedTraitIds: [singer] } },
    );
    await gql(cite, { shardId: third.shardId, traitId: leveled.levelUp.event.merged[0].id });
    const faded = await gql(`mutation { fadeExhaustedShards { fadedCount readySouls { id } } }`);
    expect(faded.fadeExhaustedShards).toEqual({ fadedCount: 1, readySouls: [] });
    expect((await crystallization(v)).ready).toBe(false);

    server.clock.advance(HOUR_MS);
    const data = await gql(`mutation($soulId: ID!) { revertLevelUp(soulId: $soulId) { __typename ... on RevertLevelUpPayload { readySouls { id } } } }`, { soulId: v });
    expect(data.revertLevelUp).toEqual({ __typename: 'RevertLevelUpPayload', readySouls: [{ id: v }] });
    const [event] = await ready.events('crystallizationReady');
    expect(event.soul.id).toBe(v);
    expect(event.priority).toBe((await crystallization(v)).priority);
    expect(ready.unread).toEqual([]);
  });

  it('the soulIds filter delivers only the listed souls', async () => {
    const x = await createSoul('Xia');
    const y = await createSoul('Yul');
    const z = await createSoul('Zed');
    const client = connect();
    const all = await subscribe(client, 'crystallizationReady', 'all souls', crystallizationReadySubscription);
    const onlyX = await subscribe(client, 'crystallizationReady', 'soulIds [x]', crystallizationReadySubscription, { soulIds: [x] });
    const xAndZ = await subscribe(client, 'crystallizationReady', 'soulIds [x, z]', crystallizationReadySubscription, { soulIds: [x, z] });

    await crossReady(y);
    await crossReady(x);
    await crossReady(z);

    expect((await all.events('crystallizationReady', 3)).map((e) => e.soul.id)).toEqual([y, x, z]);
    expect((await onlyX.events('crystallizationReady')).map((e) => e.soul.id)).toEqual([x]);
    expect((await xAndZ.events('crystallizationReady', 2)).map((e) => e.soul.id)).toEqual([x, z]);
    expect(onlyX.unread).toEqual([]);
  });
});

describe('levelChanged', () => {
  const levelChangedSubscription = `subscription($soulId: ID) {
    levelChanged(soulId: $soulId) { kind soul { id level essence } event { id level essenceAfter revertedAt } }
  }`;

  it('fires on levelUp (LEVEL_UP) and revertLevelUp (REVERT), filtered by soulId', async () => {
    const a = await createSoul('Ada');
    const b = await createSoul('Bo');
    const traitA = await addTrait(a, 'Reads the whole diff before judging');
    const traitB = await addTrait(b, 'Prefers small steps');
    const client = connect();
    const onlyA = await subscribe(client, 'levelChanged', 'levelChanged(a)', levelChangedSubscription, { soulId: a });
    const all = await subscribe(client, 'levelChanged', 'levelChanged', levelChangedSubscription);

    await levelUp(b, [traitB], 'Bo, now deliberate.');
    server.clock.advance(HOUR_MS);
    await levelUp(a, [traitA], 'Ada, a careful reviewer.');
    server.clock.advance(HOUR_MS);
    await revertLevelUp(a);

    const [up, revert] = await onlyA.events('levelChanged', 2);
    expect(up).toMatchObject({ kind: 'LEVEL_UP', soul: { id: a }, event: { level: 1, essenceAfter: 'Ada, a careful reviewer.', revertedAt: null } });
    expect(revert).toMatchObject({
      kind: 'REVERT',
      soul: { id: a, level: 0, essence: 'The essence of Ada.' },
      event: { id: up.event.id, level: 1, revertedAt: new Date(server.clock.now()).toISOString() },
    });

    const everything = await all.events('levelChanged', 3);
    expect(everything.map((e) => [e.soul.id, e.kind])).toEqual([
      [b, 'LEVEL_UP'],
      [a, 'LEVEL_UP'],
      [a, 'REVERT'],
    ]);
    expect(everything[0].event).toMatchObject({ level: 1, essenceAfter: 'Bo, now deliberate.' });
    expect(onlyA.unread).toEqual([]);
  });
});

describe('soulChanged', () => {
  const soulChangedSubscription = `subscription($soulId: ID) { soulChanged(soulId: $soulId) { kind soul { id name } at } }`;

  it('publishes one event per write that changes a soul, in order; refused writes and dropShard publish nothing', async () => {
    const changes = await subscribe(connect(), 'soulChanged', 'soulChanged', soulChangedSubscription);
    const expectRefused = async (query: string, variables: Record<string, unknown>, field: string) => {
      const data = await gql(query, variables);
      expect(data[field].__typename).toBe('ValidationError');
    };

    const soulId = await createSoul('Ada');
    await expectRefused(`mutation($input: CreateSoulInput!) { createSoul(input: $input) { __typename } }`, { input: { name: '  ', essence: 'x' } }, 'createSoul');
    await gql(`mutation($id: ID!) { updateSoul(id: $id, input: { description: "a reviewer" }) { __typename } }`, { id: soulId });
    const first = await addTrait(soulId, 'Reads the whole diff before judging');
    await expectRefused(
      `mutation($id: ID!) { addTrait(soulId: $id, input: { principle: "Always", provenance: "   " }) { __typename } }`,
      { id: soulId },
      'addTrait',
    );
    const second = await addTrait(soulId, 'Prefers small steps');
    await gql(`mutation($id: ID!) { reviseTrait(id: $id, input: { principle: "Prefers small, reversible steps" }) { __typename } }`, { id: second });
    await gql(`mutation($id: ID!) { revertTrait(id: $id) { __typename } }`, { id: second });
    await gql(`mutation($id: ID!) { reactivateTrait(id: $id) { __typename } }`, { id: second });
    const { shardId } = await drop([soulId], distinct[0], 'chat');
    await gql(`mutation($shardId: ID!, $traitId: ID!) { citeShard(shardId: $shardId, traitId: $traitId) { __typename } }`, { shardId, traitId: first });
    await levelUp(soulId, [first, second], 'Ada, a careful reviewer.');
    await revertLevelUp(soulId);
    await stampAttuned(soulId);
    await gql(`mutation($id: ID!) { retireSoul(id: $id) { __typename } }`, { id: soulId });
    await gql(`mutation($id: ID!) { awakenSoul(id: $id) { __typename } }`, { id: soulId });

    const expected = [
      'CREATED',
      'UPDATED',
      'TRAIT_ADDED',
      'TRAIT_ADDED',
      'TRAIT_REVISED',
      'TRAIT_REVERTED',
      'TRAIT_REACTIVATED',
      'SHARD_CITED',
      'LEVEL_UP',
      'LEVEL_UP_REVERTED',
      'ATTUNED',
      'RETIRED',
      'AWAKENED',
    ];
    const events = await changes.events('soulChanged', expected.length);
    expect(events.map((event) => event.kind)).toEqual(expected);
    for (const event of events) expect(event.soul).toEqual({ id: soulId, name: 'Ada' });
    expect(changes.unread).toEqual([]);
  });

  it('filters by soulId', async () => {
    const a = await createSoul('Ada');
    const b = await createSoul('Bo');
    const client = connect();
    const onlyA = await subscribe(client, 'soulChanged', 'soulChanged(a)', soulChangedSubscription, { soulId: a });
    const all = await subscribe(client, 'soulChanged', 'soulChanged', soulChangedSubscription);

    await addTrait(b, 'Prefers small steps');
    await addTrait(a, 'Reads the whole diff before judging');
    await stampAttuned(b);
    await stampAttuned(a);

    expect((await onlyA.events('soulChanged', 2)).map((e) => [e.soul.id, e.kind])).toEqual([
      [a, 'TRAIT_ADDED'],
      [a, 'ATTUNED'],
    ]);
    expect((await all.events('soulChanged', 4)).map((e) => [e.soul.id, e.kind])).toEqual([
      [b, 'TRAIT_ADDED'],
      [a, 'TRAIT_ADDED'],
      [b, 'ATTUNED'],
      [a, 'ATTUNED'],
    ]);
    expect(onlyA.unread).toEqual([]);
  });

  it('every event resolves the soul afresh, not from loaders cached for the subscription', async () => {
    const soulId = await createSoul('Ada');
    const changes = await subscribe(
      connect(),
      'soulChanged',
      'soulChanged(fresh)',
      `subscription($soulId: ID) { soulChanged(soulId: $soulId) { kind soul { activeTraitCount rendered traits { principle } updatedAt } } }`,
      { soulId },
    );

    server.clock.advance(HOUR_MS);
    await addTrait(soulId, 'Reads the whole diff before judging');
    const [one] = await changes.events('soulChanged');
    server.clock.advance(HOUR_MS);
    await addTrait(soulId, 'Prefers small steps');
    const [two] = await changes.events('soulChanged');

    expect(one.soul.activeTraitCount).toBe(1);
    expect(one.soul.traits).toEqual([{ principle: 'Reads the whole diff before judging' }]);
    expect(one.soul.rendered).toContain('- Reads the whole diff before judging');
    expect(one.soul.rendered).not.toContain('Prefers small steps');
    expect(one.soul.updatedAt).toBe(new Date(server.clock.now() - HOUR_MS).toISOString());

    expect(two.soul.activeTraitCount).toBe(2);
    expect(two.soul.traits.map((t: { principle: string }) => t.principle).sort()).toEqual(['Prefers small steps', 'Reads the whole diff before judging']);
    expect(two.soul.rendered).toContain('- Reads the whole diff before judging');
    expect(two.soul.rendered).toContain('- Prefers small steps');
    expect(two.soul.updatedAt).toBe(new Date(server.clock.now()).toISOString());
  });
});

describe('shardDropped', () => {
  const shardDroppedSubscription = `subscription($soulId: ID) { shardDropped(soulId: $soulId) { shard { id content source souls { id } } at } }`;

  it('fires once per new shard from dropShard and dropShards, filtered by attributed soul; refused drops publish nothing', async () => {
    const a = await createSoul('Ada');
    const b = await createSoul('Bo');
    const client = connect();
    const onlyA = await subscribe(client, 'shardDropped', 'shardDropped(a)', shardDroppedSubscription, { soulId: a });
    const all = await subscribe(client, 'shardDropped', 'shardDropped', shardDroppedSubscription);

    const toB = await drop([b], distinct[0], 'chat');
    const refused = await server.request(dropShardMutation, { input: { soulIds: [a], content: ' ... ', source: 'chat' } });
    expect(refused.body.data.dropShard.__typename).toBe('ValidationError');
    const toBoth = await drop([a, b], distinct[1], 'journal');
    const batch = await gql(
      `mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { shards { id } } } }`,
      {
        inputs: [
          { soulIds: [a], content: distinct[2], source: 'email' },
          { soulIds: [b], content: distinct[3], source: 'email' },
          { soulIds: [a], content: distinct[4], source: 'forum' },
        ],
      },
    );
    const batchIds = batch.dropShards.shards.map((s: { id: string }) => s.id);
    expect(batchIds).toHaveLength(3);

    const everything = await all.events('shardDropped', 5);
    expect(everything.map((e) => e.shard.id)).toEqual([toB.shardId, toBoth.shardId, ...batchIds]);
    expect(everything.map((e) => e.shard.souls.map((s: { id: string }) => s.id).sort())).toEqual([[b], [a, b].sort(), [a], [b], [a]]);
    expect(everything[1].shard).toMatchObject({ content: distinct[1], source: 'journal' });
    expect(everything[0].at).toBe(new Date(server.clock.now()).toISOString());

    const forA = await onlyA.events('shardDropped', 3);
    expect(forA.map((e) => e.shard.id)).toEqual([toBoth.shardId, batchIds[0], batchIds[2]]);
    expect(onlyA.unread).toEqual([]);
    expect(all.unread).toEqual([]);
  });
});

describe('the WebSocket transport', () => {
  it('runs queries and mutations too', async () => {
    const client = connect();
    const create = new Collector(client, 'createSoul over ws', `mutation { createSoul(input: { name: "Wes", essence: "Over the socket." }) { __typename ... on SoulPayload { soul { id name } } } }`);
    const [created] = await create.next();
    await create.ended();
    expect(create.completed).toBe(true);
    expect(created.data.createSoul).toMatchObject({ __typename: 'SoulPayload', soul: { name: 'Wes' } });

    const read = new Collector(client, 'soul over ws', `query($id: ID!) { soul(id: $id) { name essence } settings { traitLimit } }`, { id: created.data.createSoul.soul.id });
    const [found] = await read.next();
    await read.ended();
    expect(found.data.soul).toEqual({ name: 'Wes', essence: 'Over the socket.' });
    expect(found.data.settings.traitLimit).toBeGreaterThan(0);
  });

  it('refuses an invalid subscription with an error message and keeps serving', async () => {
    const client = connect();
    const invalid = new Collector(client, 'unknown field', `subscription { nope }`);
    await invalid.ended();
    expect(invalid.results).toEqual([]);
    expect(Array.isArray(invalid.error)).toBe(true);
    expect((invalid.error as Array<{ message: string }>)[0].message).toMatch(/Cannot query field "nope" on type "Subscription"/);

    const badArgument = new Collector(client, 'bad soulId', `subscription { soulChanged(soulId: "not an id") { kind } }`);
    await badArgument.ended();
    const errors = [...(badArgument.results.flatMap((r) => r.errors ?? [])), ...(Array.isArray(badArgument.error) ? badArgument.error : [])];
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'soulId' } });

    // The same connection and the HTTP endpoint still answer, and subscriptions still deliver.
    const changes = await subscribe(client, 'soulChanged', 'soulChanged', `subscription { soulChanged { kind soul { name } } }`);
    const soulId = await createSoul('Still here');
    expect(await changes.events('soulChanged')).toEqual([{ kind: 'CREATED', soul: { name: 'Still here' } }]);
    const read = new Collector(client, 'soul over ws', `query($id: ID!) { soul(id: $id) { name } }`, { id: soulId });
    expect((await read.next())[0].data).toEqual({ soul: { name: 'Still here' } });
  });

  it('stops listening when a client unsubscribes', async () => {
    const client = connect();
    const changes = await subscribe(client, 'soulChanged', 'soulChanged', `subscription { soulChanged { kind } }`);
    changes.unsubscribe();
    await listeners.until('soulChanged', 0);
    await createSoul('Unheard');
    expect(changes.results).toEqual([]);
  });
});
