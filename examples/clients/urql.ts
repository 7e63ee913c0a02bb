// urql 6 for Souls: its defaults (queries as GET, mutations as POST, no extra header), automatic persisted queries,
// and subscriptions over WebSocket (graphql-ws) or over Server-Sent Events (graphql-sse), whichever the page can hold.
import { cacheExchange, Client, fetchExchange, subscriptionExchange, type SubscriptionForwarder } from '@urql/core';
import { persistedExchange } from '@urql/exchange-persisted';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';

type Headers = Record<string, string> | undefined;

function overWebSocket(url: string, authorization: Headers): SubscriptionForwarder {
  const ws = createWsClient({ url: url.replace(/^http/, 'ws'), connectionParams: authorization });
  return (request) => ({ subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) }) });
}

function overSse(url: string, authorization: Headers): SubscriptionForwarder {
  const sse = createSseClient({ url, headers: authorization });
  return (request) => ({ subscribe: (sink) => ({ unsubscribe: sse.subscribe({ ...request, query: request.query ?? '' }, sink) }) });
}

/** `url` is the HTTP endpoint (http://127.0.0.1:4000/graphql); `token` a bearer token on a server with --tokens-file. */
export function soulsUrqlClient(url: string, options: { token?: string; subscriptions?: 'websocket' | 'sse' } = {}): Client {
  const authorization = options.token ? { authorization: `Bearer ${options.token}` } : undefined;
  const forwardSubscription = options.subscriptions === 'sse' ? overSse(url, authorization) : overWebSocket(url, authorization);
  return new Client({
    url,
    fetchOptions: { headers: authorization },
    exchanges: [cacheExchange, persistedExchange(), fetchExchange, subscriptionExchange({ forwardSubscription })],
  });
}
