// Where an HTTP request is answered: the probes (/health, /ready), the refusals made from headers (refusals.ts),
// /metrics, /mcp, the web app's and GraphiQL's files, graphql-sse's single connection mode (sse.ts), and Yoga for
// GraphQL (queries, mutations, SSE) at /graphql.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describeError, type SoulsDb } from '../engine/index.ts';
import type { McpEndpoint } from '../mcp/http.ts';
import { bearerChallenge, TOKEN_REQUIRED, type Callers } from './auth.ts';
import { serveGraphiQLAsset } from './graphiql.ts';
import { HEALTH_PATH, READY_PATH, serveHealth, type RedisReadiness } from './health.ts';
import type { MemoryRelease } from './memory-release.ts';
import { METRICS_PATH, type Metrics } from './metrics.ts';
import type { Refusals } from './refusals.ts';
import type { RequestLine } from './request-line.ts';
import type { SingleConnections } from './sse.ts';
import { serveWebApp } from './web.ts';
import type { SoulsYoga } from './yoga.ts';

export type RouterOptions = {
  db: SoulsDb;
  redisReady?: RedisReadiness;
  /** null: no request line (the benchmark's breakdown only). */
  requestLine: RequestLine | null;
  release: MemoryRelease | null;
  refusals: Refusals;
  callers: Callers;
  metrics: Metrics;
  mcp: Pick<McpEndpoint, 'handles' | 'serve'>;
  singleConnections: Pick<SingleConnections, 'handles' | 'serve'>;
  yoga: SoulsYoga;
};

const pathOf = (req: IncomingMessage) => (req.url ?? '/').split('?')[0];

/** Load balancers' and scrapers' requests: they come every few seconds whatever the load, so they are not activity. */
const isProbe = (path: string) => path === HEALTH_PATH || path === READY_PATH || path === METRICS_PATH;

export function createRouter(options: RouterOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { db, release, refusals, mcp, singleConnections, yoga } = options;
  const readinessFailed = (error: unknown) => console.error(`souls: /ready: the database does not answer: ${describeError(error)}`);
  const failed = (res: ServerResponse) => () => {
    if (!res.headersSent) res.writeHead(500);
    res.end();
  };
  return (req, res) => {
    options.requestLine?.writeOnClose(req, res);
    const path = pathOf(req);
    if (release && !isProbe(path)) release.activity();
    if (serveHealth(req, res, db, readinessFailed, options.redisReady)) return;
    if (refusals.refused(req, res)) return;
    if (path === METRICS_PATH) return serveMetrics(req, res, options);
    if (mcp.handles(req)) return void mcp.serve(req, res).catch(failed(res));
    if (singleConnections.handles(req)) return void (refusals.unauthenticated(req, res) || singleConnections.serve(req, res).catch(failed(res)));
    // Only GET and HEAD can ask for a page or an asset, which a browser fetches without a token.
    if (req.method !== 'GET' && req.method !== 'HEAD') return void (refusals.unauthenticated(req, res) || yoga(req, res));
    serveStatic(req, res).then((served) => {
      if (!served && !refusals.unauthenticated(req, res)) void yoga(req, res);
    }, failed(res));
  };
}

async function serveStatic(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  return (await serveGraphiQLAsset(req, res)) || (await serveWebApp(req, res));
}

const jsonError = (res: ServerResponse, status: number, message: string, code: string, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
};

/** Like the API: open without tokens (loopback), else a token with the admin scope. */
function serveMetrics(req: IncomingMessage, res: ServerResponse, { callers, metrics }: Pick<RouterOptions, 'callers' | 'metrics'>): void {
  req.resume();
  const authorization = req.headers.authorization;
  const caller = callers.of(authorization);
  if (!caller) return jsonError(res, 401, TOKEN_REQUIRED, 'UNAUTHENTICATED', { 'www-authenticate': bearerChallenge(authorization) });
  if (req.method !== 'GET' && req.method !== 'HEAD') return jsonError(res, 405, 'only GET and HEAD are allowed', 'METHOD_NOT_ALLOWED', { allow: 'GET, HEAD' });
  if (!caller.scopes.has('admin')) return jsonError(res, 403, `the token "${caller.name}" may not read ${METRICS_PATH}: it needs the admin scope`, 'FORBIDDEN');
  metrics.scrape(res, req).catch(() => {
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
}
