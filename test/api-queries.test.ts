import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS, similarity } from '../src/engine/index.ts';
import { startServer, type LiveServer } from './support/server.ts';

/*
 * One live server (traitLimit 4, staleDays 5) holding a small world built
 * through the API, on a hand-moved clock, so every expected value below is
 * known exactly:
 *
 *   Ada   one trait, attuned, only an expired shard
 *   Bram  four traits (at capacity), two email shards, one faded shard
 *   Eve   levelled up, reverted, levelled up again
 *   Mira  three considered shards (two alike), a sealed one: ready; traits t1 (cited twice), t2 (stale), t3 (reverted)
 *   Dov   dormant
 */

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const Q = T0 + 6 * DAY_MS; // the clock while the tests read
const at = (minutes: number) => T0 + minutes * MINUTE;
const iso = (ms: number) => new Date(ms).toISOString();

const ESSENCE = {
  Ada: 'Ada writes careful notes.',
  Bram: 'Bram sketches systems.',
  Eve: 'Eve ships small changes.',
  Mira: 'Mira keeps the build green and the team calm.',
  Dov: 'Dov rests.',
};
const EVE_LEVEL_ESSENCE = 'Eve mentors new contributors patiently.';

const SHARDS = {
  A: { content: 'Always runs the full test suite before pushing', source: 'chat', createdAt: T0 - 3 * DAY_MS, tags: ['testing'], souls: ['Mira'] },
  B: { content: 'Always runs the whole test suite before pushing code', source: 'email', createdAt: T0 - 2 * DAY_MS, tags: ['Testing', 'habits'], souls: ['Mira', 'Bram'] },
  C: { content: 'Prefers green tea to coffee in the morning', source: 'chat', createdAt: T0 - DAY_MS, tags: ['food'], souls: ['Mira'] },
  S: { content: 'Secret note about the deployment plan', source: 'review', createdAt: T0 - 12 * 3_600_000, tags: [], souls: ['Mira'], sealed: true },
  D: { content: 'Draws architecture diagrams on the whiteboard', source: 'email', createdAt: T0 - 4 * DAY_MS, tags: [], souls: ['Bram'] },
  E: { content: 'Names variables with great care', source: 'email', createdAt: T0 - 5 * DAY_MS, tags: [], souls: ['Bram'] },
  O: { content: 'An ancient remark about punch cards', source: 'archive', createdAt: T0 - 200 * DAY_MS, tags: [], souls: ['Ada'] },
} as const;
type ShardName = keyof typeof SHARDS;

const PRINCIPLE = {
  t1: 'Runs the full test suite before every push',
  t2: 'Keeps a calm tone in code review',
  t3: 'Skips code review',
  a1: 'Writes careful notes',
  e1: 'Writes terse commit messages',
  e2: 'Writes short commit messages',
  e3: 'Mentors new contributors patiently',
  e4: 'Reviews pull requests the same day',
  m: 'Writes concise commit messages',
};

let server: LiveServer;
const soul: Record<string, string> = {};
const shard = {} as Record<ShardName, string>;
const trait: Record<string, string> = {};
const event: Record<string, string> = {};

function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  return server.data(query, variables);
}

/** The GraphQL errors of an operation expected to fail at one field. */
async function gqlErrors(query: string, variables?: Record<string, unknown>): Promise<any[]> {
  const { body } = await server.request(query, variables);
  expect(body.errors, 'expected GraphQL errors').toBeDefined();
  return body.errors;
}

function setClock(ms: number): void {
  server.clock.advance(ms - server.clock.now());
}

async function mutate(field: string, query: string, variables?: Record<string, unknown>): Promise<any> {
  const data = await gql(query, variables);
  expect(data[field].__typename, JSON.stringify(data[field])).toMatch(/Payload$/);
  return data[field];
}

async function createSoul(name: keyof typeof ESSENCE, extra: Record<string, unknown> = {}): Promise<void> {
  const result = await mutate('createSoul', 'mutation($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } } }', {
    input: { name, essence: ESSENCE[name], ...extra },
  });
  soul[name] = result.soul.id;
}

async function addTrait(key: string, soulName: string, principle: string, provenance: string, cite: ShardName[] = []): Promise<void> {
  const result = await mutate(
    'addTrait',
    'mutation($soulId: ID!, $input: AddTraitInput!) { addTrait(soulId: $soulId, input: $input) { __typename ... on TraitPayload { trait { id } } } }',
    { soulId: soul[soulName], input: { principle, provenance, citeShardIds: cite.map((s) => shard[s]) } },
  );
  trait[key] = result.trait.id;
}

const LEVEL_UP = `mutation($soulId: ID!, $plan: LevelUpPlanInput!) {
  levelUp(soulId: $soulId, plan: $plan) { __typename ... on LevelUpPayload { event { id merged { id } } } }
}`;

beforeAll(async () => {
  server = await startServer({ start: T0, settings: { traitLimit: 4, staleDays: 5 } });
  let minute = 0;
  const tick = () => setClock(at(++minute));

  await createSoul('Ada', { slug: 'ada' }); // T0
  tick();
  await createSoul('Bram');
  tick();
  await createSoul('Eve');
  tick();
  await createSoul('Mira', { slug: 'mira', description: 'Careful engineer' }); // at(3)
  tick();
  await createSoul('Dov');
  tick(); // at(5): the shards
  for (const name of Object.keys(SHARDS) as ShardName[]) {
    const { content, source, createdAt, tags, souls } = SHARDS[name];
    const result = await mutate('dropShard', 'mutation($input: DropShardInput!) { dropShard(input: $input) { __typename ... on DropShardPayload { shard { id } } } }', {
      input: { content, source, tags, soulIds: souls.map((s) => soul[s]), createdAt: iso(createdAt), sealed: 'sealed' in SHARDS[name] },
    });
    shard[name] = result.shard.id;
  }
  tick(); // at(6)
  await addTrait('t1', 'Mira', PRINCIPLE.t1, 'Shards A and B', ['A']);
  tick(); // at(7)
  await addTrait('t2', 'Mira', PRINCIPLE.t2, 'Seen in retros');
  tick(); // at(8)
  await addTrait('t3', 'Mira', PRINCIPLE.t3, 'One-off');
  tick(); // at(9)
  await mutate('revertTrait', `mutation { revertTrait(id: "${trait.t3}") { __typename } }`);
  tick(); // at(10)
  await addTrait('b1', 'Bram', 'Draws diagrams before coding', 'Whiteboard sessions', ['D']);
  tick();
  await addTrait('b2', 'Bram', 'Sketches on whiteboards', 'Design reviews', ['D']);
  tick();
  await addTrait('b3', 'Bram', 'Pairs on hard problems', 'Pairing logs');
  tick(); // at(13)
  await addTrait('b4', 'Bram', 'Reads the docs first', 'Questions asked');
  tick(); // at(14)
  expect(await gql('mutation { fadeExhaustedShards { fadedCount } }')).toEqual({ fadeExhaustedShards: { fadedCount: 1 } });
  tick(); // at(15)
  await addTrait('a1', 'Ada', PRINCIPLE.a1, 'Her notebooks');
  tick(); // at(16)
  await mutate('stampAttuned', `mutation { stampAttuned(soulId: "${soul.Ada}") { __typename } }`);
  for (const key of ['e1', 'e2', 'e3', 'e4'] as const) {
    tick(); // at(17) … at(20)
    await addTrait(key, 'Eve', PRINCIPLE[key], `Observed: ${PRINCIPLE[key]}`);
  }
  const plan = {
    newEssence: EVE_LEVEL_ESSENCE,
    consolidations: [{ sourceTraitIds: [trait.e1, trait.e2], mergedPrinciple: PRINCIPLE.m, mergedProvenance: 'Merged from two' }],
    promotedTraitIds: [trait.e3],
    carriedTraitIds: [trait.e4],
  };
  tick(); // at(21)
  const first = await mutate('levelUp', LEVEL_UP, { soulId: soul.Eve, plan });
  event.first = first.event.id;
  tick(); // at(22)
  await mutate('revertLevelUp', `mutation { revertLevelUp(soulId: "${soul.Eve}") { __typename } }`);
  tick(); // at(23)
  const second = await mutate('levelUp', LEVEL_UP, { soulId: soul.Eve, plan });
  event.second = second.event.id;
  trait.m = second.event.merged[0].id;
  tick(); // at(24)
  await mutate('retireSoul', `mutation { retireSoul(id: "${soul.Dov}") { __typename } }`);

  setClock(T0 + 5 * DAY_MS);
  await mutate('citeShard', `mutation { citeShard(shardId: "${shard.B}", traitId: "${trait.t1}") { __typename } }`);
  setClock(Q);
});

afterAll(async () => {
  await server?.stop();
});

/** Everything about Mira that a preview might be tempted to write. */
async function miraState(): Promise<unknown> {
  return gql(`{ soul(id: "${soul.Mira}") { updatedAt level essence rendered(includeProvenance: true) traits(status: []) { id status principle provenance updatedAt } levelHistory { id } } }`);
}

const readyMira = { ready: true, priority: 12, pendingCount: 3, distinctSources: 2, ageSpreadDays: 2, newSinceAttuned: true, clusterCount: 2, unmet: [] };
const emptyVerdict = { ready: false, priority: 0, pendingCount: 0, distinctSources: 0, ageSpreadDays: 0, newSinceAttuned: true, clusterCount: null, unmet: ['MIN_SHARDS', 'SOURCE_DIVERSITY', 'AGE_SPREAD'] };
const CRYSTALLIZATION = 'crystallization { ready priority pendingCount distinctSources ageSpreadDays newSinceAttuned clusterCount unmet }';

const miraLean = `# Mira\n\n*Careful engineer*\n\n${ESSENCE.Mira}\n\n## Traits\n- ${PRINCIPLE.t1}\n- ${PRINCIPLE.t2}\n`;
const miraFull = `# Mira\n\n*Careful engineer*\n\n${ESSENCE.Mira}\n\n## Traits\n- **${PRINCIPLE.t1}** — Shards A and B\n- **${PRINCIPLE.t2}** — Seen in retros\n`;

describe('soul, soulByName, souls, dormantSouls', () => {
  it('finds a soul by id and by name; unknown or malformed ids find nothing', async () => {
    expect(await gql(`{ soul(id: "${soul.Mira}") { id name } }`)).toEqual({ soul: { id: '4', name: 'Mira' } });
    expect(await gql('{ a: soulByName(name: "Mira") { id } b: soulByName(name: "Dov") { id dormant } c: soulByName(name: "Nobody") { id } }')).toEqual({
      a: { id: soul.Mira },
      b: { id: soul.Dov, dormant: true },
      c: null,
    });
    expect(await gql('{ a: soul(id: "999") { id } b: soul(id: "abc") { id } c: soul(id: "-1") { id } }')).toEqual({ a: null, b: null, c: null });
  });

  it('lists awake souls in each SoulOrder; READINESS is the default', async () => {
    const data = await gql(`{
      byDefault: souls { name }
      readiness: souls(orderBy: READINESS) { name }
      name: souls(orderBy: NAME) { name }
      level: souls(orderBy: LEVEL) { name level }
      updated: souls(orderBy: UPDATED) { name updatedAt }
    }`);
    const names = (list: Array<{ name: string }>) => list.map((s) => s.name);
    // Mira is ready; Bram's priority (2 × 1 × 3 days) beats Ada's and Eve's 0, who then go by name.
    expect(names(data.readiness)).toEqual(['Mira', 'Bram', 'Ada', 'Eve']);
    expect(data.byDefault).toEqual(data.readiness);
    expect(names(data.name)).toEqual(['Ada', 'Bram', 'Eve', 'Mira']);
    expect(data.level).toEqual([
      { name: 'Eve', level: 1 },
      { name: 'Ada', level: 0 },
      { name: 'Bram', level: 0 },
      { name: 'Mira', level: 0 },
    ]);
    expect(data.updated).toEqual([
      { name: 'Mira', updatedAt: '2026-01-06T00:00:00.000Z' },
      { name: 'Eve', updatedAt: iso(at(23)) },
      { name: 'Ada', updatedAt: iso(at(15)) },
      { name: 'Bram', updatedAt: iso(at(13)) },
    ]);
  });

  it('lists dormant souls apart', async () => {
    expect(await gql('{ dormantSouls { id name dormant deletedAt } }')).toEqual({
      dormantSouls: [{ id: soul.Dov, name: 'Dov', dormant: true, deletedAt: iso(at(24)) }],
    });
  });

  it('answers IDs as decimal strings and DateTime as ISO-8601 UTC', async () => {
    const { souls } = await gql('{ souls { id createdAt updatedAt traits(status: []) { id createdAt } } }');
    for (const s of souls) {
      expect(s.id).toMatch(/^[1-9]\d*$/);
      expect(s.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      for (const t of s.traits) expect(t.id).toMatch(/^[1-9]\d*$/);
    }
    expect(await gql(`{ soul(id: "${soul.Ada}") { createdAt lastAttunedAt } }`)).toEqual({
      soul: { createdAt: '2026-01-01T00:00:00.000Z', lastAttunedAt: '2026-01-01T00:16:00.000Z' },
    });
  });
});

describe('Soul fields', () => {
  it('answers the stored fields and the rendered block, lean and full', async () => {
    expect(
      await gql(`{ soul(id: "${soul.Mira}") {
        id name slug essence description level createdAt updatedAt deletedAt lastAttunedAt dormant
        lean: rendered full: rendered(includeProvenance: true)
      } }`),
    ).toEqual({
      soul: {
        id: soul.Mira,
        name: 'Mira',
        slug: 'mira',
        essence: ESSENCE.Mira,
        description: 'Careful engineer',
        level: 0,
        createdAt: iso(at(3)),
        updatedAt: iso(T0 + 5 * DAY_MS),
        deletedAt: null,
        lastAttunedAt: null,
        dormant: false,
        lean: miraLean,
        full: miraFull,
      },
    });
  });

  it('filters traits by status and generation', async () => {
    const ids = (list: Array<{ id: string }>) => list.map((t) => t.id);
    const mira = (await gql(`{ soul(id: "${soul.Mira}") { active: traits { id } reverted: traits(status: [REVERTED]) { id status } all: traits(status: []) { id } } }`)).soul;
    expect(ids(mira.active)).toEqual([trait.t1, trait.t2]);
    expect(mira.reverted).toEqual([{ id: trait.t3, status: 'REVERTED' }]);
    expect(ids(mira.all)).toEqual([trait.t1, trait.t2, trait.t3]);

    const eve = (
      await gql(`{ soul(id: "${soul.Eve}") {
        active: traits { id generation }
        levelOne: traits(generation: 1) { id }
        levelZeroAny: traits(status: [], generation: 0) { id status }
        past: traits(status: [CONSOLIDATED, PROMOTED]) { id status }
        everything: traits(status: null) { id }
      } }`)
    ).soul;
    expect(eve.active).toEqual([
      { id: trait.e4, generation: 1 },
      { id: trait.m, generation: 1 },
    ]);
    expect(ids(eve.levelOne)).toEqual([trait.e4, trait.m]);
    expect(eve.levelZeroAny).toEqual([
      { id: trait.e1, status: 'CONSOLIDATED' },
      { id: trait.e2, status: 'CONSOLIDATED' },
      { id: trait.e3, status: 'PROMOTED' },
    ]);
    expect(eve.past).toEqual(eve.levelZeroAny);
    expect(ids(eve.everything)).toEqual([trait.e1, trait.e2, trait.e3, trait.e4, trait.m]);
  });

  it('answers counts, capacity, pending shards, counts by source and tag, and health', async () => {
    const fields = 'name activeTraitCount traitLimit atCapacity pendingShardCount shardCountsBySource { source count } shardCountsByTag { tag count } health';
    const { souls } = await gql(`{ souls(orderBy: NAME) { ${fields} } }`);
    expect(souls).toEqual([
      // a1 is stale (no citation, older than staleDays): health 0; the expired shard is not pending.
      { name: 'Ada', activeTraitCount: 1, traitLimit: 4, atCapacity: false, pendingShardCount: 0, shardCountsBySource: [], shardCountsByTag: [], health: 0 },
      {
        name: 'Bram',
        activeTraitCount: 4,
        traitLimit: 4,
        atCapacity: true,
        pendingShardCount: 2,
        shardCountsBySource: [{ source: 'email', count: 2 }],
        shardCountsByTag: [
          { tag: 'habits', count: 1 },
          { tag: 'testing', count: 1 },
        ],
        health: 0,
      },
      // Eve: no stale trait, 2 of 4, but no pending shard: (1 − 0) × 0.5 × 0.
      { name: 'Eve', activeTraitCount: 2, traitLimit: 4, atCapacity: false, pendingShardCount: 0, shardCountsBySource: [], shardCountsByTag: [], health: 0 },
      {
        name: 'Mira',
        activeTraitCount: 2,
        traitLimit: 4,
        atCapacity: false,
        pendingShardCount: 3,
        shardCountsBySource: [
          { source: 'chat', count: 2 },
          { source: 'email', count: 1 },
        ],
        shardCountsByTag: [
          { tag: 'testing', count: 2 },
          { tag: 'food', count: 1 },
          { tag: 'habits', count: 1 },
        ],
        // t2 stale, t1 cited a day ago: (1 − 1/2) × (1 − 2/4) × min(1, 3/3)
        health: 0.25,
      },
    ]);
  });

  it('answers crystallization with the unmet conditions', async () => {
    const { souls } = await gql(`{ souls(orderBy: NAME) { name ${CRYSTALLIZATION} } dormantSouls { ${CRYSTALLIZATION} } }`);
    expect(souls).toEqual([
      // Attuned, with nothing since; Eve was never attuned, so recency holds for her (SPEC §4).
      { name: 'Ada', crystallization: { ...emptyVerdict, newSinceAttuned: false, unmet: [...emptyVerdict.unmet, 'RECENCY'] } },
      {
        name: 'Bram',
        crystallization: { ready: false, priority: 6, pendingCount: 2, distinctSources: 1, ageSpreadDays: 3, newSinceAttuned: true, clusterCount: null, unmet: ['MIN_SHARDS', 'SOURCE_DIVERSITY'] },
      },
      { name: 'Eve', crystallization: emptyVerdict },
      { name: 'Mira', crystallization: readyMira },
    ]);
    const { dormantSouls } = await gql(`{ dormantSouls { ${CRYSTALLIZATION} } }`);
    expect(dormantSouls[0].crystallization.unmet).toEqual(['DORMANT', ...emptyVerdict.unmet]);
    expect(dormantSouls[0].crystallization.ready).toBe(false);
  });

  it('pages its own shards, with the connection filters', async () => {
    const page = (await gql(`{ soul(id: "${soul.Mira}") {
      all: shards { totalCount edges { node { id } } }
      visible: shards(sealed: false, first: 2) { totalCount edges { cursor node { id } } pageInfo { hasNextPage endCursor } }
      chat: shards(source: "chat") { edges { node { id } } }
      food: shards(tags: ["FOOD"]) { edges { node { id } } }
    } }`)).soul;
    const ids = (c: any) => c.edges.map((e: any) => e.node.id);
    expect(ids(page.all)).toEqual([shard.S, shard.C, shard.B, shard.A]);
    expect(page.all.totalCount).toBe(4);
    expect(ids(page.visible)).toEqual([shard.C, shard.B]);
    expect(page.visible.totalCount).toBe(3);
    expect(page.visible.pageInfo).toEqual({ hasNextPage: true, endCursor: page.visible.edges[1].cursor });
    expect(ids(page.chat)).toEqual([shard.C, shard.A]);
    expect(ids(page.food)).toEqual([shard.C]);

    const rest = (await gql(`{ soul(id: "${soul.Mira}") { shards(sealed: false, first: 2, after: "${page.visible.pageInfo.endCursor}") { edges { node { id } } pageInfo { hasNextPage } } } }`)).soul;
    expect(ids(rest.shards)).toEqual([shard.A]);
    expect(rest.shards.pageInfo.hasNextPage).toBe(false);

    const ada = (await gql(`{ soul(id: "${soul.Ada}") { recent: shards { totalCount } everything: shards(includeExpired: true) { edges { node { id } } } } }`)).soul;
    expect(ada).toEqual({ recent: { totalCount: 0 }, everything: { edges: [{ node: { id: shard.O } }] } });
  });

  it('answers the level history with consolidated, promoted, carried and merged traits, and revertedAt', async () => {
    const { soul: eve } = await gql(`{ soul(id: "${soul.Eve}") {
      level essence
      levelHistory {
        id soul { name } level essenceBefore essenceAfter createdAt revertedAt
        consolidated { id status mergedInto { id principle } }
        promoted { id status }
        carried { id generation status }
        merged { id principle provenance generation status }
      }
    } }`);
    const common = {
      soul: { name: 'Eve' },
      level: 1,
      essenceBefore: ESSENCE.Eve,
      essenceAfter: EVE_LEVEL_ESSENCE,
      consolidated: [
        { id: trait.e1, status: 'CONSOLIDATED', mergedInto: { id: trait.m, principle: PRINCIPLE.m } },
        { id: trait.e2, status: 'CONSOLIDATED', mergedInto: { id: trait.m, principle: PRINCIPLE.m } },
      ],
      promoted: [{ id: trait.e3, status: 'PROMOTED' }],
      carried: [{ id: trait.e4, generation: 1, status: 'ACTIVE' }],
    };
    expect(eve.level).toBe(1);
    expect(eve.essence).toBe(EVE_LEVEL_ESSENCE);
    expect(eve.levelHistory).toEqual([
      // the reverted level-up keeps its row; its merged trait was deleted
      { id: event.first, ...common, createdAt: iso(at(21)), revertedAt: iso(at(22)), merged: [] },
      { id: event.second, ...common, createdAt: iso(at(23)), revertedAt: null, merged: [{ id: trait.m, principle: PRINCIPLE.m, provenance: 'Merged from two', generation: 1, status: 'ACTIVE' }] },
    ]);
    // The first merged trait is gone: Eve's traits are the four originals and the second merged one only.
    expect((await gql(`{ soul(id: "${soul.Eve}") { traits(status: []) { principle } } }`)).soul.traits.map((t: any) => t.principle)).toEqual([
      PRINCIPLE.e1,
      PRINCIPLE.e2,
      PRINCIPLE.e3,
      PRINCIPLE.e4,
      PRINCIPLE.m,
    ]);
  });
});

describe('Trait fields', () => {
  it('answers the stored fields, its soul, mergedInto and citations (oldest citation first)', async () => {
    expect(
      await gql(`{ trait(id: "${trait.t1}") {
        id principle provenance generation status createdAt updatedAt
        soul { id name } mergedInto { id } citations { id content }
      } }`),
    ).toEqual({
      trait: {
        id: trait.t1,
        principle: PRINCIPLE.t1,
        provenance: 'Shards A and B',
        generation: 0,
        status: 'ACTIVE',
        createdAt: iso(at(6)),
        updatedAt: iso(at(6)),
        soul: { id: soul.Mira, name: 'Mira' },
        mergedInto: null,
        citations: [
          { id: shard.A, content: SHARDS.A.content },
          { id: shard.B, content: SHARDS.B.content },
        ],
      },
    });
    expect(await gql(`{ trait(id: "${trait.t3}") { status updatedAt } e1: trait(id: "${trait.e1}") { mergedInto { id status } } }`)).toEqual({
      trait: { status: 'REVERTED', updatedAt: iso(at(9)) },
      e1: { mergedInto: { id: trait.m, status: 'ACTIVE' } },
    });
    expect(await gql('{ a: trait(id: "999") { id } b: trait(id: "abc") { id } }')).toEqual({ a: null, b: null });
  });

  it('answers signals computed at now', async () => {
    const miraCreated = at(3);
    const signalsOf = (createdAt: number, citations: number, principle: string, essence: string, soulCreated: number, survival: number, stale: boolean) => {
      const age = Q - createdAt;
      return {
        tenure: Math.min(1, age / Math.max(DAY_MS, Q - soulCreated)),
        stale,
        citationCount: citations,
        citationDensity: citations / Math.max(1, age / DAY_MS),
        essenceRedundancy: similarity(principle, essence),
        survivalCount: survival,
      };
    };
    const data = await gql(`{
      t1: trait(id: "${trait.t1}") { signals { tenure stale citationCount citationDensity essenceRedundancy survivalCount } }
      t2: trait(id: "${trait.t2}") { signals { tenure stale citationCount citationDensity essenceRedundancy survivalCount } }
      a1: trait(id: "${trait.a1}") { signals { tenure stale citationCount citationDensity essenceRedundancy survivalCount } }
    }`);
    // t1 was cited a day ago: not stale. t2 is older than staleDays (5) and never cited.
    expect(data.t1.signals).toEqual(signalsOf(at(6), 2, PRINCIPLE.t1, ESSENCE.Mira, miraCreated, 0, false));
    expect(data.t2.signals).toEqual(signalsOf(at(7), 0, PRINCIPLE.t2, ESSENCE.Mira, miraCreated, 0, true));
    // Ada was attuned after a1 was added: it survived one refinement cycle.
    expect(data.a1.signals).toEqual(signalsOf(at(15), 0, PRINCIPLE.a1, ESSENCE.Ada, T0, 1, true));
  });
});

describe('shard, shards, Shard fields', () => {
  const ids = (c: any) => c.edges.map((e: any) => e.node.id);

  it('answers a shard with its souls and citing traits; unknown ids find nothing', async () => {
    expect(
      await gql(`{ shard(id: "${shard.B}") { id content source status sealed tags createdAt updatedAt souls { id name } citedBy { id principle } } }`),
    ).toEqual({
      shard: {
        id: shard.B,
        content: SHARDS.B.content,
        source: 'email',
        status: 'PENDING',
        sealed: false,
        tags: ['habits', 'testing'],
        createdAt: iso(T0 - 2 * DAY_MS),
        updatedAt: iso(at(5)),
        souls: [
          { id: soul.Bram, name: 'Bram' },
          { id: soul.Mira, name: 'Mira' },
        ],
        citedBy: [{ id: trait.t1, principle: PRINCIPLE.t1 }],
      },
    });
    expect(await gql(`{ shard(id: "${shard.D}") { status updatedAt citedBy { id } } }`)).toEqual({
      shard: { status: 'FADED', updatedAt: iso(at(14)), citedBy: [{ id: trait.b1 }, { id: trait.b2 }] },
    });
    expect(await gql('{ a: shard(id: "999") { id } b: shard(id: "x") { id } }')).toEqual({ a: null, b: null });
  });

  it('filters by soul, source, tags (any of, case-insensitive), status, sealed and expiry; newest first', async () => {
    const data = await gql(`{
      pending: shards { totalCount edges { node { id } } }
      sealed: shards(sealed: true) { totalCount edges { node { id } } }
      unsealed: shards(sealed: false) { totalCount edges { node { id } } }
      mira: shards(soulId: "${soul.Mira}") { edges { node { id } } }
      bram: shards(soulId: "${soul.Bram}") { edges { node { id } } }
      email: shards(source: " email ") { edges { node { id } } }
      testing: shards(tags: ["TESTING"]) { edges { node { id } } }
      foodOrHabits: shards(tags: ["food", "habits"]) { edges { node { id } } }
      faded: shards(status: FADED) { totalCount edges { node { id } } }
      withExpired: shards(includeExpired: true) { totalCount edges { node { id } } }
      nothing: shards(source: "nowhere") { totalCount edges { node { id } } pageInfo { hasNextPage endCursor } }
    }`);
    expect(ids(data.pending)).toEqual([shard.S, shard.C, shard.B, shard.A, shard.E]);
    expect(data.pending.totalCount).toBe(5);
    expect(ids(data.sealed)).toEqual([shard.S]);
    expect(ids(data.unsealed)).toEqual([shard.C, shard.B, shard.A, shard.E]);
    expect(ids(data.mira)).toEqual([shard.S, shard.C, shard.B, shard.A]);
    expect(ids(data.bram)).toEqual([shard.B, shard.E]);
    expect(ids(data.email)).toEqual([shard.B, shard.E]);
    expect(ids(data.testing)).toEqual([shard.B, shard.A]);
    expect(ids(data.foodOrHabits)).toEqual([shard.C, shard.B]);
    expect(data.faded).toEqual({ totalCount: 1, edges: [{ node: { id: shard.D } }] });
    expect(ids(data.withExpired)).toEqual([shard.S, shard.C, shard.B, shard.A, shard.E, shard.O]);
    expect(data.withExpired.totalCount).toBe(6);
    expect(data.nothing).toEqual({ totalCount: 0, edges: [], pageInfo: { hasNextPage: false, endCursor: null } });
  });

  it('pages with pageInfo.endCursor as after; totalCount counts the whole filter', async () => {
    const query = `query Page($after: String) { shards(first: 2, after: $after) { totalCount edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }`;
    const pages = [];
    let after: string | null = null;
    do {
      const { shards } = await gql(query, { after });
      pages.push(shards);
      expect(shards.totalCount).toBe(5);
      expect(shards.pageInfo.endCursor).toBe(shards.edges.at(-1).cursor);
      after = shards.pageInfo.hasNextPage ? shards.pageInfo.endCursor : null;
    } while (after !== null && pages.length < 10);
    expect(pages.map(ids)).toEqual([[shard.S, shard.C], [shard.B, shard.A], [shard.E]]);
    expect(pages.map((p) => p.pageInfo.hasNextPage)).toEqual([true, true, false]);

    expect((await gql('{ shards(first: 0) { totalCount edges { cursor } pageInfo { hasNextPage endCursor } } }')).shards).toEqual({
      totalCount: 5,
      edges: [],
      pageInfo: { hasNextPage: true, endCursor: null },
    });
  });

  it('answers a bad cursor or page size as a BAD_USER_INPUT error naming the argument', async () => {
    const [cursor] = await gqlErrors('{ shards(after: "not-a-cursor") { totalCount } }');
    expect(cursor).toMatchObject({ message: 'is not a cursor returned by this API', path: ['shards'], extensions: { code: 'BAD_USER_INPUT', field: 'after' } });
    const [size] = await gqlErrors('{ shards(first: 501) { totalCount } }');
    expect(size.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'first' });
    const [soulId] = await gqlErrors('{ shards(soulId: "abc") { totalCount } }');
    expect(soulId.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'soulId' });
  });
});

describe('searchShards', () => {
  it('finds pending, unsealed, unexpired shards by full text, best first, optionally for one soul', async () => {
    const { hits } = await gql('{ hits: searchShards(query: "test suite") { score shard { id } } }');
    expect(hits.map((h: any) => h.shard.id).sort()).toEqual([shard.A, shard.B].sort());
    for (const hit of hits) expect(hit.score).toBeGreaterThan(0);
    expect(hits[0].score).toBeGreaterThanOrEqual(hits[1].score);

    const scoped = await gql(`{ bram: searchShards(query: "test suite", soulId: "${soul.Bram}") { shard { id } } one: searchShards(query: "test suite", first: 1) { shard { id } } }`);
    expect(scoped.bram).toEqual([{ shard: { id: shard.B } }]);
    expect(scoped.one).toEqual([{ shard: { id: hits[0].shard.id } }]);

    expect(await gql('{ sealed: searchShards(query: "deployment") { score } expired: searchShards(query: "punch cards") { score } faded: searchShards(query: "whiteboard") { score } }')).toEqual({
      sealed: [],
      expired: [],
      faded: [],
    });
  });

  it('treats any string as plain words: FTS syntax, quotes and SQL are safe', async () => {
    const hostile = ['"', '"unbalanced', 'AND OR NOT', '*', 'tea*', 'content:tea', 'NEAR(tea coffee)', "'; DROP TABLE soul_shards; --", '(((', '^green', '\u0000tea', '', '   '];
    for (const query of hostile) {
      const { status, body } = await server.request('query Search($q: String!) { searchShards(query: $q) { shard { id } } }', { q: query });
      expect(status, query).toBe(200);
      expect(body.errors, query).toBeUndefined();
      expect(Array.isArray(body.data.searchShards), query).toBe(true);
    }
    const { searchShards } = await gql('query Search($q: String!) { searchShards(query: $q) { shard { id } } }', { q: '"green" (tea)' });
    expect(searchShards).toEqual([{ shard: { id: shard.C } }]);
    expect((await gql('{ shards(includeExpired: true) { totalCount } }')).shards.totalCount).toBe(6);
  });
});

describe('crystallizationReadiness, shardCountsPerSoul, shardCountsByTag, settings', () => {
  it('lists the ready souls with their priority', async () => {
    expect(await gql('{ crystallizationReadiness { soul { name } priority } }')).toEqual({ crystallizationReadiness: [{ soul: { name: 'Mira' }, priority: 12 }] });
  });

  it('counts pending shards per awake soul, most first', async () => {
    expect(await gql('{ shardCountsPerSoul { soul { name } pending } }')).toEqual({
      shardCountsPerSoul: [
        { soul: { name: 'Mira' }, pending: 3 },
        { soul: { name: 'Bram' }, pending: 2 },
        { soul: { name: 'Ada' }, pending: 0 },
        { soul: { name: 'Eve' }, pending: 0 },
      ],
    });
  });

  it('counts tags of considered shards, overall or for one soul', async () => {
    expect(await gql(`{ all: shardCountsByTag { tag count } bram: shardCountsByTag(soulId: "${soul.Bram}") { tag count } ada: shardCountsByTag(soulId: "${soul.Ada}") { tag } }`)).toEqual({
      all: [
        { tag: 'testing', count: 2 },
        { tag: 'food', count: 1 },
        { tag: 'habits', count: 1 },
      ],
      bram: [
        { tag: 'habits', count: 1 },
        { tag: 'testing', count: 1 },
      ],
      ada: [],
    });
  });

  it('answers the knobs the server was started with', async () => {
    expect(
      await gql('{ settings { traitLimit crystallizationThreshold shardExpiryDays shardFadeCitations shardRelevanceHalfLife clusteringThreshold staleDays redundancyThreshold consolidationThreshold } }'),
    ).toEqual({
      settings: {
        traitLimit: 4,
        crystallizationThreshold: 3,
        shardExpiryDays: 120,
        shardFadeCitations: 2,
        shardRelevanceHalfLife: 60,
        clusteringThreshold: 0.4,
        staleDays: 5,
        redundancyThreshold: 0.3,
        consolidationThreshold: 0.3,
      },
    });
  });
});

describe('evidence', () => {
  it('clusters the considered shards, aligns them with traits and names the souls that share them', async () => {
    const { soul: mira } = await gql(`{ soul(id: "${soul.Mira}") { evidence {
      soul { name } generatedAt shardCount ${CRYSTALLIZATION}
      clusters {
        representative { id } members { id } memberCount sources sourceDiversity ageSpanDays freshness weight
        alignment { kind trait { id } similarity }
        sharedWith { soul { name } sharedCount fraction }
      }
      traits { id }
      consolidationCandidates { a { id } b { id } similarity }
      tensions { a { id } }
      promotionCandidates { trait { id } score }
      trend { recentCount previousCount velocity newSources sources { source recent previous } }
      suggestedActions { kind message count traits { id } }
      markdown
    } } }`);
    const { evidence } = mira;
    // A and B are 9 and 8 days old, C 7: freshness = exp(−age / 60).
    const pairFreshness = (Math.exp(-9 / 60) + Math.exp(-8 / 60)) / 2;
    const loneFreshness = Math.exp(-7 / 60);
    const t1Signals = (await gql(`{ trait(id: "${trait.t1}") { signals { tenure citationDensity essenceRedundancy } } }`)).trait.signals;

    expect(evidence).toEqual({
      soul: { name: 'Mira' },
      generatedAt: iso(Q),
      shardCount: 3,
      crystallization: readyMira,
      clusters: [
        {
          representative: { id: shard.A },
          members: [{ id: shard.A }, { id: shard.B }],
          memberCount: 2,
          sources: ['chat', 'email'],
          sourceDiversity: 1,
          ageSpanDays: 1,
          freshness: pairFreshness,
          weight: 2 * 1 * pairFreshness,
          // A is cited by t1: the cluster reinforces it.
          alignment: { kind: 'REINFORCING', trait: { id: trait.t1 }, similarity: similarity(SHARDS.A.content, PRINCIPLE.t1) },
          sharedWith: [{ soul: { name: 'Bram' }, sharedCount: 1, fraction: 0.5 }],
        },
        {
          representative: { id: shard.C },
          members: [{ id: shard.C }],
          memberCount: 1,
          sources: ['chat'],
          sourceDiversity: 1,
          ageSpanDays: 0,
          freshness: loneFreshness,
          weight: loneFreshness,
          alignment: { kind: 'NOVEL', trait: null, similarity: Math.max(similarity(SHARDS.C.content, PRINCIPLE.t1), similarity(SHARDS.C.content, PRINCIPLE.t2)) },
          sharedWith: [],
        },
      ],
      traits: [{ id: trait.t1 }, { id: trait.t2 }],
      consolidationCandidates: [],
      tensions: [],
      // t1 scores (tenure × density × essence redundancy > 0) but has survived no attunement and is younger than promotionTenureDays.
      promotionCandidates: [],
      trend: {
        recentCount: 3,
        previousCount: 0,
        velocity: 3,
        newSources: ['chat', 'email'],
        sources: [
          { source: 'chat', recent: 2, previous: 0 },
          { source: 'email', recent: 1, previous: 0 },
        ],
      },
      suggestedActions: [
        { kind: 'READY_FOR_REFINEMENT', message: 'ready for refinement: 3 shards from 2 sources', count: 3, traits: [] },
        { kind: 'STALE_TRAITS', message: '1 trait flagged stale', count: 1, traits: [{ id: trait.t2 }] },
      ],
      markdown: evidence.markdown,
    });
    expect(evidence.markdown.startsWith(
      `# Evidence: Mira (soul #${soul.Mira}, level 0)\n` +
        'Next: judge the unjudged shards below into themes (assign, new theme, oppose), then add or cite traits from the themes — ready, 3 unjudged.\n' +
        `Shards: 3, clusters: 2, active traits: 2\nReadiness: ready (priority 12.00)\n\n## Suggested actions\n` +
        `- READY_FOR_REFINEMENT: ready for refinement: 3 shards from 2 sources\n- STALE_TRAITS: 1 trait flagged stale (#${trait.t2})\n\n`,
    )).toBe(true);
    expect(t1Signals.tenure * t1Signals.citationDensity * t1Signals.essenceRedundancy).toBeGreaterThan(0);
    // The same layout as everywhere: what to act on, then clusters with their shard ids, singletons on one line of ids.
    expect(evidence.markdown.indexOf('## Traits')).toBeLessThan(evidence.markdown.indexOf('## Clusters'));
    expect(evidence.markdown).toContain(
      `1. [weight ${(2 * pairFreshness).toFixed(2)}; size 2; sources chat, email; reinforces trait #${trait.t1}; shared with Bram (1/2)] #${shard.A} "${SHARDS.A.content}" +1 similar: #${shard.B}\n`,
    );
    expect(evidence.markdown).toContain(`\n1 shard resembles nothing else (highest weight first): id #${shard.C}\n`);
    expect(evidence.markdown).not.toContain(SHARDS.S.content);
  });

  it('scopes the report to tags or a full-text query, any string being safe', async () => {
    const { soul: mira } = await gql(`{ soul(id: "${soul.Mira}") {
      food: evidence(tags: ["Food"]) { shardCount clusters { members { id } } markdown }
      tea: evidence(query: "green tea") { shardCount clusters { members { id } } }
      odd: evidence(query: "\\"unbalanced (") { shardCount clusters { memberCount } }
      both: evidence(tags: ["testing"], query: "whole") { shardCount clusters { members { id } } crystallization { ready } }
    } }`);
    expect(mira.food.shardCount).toBe(1);
    expect(mira.food.clusters).toEqual([{ members: [{ id: shard.C }] }]);
    expect(mira.food.markdown).toContain('Scope: tags food');
    expect(mira.tea).toEqual({ shardCount: 1, clusters: [{ members: [{ id: shard.C }] }] });
    expect(mira.odd).toEqual({ shardCount: 0, clusters: [] });
    // The verdict always covers every considered shard, whatever the scope.
    expect(mira.both).toEqual({ shardCount: 1, clusters: [{ members: [{ id: shard.B }] }], crystallization: { ready: true } });
  });
});

describe('previewTraitChanges', () => {
  const PREVIEW = `query Preview($soulId: ID!, $add: [AddTraitInput!], $revise: [TraitRevisionInput!], $revert: [ID!], $full: Boolean) {
    previewTraitChanges(soulId: $soulId, add: $add, revise: $revise, revert: $revert, includeProvenance: $full) { before after }
  }`;

  it('answers the block before and after adding, revising and reverting, and writes nothing', async () => {
    const before = await miraState();
    const changes = {
      soulId: soul.Mira,
      add: [{ principle: 'Pairs with juniors on hard bugs', provenance: 'Seen in pairing' }],
      revise: [{ traitId: trait.t2, principle: 'Keeps a calm, kind tone in code review' }],
      revert: [trait.t1],
    };
    expect(await gql(PREVIEW, changes)).toEqual({
      previewTraitChanges: {
        before: miraLean,
        after: `# Mira\n\n*Careful engineer*\n\n${ESSENCE.Mira}\n\n## Traits\n- Keeps a calm, kind tone in code review\n- Pairs with juniors on hard bugs\n`,
      },
    });
    expect((await gql(PREVIEW, { ...changes, full: true })).previewTraitChanges).toEqual({
      before: miraFull,
      after: `# Mira\n\n*Careful engineer*\n\n${ESSENCE.Mira}\n\n## Traits\n- **Keeps a calm, kind tone in code review** — Seen in retros\n- **Pairs with juniors on hard bugs** — Seen in pairing\n`,
    });
    expect((await gql(PREVIEW, { soulId: soul.Mira })).previewTraitChanges).toEqual({ before: miraLean, after: miraLean });
    expect(await miraState()).toEqual(before);
  });

  it('answers invalid changes as coded GraphQL errors naming the argument path', async () => {
    const before = await miraState();
    const error = async (variables: Record<string, unknown>) => {
      const [first, ...rest] = await gqlErrors(PREVIEW, variables);
      expect(rest).toEqual([]);
      expect(first.path).toEqual(['previewTraitChanges']);
      return { message: first.message, extensions: first.extensions };
    };
    expect(await error({ soulId: '999' })).toEqual({ message: 'Soul 999 not found', extensions: { code: 'NOT_FOUND' } });
    expect(await error({ soulId: soul.Mira, add: [{ principle: 'x', provenance: '  ' }] })).toEqual({
      message: 'must not be empty',
      extensions: { code: 'BAD_USER_INPUT', field: 'add[0].provenance' },
    });
    expect(await error({ soulId: soul.Mira, add: ['one', 'two', 'three'].map((p) => ({ principle: p, provenance: 'seen' })) })).toEqual({
      message: 'soul already has 2 active traits (limit 4): revert or level up first',
      extensions: { code: 'CAPACITY' },
    });
    expect(await error({ soulId: soul.Mira, revert: [trait.t3] })).toEqual({
      message: `trait ${trait.t3} is not an active trait of this soul`,
      extensions: { code: 'BAD_USER_INPUT', field: 'revert[0]' },
    });
    expect(await error({ soulId: soul.Mira, revise: [{ traitId: '999', principle: 'x' }] })).toEqual({ message: 'Trait 999 not found', extensions: { code: 'NOT_FOUND' } });
    expect(await error({ soulId: soul.Mira, add: [{ principle: 'x', provenance: 'y', citeShardIds: ['999'] }] })).toEqual({
      message: 'Shard 999 not found',
      extensions: { code: 'NOT_FOUND' },
    });
    expect(await error({ soulId: soul.Dov })).toEqual({ message: `soul ${soul.Dov} is dormant: awaken it first`, extensions: { code: 'INVALID_STATE' } });
    expect(await miraState()).toEqual(before);
  });
});

describe('previewLevelUp', () => {
  const PREVIEW = `query Preview($soulId: ID!, $plan: LevelUpPlanInput!) {
    previewLevelUp(soulId: $soulId, plan: $plan) {
      valid before after
      warnings { kind message traitIds }
      error { message missing duplicated notActive problems { field message } }
    }
  }`;

  it('answers a valid plan with warnings and the block after, writing nothing', async () => {
    const before = await miraState();
    const newEssence = 'Mira writes the release notes every Friday.';
    const { previewLevelUp } = await gql(PREVIEW, { soulId: soul.Mira, plan: { newEssence, consolidations: [], promotedTraitIds: [trait.t1], carriedTraitIds: [trait.t2] } });
    const redundancy = similarity(PRINCIPLE.t1, newEssence);
    expect(previewLevelUp).toEqual({
      valid: true,
      before: miraLean,
      after: `# Mira\n\n*Careful engineer*\n\n${newEssence}\n\n## Traits\n- ${PRINCIPLE.t2}\n`,
      warnings: [
        {
          kind: 'PREMATURE_PROMOTION',
          message: `trait ${trait.t1} is promoted but the new essence barely echoes it (similarity ${redundancy.toFixed(2)}, below 0.3)`,
          traitIds: [trait.t1],
        },
      ],
      error: null,
    });
    expect(await miraState()).toEqual(before);
  });

  it('answers an invalid plan with the structured diff and no after', async () => {
    const before = await miraState();
    const diff = await gql(PREVIEW, { soulId: soul.Mira, plan: { newEssence: 'New', consolidations: [], promotedTraitIds: [], carriedTraitIds: [trait.t1, trait.t1, trait.t3] } });
    expect(diff.previewLevelUp).toEqual({
      valid: false,
      before: miraLean,
      after: null,
      warnings: [],
      error: {
        message: `invalid level-up plan: missing ${trait.t2}; duplicated ${trait.t1}; not active ${trait.t3}`,
        missing: [trait.t2],
        duplicated: [trait.t1],
        notActive: [trait.t3],
        problems: [],
      },
    });
    const notAnId = await gql(PREVIEW, { soulId: soul.Mira, plan: { newEssence: ' ', consolidations: [], promotedTraitIds: ['abc'], carriedTraitIds: [trait.t1, trait.t2] } });
    expect(notAnId.previewLevelUp.error.problems).toEqual([{ field: 'plan.promotedTraitIds[0]', message: '"abc" is not a trait id' }]);
    expect(notAnId.previewLevelUp.valid).toBe(false);
    const emptyEssence = await gql(PREVIEW, { soulId: soul.Mira, plan: { newEssence: ' ', consolidations: [], promotedTraitIds: [], carriedTraitIds: [trait.t1, trait.t2] } });
    expect(emptyEssence.previewLevelUp.error).toEqual({
      message: 'invalid level-up plan: plan.newEssence: must not be empty',
      missing: [],
      duplicated: [],
      notActive: [],
      problems: [{ field: 'plan.newEssence', message: 'must not be empty' }],
    });
    expect(await miraState()).toEqual(before);
  });

  it('answers an unknown or dormant soul as a coded GraphQL error', async () => {
    const plan = { newEssence: 'New', consolidations: [], promotedTraitIds: [], carriedTraitIds: [] };
    const [missing] = await gqlErrors(PREVIEW, { soulId: '999', plan });
    expect(missing).toMatchObject({ message: 'Soul 999 not found', path: ['previewLevelUp'], extensions: { code: 'NOT_FOUND' } });
    const [dormant] = await gqlErrors(PREVIEW, { soulId: soul.Dov, plan });
    expect(dormant).toMatchObject({ path: ['previewLevelUp'], extensions: { code: 'INVALID_STATE' } });
  });
});
