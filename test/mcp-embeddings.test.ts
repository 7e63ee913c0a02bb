// Vectors through MCP: shard_observe takes each shard's embedding, bounded and refused as GraphQL's dropShards
// does, and a report built from vectors given over MCP is the one built from the same vectors given over GraphQL.
import { afterEach, describe, expect, it } from 'vitest';
import { closeSoulsDb, createSoul, DAY_MS, formatEvidence, getEmbeddingDimension, getShardEmbeddings, listShards, type SoulsDb } from '../src/engine/index.ts';
import { freshDb } from './support/engine.ts';
import { call, connect, type Connected } from './support/mcp.ts';
import { serverPerTest, type LiveServer } from './support/server.ts';

const T0 = Date.UTC(2026, 3, 1);

/** A unit vector in the plane of the first two axes, at `degrees`, padded to `dimension`. */
function at(degrees: number, dimension = 8): number[] {
  const v = new Array(dimension).fill(0);
  v[0] = Math.cos((degrees * Math.PI) / 180);
  v[1] = Math.sin((degrees * Math.PI) / 180);
  return v;
}

/** Two pairs of paraphrases sharing no words (only their vectors are close) and one shard apart from both. */
const OBSERVATIONS = [
  { content: 'Greets every villager by name at the market.', source: 'review', degrees: 0 },
  { content: 'Knows what each townsperson is called and says hello.', source: 'chat', degrees: 10 },
  { content: 'Hums while sorting the ledgers at night.', source: 'chat', degrees: 90 },
  { content: 'Refuses bribes from the harbour master.', source: 'review', degrees: 180 },
  { content: 'Turned down coins offered for looking away.', source: 'chat', degrees: 172 },
];

function batch(soulId: number | string, withVectors: boolean) {
  return OBSERVATIONS.map((o, i) => ({
    content: o.content,
    source: o.source,
    soulIds: [soulId],
    createdAt: new Date(T0 - (OBSERVATIONS.length - i) * 3_600_000).toISOString(),
    ...(withVectors ? { embedding: at(o.degrees) } : {}),
  }));
}

const server = serverPerTest(afterEach);
const opened: Array<{ db: SoulsDb; mcp: Connected }> = [];
afterEach(async () => {
  for (const { db, mcp } of opened.splice(0)) {
    await mcp.close();
    closeSoulsDb(db);
  }
});

async function overMcp(settings: Record<string, unknown>) {
  const { db, clock } = freshDb(T0, settings);
  const mcp = await connect(db);
  opened.push({ db, mcp });
  const soulId = (await createSoul(db, { name: 'Sable', essence: 'A ferryman.' })).id;
  return { db, clock, soulId, observe: (shards: unknown[]) => call(mcp.client, 'shard_observe', { shards }) };
}

async function overGraphql(settings: Record<string, unknown>) {
  const live = await server({ settings, start: T0 });
  const created = await live.request('mutation { createSoul(input: { name: "Sable", essence: "A ferryman." }) { ... on SoulPayload { soul { id } } } }');
  const soulId: string = created.body.data.createSoul.soul.id;
  const drop = async (inputs: unknown[]) => {
    const { body } = await live.request(
      'mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on ValidationError { field message } } }',
      { inputs },
    );
    expect(body.errors).toBeUndefined();
    return body.data.dropShards;
  };
  return { live, db: live.app.db, soulId, drop };
}

const report = async (db: SoulsDb, soulId: number) => JSON.stringify(await formatEvidence(db, soulId));

describe('shard_observe embedding', () => {
  it('in provided mode clusters by the vectors given over MCP exactly as by the same vectors given over GraphQL', async () => {
    const graphql = await overGraphql({ similarity: 'provided' });
    expect((await graphql.drop(batch(graphql.soulId, true))).__typename).toBe('DropShardsPayload');
    const mcp = await overMcp({ similarity: 'provided' });
    const written = await mcp.observe(batch(mcp.soulId, true));
    expect(written.isError, written.text).toBe(false);
    const bare = await overMcp({ similarity: 'provided' });
    expect((await bare.observe(batch(bare.soulId, false))).isError).toBe(false);
    graphql.live.clock.advance(DAY_MS);
    mcp.clock.advance(DAY_MS);
    bare.clock.advance(DAY_MS);

    expect(await getEmbeddingDimension(mcp.db)).toBe(8);
    const viaMcp = await report(mcp.db, mcp.soulId);
    expect(viaMcp).toBe(await report(graphql.db, Number(graphql.soulId)));
    // The vectors, not the words, make the paraphrases one cluster: without them the report differs.
    const ids = written.data.shardIds as number[];
    const clusters = (await formatEvidence(mcp.db, mcp.soulId)).clusters.map((c) => [...c.memberIds].sort((a, b) => a - b));
    expect(clusters.sort()).toEqual([[ids[0], ids[1]], [ids[2]], [ids[3], ids[4]]].sort());
    expect((await formatEvidence(bare.db, bare.soulId)).clusters.map((c) => c.memberIds)).not.toContainEqual(expect.arrayContaining([ids[0], ids[1]]));
    expect(await report(bare.db, bare.soulId)).not.toBe(viaMcp);
  });

  it.each([
    ['another dimension than the batch’s first vector', [1, 0, 0]],
    ['all zeros', new Array(8).fill(0)],
  ])('refuses %s with GraphQL’s message, naming shards[i].embedding, nothing written', async (_, embedding) => {
    const graphql = await overGraphql({ similarity: 'provided' });
    const gql = await graphql.drop([{ ...batch(graphql.soulId, true)[0] }, { ...batch(graphql.soulId, true)[1], embedding }]);
    expect(gql).toMatchObject({ __typename: 'ValidationError', field: 'inputs[1].embedding' });
    const mcp = await overMcp({ similarity: 'provided' });
    const r = await mcp.observe([batch(mcp.soulId, true)[0], { ...batch(mcp.soulId, true)[1], embedding }]);
    expect(r.isError).toBe(true);
    expect(r.text).toBe(`shards[1].embedding: ${gql.message}.`);
    expect((await listShards(mcp.db)).totalCount).toBe(0);
    expect(await getEmbeddingDimension(mcp.db)).toBeNull();
  });

  it.each([
    ['NaN', [1, Number.NaN, 0], 'shards[1].embedding[1]: must be a finite number (got NaN)'],
    ['Infinity', [Number.POSITIVE_INFINITY, 0], 'shards[1].embedding[0]: must be a finite number (got Infinity)'],
    ['null (NaN as JSON prints it)', [1, null, 0], 'shards[1].embedding[1]: must be a number (got null)'],
    ['a string', [1, '2'], 'shards[1].embedding[1]: must be a number (got "2")'],
    ['longer than maxEmbeddingDimension', new Array(4097).fill(1), 'shards[1].embedding: must have at most 4096 numbers (maxEmbeddingDimension), got 4097'],
    ['longer than the setting may ever be', new Array(16_385).fill(1), 'shards[1].embedding: must be at most 16384 items'],
    ['empty', [], 'shards[1].embedding: must not be empty'],
  ])('refuses %s, naming the field, nothing written', async (_, embedding, message) => {
    const mcp = await overMcp({ similarity: 'provided' });
    const r = await mcp.observe([batch(mcp.soulId, true)[0], { ...batch(mcp.soulId, true)[1], embedding }]);
    expect(r.isError).toBe(true);
    expect(r.text).toContain(message);
    expect((await listShards(mcp.db)).totalCount).toBe(0);
    expect(await getEmbeddingDimension(mcp.db)).toBeNull();
  });

  it('in lexical mode stores the vectors and reports as GraphQL does; in semantic mode refuses them as GraphQL does', async () => {
    const graphql = await overGraphql({ similarity: 'lexical' });
    expect((await graphql.drop(batch(graphql.soulId, true))).__typename).toBe('DropShardsPayload');
    const mcp = await overMcp({ similarity: 'lexical' });
    const written = await mcp.observe(batch(mcp.soulId, true));
    expect(written.isError, written.text).toBe(false);
    const ids = written.data.shardIds as number[];
    expect([...(await getShardEmbeddings(mcp.db, ids)).values()].map((v) => [...v])).toEqual([...(await getShardEmbeddings(graphql.db, ids)).values()].map((v) => [...v]));
    expect((await getShardEmbeddings(mcp.db, ids)).size).toBe(OBSERVATIONS.length);
    expect(await report(mcp.db, mcp.soulId)).toBe(await report(graphql.db, Number(graphql.soulId)));

    const semanticGraphql = await overGraphql({ similarity: 'semantic' });
    const refused = await semanticGraphql.drop(batch(semanticGraphql.soulId, true).slice(0, 1));
    expect(refused).toMatchObject({ __typename: 'ValidationError', field: 'inputs[0].embedding' });
    const semantic = await overMcp({ similarity: 'semantic' });
    const r = await semantic.observe(batch(semantic.soulId, true).slice(0, 1));
    expect(r.isError).toBe(true);
    expect(r.text).toBe(`shards[0].embedding: ${refused.message}.`);
    expect((await listShards(semantic.db)).totalCount).toBe(0);
  });
});
