import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import { schema } from '../schema/index.ts';
import { createContext, type Context } from './context.ts';
import { closeSoulsDb, type SoulsDb } from './engine/index.ts';
import { isExpected, maskError } from './errors-graphql.ts';
import { renderLocalGraphiQL, serveGraphiQLAsset } from './graphiql.ts';
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

export type AppOptions = { db: SoulsDb; graphiql?: boolean };

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
  const pubsub = createSoulsPubSub();
  const yoga = createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: GRAPHQL_PATH,
    context: () => createContext(db, pubsub),
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
    serveGraphiQLAsset(req, res).then(
      (served) => {
        if (!served) void yoga(req, res);
      },
      () => {
        res.writeHead(500).end();
      },
    );
  });
  const wsServer = new WebSocketServer({ server, path: GRAPHQL_PATH });
  const wsDisposable = useServer(
    {
      execute: (args: any) => args.rootValue.execute(args),
      subscribe: (args: any) => args.rootValue.subscribe(args),
      onSubscribe: async (ctx, _id, payload) => {
        const enveloped = yoga.getEnveloped({ ...ctx, req: ctx.extra.request, socket: ctx.extra.socket, params: payload });
        const document = enveloped.parse(payload.query);
        const errors = enveloped.validate(enveloped.schema, document);
        if (errors.length > 0) return errors;
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
