// The Yoga instance that answers GraphQL over HTTP and SSE (and runs graphql-ws operations through its envelop), and
// its plugins in the order a request meets them: each plugin is one concern in its own module.
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import type { GraphQLSchema } from 'graphql';
import { createGraphQLError, createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { schema as soulsSchema } from '../../schema/index.ts';
import type { SoulsDb } from '../engine/index.ts';
import { bearerChallenge, TOKEN_REQUIRED, type Caller, type Callers } from './auth.ts';
import { createContext, type Context } from './context.ts';
import { csrfPrevention } from './csrf.ts';
import { isExpected, maskError, storageErrorOf } from './errors-graphql.ts';
import { localGraphiQL } from './graphiql.ts';
import { hidingTheSchema } from './hidden-schema.ts';
import type { Limits } from './limits.ts';
import { countsAsActivity, type MemoryRelease } from './memory-release.ts';
import type { Metrics } from './metrics.ts';
import { corsFor, type OriginPolicy } from './origin.ts';
import type { KnownOperations } from './operations-file.ts';
import { persistedOperations } from './persisted-operations.ts';
import type { SoulsPubSub } from './pubsub.ts';
import { boundedNesting, coercionFailuresAsRequestErrors, malformedParamsAsRequestErrors } from './request-errors.ts';
import { boundingCost } from './request-cost.ts';
import type { RequestLine } from './request-line.ts';
import { sharingSubscriptions } from './subscriptions.ts';

export const GRAPHQL_PATH = '/graphql';

/**
 * The layers a GraphQL request over HTTP goes through besides Yoga itself: the benchmark switches each off in turn
 * to show what it costs. `requestLine`: the request record, the log line and the request metrics.
 */
export const REQUEST_LAYERS = ['requestLine', 'csrf', 'nesting', 'armor', 'requestErrors', 'cost', 'masking'] as const;
export type RequestLayer = (typeof REQUEST_LAYERS)[number];

export type SoulsYoga = YogaServerInstance<Record<string, unknown>, Context>;

export type YogaOptions = {
  db: SoulsDb;
  pubsub: SoulsPubSub;
  /** The Souls schema unless given (the benchmark passes one without scope-auth). */
  schema?: GraphQLSchema;
  limits: Limits;
  introspection: boolean;
  graphiql: boolean;
  callers: Callers;
  originPolicy: OriginPolicy;
  requestLine: RequestLine;
  metrics: Metrics;
  release: MemoryRelease | null;
  /** The only operations the server runs (an allow-list deployment); null: any, with automatic persisted queries. */
  persistedOperations: KnownOperations | null;
  /** Layers left out, for the benchmark only. */
  omit: ReadonlySet<RequestLayer>;
};

const rosterQuery = `# The roster: every awake soul, most ready for refinement first.
query Roster {
  souls(orderBy: READINESS) {
    id
    name
    level
    activeTraitCount
    traitLimit
    pendingShardCount
    crystallization { ready priority unmet }
    traits { principle signals { citationCount stale } }
  }
}
`;

export function createSoulsYoga(options: YogaOptions): SoulsYoga {
  const { db, pubsub, limits, callers } = options;
  return createYoga<Record<string, unknown>, Context>({
    schema: options.schema ?? soulsSchema,
    graphqlEndpoint: GRAPHQL_PATH,
    plugins: requestPlugins(options),
    multipart: false,
    // The edge refuses a body over maxBodyBytes or without a declared length before anything reads it (refusals.ts),
    // and Node reads no more than the declared length: Yoga's own limit only wrapped every body in a counting stream.
    maxRequestBodySize: false,
    cors: (request) => corsFor(request, options.originPolicy),
    context: (initial) => {
      // WebSocket callers were authenticated once, at connection_init.
      const authorization = (initial as { request?: Request }).request?.headers.get('authorization');
      const caller = (initial as { caller?: Caller }).caller ?? callers.of(authorization);
      if (!caller) {
        throw createGraphQLError(TOKEN_REQUIRED, {
          extensions: { code: 'UNAUTHENTICATED', http: { status: 401, headers: { 'www-authenticate': bearerChallenge(authorization) } } },
        });
      }
      return createContext(db, pubsub, caller, limits.maxCost);
    },
    maskedErrors: options.omit.has('masking') ? false : { maskError },
    graphiql: options.graphiql ? { title: 'Souls', defaultQuery: rosterQuery, subscriptionsProtocol: 'WS' } : false,
    renderGraphiQL: localGraphiQL({ requiresToken: callers.required }),
    landingPage: false,
    logging: {
      debug: () => {},
      info: (...args) => console.info(...args),
      warn: (...args) => console.warn(...args),
      error: (...args) => {
        const storage = args.map(storageErrorOf).find((e) => e !== null);
        // Clients get a coded error without the path; the operator's log names the file, in one line.
        if (storage) console.error(`${storage.code}: database ${storage.path}: ${storage.message}${storage.detail ? ` (${storage.detail})` : ''}`);
        else if (!args.some(isExpected)) console.error(...args);
      },
    },
  });
}

/** The plugins in the order a request meets them, each tagged with the layer the benchmark may leave out. */
function requestPlugins(options: YogaOptions): Plugin[] {
  const { limits, db, metrics, release } = options;
  const layered: Array<[RequestLayer | null, Plugin]> = [
    ['requestLine', options.requestLine.plugin],
    ['csrf', csrfPrevention()],
    [null, persistedOperations({ maxPersistedQueries: limits.maxPersistedQueries, known: options.persistedOperations })],
    ['nesting', boundedNesting(limits.maxNesting)],
    ['armor', EnvelopArmorPlugin({
      // Fields only: by default graphql-armor counts each fragment spread as two levels and each inline fragment as one
      // (and multiplies the cost accordingly), so the same query written with fragments looked far deeper and costlier.
      maxDepth: { n: limits.maxDepth, ignoreIntrospection: true, flattenFragments: true },
      maxAliases: { n: limits.maxAliases },
      maxTokens: { n: limits.maxTokens },
      maxDirectives: { n: limits.maxDirectives },
      // The cost is estimated at execution, with the variables (boundingCost).
      costLimit: { enabled: false },
      blockFieldSuggestion: { enabled: !options.introspection },
    }) as Plugin],
    ['requestErrors', coercionFailuresAsRequestErrors()],
    ['requestErrors', malformedParamsAsRequestErrors()],
    ['cost', boundingCost(limits, db)],
    [null, sharingSubscriptions(limits, metrics.pubsub.tooSlow)],
    [null, metrics.plugin()],
  ];
  if (release) layered.push([null, countsAsActivity(release)]);
  if (!options.introspection) layered.push([null, hidingTheSchema()]);
  return layered.filter(([layer]) => layer === null || !options.omit.has(layer)).map(([, plugin]) => plugin);
}
