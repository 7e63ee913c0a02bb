// A Relay environment for Souls: operations over HTTP, subscriptions over WebSocket (graphql-ws). Souls' ids are unique
// per type only (soul 1 and shard 1 are different things), so records are keyed by type and id.
import { createClient } from 'graphql-ws';
import { Environment, Network, Observable, RecordSource, Store, type FetchFunction, type GraphQLResponse, type SubscribeFunction } from 'relay-runtime';

/** `url` is the HTTP endpoint (http://127.0.0.1:4000/graphql); `token` a bearer token on a server with --tokens-file. */
export function soulsRelayEnvironment(url: string, token?: string): Environment {
  const authorization = token ? { authorization: `Bearer ${token}` } : undefined;
  const fetchFn: FetchFunction = async (operation, variables) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...authorization },
      body: JSON.stringify({ query: operation.text, variables }),
    });
    return (await response.json()) as GraphQLResponse;
  };
  const ws = createClient({ url: url.replace(/^http/, 'ws'), connectionParams: authorization });
  const subscribeFn: SubscribeFunction = (operation, variables) =>
    Observable.create<GraphQLResponse>((sink) =>
      ws.subscribe({ query: operation.text ?? '', variables }, { next: (result) => sink.next(result as GraphQLResponse), error: sink.error, complete: sink.complete }),
    );
  return new Environment({
    network: Network.create(fetchFn, subscribeFn),
    store: new Store(new RecordSource()),
    getDataID: (fieldValue, typeName) => (fieldValue.id == null ? fieldValue.id : `${typeName}:${fieldValue.id}`),
  });
}
