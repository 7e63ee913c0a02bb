import type { IncomingMessage, ServerResponse } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Plugin } from 'graphql-yoga';

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
    help: 'GraphQL operations over HTTP, by operation name, type and outcome (ok, or the first error code).',
    labelNames: ['operation', 'type', 'outcome'] as const,
    registers: [registry],
  });
  const operationDuration = new Histogram({
    name: 'souls_graphql_operation_duration_seconds',
    help: 'GraphQL operations over HTTP, request to response, by operation name and type.',
    labelNames: ['operation', 'type'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const subscriptions = new Gauge({ name: 'souls_subscriptions_active', help: 'Live GraphQL subscriptions, by transport (websocket or sse).', labelNames: ['transport'] as const, registers: [registry] });
  const webSockets = new Gauge({ name: 'souls_websocket_connections_active', help: 'Open graphql-ws connections.', registers: [registry] });
  const published = new Counter({ name: 'souls_events_published_total', help: 'Events published to subscribers, by topic.', labelNames: ['topic'] as const, registers: [registry] });
  const redisReconnects = new Counter({ name: 'souls_redis_reconnects_total', help: 'Times a Redis connection (publishing or subscribing) came back after it was lost.', registers: [registry] });
  const redisPublishFailures = new Counter({
    name: 'souls_redis_publish_failures_total',
    help: 'Events Redis did not take (it was down): they reached this replica\'s subscribers only.',
    registers: [registry],
  });
  for (const transport of ['websocket', 'sse']) subscriptions.set({ transport }, 0);

  const names = new Set<string>();
  const operationLabel = (name: string | null) => {
    if (name === null) return '(anonymous)';
    if (!/^[_A-Za-z][_0-9A-Za-z]{0,63}$/.test(name)) return '(other)';
    if (names.has(name)) return name;
    if (names.size >= MAX_OPERATION_NAMES) return '(other)';
    names.add(name);
    return name;
  };

  return {
    registry,
    webSockets,
    published,
    redis: { reconnects: redisReconnects, publishFailures: redisPublishFailures },
    request(line: { method?: string; path: string; status: number; durationMs: number; operation: string | null; operationType: string | null; errorCodes: readonly string[] }): void {
      const route = routeOf(line.path);
      httpRequests.inc({ route, method: line.method ?? 'OTHER', status: String(line.status) });
      httpDuration.observe({ route }, line.durationMs / 1000);
      if (route !== '/graphql' || (line.operationType === null && line.errorCodes.length === 0)) return;
      const operation = operationLabel(line.operation);
      const type = line.operationType ?? 'unknown';
      operations.inc({ operation, type, outcome: line.errorCodes[0] ?? 'ok' });
      operationDuration.observe({ operation, type }, line.durationMs / 1000);
    },
    /** Counts live subscriptions from their first result to their end. */
    plugin(): Plugin {
      return {
        onSubscribe: ({ args }) => {
          const transport = (args.contextValue as { socket?: object }).socket ? 'websocket' : 'sse';
          return {
            onSubscribeResult: ({ result }) => {
              if (!(Symbol.asyncIterator in result)) return;
              subscriptions.inc({ transport });
              return { onEnd: () => subscriptions.dec({ transport }) };
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
