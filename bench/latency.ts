/**
 * PostgreSQL across the network (npm run bench -- --store postgres): `souls serve` replicas in processes of their own,
 * each on the database directly (loopback) and through a relay in this process that holds every chunk 1 ms each way
 * (2 ms a round trip, as between hosts in one region). Figures, each near beside far:
 *
 * 1. the roster query at 16 concurrent clients: requests/s, p99, far ÷ near (target ≥ 0.8);
 * 2. dropShard from 8 concurrent writers: the same (target ≥ 0.6);
 * 3. the roster query on 3 replicas against 1, all through the relay, 16 clients each (target ≥ 2.5).
 *
 * SOULS_BENCH_PG_URL: the server (default postgres://postgres@127.0.0.1:5432/test; a database with a random name is
 * created and dropped). SOULS_BENCH_CLI: the CLI the replicas run (default this checkout's), so that another
 * checkout's server (the code before a change) is measured with the same load.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closeSoulsDb, openSoulsDbAsync } from '../src/engine/index.ts';
import { DROP, httpRun, seed } from './api.ts';
import type { BenchRow } from './engine.ts';
import { startServe, type Replica } from './replicas.ts';
import { makeObservationCorpus } from './corpus.ts';
import { databaseUrl, pgStatement } from '../scripts/services.ts';

const PG_URL = process.env.SOULS_BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const CLI = process.env.SOULS_BENCH_CLI || fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
const ROSTER = '{ souls { id name level traits { principle } crystallization { ready priority unmet } } }';
const DELAY_MS = 1;
/** Bytes a relay holds for one direction of one connection before it stops reading that side. */
const RELAY_BOUND = 4 * 2 ** 20;
const RUN = { warmupMs: 1500, durationMs: 6000 };

/** A relay on 127.0.0.1 to a loopback server that delivers each chunk `delayMs` after it arrived, in order, bounded. */
async function delayRelay(target: URL, delayMs: number): Promise<{ url: string; close(): Promise<void> }> {
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(target.hostname)) throw new Error(`the latency relay forwards to loopback only, not ${target.hostname}`);
  const sockets = new Set<Socket>();
  const forward = (from: Socket, to: Socket) => {
    let held = 0;
    from.on('data', (chunk: Buffer) => {
      held += chunk.length;
      if (held > RELAY_BOUND) from.pause();
      // Timers of one duration fire in the order they were set: the stream keeps its order.
      setTimeout(() => {
        held -= chunk.length;
        to.write(chunk);
        if (held <= RELAY_BOUND && from.isPaused()) from.resume();
      }, delayMs);
    });
    from.on('end', () => setTimeout(() => to.end(), delayMs));
  };
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url: url.toString(),
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const startReplica = (db: string): Promise<Replica> => startServe(['--db', db], { cli: CLI });

async function stop(replicas: readonly Replica[]): Promise<void> {
  await Promise.all(
    replicas.map(
      (r) =>
        new Promise<void>((resolve) => {
          if (r.child.exitCode !== null) return resolve();
          r.child.once('exit', () => resolve());
          r.child.kill('SIGTERM');
        }),
    ),
  );
}

type Load = { perSecond: number; p99: number };

const roster = (url: string, concurrency = 16): Promise<Load> => httpRun({ url, bodies: [JSON.stringify({ query: ROSTER })], concurrency, ...RUN, expect: '"souls"' }, 'the roster query');

function drops(url: string, soulIds: readonly number[]): Promise<Load> {
  const corpus = makeObservationCorpus(400, 7);
  const bodies = corpus.map((content, i) => JSON.stringify({ query: DROP, variables: { input: { content, source: `writer-${i % 8}`, soulIds: [String(soulIds[i % soulIds.length])] } } }));
  // Too long for a command line: the load client reads them from a file.
  const bodiesFile = join(mkdtempSync(join(tmpdir(), 'souls-bench-latency-')), 'drops.json');
  writeFileSync(bodiesFile, JSON.stringify(bodies));
  return httpRun({ url, bodiesFile, concurrency: 8, ...RUN, expect: 'DropShardPayload' }, 'dropShard').finally(() => rmSync(dirname(bodiesFile), { recursive: true, force: true }));
}

const shown = (load: Load) => `${load.perSecond.toFixed(0)} req/s, p99 ${load.p99.toFixed(1)} ms`;

export async function benchLatency(): Promise<BenchRow[]> {
  const name = `souls_bench_latency_${randomBytes(5).toString('hex')}`;
  await pgStatement(PG_URL, `CREATE DATABASE ${name}`);
  const db = databaseUrl(PG_URL, name);
  const relay = await delayRelay(new URL(db), DELAY_MS);
  const replicas: Replica[] = [];
  try {
    const seeded = await openSoulsDbAsync({ path: db });
    const { soulIds } = await seed(seeded);
    // As `souls optimize` after an import: on tables PostgreSQL never analyzed (autovacuum visits a database once a
    // minute, the bench lasts less) the planner takes the pending shards for one row and scans them all on each write.
    await seeded.store.optimize();
    await closeSoulsDb(seeded);

    // Every read first, then every write: the writes add shards the reads would otherwise see on one side only.
    const [near, ...far] = await Promise.all([db, relay.url, relay.url, relay.url].map((url) => startReplica(url)));
    replicas.push(near, ...far);
    const readsNear = await roster(near.url);
    const readsFar = await roster(far[0].url);
    const spread = await Promise.all(far.map((replica) => roster(replica.url)));
    const spreadPerSecond = spread.reduce((sum, load) => sum + load.perSecond, 0);
    const writesNear = await drops(near.url, soulIds);
    const writesFar = await drops(far[0].url, soulIds);
    return [
      { name: `roster query, 16 clients, database on loopback`, value: shown(readsNear) },
      { name: `roster query, 16 clients, database ${2 * DELAY_MS} ms away (relay)`, value: shown(readsFar) },
      { name: 'roster query: far ÷ near, req/s (target ≥ 0.8)', value: (readsFar.perSecond / readsNear.perSecond).toFixed(2) },
      { name: `dropShard, 8 writers, database on loopback`, value: shown(writesNear) },
      { name: `dropShard, 8 writers, database ${2 * DELAY_MS} ms away (relay)`, value: shown(writesFar) },
      { name: 'dropShard: far ÷ near, req/s (target ≥ 0.6)', value: (writesFar.perSecond / writesNear.perSecond).toFixed(2) },
      { name: `roster query on 3 replicas, 16 clients each, database ${2 * DELAY_MS} ms away`, value: `${spreadPerSecond.toFixed(0)} req/s (${spread.map((load) => load.perSecond.toFixed(0)).join(' + ')}), p99 ${Math.max(...spread.map((load) => load.p99)).toFixed(1)} ms` },
      { name: '3 replicas ÷ 1 at the same distance, req/s (target ≥ 2.5)', value: (spreadPerSecond / readsFar.perSecond).toFixed(2) },
    ];
  } finally {
    await stop(replicas);
    await relay.close();
    await pgStatement(PG_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}
