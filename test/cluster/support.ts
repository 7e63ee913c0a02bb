// Replicas for test/cluster: real `souls serve` processes on the database and Redis scripts/test-cluster.ts set up.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { cliRunner, type Child } from '../support/cli.ts';

export const cluster = {
  db: process.env.SOULS_CLUSTER_DB ?? '',
  redisUrl: process.env.SOULS_CLUSTER_REDIS_URL ?? '',
  prefix: process.env.SOULS_CLUSTER_REDIS_PREFIX ?? '',
};

export function requireCluster(): void {
  if (!cluster.db || !cluster.redisUrl || !cluster.prefix) throw new Error('test/cluster runs under `npm run test:cluster`, which creates its database and sets SOULS_CLUSTER_*');
}

export type Replica = {
  name: string;
  child: Child;
  /** http://127.0.0.1:PORT/graphql */
  url: string;
  wsUrl: string;
  base: string;
  /** The JSON log lines printed so far. */
  log(): Array<Record<string, unknown>>;
};

const runner = cliRunner({ startMs: 60_000, exitMs: 20_000 });
export const { exited, killAll } = runner;

/** `souls serve` on a free port over the cluster's database (or `db`), events through Redis (or `redisUrl`, e.g. a relay). */
export async function startReplica(name: string, redisUrl = cluster.redisUrl, db = cluster.db, flags: readonly string[] = []): Promise<Replica> {
  const child = runner.cli(['serve', '--port', '0', '--db', db, '--redis', redisUrl, '--redis-prefix', cluster.prefix, '--log-format', 'json', ...flags]);
  await runner.printed(child, /Events through Redis .*\n/);
  const url = /Souls API on (\S+)/.exec(child.output().stdout)![1];
  const replica: Replica = {
    name,
    child,
    url,
    wsUrl: url.replace(/^http/, 'ws'),
    base: url.replace(/graphql$/, ''),
    log: () =>
      child
        .output()
        .stdout.split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
  await until(async () => (await fetch(`${replica.base}ready`)).status === 200, () => `${name} to be ready: ${child.output().stdout}${child.output().stderr}`);
  return replica;
}

/** One operation over HTTP; throws on transport or GraphQL errors. */
export async function gql<T = any>(replica: Replica, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const response = await fetch(replica.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  const body = (await response.json()) as { data?: T; errors?: Array<{ message: string }> };
  if (body.errors?.length) throw new Error(`${replica.name}: ${body.errors.map((e) => e.message).join('; ')}`);
  return body.data!;
}

export async function until(done: () => boolean | Promise<boolean>, what: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await done()) return;
    } catch {
      // Not yet (a connection refused while a replica starts).
    }
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Live subscriptions a replica counts (its /metrics), by transport. */
export async function liveSubscriptions(replica: Replica): Promise<number> {
  const text = await (await fetch(`${replica.base}metrics`)).text();
  return [...text.matchAll(/^souls_subscriptions_active\{transport="\w+"\} (\d+)$/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}

export type Subscriber = { label: string; events: any[]; errors: unknown[]; client: Client };

/** A graphql-ws client on `replica` collecting every result of `query`. */
export function subscribe(replica: Replica, label: string, query: string, variables: Record<string, unknown> = {}): Subscriber {
  const client = createClient({ url: replica.wsUrl, webSocketImpl: WebSocket, lazy: false, retryAttempts: 0 });
  const subscriber: Subscriber = { label, events: [], errors: [], client };
  client.subscribe(
    { query, variables },
    {
      next: (result) => (result.errors ? subscriber.errors.push(result.errors) : subscriber.events.push(result.data)),
      error: (error) => subscriber.errors.push(error),
      complete: () => {},
    },
  );
  return subscriber;
}

export type Relay = { url: string; cut(): void; restore(): Promise<void>; close(): Promise<void> };

/** A TCP relay to Redis that the test can cut and restore, to take Redis away from one replica only. */
export function redisRelay(target: string): Promise<Relay> {
  return tcpRelay(target, 6379);
}

/**
 * A TCP relay to the server of `target` (a URL) that the test can cut (listener closed, every connection dropped, as a
 * network cut or a restarting server does) and restore on the same port; `url` is `target` through the relay.
 */
export async function tcpRelay(target: string, defaultPort: number): Promise<Relay> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let listening: Server | null = null;
  let boundPort = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      const server = createServer((client) => {
        const upstream = connect(Number(port || defaultPort), hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', () => socket.destroy());
          socket.on('close', () => {
            sockets.delete(socket);
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(boundPort, '127.0.0.1', () => {
        boundPort = (server.address() as { port: number }).port;
        listening = server;
        resolve();
      });
    });
  await listen();
  const cut = () => {
    listening?.close();
    listening = null;
    for (const socket of sockets) socket.destroy();
  };
  const url = new URL(target);
  url.host = `127.0.0.1:${boundPort}`;
  return {
    url: url.toString(),
    cut,
    restore: listen,
    close: async () => cut(),
  };
}

/** In place, a random order (Fisher–Yates over a seeded generator, so a failure can be replayed). */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const copy = [...items];
  let state = seed >>> 0 || 1;
  const next = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}
