import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { getOperationAST, NoSchemaIntrospectionCustomRule } from 'graphql';
import { createGraphQLError, createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { GraphQLError, type DocumentNode, type GraphQLSchema } from 'graphql';
import type { WebSocketServer } from 'ws';
import { schema } from '../../schema/index.ts';
import { authenticate, bearerChallenge, localCaller, tokenTable, type Caller, type TokenEntry } from './auth.ts';
import { createContext, type Context } from './context.ts';
import { defaultLimits, nestingDepth, type Limits } from './limits.ts';
import { boundingCost } from './request-cost.ts';
import { sharingSubscriptions } from './subscriptions.ts';
import { closeSoulsDb, describeError, getCrystallization, settleSlicedWork, type SoulsDb } from '../engine/index.ts';
import { isExpected, maskError, storageErrorOf } from './errors-graphql.ts';
import { localGraphiQL, serveGraphiQLAsset } from './graphiql.ts';
import { corsFor, refuseByOriginOrHost, type OriginPolicy, type Refusal } from './origin.ts';
import { serveWebApp } from './web.ts';
import { HEALTH_PATH, READY_PATH, serveHealth } from './health.ts';
import { createLogger, loggable, requestIdOf, type Logger } from './log.ts';
import { createMetrics, METRICS_PATH } from './metrics.ts';
import { startMemoryRelease, type MemoryRelease } from './memory-release.ts';
import { createSoulsPubSub, type SoulsPubSub } from './pubsub.ts';
import { createRedisEvents, type RedisEvents } from './redis-events.ts';
import { mcpEndpoint } from '../mcp/endpoint.ts';

export const GRAPHQL_PATH = '/graphql';

/** Load balancers' and scrapers' requests: they come every few seconds whatever the load, so they are not activity. */
const isProbe = (url: string | undefined) => {
  const path = (url ?? '/').split('?')[0];
  return path === HEALTH_PATH || path === READY_PATH || path === METRICS_PATH;
};
const mib = (bytes: number) => Math.round(bytes / 2 ** 20);

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
  /** How often graphql-ws pings each socket; one that has not answered by the next ping is closed. Default 12000 ms. */
  wsKeepAliveMs?: number;
  /** Origins besides the server's own whose pages may call the API; none by default. */
  corsOrigins?: readonly string[];
  /** Host names served besides loopback ones on a server without tokens (DNS rebinding guard). */
  allowedHosts?: readonly string[];
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

/**
 * The layers a GraphQL request over HTTP goes through besides Yoga itself: the benchmark switches each off in turn
 * to show what it costs. `requestLine`: the request record, the log line and the request metrics.
 */
export const REQUEST_LAYERS = ['requestLine', 'csrf', 'nesting', 'armor', 'requestErrors', 'cost', 'masking'] as const;
export type RequestLayer = (typeof REQUEST_LAYERS)[number];

/** What a WebSocket may send before connection_ack: a connection_init with its connectionParams, no more. */
export const PRE_ACK_MAX_BYTES = 64 * 1024;

/** Header names a request can carry to show it is not a cross-site form post (see useCSRFPrevention). */
export const CSRF_HEADERS = ['x-graphql-yoga-csrf', 'authorization'];

const hasBody = (req: IncomingMessage) => req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS';

/**
 * Bodies must declare their length and stay under the limit: answered here,
 * with a GraphQL-shaped error, before anything reads them.
 */
function oversizedBody(req: IncomingMessage, maxBytes: number): Refusal | null {
  if (!hasBody(req)) return null;
  const declared = req.headers['content-length'];
  const chunked = declared === undefined && req.headers['transfer-encoding'] !== undefined;
  if (!chunked && (declared === undefined || Number(declared) <= maxBytes)) return null;
  return chunked
    ? { status: 411, code: 'LENGTH_REQUIRED', message: 'request bodies must declare their Content-Length' }
    : { status: 413, code: 'PAYLOAD_TOO_LARGE', message: `request body over the limit of ${maxBytes} bytes` };
}

/** A GraphQL result in the form the client accepts, as Yoga would send it: one SSE event, or JSON. */
function graphqlAnswer(accept: string | undefined, result: object): { type: string; text: string } {
  const json = JSON.stringify(result);
  const wants = (type: string) => accept?.includes(type) === true;
  if (wants('text/event-stream') && !wants('application/json') && !wants('application/graphql-response+json')) {
    return { type: 'text/event-stream', text: `event: next\ndata: ${json}\n\nevent: complete\ndata:\n\n` };
  }
  return { type: wants('application/graphql-response+json') ? 'application/graphql-response+json' : 'application/json', text: json };
}

/** Answers a refused request with a GraphQL-shaped error before anything reads its body. */
function refuse(req: IncomingMessage, res: ServerResponse, { status, code, message }: Refusal): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
  res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
  req.resume();
}

async function serveStatic(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  return (await serveGraphiQLAsset(req, res)) || (await serveWebApp(req, res));
}

/** Refuses a document nested deeper than the limit before the recursive parser can overflow the stack. */
function boundedNesting(maxNesting: number): Plugin {
  return {
    onParse: ({ params }) => {
      const source = typeof params.source === 'string' ? params.source : params.source.body;
      if (nestingDepth(source, maxNesting) > maxNesting) {
        throw createGraphQLError(`the document nests brackets, braces or parentheses more than ${maxNesting} deep`, {
          extensions: { code: 'BAD_REQUEST', http: { spec: true, status: 400 } },
        });
      }
    },
  };
}

/** Flags request errors (status 400) as the GraphQL-over-HTTP spec's: answered 200 under application/json. */
function markRequestErrors(errors: readonly GraphQLError[] | undefined): void {
  for (const error of errors ?? []) {
    const http = error.extensions?.http as { status?: number; spec?: boolean } | undefined;
    if (http?.status === 400) http.spec = true;
  }
}

/**
 * Without introspection, no answer may show the schema, whatever the transport:
 * the introspection rule for every validation (useDisableIntrospection keys on
 * the HTTP request, so graphql-ws operations escaped it), and no "Did you mean …?"
 * in any error (graphql-armor's mask misses enum values and variable errors).
 */
function hidingTheSchema(): Plugin {
  const hide = (errors: readonly unknown[] | undefined) => {
    for (const error of errors ?? []) {
      const e = error as { message?: unknown };
      if (typeof e.message === 'string') e.message = e.message.replace(/\s*Did you mean [^?]*\?/g, ' [Suggestion hidden]');
    }
  };
  const done = ({ result }: { result: unknown }) => {
    if (result && typeof result === 'object' && 'errors' in result) hide((result as { errors?: readonly unknown[] }).errors);
  };
  return {
    onValidate: ({ addValidationRule }) => {
      addValidationRule(NoSchemaIntrospectionCustomRule);
      return ({ result }) => hide(result);
    },
    onExecute: () => ({ onExecuteDone: done }),
    onSubscribe: () => ({ onSubscribeResult: done }),
  };
}

/**
 * GraphQL work on long-lived connections is activity too: operations over graphql-ws and each event a subscription
 * sends (over a socket or SSE), so a server busy only with its sockets is never taken for a quiet one.
 */
function countsAsActivity(release: MemoryRelease): Plugin {
  const active = () => release.activity();
  return {
    onExecute: active,
    onSubscribe: () => {
      active();
      return { onSubscribeResult: () => ({ onNext: active }) };
    },
  };
}

const errorCodeOf = (error: { extensions?: Readonly<Record<string, unknown>> }): string | null => (typeof error.extensions?.code === 'string' ? error.extensions.code : null);

/** An operation on a graphql-ws socket, from its subscribe message to its end, for the operation metrics. */
type WsOperation = { started: number; operation: string | null; type: string | null; errorCodes: Set<string> };

/** What the request line says beyond what the socket knows, filled in by the GraphQL layer. */
type RequestRecord = { id: string; started: number; operation: string | null; operationType: string | null; errorCodes: Set<string> };

/** Records the operation and the error codes of a GraphQL request on its request line. */
function recordingOperations(records: WeakMap<object, RequestRecord>): Plugin {
  const recordOf = (context: unknown) => records.get((context as { req?: object } | undefined)?.req ?? {});
  const name = (context: unknown, document: DocumentNode, operationName: string | null | undefined) => {
    const record = recordOf(context);
    if (!record) return;
    const operation = getOperationAST(document, operationName);
    record.operation = operation?.name ? loggable(operation.name.value) : record.operation;
    record.operationType = operation?.operation ?? record.operationType;
  };
  const named = ({ args }: { args: { contextValue: unknown; document: DocumentNode; operationName?: string | null } }) => name(args.contextValue, args.document, args.operationName);
  return {
    onParams: ({ params, context }) => {
      const record = recordOf(context);
      if (record && typeof params.operationName === 'string') record.operation = loggable(params.operationName);
    },
    // Validation runs before the caller is known: a refused or invalid operation is named too.
    onValidate: ({ context, params }) => name(context, params.documentAST, (context as { params?: { operationName?: string } }).params?.operationName),
    onExecute: named,
    onSubscribe: named,
    onResultProcess: ({ result, serverContext }) => {
      const record = recordOf(serverContext);
      if (!record || Symbol.asyncIterator in (result as object)) return;
      for (const each of Array.isArray(result) ? result : [result]) {
        for (const error of (each as { errors?: ReadonlyArray<{ extensions?: { code?: unknown } }> }).errors ?? []) {
          record.errorCodes.add(errorCodeOf(error) ?? 'UNKNOWN');
        }
      }
    },
  };
}

export type App = {
  yoga: YogaServerInstance<Record<string, unknown>, Context>;
  server: Server;
  pubsub: SoulsPubSub;
  db: SoulsDb;
  /** Listens on host:port (port 0 picks a free one); resolves with the address actually bound. */
  start(port: number, host: string): Promise<{ port: number; host: string; url: string }>;
  /** Closes sockets and subscriptions, stops listening, checkpoints and closes the database (`checkpointDeferred`: why it could not, e.g. a full disk). */
  stop(): Promise<{ checkpointDeferred: string | null }>;
};

/** HTTP (queries, mutations, SSE subscriptions, GraphiQL) and graphql-ws on one port and one path; MCP at /mcp on the same port. */
export function buildApp(options: AppOptions): App {
  const { db } = options;
  const tokens = options.tokens && options.tokens.length > 0 ? options.tokens : null;
  const limits: Limits = { ...defaultLimits, ...options.limits };
  const introspection = options.introspection !== false;
  const metrics = createMetrics();
  Object.assign(db.observer, metrics.observer);
  metrics.watchPool(db.store);
  const logger = options.logger ?? createLogger({ level: 'silent', clock: db.clock });
  metrics.watchEmbeddings(() => db.semantic && { queued: db.semantic.queued, pending: db.semantic.pending });
  // One line when the embeddings endpoint's circuit opens and one when it closes again (never its URL's secrets or key).
  db.observer.embedCircuit = (change) => {
    metrics.observer.embedCircuit(change);
    if (change.state === 'open' && change.from === 'closed') logger.warn({ model: db.semantic?.embedder.model, failures: change.failures, reason: change.reason }, 'embedder circuit open: the endpoint is left alone, shards compare lexically until it answers');
    else if (change.state === 'closed') logger.info({ model: db.semantic?.embedder.model }, 'embedder circuit closed: the endpoint answers again');
  };
  const redis: RedisEvents | null = options.redis ? createRedisEvents({ ...options.redis, logger, counters: { ...metrics.redis, dropped: metrics.pubsub.dropped } }) : null;
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
  // Semantic vectors land after dropShard answered; souls they make ready are announced as any write's are.
  const stopAnnouncing = db.semantic?.onReady((soulIds) => {
    void getCrystallization(db, soulIds).then((verdicts) => {
      const at = db.clock.now();
      pubsub.publishAll('crystallizationReady', soulIds.map((soulId) => ({ soulId, priority: verdicts.get(soulId)?.priority ?? 0, at })));
    }, () => {
      // The database closed meanwhile: nothing to announce.
    });
  });
  const originPolicy: OriginPolicy = { corsOrigins: options.corsOrigins ?? [], allowedHosts: tokens ? null : (options.allowedHosts ?? []) };
  const refusalOf = (req: IncomingMessage) => refuseByOriginOrHost({ origin: req.headers.origin, host: req.headers.host }, originPolicy);

  const table = tokens ? tokenTable(tokens) : null;
  /** The caller a credential names; without tokens, the local caller; with tokens and no valid one, null. */
  const callerOf = (authorization: unknown): Caller | null =>
    table === null ? localCaller : authenticate(typeof authorization === 'string' ? authorization : null, table);

  const records = new WeakMap<object, RequestRecord>();
  const newRecord = (req: IncomingMessage): RequestRecord => {
    const record = { id: requestIdOf(req.headers['x-request-id']), started: performance.now(), operation: null, operationType: null, errorCodes: new Set<string>() };
    records.set(req, record);
    return record;
  };
  const callerName = (authorization: unknown) => {
    try {
      return callerOf(authorization)?.name ?? null;
    } catch {
      return null;
    }
  };
  const durationOf = (record: RequestRecord) => Math.round((performance.now() - record.started) * 1000) / 1000;

  const omitted = options.omit ?? new Set<RequestLayer>();
  const layered: Array<[RequestLayer | null, Plugin]> = [
    ['requestLine', recordingOperations(records)],
    ['csrf', useCSRFPrevention({ requestHeaders: CSRF_HEADERS })],
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
      blockFieldSuggestion: { enabled: !introspection },
    }) as Plugin],
    // Variable coercion failures (execute's early errors, no data) are request errors like validation errors:
    // 200 under application/json, 400 under application/graphql-response+json (GraphQL over HTTP).
    ['requestErrors', {
      onExecute: () => ({
        onExecuteDone: ({ result }) => {
          if ('errors' in result && !('data' in result)) markRequestErrors(result.errors);
        },
      }),
    }],
    // Yoga reads GET (and form-encoded) `variables` and `extensions` with a bare JSON.parse, and its
    // SyntaxError was masked as an internal error: malformed JSON is the client's error, as for POST bodies.
    ['requestErrors', {
      onRequestParse: ({ requestParser, setRequestParser }) => {
        if (!requestParser) return;
        setRequestParser(async (request) => {
          try {
            return await requestParser(request);
          } catch (error) {
            if (!(error instanceof SyntaxError)) throw error;
            throw createGraphQLError('the "variables" and "extensions" parameters must be valid JSON', { extensions: { code: 'BAD_REQUEST', http: { spec: true, status: 400 } } });
          }
        });
      },
    }],
    ['cost', boundingCost(limits, db.settings)],
    [null, sharingSubscriptions(limits, metrics.pubsub.tooSlow)],
    [null, metrics.plugin()],
  ];
  if (release) layered.push([null, countsAsActivity(release)]);
  if (!introspection) layered.push([null, hidingTheSchema()]);
  const plugins = layered.filter(([layer]) => layer === null || !omitted.has(layer)).map(([, plugin]) => plugin);

  const yoga = createYoga<Record<string, unknown>, Context>({
    schema: options.schema ?? schema,
    graphqlEndpoint: GRAPHQL_PATH,
    plugins,
    multipart: false,
    cors: (request) => corsFor(request, originPolicy),
    context: (initial) => {
      // WebSocket callers were authenticated once, at connection_init.
      const authorization = (initial as { request?: Request }).request?.headers.get('authorization');
      const caller = (initial as { caller?: Caller }).caller ?? callerOf(authorization);
      if (!caller) {
        throw createGraphQLError('a valid bearer token is required (Authorization: Bearer <token>)', {
          extensions: { code: 'UNAUTHENTICATED', http: { status: 401, headers: { 'www-authenticate': bearerChallenge(authorization) } } },
        });
      }
      return createContext(db, pubsub, caller, limits.maxCost);
    },
    maskedErrors: omitted.has('masking') ? false : { maskError },
    graphiql: options.graphiql === false ? false : { title: 'Souls', defaultQuery: rosterQuery, subscriptionsProtocol: 'WS' },
    renderGraphiQL: localGraphiQL({ requiresToken: tokens !== null }),
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

  /** Like the API: open without tokens (loopback), else a token with the admin scope. */
  const serveMetrics = (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json; charset=utf-8' });
      return res.end(JSON.stringify({ errors: [{ message: 'only GET and HEAD are allowed', extensions: { code: 'METHOD_NOT_ALLOWED' } }] }));
    }
    const authorization = req.headers.authorization;
    const caller = callerOf(authorization);
    if (!caller) {
      res.writeHead(401, { 'content-type': 'application/json; charset=utf-8', 'www-authenticate': bearerChallenge(authorization) });
      return res.end(JSON.stringify({ errors: [{ message: 'a valid bearer token is required (Authorization: Bearer <token>)', extensions: { code: 'UNAUTHENTICATED' } }] }));
    }
    if (!caller.scopes.has('admin')) {
      res.writeHead(403, { 'content-type': 'application/json; charset=utf-8' });
      return res.end(JSON.stringify({ errors: [{ message: `the token "${caller.name}" may not read ${METRICS_PATH}: it needs the admin scope`, extensions: { code: 'FORBIDDEN' } }] }));
    }
    metrics.scrape(res, req).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  };

  /** The request's log line and metrics, when its response closes. */
  const lineOnClose = (req: IncomingMessage, res: ServerResponse) => {
    const record = newRecord(req);
    res.setHeader('x-request-id', record.id);
    res.once('close', () => {
      const path = loggable((req.url ?? '/').split('?')[0]);
      const line = {
        requestId: record.id,
        method: req.method,
        path,
        operation: record.operation,
        operationType: record.operationType,
        caller: callerName(req.headers.authorization),
        status: res.statusCode,
        durationMs: durationOf(record),
        errorCodes: [...record.errorCodes],
        ...(res.writableFinished ? {} : { aborted: true }),
      };
      // Probes every few seconds would drown the log: they show at debug level unless they fail.
      metrics.request(line);
      const probe = (path === HEALTH_PATH || path === READY_PATH) && res.statusCode < 500;
      if (probe) logger.debug(line, 'request');
      else logger.info(line, 'request');
    });
  };

  const mcp = mcpEndpoint({ db, pubsub, callerOf, maxBodyBytes: limits.maxBodyBytes, limits });
  /**
   * With tokens, a body from nobody known is never read: refused from its headers, so that unauthenticated clients
   * cannot make the server hold their bodies (GraphQL, MCP and any other path alike).
   */
  const unauthenticatedBody = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (table === null || !hasBody(req) || callerOf(req.headers.authorization) !== null) return false;
    records.get(req)?.errorCodes.add('UNAUTHENTICATED');
    const message = 'a valid bearer token is required (Authorization: Bearer <token>)';
    const origin = req.headers.origin;
    // A page of an allowed origin can read why, as it could when GraphQL answered.
    const cors = origin && originPolicy.corsOrigins.includes(origin) ? { 'access-control-allow-origin': origin, vary: 'Origin' } : {};
    const { type, text } = mcp.handles(req)
      ? { type: 'application/json', text: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message } }) }
      : graphqlAnswer(req.headers.accept, { errors: [{ message, extensions: { code: 'UNAUTHENTICATED' } }] });
    res.writeHead(401, { 'content-type': `${type}; charset=utf-8`, 'www-authenticate': bearerChallenge(req.headers.authorization), connection: 'close', ...cors });
    res.end(text);
    req.resume();
    return true;
  };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (!omitted.has('requestLine')) lineOnClose(req, res);
    if (release && !isProbe(req.url)) release.activity();
    if (serveHealth(req, res, db, (error) => console.error(`souls: /ready: the database does not answer: ${describeError(error)}`), redis?.ready)) return;
    const refusal = refusalOf(req) ?? oversizedBody(req, limits.maxBodyBytes);
    if (refusal) return refuse(req, res, refusal);
    if (unauthenticatedBody(req, res)) return;
    if ((req.url ?? '/').split('?')[0] === METRICS_PATH) return serveMetrics(req, res);
    if (mcp.handles(req)) {
      mcp.serve(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
      return;
    }
    // Only GET and HEAD can ask for a page or an asset: the API's POSTs go straight to Yoga.
    if (req.method !== 'GET' && req.method !== 'HEAD') return void yoga(req, res);
    serveStatic(req, res).then(
      (served) => {
        if (!served) void yoga(req, res);
      },
      () => {
        res.writeHead(500).end();
      },
    );
  };
  const server = createServer(
    {
      // Node's requestTimeout bounds how long headers and body take to arrive (answered 408); it is checked every
      // connectionsCheckingInterval, so that interval follows it.
      requestTimeout: limits.bodyTimeoutMs,
      headersTimeout: Math.min(60_000, limits.bodyTimeoutMs),
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.round(limits.bodyTimeoutMs / 10))),
    },
    handle,
  );
  /**
   * graphql-ws on the same port and path. ws and graphql-ws (about 12 MiB resident) are loaded by the first
   * WebSocket upgrade rather than at start: a server no socket ever reaches never holds them.
   */
  const openWebSockets = async (): Promise<{ wsServer: WebSocketServer; dispose: () => Promise<void> | void }> => {
    const [{ WebSocketServer }, { useServer }] = await Promise.all([import('ws'), import('graphql-ws/use/ws')]);
    const wsServer = new WebSocketServer({
      noServer: true,
      path: GRAPHQL_PATH,
      // One message is at most one request body; ws closes a socket that sends more with 1009.
      maxPayload: limits.maxBodyBytes,
      verifyClient: ({ req }, done) => {
        const refusal = refusalOf(req);
        if (refusal) done(false, refusal.status, refusal.message);
        else done(true);
      },
    });
    // Until connection_ack nobody is known: a socket that sends more than a connection_init needs is closed (1009)
    // before its bytes pile up, counted on the TCP stream because ws buffers a whole message before handing it over.
    const preAckLimits = new WeakMap<object, () => void>();
    wsServer.on('headers', (headers, request) => {
      headers.push(`x-request-id: ${newRecord(request).id}`);
    });
    wsServer.on('connection', (socket, request) => {
      metrics.webSockets.inc();
      socket.once('close', (code) => {
        metrics.webSockets.dec();
        const record = records.get(request);
        if (!record) return;
        const caller = wsCallers.get(socket);
        logger.info({ requestId: record.id, method: 'GET', path: loggable(request.url?.split('?')[0] ?? '/'), protocol: 'websocket', caller: caller?.name ?? null, status: 101, closeCode: code, durationMs: durationOf(record) }, 'websocket closed');
      });
      const stream = request.socket;
      let received = 0;
      const count = (chunk: Buffer) => {
        received += chunk.length;
        if (received <= PRE_ACK_MAX_BYTES) return;
        stream.off('data', count);
        // The close frame goes out, then the connection ends: nothing more of the message is read or kept.
        socket.close(1009, `more than ${PRE_ACK_MAX_BYTES} bytes before connection_ack`);
        stream.pause();
        stream.end(() => socket.terminate());
      };
      stream.on('data', count);
      preAckLimits.set(socket, () => stream.off('data', count));
    });
    const wsCallers = new WeakMap<object, Caller>();
    /** Each socket's operations in flight, by their id, until they complete or fail: one operation metric each. */
    const wsOperations = new WeakMap<object, Map<string, WsOperation>>();
    const wsOperation = (socket: object, id: string) => wsOperations.get(socket)?.get(id);
    const wsOperationEnded = (socket: object, id: string) => {
      const record = wsOperation(socket, id);
      if (!record) return;
      wsOperations.get(socket)!.delete(id);
      metrics.operation({ ...record, transport: 'websocket', durationMs: performance.now() - record.started });
    };
    const graphqlWs = useServer(
      {
        connectionInitWaitTimeout: options.wsInitTimeoutMs ?? 3000,
        execute: (args: any) => args.rootValue.execute(args),
        subscribe: (args: any) => args.rootValue.subscribe(args),
        // Refused here, the socket closes with 4403 Forbidden.
        onConnect: (ctx) => {
          const caller = callerOf(ctx.connectionParams?.authorization);
          if (!caller) return false;
          preAckLimits.get(ctx.extra.socket)?.();
          wsCallers.set(ctx.extra.socket, caller);
          return true;
        },
        onSubscribe: async (ctx, id, payload) => {
          const caller = wsCallers.get(ctx.extra.socket)!;
          const record: WsOperation = { started: performance.now(), operation: payload.operationName ?? null, type: null, errorCodes: new Set() };
          if (!wsOperations.has(ctx.extra.socket)) wsOperations.set(ctx.extra.socket, new Map());
          wsOperations.get(ctx.extra.socket)!.set(id, record);
          const enveloped = yoga.getEnveloped({ ...ctx, req: ctx.extra.request, socket: ctx.extra.socket, params: payload, caller });
          let document: DocumentNode;
          try {
            document = enveloped.parse(payload.query);
            const operation = getOperationAST(document, payload.operationName);
            record.operation = operation?.name?.value ?? record.operation;
            record.type = operation?.operation ?? null;
            const errors = enveloped.validate(enveloped.schema, document);
            if (errors.length > 0) {
              record.errorCodes.add('GRAPHQL_VALIDATION_FAILED');
              return errors;
            }
          } catch (error) {
            // Syntax errors and the limits (depth, tokens…) are thrown: an error message for this operation, not a 4500 closing the socket.
            if (error instanceof GraphQLError) {
              record.errorCodes.add(errorCodeOf(error) ?? 'GRAPHQL_PARSE_FAILED');
              return [error];
            }
            throw error;
          }
          return {
            schema: enveloped.schema,
            operationName: payload.operationName,
            document,
            variableValues: payload.variables,
            contextValue: await enveloped.contextFactory(),
            rootValue: { execute: enveloped.execute, subscribe: enveloped.subscribe },
          };
        },
        onNext: (ctx, id, _payload, _args, result) => {
          const record = wsOperation(ctx.extra.socket, id);
          for (const error of result.errors ?? []) record?.errorCodes.add(errorCodeOf(error) ?? 'UNKNOWN');
        },
        onError: (ctx, id, _payload, errors) => {
          const record = wsOperation(ctx.extra.socket, id);
          for (const error of errors) record?.errorCodes.add(errorCodeOf(error) ?? 'UNKNOWN');
          wsOperationEnded(ctx.extra.socket, id);
        },
        onComplete: (ctx, id) => wsOperationEnded(ctx.extra.socket, id),
      },
      wsServer,
      options.wsKeepAliveMs ?? 12_000,
    );
    return { wsServer, dispose: () => graphqlWs.dispose() };
  };
  let webSockets: ReturnType<typeof openWebSockets> | null = null;
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    release?.activity();
    (webSockets ??= openWebSockets()).then(
      ({ wsServer }) => wsServer.handleUpgrade(req, socket, head, (client) => wsServer.emit('connection', client, req)),
      (error: unknown) => {
        console.error(`souls: WebSockets could not start: ${error instanceof Error ? error.message : String(error)}`);
        socket.destroy();
      },
    );
  });

  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  let stopped: Promise<{ checkpointDeferred: string | null }> | null = null;
  return {
    yoga,
    server,
    pubsub,
    db,
    start: (port, host) =>
      new Promise((resolve, reject) => {
        // ws forwards the server's errors to graphql-ws, which prints them with a stack; a failed listen (a port in
        // use) is the caller's to report, so only `reject` hears it.
        const forwarders = server.listeners('error') as Array<(error: Error) => void>;
        server.removeAllListeners('error');
        const restore = () => {
          server.off('error', failed);
          for (const listener of forwarders) server.on('error', listener);
        };
        const failed = (error: Error) => {
          restore();
          reject(error);
        };
        server.on('error', failed);
        server.listen(port, host, () => {
          restore();
          release?.releaseNow();
          const address = server.address();
          const bound = typeof address === 'object' && address ? address.port : port;
          const shownHost = host.includes(':') ? `[${host}]` : host;
          resolve({ port: bound, host, url: `http://${shownHost}:${bound}${GRAPHQL_PATH}` });
        });
      }),
    stop: () =>
      (stopped ??= (async () => {
        release?.stop();
        await mcp.close();
        const ws = await webSockets?.catch(() => null);
        if (ws) {
          await ws.dispose();
          for (const client of ws.wsServer.clients) client.terminate();
          await new Promise<void>((resolve) => ws.wsServer.close(() => resolve()));
        }
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await settleSlicedWork();
        stopAnnouncing?.();
        await redis?.close();
        return await closeSoulsDb(db);
      })()),
  };
}
