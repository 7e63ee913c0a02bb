import { buildApp, type App, type AppOptions } from '../../src/server/app.ts';
import { manualClock, openSoulsDbAsync, type Embedder, type Settings } from '../../src/engine/index.ts';
import { testDatabase } from './replica.ts';

export type LiveServer = {
  app: App;
  url: string;
  wsUrl: string;
  clock: ReturnType<typeof manualClock>;
  /** POSTs one GraphQL operation; returns the parsed JSON body and the HTTP status. */
  request(query: string, variables?: Record<string, unknown>, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  /** The operation's `data`; throws with the whole answer when it is not a 200 without errors. */
  data(query: string, variables?: Record<string, unknown>, headers?: Record<string, string>): Promise<any>;
  stop(): Promise<void>;
};

/**
 * A real server on a free loopback port (or `port`, e.g. to restart one where its clients reconnect) over an in-memory
 * database (see testDatabase), or `path` (a file or a PostgreSQL URL), with a hand-moved clock.
 */
export async function startServer(options: { settings?: Partial<Settings>; start?: number; path?: string; port?: number; app?: Omit<AppOptions, 'db'>; embedder?: Embedder } = {}): Promise<LiveServer> {
  const clock = manualClock(options.start ?? Date.UTC(2026, 0, 1));
  const database = await testDatabase();
  const db = await openSoulsDbAsync({ clock, settings: options.settings, path: options.path ?? database.path, embedder: options.embedder });
  const app = buildApp({ redis: database.redis, ...options.app, db });
  const { url } = await app.start(options.port ?? 0, '127.0.0.1');
  const live: LiveServer = {
    app,
    url,
    wsUrl: url.replace(/^http/, 'ws'),
    clock,
    async request(query, variables, headers) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...headers },
        body: JSON.stringify({ query, variables }),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : null };
    },
    async data(query, variables, headers) {
      const { status, body } = await live.request(query, variables, headers);
      if (status !== 200 || body?.errors) throw new Error(`HTTP ${status}: ${JSON.stringify(body)}`);
      return body.data;
    },
    stop: async () => {
      await app.stop();
      await database.drop();
    },
  };
  return live;
}

/** Servers a test starts with `start`, each stopped after its test (register in the describe or file scope). */
export function serverPerTest(afterEach: (hook: () => Promise<void>) => void): (options?: Parameters<typeof startServer>[0]) => Promise<LiveServer> {
  let servers: LiveServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    servers = [];
  });
  return async (options = {}) => {
    const server = await startServer(options);
    servers.push(server);
    return server;
  };
}

/** A sample's value in a /metrics text (exactly these labels); 0 when the series is absent (a counter not yet moved). */
export function metricSample(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = match[2] ? match[2].split(',') : [];
    if (wanted.every((label) => have.includes(label)) && have.length === wanted.length) return Number(match[3]);
  }
  return 0;
}
