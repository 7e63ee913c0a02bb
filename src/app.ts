import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { NoSchemaIntrospectionCustomRule } from 'graphql';
import { createGraphQLError, createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { GraphQLError, type DocumentNode } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import { schema } from '../schema/index.ts';
import { authenticate, localCaller, type Caller, type TokenEntry } from './auth.ts';
import { createContext, type Context } from './context.ts';
import { defaultLimits, type Limits } from './limits.ts';
import { closeSoulsDb, type SoulsDb } from './engine/index.ts';
import { isExpected, maskError } from './errors-graphql.ts';
import { renderLocalGraphiQL, serveGraphiQLAsset } from './graphiql.ts';
import { serveWebApp } from './web.ts';
import { createSoulsPubSub, type SoulsPubSub } from './pubsub.ts';

export const GRAPHQL_PATH = '/graphql';

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
};

/** Header names a request can carry to show it is not a cross-site form post (see useCSRFPrevention). */
export const CSRF_HEADERS = ['x-graphql-yoga-csrf', 'authorization'];

/**
 * Bodies must declare their length and stay under the limit: answered here,
 * with a GraphQL-shaped error, before anything reads them.
 */
function refuseOversizedBody(req: IncomingMessage, res: ServerResponse, maxBytes: number): boolean {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return false;
  const declared = req.headers['content-length'];
  const chunked = declared === undefined && req.headers['transfer-encoding'] !== undefined;
  if (!chunked && (declared === undefined || Number(declared) <= maxBytes)) return false;
  const [status, code, message] = chunked
    ? [411, 'LENGTH_REQUIRED', 'request bodies must declare their Content-Length']
    : [413, 'PAYLOAD_TOO_LARGE', `request body over the limit of ${maxBytes} bytes`];
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
  res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
  req.resume();
  return true;
}

async function serveStatic(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  return (await serveGraphiQLAsset(req, res)) || (await serveWebApp(req, res));
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

export type App = {
  yoga: YogaServerInstance<Record<string, unknown>, Context>;
  server: Server;
  pubsub: SoulsPubSub;
  db: SoulsDb;
  /** Listens on host:port (port 0 picks a free one); resolves with the address actually bound. */
  start(port: number, host: string): Promise<{ port: number; host: string; url: string }>;
  /** Closes sockets and subscriptions, stops listening, checkpoints and closes the database. */
  stop(): Promise<void>;
};

/** HTTP (queries, mutations, SSE subscriptions, GraphiQL) and graphql-ws on one port and one path. */
export function buildApp(options: AppOptions): App {
  const { db } = options;
  const tokens = options.tokens && options.tokens.length > 0 ? options.tokens : null;
  const limits: Limits = { ...defaultLimits, ...options.limits };
  const introspection = options.introspection !== false;
  const pubsub = createSoulsPubSub();

  /** The caller a credential names; without tokens, the local caller; with tokens and no valid one, null. */
  const callerOf = (authorization: unknown): Caller | null =>
    tokens === null ? localCaller : authenticate(typeof authorization === 'string' ? authorization : null, tokens);

  const plugins: Plugin[] = [
    useCSRFPrevention({ requestHeaders: CSRF_HEADERS }),
    EnvelopArmorPlugin({
      // Fields only: by default graphql-armor counts each fragment spread as two levels and each inline fragment as one
      // (and multiplies the cost accordingly), so the same query written with fragments looked far deeper and costlier.
      maxDepth: { n: limits.maxDepth, ignoreIntrospection: true, flattenFragments: true },
      maxAliases: { n: limits.maxAliases },
      maxTokens: { n: limits.maxTokens },
      maxDirectives: { n: limits.maxDirectives },
      costLimit: { maxCost: limits.maxCost, ignoreIntrospection: true, flattenFragments: true },
      blockFieldSuggestion: { enabled: !introspection },
    }) as Plugin,
    // Variable coercion failures (execute's early errors, no data) are request errors like validation errors:
    // 200 under application/json, 400 under application/graphql-response+json (GraphQL over HTTP).
    {
      onExecute: () => ({
        onExecuteDone: ({ result }) => {
          if ('errors' in result && !('data' in result)) markRequestErrors(result.errors);
        },
      }),
    },
    // Yoga reads GET (and form-encoded) `variables` and `extensions` with a bare JSON.parse, and its
    // SyntaxError was masked as an internal error: malformed JSON is the client's error, as for POST bodies.
    {
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
    },
  ];
  if (!introspection) plugins.push(hidingTheSchema());

  const yoga = createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: GRAPHQL_PATH,
    plugins,
    multipart: false,
    context: (initial) => {
      // WebSocket callers were authenticated once, at connection_init.
      const caller = (initial as { caller?: Caller }).caller ?? callerOf((initial as { request?: Request }).request?.headers.get('authorization'));
      if (!caller) throw createGraphQLError('a valid bearer token is required (Authorization: Bearer <token>)', { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
      return createContext(db, pubsub, caller);
    },
    maskedErrors: { maskError },
    graphiql: options.graphiql === false ? false : { title: 'Souls', defaultQuery: rosterQuery, subscriptionsProtocol: 'WS' },
    renderGraphiQL: renderLocalGraphiQL,
    landingPage: false,
    logging: {
      debug: () => {},
      info: (...args) => console.info(...args),
      warn: (...args) => console.warn(...args),
      error: (...args) => {
        if (!args.some(isExpected)) console.error(...args);
      },
    },
  });

  const server = createServer((req, res) => {
    if (refuseOversizedBody(req, res, limits.maxBodyBytes)) return;
    serveStatic(req, res).then(
      (served) => {
        if (!served) void yoga(req, res);
      },
      () => {
        res.writeHead(500).end();
      },
    );
  });
  const wsServer = new WebSocketServer({ server, path: GRAPHQL_PATH });
  const wsCallers = new WeakMap<object, Caller>();
  const wsDisposable = useServer(
    {
      connectionInitWaitTimeout: options.wsInitTimeoutMs ?? 3000,
      execute: (args: any) => args.rootValue.execute(args),
      subscribe: (args: any) => args.rootValue.subscribe(args),
      // Refused here, the socket closes with 4403 Forbidden.
      onConnect: (ctx) => {
        const caller = callerOf(ctx.connectionParams?.authorization);
        if (!caller) return false;
        wsCallers.set(ctx.extra.socket, caller);
        return true;
      },
      onSubscribe: async (ctx, _id, payload) => {
        const caller = wsCallers.get(ctx.extra.socket)!;
        const enveloped = yoga.getEnveloped({ ...ctx, req: ctx.extra.request, socket: ctx.extra.socket, params: payload, caller });
        let document: DocumentNode;
        try {
          document = enveloped.parse(payload.query);
          const errors = enveloped.validate(enveloped.schema, document);
          if (errors.length > 0) return errors;
        } catch (error) {
          // Syntax errors and the limits (depth, tokens…) are thrown: an error message for this operation, not a 4500 closing the socket.
          if (error instanceof GraphQLError) return [error];
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
    },
    wsServer,
  );

  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  let stopped: Promise<void> | null = null;
  return {
    yoga,
    server,
    pubsub,
    db,
    start: (port, host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address();
          const bound = typeof address === 'object' && address ? address.port : port;
          const shownHost = host.includes(':') ? `[${host}]` : host;
          resolve({ port: bound, host, url: `http://${shownHost}:${bound}${GRAPHQL_PATH}` });
        });
      }),
    stop: () =>
      (stopped ??= (async () => {
        await wsDisposable.dispose();
        for (const client of wsServer.clients) client.terminate();
        await new Promise<void>((resolve) => wsServer.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        closeSoulsDb(db);
      })()),
  };
}
