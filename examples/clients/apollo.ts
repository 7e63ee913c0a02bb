// Apollo Client 4 for Souls: queries and mutations over HTTP (automatic persisted queries, sent as GET once the
// server knows them), subscriptions over WebSocket (graphql-ws), and a cache that knows which types implement
// `Error`, so that `... on Error { message }` keeps `message` (possibleTypes, generated beside the schema).
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { createClient } from 'graphql-ws';
import introspection from '../../schema/possible-types.json' with { type: 'json' };

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** `url` is the HTTP endpoint (http://127.0.0.1:4000/graphql); `token` a bearer token on a server with --tokens-file. */
export function soulsApolloClient(url: string, token?: string): ApolloClient {
  const authorization = token ? { authorization: `Bearer ${token}` } : undefined;
  const http = new PersistedQueryLink({ sha256, useGETForHashedQueries: true }).concat(new HttpLink({ uri: url, headers: authorization }));
  const webSocket = new GraphQLWsLink(createClient({ url: url.replace(/^http/, 'ws'), connectionParams: authorization }));
  return new ApolloClient({
    link: ApolloLink.split(({ operationType }) => operationType === 'subscription', webSocket, http),
    cache: new InMemoryCache({ possibleTypes: introspection.possibleTypes }),
  });
}
