// A replica started exactly as docs/scale-out.md says (`SOULS_DB=postgres://… npm start`), on the real PostgreSQL
// and Redis of the cluster, beside one started as `souls serve`: each sees the other's writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmStart, type NpmStarted } from '../support/cli.ts';
import { cluster, gql, killAll, requireCluster, startReplica, type Replica } from './support.ts';

let started: NpmStarted;
let peer: Replica;

beforeAll(async () => {
  requireCluster();
  started = await npmStart(['--port', '0', '--redis', cluster.redisUrl, '--redis-prefix', cluster.prefix], { SOULS_DB: cluster.db });
  peer = await startReplica('S');
}, 120_000);

afterAll(async () => {
  await started?.stop();
  killAll();
});

describe('npm start on PostgreSQL', () => {
  it('serves the cluster database named by SOULS_DB, whatever flags the start script gives Node', async () => {
    expect(started.stdout()).toMatch(/Database: postgres:\/\//);
    const post = async (query: string) =>
      (await (await fetch(started.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })).json()) as { data: any };
    const created = await post('mutation { createSoul(input: { name: "Started By Npm", essence: "Begun as the docs say." }) { __typename ... on SoulPayload { soul { id } } } }');
    expect(created.data.createSoul.__typename).toBe('SoulPayload');
    const id = created.data.createSoul.soul.id as string;
    expect((await gql(peer, 'query ($id: ID!) { soul(id: $id) { name } }', { id })).soul).toEqual({ name: 'Started By Npm' });
    const dropped = await gql(peer, 'mutation ($id: ID!) { dropShard(input: { content: "Seen from the other replica.", source: "peer", soulIds: [$id] }) { __typename } }', { id });
    expect(dropped.dropShard.__typename).toBe('DropShardPayload');
    expect((await post(`{ soul(id: "${id}") { shards(first: 5) { edges { node { content } } } } }`)).data.soul.shards.edges.map((e: any) => e.node.content)).toEqual(['Seen from the other replica.']);
    expect((await fetch(started.url.replace(/graphql$/, 'ready'))).status).toBe(200);
  });
});
