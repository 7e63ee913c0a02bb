/** Limits on what one request may ask of the server; all configurable, all enforced before execution. */
export type Limits = {
  maxDepth: number;
  maxAliases: number;
  maxTokens: number;
  maxDirectives: number;
  maxCost: number;
  maxBodyBytes: number;
  /** How long a request's headers and body may take to arrive, in ms; a slower one is answered 408 and its connection closed. */
  bodyTimeoutMs: number;
  maxNesting: number;
  /** Tags in a shard filter (shards, Soul.shards, Soul.evidence), as many as a shard may carry. */
  maxFilterTags: number;
  /** Items of any other list argument or list input field without a bound of its own (ids, statuses, plan entries). */
  maxListItems: number;
  /** A subscription runs again for every event, so it gets a cost limit of its own. */
  maxSubscriptionCost: number;
  /** Live subscriptions on one graphql-ws connection. */
  maxSubscriptionsPerConnection: number;
  /** Live subscriptions on the server, graphql-ws and SSE together. */
  maxSubscriptions: number;
  /** Open MCP subscriptions/listen streams of one token. */
  maxListenStreamsPerToken: number;
  /** Resource URIs one MCP listen stream may follow. */
  maxListenUris: number;
  /** Documents automatic persisted queries remember, the least recently used forgotten first. */
  maxPersistedQueries: number;
};

export const defaultLimits: Limits = {
  maxDepth: 12,
  maxAliases: 30,
  maxTokens: 5000,
  maxDirectives: 30,
  // About a second or two of one core's work (units of src/server/price-list.ts, timed by bench/price-list.ts).
  maxCost: 2_500_000,
  // A full dropShards batch (10,000 shards) fits, given as variables.
  maxBodyBytes: 16 * 1024 * 1024,
  // Node's own default is 300 s, long enough for a few slow uploads to hold a lot of memory; 16 MiB in 30 s is 4.5 Mbit/s.
  bodyTimeoutMs: 30_000,
  // Brackets, braces and parentheses inside one another; graphql-js parses them recursively and overflows the
  // stack near 2,500, inside the token limit. The deepest query the depth limit allows needs about 30.
  maxNesting: 100,
  maxFilterTags: 32,
  // A level-up plan names each active trait once, and traitLimit is at most 1,000.
  maxListItems: 1000,
  // Every event runs a subscription again, for each subscriber: a twenty-fifth of maxCost.
  maxSubscriptionCost: 100_000,
  maxSubscriptionsPerConnection: 100,
  maxSubscriptions: 2000,
  maxListenStreamsPerToken: 16,
  // Both resources of 128 souls.
  maxListenUris: 256,
  // Documents of up to 32 KiB each: 32 MiB at most.
  maxPersistedQueries: 1000,
};

export const limitNames = Object.keys(defaultLimits) as (keyof Limits)[];

/**
 * How deep `{`, `[` and `(` nest in a GraphQL document, outside strings and comments; stops counting past
 * `max`, so a hostile document costs one pass over its text at most.
 */
export function nestingDepth(source: string, max = Infinity): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '#') {
      while (i < source.length && source[i] !== '\n' && source[i] !== '\r') i++;
    } else if (c === '"') {
      if (source.startsWith('"""', i)) {
        i += 3;
        while (i < source.length && !source.startsWith('"""', i)) i += source.startsWith('\\"""', i) ? 4 : 1;
        i += 2;
      } else {
        i++;
        while (i < source.length && source[i] !== '"' && source[i] !== '\n') i += source[i] === '\\' ? 2 : 1;
      }
    } else if (c === '{' || c === '[' || c === '(') {
      if (++depth > deepest && (deepest = depth) > max) return deepest;
    } else if (c === '}' || c === ']' || c === ')') {
      depth--;
    }
  }
  return deepest;
}
