import type { IncomingMessage, ServerResponse } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { getOperationAST, Kind, type DocumentNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { circuitStates, embedFailureReasons, type CircuitState } from '../engine/semantic.ts';
import type { EngineObserver, GateOutcome } from '../engine/souls-db.ts';
import type { MemoryReleased } from './memory-release.ts';
import type { PoolStats } from '../store/postgres-pool.ts';
import type { SoulsStore } from '../store/store.ts';

/** A store over a connection pool (PostgreSQL). */
type PooledStore = SoulsStore & { poolStats(): PoolStats; queried: ((ms: number) => void) | null; poolWaited: ((purpose: 'read' | 'write', ms: number) => void) | null };

export const METRICS_PATH = '/metrics';

/** Paths as labels: a fixed set, so a scan of random URLs cannot grow the series. */
const routes = new Set(['/graphql', '/mcp', '/health', '/ready', '/metrics']);
export const routeOf = (path: string) => (routes.has(path) ? path : path.startsWith('/assets/') || path === '/' ? 'web' : 'other');

/** Operation names come from clients: plain names only, and at most this many distinct ones before the rest count as "other". */
const MAX_OPERATION_NAMES = 200;

let processMetrics: Registry | null = null;
/** Memory, CPU, event-loop lag, GC: one collector per process, however many servers it runs (tests run many). */
function processRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics });
  }
  return processMetrics;
}

export type Metrics = ReturnType<typeof createMetrics>;

/** How an operation reached the server: a request (with SSE streams) or a graphql-ws socket. */
export type Transport = 'http' | 'websocket';

export type OperationRecord = { operation: string | null; type: string | null; transport: Transport; errorCodes: Iterable<string>; durationMs: number };

const gateOutcomes: readonly GateOutcome[] = ['below_cheap_gate', 'already_ready', 'not_ready', 'crossed'];

/** From a tenth of a millisecond (an incremental update) to seconds (a cold soul of thousands of shards). */
const CLUSTERING_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A local model answers a batch in tens of milliseconds, a hosted one in hundreds; a retried batch may take a minute. */
const EMBED_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** What the embedding queue holds right now (similarity semantic), read at each scrape. */
export type EmbedQueueState = { queued: number; pending: number };

/** A write that found no other connection's lock begins in microseconds; SQLite's busy handler then sleeps 1, 2, 5, 10 … ms. */
const LOCK_WAIT_BUCKETS = [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** The root field a subscription reads (its topic), or null when its selection does not start with a field. */
function subscribedField(document: DocumentNode, operationName: string | null | undefined): string | null {
  const first = getOperationAST(document, operationName)?.selectionSet.selections[0];
  return first?.kind === Kind.FIELD ? first.name.value : null;
}

export function createMetrics() {
  const registry = new Registry();
  const httpRequests = new Counter({ name: 'souls_http_requests_total', help: 'HTTP requests answered, by route, method and status.', labelNames: ['route', 'method', 'status'] as const, registers: [registry] });
  const httpDuration = new Histogram({
    name: 'souls_http_request_duration_seconds',
    help: 'Time from a request to its response closing, by route (SSE streams count their whole life).',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const operations = new Counter({
    name: 'souls_graphql_operations_total',
    help: 'GraphQL operations, by operation name, type, transport (http or websocket) and outcome (ok, or the first error code).',
    labelNames: ['operation', 'type', 'transport', 'outcome'] as const,
    registers: [registry],
  });
  const operationDuration = new Histogram({
    name: 'souls_graphql_operation_duration_seconds',
    help: 'GraphQL operations, start to end (a subscription: its whole life), by operation name, type and transport.',
    labelNames: ['operation', 'type', 'transport'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const subscriptions = new Gauge({ name: 'souls_subscriptions_active', help: 'Live GraphQL subscriptions, by transport (websocket or sse).', labelNames: ['transport'] as const, registers: [registry] });
  const webSockets = new Gauge({ name: 'souls_websocket_connections_active', help: 'Open graphql-ws connections.', registers: [registry] });
  const published = new Counter({ name: 'souls_events_published_total', help: 'Events published to subscribers, by topic.', labelNames: ['topic'] as const, registers: [registry] });
  const dropped = new Counter({
    name: 'souls_pubsub_messages_dropped_total',
    help: 'Messages from the event bus dropped unread: not JSON (unparsable) or not the shape of their topic\'s events (invalid).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const tooSlow = new Counter({ name: 'souls_subscribers_too_slow_total', help: 'Subscribers closed with SUBSCRIBER_TOO_SLOW: too many events waited for them.', registers: [registry] });
  const delivered = new Counter({
    name: 'souls_events_delivered_total',
    help: 'Events sent to subscribers (one per subscriber that receives it), by topic (the subscription field) and transport (websocket or sse).',
    labelNames: ['topic', 'transport'] as const,
    registers: [registry],
  });
  const gateChecks = new Counter({
    name: 'souls_gate_checks_total',
    help: "Crystallization gates a write evaluated, one per soul it touched, by outcome: below_cheap_gate, already_ready, not_ready, or crossed (made ready).",
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const clustering = new Histogram({
    name: 'souls_clustering_duration_seconds',
    help: "Time computing one clustering (not one answered from memory), by similarity mode and purpose: soul (a soul's shards, for the gate and unscoped evidence reports) or scoped_report.",
    labelNames: ['mode', 'purpose'] as const,
    buckets: CLUSTERING_BUCKETS,
    registers: [registry],
  });
  const lockWait = new Histogram({
    name: 'souls_sqlite_write_lock_wait_seconds',
    help: "Time each write waited to begin its transaction: for the write lock another connection (a process, a backup) held.",
    buckets: LOCK_WAIT_BUCKETS,
    registers: [registry],
  });
  const busyTimeouts = new Counter({
    name: 'souls_sqlite_busy_timeouts_total',
    help: 'Statements that failed with SQLITE_BUSY: a lock stayed taken for the whole busy timeout.',
    registers: [registry],
  });
  const redisReconnects = new Counter({ name: 'souls_redis_reconnects_total', help: 'Times a Redis connection (publishing or subscribing) came back after it was lost.', registers: [registry] });
  const redisPublishFailures = new Counter({
    name: 'souls_redis_publish_failures_total',
    help: 'Events Redis did not take (it was down): they reached this replica\'s subscribers only.',
    registers: [registry],
  });
  const memoryReleases = new Histogram({
    name: 'souls_memory_release_duration_seconds',
    help: 'Collections that gave memory back to the operating system after a quiet spell (--release-memory-after), by how long each held the server.',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const memoryReleasedBytes = new Counter({ name: 'souls_memory_released_bytes_total', help: 'Resident memory those collections gave back.', registers: [registry] });
  const embedCalls = new Histogram({
    name: 'souls_embed_duration_seconds',
    help: "Calls for vectors (similarity semantic: the embeddings endpoint, or the built-in encoder), each attempt on its own, by outcome: ok or the failure's reason.",
    labelNames: ['outcome'] as const,
    buckets: EMBED_BUCKETS,
    registers: [registry],
  });
  const embedFailures = new Counter({
    name: 'souls_embed_failures_total',
    help: 'Failed calls for vectors, by reason: timeout, network, rate_limited (429), server_error (5xx), rejected (another 4xx), malformed, wrong_count, wrong_dimension, non_finite, encoder.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const vectorsStored = new Counter({
    name: 'souls_embed_vectors_total',
    help: 'Vectors stored for shards, by source: embedded (computed by the model) or reused (a stored vector of the same text).',
    labelNames: ['source'] as const,
    registers: [registry],
  });
  const embedDropped = new Counter({
    name: 'souls_embed_dropped_shards_total',
    help: 'Shards whose vector will not land in this process, by reason: queue_full or failed; they compare lexically until `souls reindex`.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const circuit = new Gauge({
    name: 'souls_embed_circuit_state',
    help: 'The embeddings endpoint\'s circuit: 1 for its current state (closed: calls go through; open: the endpoint is left alone; half_open: one probe is out).',
    labelNames: ['state'] as const,
    registers: [registry],
  });
  let embedQueue: (() => EmbedQueueState | null) | null = null;
  new Gauge({
    name: 'souls_embed_queue_depth',
    help: 'Shards queued for their vector, not yet in a call.',
    registers: [registry],
    collect() {
      this.set(embedQueue?.()?.queued ?? 0);
    },
  });
  new Gauge({
    name: 'souls_embed_pending_vectors',
    help: 'Shards waiting for their vector in this process: queued or in a call (until it lands they compare lexically).',
    registers: [registry],
    collect() {
      this.set(embedQueue?.()?.pending ?? 0);
    },
  });
  const setCircuit = (state: CircuitState) => {
    for (const s of circuitStates) circuit.set({ state: s }, s === state ? 1 : 0);
  };
  setCircuit('closed');
  for (const reason of embedFailureReasons) embedFailures.inc({ reason }, 0);
  for (const source of ['embedded', 'reused']) vectorsStored.inc({ source }, 0);
  for (const reason of ['queue_full', 'failed']) embedDropped.inc({ reason }, 0);
  for (const transport of ['websocket', 'sse']) subscriptions.set({ transport }, 0);
  for (const reason of ['unparsable', 'invalid']) dropped.inc({ reason }, 0);
  for (const outcome of gateOutcomes) gateChecks.inc({ outcome }, 0);

  const names = new Set<string>();
  const operationLabel = (name: string | null) => {
    if (name === null) return '(anonymous)';
    if (!/^[_A-Za-z][_0-9A-Za-z]{0,63}$/.test(name)) return '(other)';
    if (names.has(name)) return name;
    if (names.size >= MAX_OPERATION_NAMES) return '(other)';
    names.add(name);
    return name;
  };

  const operation = (record: OperationRecord): void => {
    const labels = { operation: operationLabel(record.operation), type: record.type ?? 'unknown', transport: record.transport };
    const [firstCode] = record.errorCodes;
    operations.inc({ ...labels, outcome: firstCode ?? 'ok' });
    operationDuration.observe(labels, record.durationMs / 1000);
  };

  /** The engine's and the store's hooks, counted here. */
  const observer: Required<EngineObserver> = {
    gateChecked: (outcome) => gateChecks.inc({ outcome }),
    clustered: ({ mode, purpose, ms }) => clustering.observe({ mode, purpose }, ms / 1000),
    writeLockWaited: (ms) => lockWait.observe(ms / 1000),
    busyTimedOut: () => busyTimeouts.inc(),
    embedCall: ({ ms, outcome }) => {
      embedCalls.observe({ outcome }, ms / 1000);
      if (outcome !== 'ok') embedFailures.inc({ reason: outcome });
    },
    embedCircuit: ({ state }) => setCircuit(state),
    vectorsLanded: ({ embedded, reused }) => {
      vectorsStored.inc({ source: 'embedded' }, embedded);
      vectorsStored.inc({ source: 'reused' }, reused);
    },
    embedDropped: ({ reason, shards }) => embedDropped.inc({ reason }, shards),
  };

  /** PostgreSQL: the pool's connections (gauges read at each scrape) and the time of each statement. */
  const watchPool = (store: SoulsStore): void => {
    if (typeof (store as Partial<PooledStore>).poolStats !== 'function') return;
    const pooled = store as PooledStore;
    const gauge = (name: string, help: string, read: (stats: PoolStats) => number) =>
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(read(pooled.poolStats()));
        },
      });
    gauge('souls_pg_pool_connections', 'PostgreSQL connections the pool holds open (busy and idle).', (stats) => stats.total);
    gauge('souls_pg_pool_idle_connections', 'PostgreSQL connections open and waiting for work.', (stats) => stats.idle);
    gauge('souls_pg_pool_waiting_units', 'Units of work waiting for a connection: every one busy, or the writes\' share full.', (stats) => stats.waiting);
    gauge('souls_pg_pool_write_connections', 'PostgreSQL connections held by writes (at most the pool less the share kept for reads).', (stats) => stats.writing);
    const waits = new Histogram({
      name: 'souls_pg_pool_wait_seconds',
      help: 'Time a unit of work waited for a connection of the pool, by purpose (read or write); 0 when one was free.',
      labelNames: ['purpose'] as const,
      buckets: [0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    });
    pooled.poolWaited = (purpose, ms) => waits.observe({ purpose }, ms / 1000);
    const statements = new Histogram({
      name: 'souls_pg_statement_duration_seconds',
      help: 'Time from sending a statement to PostgreSQL to its answer (network round trip included).',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    });
    pooled.queried = (ms) => statements.observe(ms / 1000);
  };

  return {
    registry,
    webSockets,
    watchPool,
    published,
    pubsub: { published, dropped, tooSlow },
    observer,
    operation,
    /** Where the queue gauges read from at each scrape. */
    watchEmbeddings(state: () => EmbedQueueState | null): void {
      embedQueue = state;
    },
    redis: { reconnects: redisReconnects, publishFailures: redisPublishFailures },
    memoryReleased(released: MemoryReleased): void {
      memoryReleases.observe(released.durationMs / 1000);
      memoryReleasedBytes.inc(Math.max(0, released.rssBefore - released.rssAfter));
    },
    request(line: { method?: string; path: string; status: number; durationMs: number; operation: string | null; operationType: string | null; errorCodes: readonly string[] }): void {
      const route = routeOf(line.path);
      httpRequests.inc({ route, method: line.method ?? 'OTHER', status: String(line.status) });
      httpDuration.observe({ route }, line.durationMs / 1000);
      if (route !== '/graphql' || (line.operationType === null && line.errorCodes.length === 0)) return;
      operation({ operation: line.operation, type: line.operationType, transport: 'http', errorCodes: line.errorCodes, durationMs: line.durationMs });
    },
    /** Counts live subscriptions from their first result to their end, and each event they send. */
    plugin(): Plugin {
      return {
        onSubscribe: ({ args }) => {
          const transport = (args.contextValue as { socket?: object }).socket ? 'websocket' : 'sse';
          const topic = subscribedField(args.document, args.operationName) ?? '(other)';
          return {
            onSubscribeResult: ({ result }) => {
              if (!(Symbol.asyncIterator in result)) return;
              subscriptions.inc({ transport });
              return {
                onNext: () => delivered.inc({ topic, transport }),
                onEnd: () => subscriptions.dec({ transport }),
              };
            },
          };
        },
      };
    },
    async scrape(res: ServerResponse, req: IncomingMessage): Promise<void> {
      const merged = Registry.merge([processRegistry(), registry]);
      const text = await merged.metrics();
      res.writeHead(200, { 'content-type': merged.contentType, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : text);
    },
  };
}
