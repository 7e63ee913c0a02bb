import { getNamedType, isInputObjectType, isListType, getNullableType, type GraphQLInputType } from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../schema/index.ts';
import { loadConfig } from '../src/server/config.ts';
import { addTrait, createSoul, dropShard } from '../src/engine/index.ts';
import { defaultLimits } from '../src/server/limits.ts';
import { serverPerTest, startServer, type LiveServer } from './support/server.ts';

type Answer = { status: number; text: string; body: any };

/** POSTs as a plain application/json client: request errors come back with HTTP 200. */
async function ask(server: LiveServer, query: string, variables?: Record<string, unknown>): Promise<Answer> {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const text = await response.text();
  return { status: response.status, text, body: JSON.parse(text) };
}

/** Refused before execution: no data, one LIST_TOO_LONG error naming the list. */
function expectListRefused(answer: Answer, argument: string, setting: string, limit: number): void {
  expect(answer.status, answer.text).toBe(200);
  expect(answer.body, answer.text).not.toHaveProperty('data');
  expect(answer.body.errors, answer.text).toHaveLength(1);
  expect(answer.body.errors[0]).toMatchObject({ extensions: { code: 'LIST_TOO_LONG', argument, setting, limit } });
  expect(answer.body.errors[0].message).toContain(argument);
}

const tags = (n: number) => Array.from({ length: n }, (_, i) => `tag-${i}`);
const ids = (n: number) => Array.from({ length: n }, (_, i) => String(i + 1));

const dedicated = serverPerTest(afterEach);

describe('list arguments from outside, at the default bounds', () => {
  let server: LiveServer;
  beforeAll(async () => {
    server = await startServer();
    const soul = await createSoul(server.app.db, { name: 'Ada', essence: 'Calm, curious and careful.' });
    await dropShard(server.app.db, 'Rewrote the parser over the weekend', 'chat', [soul.id], { tags: ['parser'] });
  });
  afterAll(() => server.stop());

  it('refuses shards(tags: $t) with 1,000,000 tags before running it, and keeps serving', async () => {
    const refused = await ask(server, 'query($t: [String!]) { shards(tags: $t) { totalCount } }', { t: tags(1_000_000) });
    expectListRefused(refused, 'Query.shards(tags:)', 'maxFilterTags', 32);
    expect(refused.body.errors[0].message).toMatch(/1000000 items; at most 32/);
    const probe = await ask(server, '{ shards(tags: ["parser"]) { totalCount } }');
    expect(probe.body).toEqual({ data: { shards: { totalCount: 1 } } });
  });

  it('refuses ten aliases × 100,000 tags in one body', async () => {
    const query = `query($t: [String!]) { ${Array.from({ length: 10 }, (_, i) => `a${i}: shards(tags: $t) { totalCount }`).join(' ')} }`;
    expectListRefused(await ask(server, query, { t: tags(100_000) }), 'Query.shards(tags:)', 'maxFilterTags', 32);
  });

  it(`serves ${defaultLimits.maxFilterTags} tags in a filter and refuses one more, as variables or inline, in fragments too`, async () => {
    const atBound = await ask(server, 'query($t: [String!]) { shards(tags: $t) { totalCount } }', { t: [...tags(31), 'parser'] });
    expect(atBound.body).toEqual({ data: { shards: { totalCount: 1 } } });
    const inline = `{ souls { ...S } } fragment S on Soul { evidence(tags: [${tags(33).map((t) => JSON.stringify(t)).join(' ')}]) { shardCount } }`;
    expectListRefused(await ask(server, inline), 'Soul.evidence(tags:)', 'maxFilterTags', 32);
    const nested = await ask(server, 'query($t: [String!]) { souls { shards(tags: $t) { totalCount } } }', { t: tags(33) });
    expectListRefused(nested, 'Soul.shards(tags:)', 'maxFilterTags', 32);
  });

  it('refuses the attack over graphql-ws too, and the socket keeps serving', async () => {
    const client = createClient({ url: server.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, lazy: false });
    try {
      const refused = await client.iterate({ query: 'query($t: [String!]) { shards(tags: $t) { totalCount } }', variables: { t: tags(100_000) } }).next();
      expect(refused.value).toMatchObject({ errors: [{ extensions: { code: 'LIST_TOO_LONG', argument: 'Query.shards(tags:)' } }] });
      expect((refused.value as any).data).toBeUndefined();
      const subscription = await client.iterate({ query: 'subscription($ids: [ID!]) { crystallizationReady(soulIds: $ids) { priority } }', variables: { ids: ids(1001) } }).next();
      expect(subscription.value).toMatchObject({ errors: [{ extensions: { code: 'LIST_TOO_LONG', argument: 'Subscription.crystallizationReady(soulIds:)', limit: 1000 } }] });
      const served = await client.iterate({ query: '{ shards(tags: ["parser"]) { totalCount } }' }).next();
      expect(served.value).toEqual({ data: { shards: { totalCount: 1 } } });
    } finally {
      await client.dispose();
    }
  });
});

/** Every list argument and list input field of the schema, by coordinate. */
function listPositions(): string[] {
  const found = new Set<string>();
  const inputLists = (type: GraphQLInputType, seen: Set<string>) => {
    const named = getNamedType(type);
    if (!isInputObjectType(named) || seen.has(named.name)) return;
    seen.add(named.name);
    for (const field of Object.values(named.getFields())) {
      if (isListType(getNullableType(field.type))) found.add(`${named.name}.${field.name}`);
      inputLists(field.type, seen);
    }
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || !('getFields' in type) || isInputObjectType(type)) continue;
    for (const field of Object.values(type.getFields())) {
      for (const arg of 'args' in field ? field.args : []) {
        if (isListType(getNullableType(arg.type))) found.add(`${type.name}.${field.name}(${arg.name}:)`);
        inputLists(arg.type, new Set());
      }
    }
  }
  return [...found].sort();
}

describe('every list has a bound, a setting each', () => {
  const limits = { maxFilterTags: 3, maxListItems: 4 };
  const settings = { maxTagsPerShard: 2, maxBatchSize: 5, maxEmbeddingDimension: 3 };
  let server: LiveServer;
  let soulId: string;
  beforeAll(async () => {
    server = await startServer({ settings, app: { limits } });
    soulId = String((await createSoul(server.app.db, { name: 'Ada', essence: 'Calm.' })).id);
    await addTrait(server.app.db, Number(soulId), { principle: 'Reviews changes', provenance: 'Reviews.' });
  });
  afterAll(() => server.stop());

  const plan = (over: Record<string, unknown>) => ({ newEssence: 'Calm.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [], ...over });
  const shardInput = (over: Record<string, unknown> = {}) => ({ content: 'Fixed the build', source: 'ci', soulIds: ['1'], ...over });
  type Case = { coordinate: string; argument: string; setting: string; limit: number; query: string; variables: (n: number) => Record<string, unknown> };
  const cases: Case[] = [
    ...['Query', 'Soul'].map((type): Case => ({
      coordinate: `${type}.shards(tags:)`,
      argument: `${type}.shards(tags:)`,
      setting: 'maxFilterTags',
      limit: 3,
      query: type === 'Query' ? 'query($v: [String!]) { shards(tags: $v) { totalCount } }' : 'query($v: [String!]) { souls { shards(tags: $v) { totalCount } } }',
      variables: (n) => ({ v: tags(n) }),
    })),
    { coordinate: 'Soul.evidence(tags:)', argument: 'Soul.evidence(tags:)', setting: 'maxFilterTags', limit: 3, query: 'query($v: [String!]) { souls { evidence(tags: $v) { shardCount } } }', variables: (n) => ({ v: tags(n) }) },
    { coordinate: 'Soul.traits(status:)', argument: 'Soul.traits(status:)', setting: 'maxListItems', limit: 4, query: 'query($v: [TraitStatus!]) { souls { traits(status: $v) { id } } }', variables: (n) => ({ v: Array(n).fill('ACTIVE') }) },
    ...(['add', 'revise', 'revert'] as const).map((name): Case => ({
      coordinate: `Query.previewTraitChanges(${name}:)`,
      argument: `Query.previewTraitChanges(${name}:)`,
      setting: 'maxListItems',
      limit: 4,
      query: `query($s: ID!, $v: ${{ add: '[AddTraitInput!]', revise: '[TraitRevisionInput!]', revert: '[ID!]' }[name]}) { previewTraitChanges(soulId: $s, ${name}: $v) { before } }`,
      variables: (n) => ({
        s: soulId,
        v: Array.from({ length: n }, (_, i) => ({ add: { principle: `P${i}`, provenance: 'Q' }, revise: { traitId: '1', principle: `P${i}` }, revert: '1' })[name]),
      }),
    })),
    {
      coordinate: 'AddTraitInput.citeShardIds',
      argument: 'Mutation.addTrait(input:).citeShardIds',
      setting: 'maxListItems',
      limit: 4,
      query: 'mutation($s: ID!, $v: [ID!]) { addTrait(soulId: $s, input: { principle: "Writes tests", provenance: "Seen.", citeShardIds: $v }) { __typename } }',
      variables: (n) => ({ s: soulId, v: ids(n) }),
    },
    ...(['carriedTraitIds', 'promotedTraitIds', 'consolidations'] as const).map((name): Case => ({
      coordinate: `LevelUpPlanInput.${name}`,
      argument: `Query.previewLevelUp(plan:).${name}`,
      setting: 'maxListItems',
      limit: 4,
      query: 'query($s: ID!, $v: LevelUpPlanInput!) { previewLevelUp(soulId: $s, plan: $v) { valid } }',
      variables: (n) => ({
        s: soulId,
        v: plan({ [name]: name === 'consolidations' ? Array(n).fill({ sourceTraitIds: ['1'], mergedPrinciple: 'P', mergedProvenance: 'Q' }) : ids(n) }),
      }),
    })),
    {
      coordinate: 'ConsolidationInput.sourceTraitIds',
      argument: 'Mutation.levelUp(plan:).consolidations[0].sourceTraitIds',
      setting: 'maxListItems',
      limit: 4,
      query: 'mutation($s: ID!, $v: LevelUpPlanInput!) { levelUp(soulId: $s, plan: $v) { __typename } }',
      variables: (n) => ({ s: soulId, v: plan({ consolidations: [{ sourceTraitIds: ids(n), mergedPrinciple: 'P', mergedProvenance: 'Q' }] }) }),
    },
    {
      coordinate: 'DropShardInput.soulIds',
      argument: 'Mutation.dropShard(input:).soulIds',
      setting: 'maxListItems',
      limit: 4,
      query: 'mutation($v: DropShardInput!) { dropShard(input: $v) { __typename } }',
      variables: (n) => ({ v: shardInput({ soulIds: ids(n) }) }),
    },
    {
      coordinate: 'DropShardInput.tags',
      argument: 'Mutation.dropShards(inputs:)[1].tags',
      setting: 'maxTagsPerShard',
      limit: 2,
      query: 'mutation($v: [DropShardInput!]!) { dropShards(inputs: $v) { __typename } }',
      variables: (n) => ({ v: [shardInput(), shardInput({ tags: tags(n) })] }),
    },
    {
      coordinate: 'DropShardInput.embedding',
      argument: 'Mutation.dropShards(inputs:)[1].embedding',
      setting: 'maxEmbeddingDimension',
      limit: 3,
      query: 'mutation($v: [DropShardInput!]!) { dropShards(inputs: $v) { __typename } }',
      variables: (n) => ({ v: [shardInput(), shardInput({ embedding: Array(n).fill(0.5) })] }),
    },
    {
      coordinate: 'Mutation.dropShards(inputs:)',
      argument: 'Mutation.dropShards(inputs:)',
      setting: 'maxBatchSize',
      limit: 5,
      query: 'mutation($v: [DropShardInput!]!) { dropShards(inputs: $v) { __typename } }',
      variables: (n) => ({ v: Array(n).fill(shardInput()) }),
    },
    {
      coordinate: 'Mutation.revealShards(ids:)',
      argument: 'Mutation.revealShards(ids:)',
      setting: 'maxBatchSize',
      limit: 5,
      query: 'mutation($v: [ID!]!) { revealShards(ids: $v) { __typename } }',
      variables: (n) => ({ v: ids(n) }),
    },
    {
      coordinate: 'Mutation.assignThemes(assignments:)',
      argument: 'Mutation.assignThemes(assignments:)',
      setting: 'maxBatchSize',
      limit: 5,
      query: 'mutation($s: ID!, $v: [ThemeAssignmentInput!]!) { assignThemes(soulId: $s, assignments: $v) { __typename } }',
      variables: (n) => ({ s: soulId, v: Array.from({ length: n }, (_, i) => ({ shardIds: [String(i + 1)], newThemeName: `T${i}` })) }),
    },
    {
      coordinate: 'ThemeAssignmentInput.shardIds',
      argument: 'Mutation.assignThemes(assignments:)[1].shardIds',
      setting: 'maxBatchSize',
      limit: 5,
      query: 'mutation($s: ID!, $v: [ThemeAssignmentInput!]!) { assignThemes(soulId: $s, assignments: $v) { __typename } }',
      variables: (n) => ({ s: soulId, v: [{ shardIds: ['1'], newThemeName: 'A' }, { shardIds: ids(n), newThemeName: 'B' }] }),
    },
    {
      coordinate: 'Mutation.unassignShards(shardIds:)',
      argument: 'Mutation.unassignShards(shardIds:)',
      setting: 'maxBatchSize',
      limit: 5,
      query: 'mutation($s: ID!, $v: [ID!]!) { unassignShards(soulId: $s, shardIds: $v) { __typename } }',
      variables: (n) => ({ s: soulId, v: ids(n) }),
    },
  ];

  it('the table covers every list argument and list input field of the schema (crystallizationReady is tested over graphql-ws)', () => {
    const covered = [...cases.map((c) => c.coordinate), 'Subscription.crystallizationReady(soulIds:)'];
    expect(covered.sort()).toEqual(listPositions());
  });

  it.each(cases)('$coordinate: refused over its bound ($setting) before execution, not at it', async ({ argument, setting, limit, query, variables }) => {
    expectListRefused(await ask(server, query, variables(limit + 1)), argument, setting, limit);
    const atBound = await ask(server, query, variables(limit));
    expect(atBound.text).not.toContain('LIST_TOO_LONG');
    expect(atBound.text).not.toContain('INTERNAL_SERVER_ERROR');
  });
});

describe('the cost estimate counts the variables', () => {
  it('a `first` given as a variable multiplies the cost as a literal one does', async () => {
    const server = await dedicated({ app: { limits: { maxCost: 100 } } });
    const query = 'query($n: Int) { shards(first: $n) { edges { node { id } } } }';
    // The connection 2, and each edge 2, its node 2 and the id 1: 2 + 5 × n (no shard to count).
    expect((await ask(server, query, { n: 19 })).body).toEqual({ data: { shards: { edges: [] } } });
    const refused = await ask(server, query, { n: 20 });
    expect(refused.body).toEqual({ errors: [expect.objectContaining({ message: 'Query Cost limit of 100 exceeded, found 102.', extensions: expect.objectContaining({ code: 'COST_LIMIT' }) })] });
    const literal = await ask(server, '{ shards(first: 20) { edges { node { id } } } }');
    expect(literal.body.errors[0].message).toBe('Query Cost limit of 100 exceeded, found 102.');
  });

  it('each item of a list argument adds one, for every alias: ten aliases of 32 tags cost 350', async () => {
    const server = await dedicated({ app: { limits: { maxCost: 349 } } });
    const query = (n: number) => `query($t: [String!]) { ${Array.from({ length: n }, (_, i) => `a${i}: shards(tags: $t) { totalCount }`).join(' ')} }`;
    // Each alias: 2, 1 for totalCount, plus 32 tags (no shard to count).
    expect((await ask(server, query(9), { t: tags(32) })).body.data).toBeDefined();
    expect((await ask(server, query(10), { t: tags(32) })).body.errors[0].message).toBe('Query Cost limit of 349 exceeded, found 350.');
  });

  it('a full batch of dropShards fits the default maxCost; three in one request do not, and nothing is written', async () => {
    const server = await dedicated({});
    const soul = await createSoul(server.app.db, { name: 'Ada', essence: 'Calm.' });
    const batch = Array.from({ length: 10_000 }, (_, i) => ({ content: `Observation ${i}`, source: 'import', soulIds: [String(soul.id)], tags: ['a', 'b'] }));
    const three = await ask(server, 'mutation($a: [DropShardInput!]!) { x: dropShards(inputs: $a) { __typename } y: dropShards(inputs: $a) { __typename } z: dropShards(inputs: $a) { __typename } }', { a: batch });
    // A shard written is priced at 100 (src/server/price-list.ts): a full batch is two fifths of maxCost.
    expect(three.body.errors[0].message).toBe('Query Cost limit of 2500000 exceeded, found 3000009.');
    expect((await ask(server, '{ shards { totalCount } }')).body.data.shards.totalCount).toBe(0);
    const one = await ask(server, 'mutation($a: [DropShardInput!]!) { dropShards(inputs: $a) { __typename } }', { a: batch });
    expect(one.body).toEqual({ data: { dropShards: { __typename: 'DropShardsPayload' } } });
  });
});

describe('the bounds are settings', () => {
  it('takes maxFilterTags and maxListItems from flags and the environment, flags first, and refuses a bad one naming it', () => {
    expect(loadConfig([], {}).limits).toMatchObject({ maxFilterTags: 32, maxListItems: 1000 });
    const config = loadConfig(['--max-filter-tags', '8'], { SOULS_MAX_FILTER_TAGS: '4', SOULS_MAX_LIST_ITEMS: '50' });
    expect(config.limits).toMatchObject({ maxFilterTags: 8, maxListItems: 50 });
    expect(() => loadConfig([], { SOULS_MAX_LIST_ITEMS: '0' })).toThrow(expect.objectContaining({ field: 'SOULS_MAX_LIST_ITEMS' }));
  });
});
