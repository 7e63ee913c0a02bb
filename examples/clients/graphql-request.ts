// graphql-request for Souls: one POST per operation, typed by the documents `npm run codegen` generates
// (examples/gql): results and variables are checked at compile time, and result unions narrow on __typename.
import { GraphQLClient } from 'graphql-request';
import { DashboardDocument, TypedClientDropShardsDocument, type DropShardInput } from '../gql/graphql.ts';

/** `url` is the HTTP endpoint (http://127.0.0.1:4000/graphql); `token` a bearer token on a server with --tokens-file. */
export function soulsRequestClient(url: string, token?: string): GraphQLClient {
  return new GraphQLClient(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
}

/** The names of the souls ready for refinement, readiest first. */
export async function readySouls(client: GraphQLClient): Promise<string[]> {
  const { souls } = await client.request(DashboardDocument);
  return souls.filter((soul) => soul.crystallization.ready).map((soul) => soul.name);
}

/** Drops shards in one transaction; a refused batch throws naming the input at fault ("inputs[1].content: …"). */
export async function observe(client: GraphQLClient, inputs: DropShardInput[]): Promise<{ shardIds: string[]; nowReady: string[] }> {
  const { dropShards } = await client.request(TypedClientDropShardsDocument, { inputs });
  switch (dropShards.__typename) {
    case 'DropShardsPayload':
      return { shardIds: dropShards.shards.map((shard) => shard.id), nowReady: dropShards.readySouls.map((soul) => soul.name) };
    case 'ValidationError':
      throw new Error(`${dropShards.field}: ${dropShards.message}`);
    case 'NotFoundError':
      throw new Error(`no ${dropShards.entity} ${dropShards.id}: ${dropShards.message}`);
  }
}
