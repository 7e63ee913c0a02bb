// The server, composed: the parts every transport shares (metrics, log, events, memory release), the edge a request
// crosses (request-line.ts, refusals.ts, yoga.ts with its plugins, router.ts) and the transports on the one port
// (HTTP and SSE through Yoga, websocket.ts, /mcp), started and stopped together (lifecycle.ts).
import { createServer, type Server } from 'node:http';
import type { GraphQLSchema } from 'graphql';
import { callersOf, type TokenEntry } from './auth.ts';
import { arrivalTimeouts } from './body-limits.ts';
import { closeSoulsDb, getCrystallization, settleSlicedWork, type SoulsDb } from '../engine/index.ts';
import { closingConnections, listen, type Listening } from './lifecycle.ts';
import { defaultLimits, type Limits } from './limits.ts';
import { createLogger, type Logger } from './log.ts';
import { startMemoryRelease, type MemoryRelease } from './memory-release.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import type { OriginPolicy } from './origin.ts';
import type { KnownOperations } from './operations-file.ts';
import { createSoulsPubSub, type SoulsPubSub } from './pubsub.ts';
import { createRedisEvents, type RedisEvents } from './redis-events.ts';
import { createRefusals } from './refusals.ts';
import { createRequestLine } from './request-line.ts';
import { createRouter } from './router.ts';
import { singleConnections as createSingleConnections } from './sse.ts';
import { createWebSockets } from './websocket.ts';
import { createSoulsYoga, GRAPHQL_PATH, type RequestLayer, type SoulsYoga } from './yoga.ts';
import { mcpEndpoint } from '../mcp/endpoint.ts';

export { GRAPHQL_PATH, REQUEST_LAYERS, type RequestLayer } from './yoga.ts';
export { PRE_ACK_MAX_BYTES } from './websocket.ts';

export type AppOptions = {
  db: SoulsDb;
  graphiql?: boolean;
  /** Bearer tokens and their scopes; null or absent: no tokens, every caller has every scope (loopback only). */
  tokens?: readonly TokenEntry[] | null;
  limits?: Partial<Limits>;
  /** false hides introspection and "did you mean" field suggestions. */
  introspection?: boolean;
  /** How long a WebSocket may stay open without connection_init before it is closed with 4408; default 3000 ms. */
  wsInitTimeoutMs?: number;
  /** How long a reserved event stream (graphql-sse's single connection mode) waits to be opened before it lapses; default 30000 ms. */
  sseReservationTimeoutMs?: number;
  /** How often graphql-ws pings each socket; one that has not answered by the next ping is closed. Default 12000 ms. */
  wsKeepAliveMs?: number;
  /** Origins besides the server's own whose pages may call the API; none by default. */
  corsOrigins?: readonly string[];
  /** Host names served besides loopback ones on a server without tokens (DNS rebinding guard). */
  allowedHosts?: readonly string[];
  /** The only operations the server runs, by id (an allow-list deployment, `--persisted-operations`); none by default. */
  persistedOperations?: KnownOperations | null;
  /** One line per HTTP request and WebSocket connection (never a token, variables or document text); none by default. */
  logger?: Logger;
  /** The schema served; the Souls schema by default (the benchmark passes one without scope-auth to price it). */
  schema?: GraphQLSchema;
  /** For the benchmark's per-layer breakdown only (bench/api.ts): request-path layers left out. The server never omits any. */
  omit?: ReadonlySet<RequestLayer>;
  /** Events through Redis (`channelPrefix` from eventChannelPrefix), so that subscribers on every replica hear every write; in memory without. */
  redis?: { url: string; channelPrefix: string } | null;
  /** Give memory back to the operating system once listening, and after this long without requests, connections, operations or events sent (src/server/memory-release.ts); off by default, `souls serve` turns it on. */
  memoryRelease?: { quietMs: number; minGrowthBytes?: number } | null;
};

export type App = {
  yoga: SoulsYoga;
  server: Server;
  pubsub: SoulsPubSub;
  db: SoulsDb;
  /** Listens on host:port (port 0 picks a free one); resolves with the address actually bound. */
  start(port: number, host: string): Promise<Listening>;
  /** Closes sockets and subscriptions, stops listening, checkpoints and closes the database (`checkpointDeferred`: why it could not, e.g. a full disk). */
  stop(): Promise<{ checkpointDeferred: string | null }>;
};

/** What every transport shares: the metrics, the log, the event bus (through Redis or not), the memory release. */
type Shared = { metrics: Metrics; logger: Logger; redis: RedisEvents | null; pubsub: SoulsPubSub; release: MemoryRelease | null; stopAnnouncing: () => void };

/** HTTP (queries, mutations, SSE subscriptions, GraphiQL) and graphql-ws on one port and one path; MCP at /mcp on the same port. */
export function buildApp(options: AppOptions): App {
  const { db } = options;
  const limits: Limits = { ...defaultLimits, ...options.limits };
  const omit = options.omit ?? new Set<RequestLayer>();
  const shared = sharedParts(options);
  const { metrics, logger, pubsub, release } = shared;
  const callers = callersOf(options.tokens);
  const originPolicy: OriginPolicy = { corsOrigins: options.corsOrigins ?? [], allowedHosts: callers.required ? null : (options.allowedHosts ?? []) };
  const requestLine = createRequestLine({ logger, metrics, callerName: (authorization) => callers.of(authorization)?.name ?? null });
  const introspection = options.introspection !== false;
  const yoga = createSoulsYoga({
    db,
    pubsub,
    schema: options.schema,
    limits,
    introspection,
    graphiql: options.graphiql !== false,
    callers,
    originPolicy,
    requestLine,
    metrics,
    release,
    omit,
    persistedOperations: options.persistedOperations ?? null,
  });
  const mcp = mcpEndpoint({ db, pubsub, callerOf: callers.of, maxBodyBytes: limits.maxBodyBytes, limits });
  const refusals = createRefusals({ originPolicy, callers, maxBodyBytes: limits.maxBodyBytes, requestLine, isMcp: mcp.handles, graphqlPath: GRAPHQL_PATH });
  const singleConnections = createSingleConnections({ yoga, callers, limits, originPolicy, reservationTimeoutMs: options.sseReservationTimeoutMs ?? 30_000, graphqlPath: GRAPHQL_PATH });
  const router = createRouter({ db, redisReady: shared.redis?.ready, requestLine: omit.has('requestLine') ? null : requestLine, release, refusals, callers, metrics, mcp, singleConnections, yoga });
  const server = createServer(arrivalTimeouts(limits), router);
  const webSockets = createWebSockets({ yoga, limits, refusals, callers, requestLine, metrics, logger, release, initTimeoutMs: options.wsInitTimeoutMs ?? 3000, keepAliveMs: options.wsKeepAliveMs ?? 12_000 });
  server.on('upgrade', webSockets.upgrade);
  const connections = closingConnections(server);

  let stopped: Promise<{ checkpointDeferred: string | null }> | null = null;
  return {
    yoga,
    server,
    pubsub,
    db,
    start: async (port, host) => {
      const listening = await listen(server, port, host, GRAPHQL_PATH);
      release?.releaseNow();
      return listening;
    },
    stop: () =>
      (stopped ??= (async () => {
        release?.stop();
        await mcp.close();
        await singleConnections.close();
        await webSockets.close();
        await connections.close();
        await settleSlicedWork();
        shared.stopAnnouncing();
        await shared.redis?.close();
        return await closeSoulsDb(db);
      })()),
  };
}

const mib = (bytes: number) => Math.round(bytes / 2 ** 20);

function sharedParts(options: AppOptions): Shared {
  const { db } = options;
  const metrics = createMetrics();
  const logger = options.logger ?? createLogger({ level: 'silent', clock: db.clock });
  observeDb(db, metrics, logger);
  const redis = options.redis ? createRedisEvents({ ...options.redis, logger, counters: { ...metrics.redis, dropped: metrics.pubsub.dropped } }) : null;
  const pubsub = createSoulsPubSub(redis?.eventTarget, { counters: metrics.pubsub });
  const release = options.memoryRelease
    ? startMemoryRelease({
        ...options.memoryRelease,
        onRelease: (released) => {
          metrics.memoryReleased(released);
          logger.info({ after: released.after, durationMs: Math.round(released.durationMs), rssBeforeMiB: mib(released.rssBefore), rssAfterMiB: mib(released.rssAfter) }, 'memory released');
        },
      })
    : null;
  return { metrics, logger, redis, pubsub, release, stopAnnouncing: announceSemanticReadiness(db, pubsub) };
}

/** The database's work in the metrics, and one log line when the embeddings endpoint's circuit opens and one when it closes again. */
function observeDb(db: SoulsDb, metrics: Metrics, logger: Logger): void {
  Object.assign(db.observer, metrics.observer);
  metrics.watchPool(db.store);
  metrics.watchEmbeddings(() => db.semantic && { queued: db.semantic.queued, pending: db.semantic.pending });
  // Never the endpoint URL's secrets or its key.
  db.observer.embedCircuit = (change) => {
    metrics.observer.embedCircuit(change);
    if (change.state === 'open' && change.from === 'closed') logger.warn({ model: db.semantic?.embedder.model, failures: change.failures, reason: change.reason }, 'embedder circuit open: the endpoint is left alone, shards compare lexically until it answers');
    else if (change.state === 'closed') logger.info({ model: db.semantic?.embedder.model }, 'embedder circuit closed: the endpoint answers again');
  };
  // An answer cut off at its cap, or a redirect not followed, is a hostile or misconfigured endpoint: one line each.
  db.observer.embedCall = (call) => {
    metrics.observer.embedCall(call);
    if (call.outcome === 'too_large') logger.warn({ model: db.semantic?.embedder.model, reason: call.outcome, texts: call.texts }, 'embedder answer cut off: larger than its cap (--embedder-max-answer-bytes); the batch counts a failure');
    else if (call.outcome === 'redirected') logger.warn({ model: db.semantic?.embedder.model, reason: call.outcome, texts: call.texts }, 'embedder redirect not followed: the texts go nowhere but --embedder-url; the batch is given up');
  };
}

/** Semantic vectors land after dropShard answered; souls they make ready are announced as any write's are. */
function announceSemanticReadiness(db: SoulsDb, pubsub: SoulsPubSub): () => void {
  const stop = db.semantic?.onReady((soulIds) => {
    void getCrystallization(db, soulIds).then((verdicts) => {
      const at = db.clock.now();
      pubsub.publishAll('crystallizationReady', soulIds.map((soulId) => ({ soulId, priority: verdicts.get(soulId)?.priority ?? 0, at })));
    }, () => {
      // The database closed meanwhile: nothing to announce.
    });
  });
  return () => stop?.();
}
