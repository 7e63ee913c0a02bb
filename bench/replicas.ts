/**
 * API over replicas (npm run bench -- --store postgres), each figure for SQLite and for PostgreSQL in the same run:
 *
 * 1. the dashboard query over 100 souls (the API section's seed), median of 30 warm requests, on a server in this
 *    process over a SQLite file and over a PostgreSQL database;
 * 2. crystallizationReady to 1,000 graphql-ws subscribers spread over three `souls serve` replicas (334, 333, 333;
 *    events through Redis), the crossing written on the first: the delay from the mutation's return to each
 *    subscriber's receipt. The replicas share one SQLite file (WAL), or one PostgreSQL database.
 *
 * PostgreSQL and Redis: SOULS_BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/test; a database with a random
 * name is created and dropped) and SOULS_BENCH_REDIS_URL (default redis://127.0.0.1:6379; a random channel prefix).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/server/app.ts';
import { DAY_MS, openSoulsDbAsync } from '../src/engine/index.ts';
import { bareHello, dashboard, DROP, killChildren, listen, LoadClient, median, percentile, post, READY_SUBSCRIPTION, seed, sleep, STAMP, wallClock } from './api.ts';
import { makeObservationCorpus } from './corpus.ts';
import { databaseUrl, pgStatement, postgresProblem, redisProblem } from '../scripts/services.ts';
import type { BenchRow } from './engine.ts';

const CLI = fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
const PG_URL = process.env.SOULS_BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.SOULS_BENCH_REDIS_URL || 'redis://127.0.0.1:6379';
const SUBSCRIBERS = 1000;
const REPLICAS = 3;
const CROSSINGS = 5;
const CREATE = 'mutation Create($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } ... on Error { message } } }';
const DROP_MANY = 'mutation DropMany($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on Error { message } } }';

type Store = { label: string; open(): Promise<string>; drop(): Promise<void> };

function sqliteStore(): Store {
  const dir = mkdtempSync(join(tmpdir(), 'souls-bench-replicas-'));
  let n = 0;
  return { label: 'SQLite', open: async () => join(dir, `souls-${++n}.db`), drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

function postgresStore(): Store {
  const names: string[] = [];
  return {
    label: 'PostgreSQL',
    async open() {
      const name = `souls_bench_${randomBytes(5).toString('hex')}`;
      await pgStatement(PG_URL, `CREATE DATABASE ${name}`);
      names.push(name);
      return databaseUrl(PG_URL, name);
    },
    async drop() {
      for (const name of names) await pgStatement(PG_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

async function dashboardOn(store: Store): Promise<BenchRow[]> {
  const db = await openSoulsDbAsync({ path: await store.open() });
  const app = buildApp({ db, graphiql: false });
  const bare = bareHello();
  try {
    await seed(db);
    const { url } = await app.start(0, '127.0.0.1');
    const rows = await dashboard(url, `http://127.0.0.1:${await listen(bare)}/ping`);
    return rows.map((row) => ({ ...row, name: `${store.label}: ${row.name}` }));
  } finally {
    await app.stop();
    bare.closeAllConnections();
    bare.close();
  }
}

export type Replica = { url: string; child: ChildProcess };

/**
 * `souls serve ARGS` on a free port as a child process (`cli`: another checkout's, for a before/after); resolves with
 * its API's address once it printed it, and `readyWhen` when given (e.g. Redis subscribed).
 */
export async function startServe(args: readonly string[], options: { cli?: string; readyWhen?: RegExp } = {}): Promise<Replica> {
  const child = spawn(process.execPath, [options.cli ?? CLI, 'serve', '--port', '0', '--log-level', 'warn', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`souls serve did not start in 60 s: ${output}`)), 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = (options.readyWhen === undefined || options.readyWhen.test(output)) && /Souls API on (\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`souls serve exited (${code}): ${output}`)));
  });
  return { url, child };
}

const startReplica = (db: string, prefix: string): Promise<Replica> =>
  startServe(['--db', db, '--redis', REDIS_URL, '--redis-prefix', prefix], { readyWhen: /Events through Redis .*\n/ });

async function fanOutOn(store: Store): Promise<BenchRow[]> {
  const db = await store.open();
  const prefix = `souls-bench-${randomBytes(5).toString('hex')}:`;
  const replicas: Replica[] = [];
  const clients: LoadClient[] = [];
  try {
    // One after the other: the first creates the schema.
    for (let i = 0; i < REPLICAS; i++) replicas.push(await startReplica(db, prefix));
    const writer = replicas[0].url;
    const created = await post(writer, CREATE, { input: { name: 'subscribed-soul', essence: 'The soul every subscriber watches.' } });
    const id = created.createSoul.soul.id as string;
    const corpus = makeObservationCorpus(200, 99);
    const now = Date.now();
    await post(writer, DROP_MANY, {
      inputs: ['delegation', 'manual_review', 'distillation'].map((source, i) => ({ content: corpus[i], source, soulIds: [id], createdAt: new Date(now - (3 - i) * DAY_MS).toISOString() })),
    });
    let text = 3;
    // stampAttuned makes the soul not ready; the next shard crosses again: a repeatable crossing.
    const cross = async () => {
      await post(writer, STAMP, { id });
      await sleep(5);
      const sent = wallClock();
      const data = await post(writer, DROP, { input: { content: corpus[text++ % corpus.length], source: 'reader_feedback', soulIds: [id] } });
      const returned = wallClock();
      if (!data.dropShard.readySouls?.some((soul: { id: string }) => soul.id === id)) throw new Error(`the crossing did not happen: ${JSON.stringify(data.dropShard)}`);
      return { sent, returned };
    };
    await cross();

    for (const [i, replica] of replicas.entries()) {
      const share = Math.floor(SUBSCRIBERS / REPLICAS) + (i < SUBSCRIBERS % REPLICAS ? 1 : 0);
      clients.push(new LoadClient('ws', { url: replica.url.replace(/^http/, 'ws'), clients: share, query: READY_SUBSCRIPTION, variables: { ids: [id] } }));
    }
    const connected = (await Promise.all(clients.map((client) => client.next<{ connected: number; firstError?: string }>(60_000, 'subscribers to connect')))).reduce((sum, r) => sum + r.connected, 0);
    // No acknowledgement for a subscription in graphql-ws: probe crossings until every subscriber has seen one.
    let seen = 0;
    for (let probe = 0; probe < 10 && seen < connected; probe++) {
      await cross();
      const collected = await Promise.all(clients.map((client) => client.command<{ times: number[] }>({ cmd: 'collect', timeoutMs: 2000 }, 10_000)));
      seen = collected.reduce((sum, c) => sum + c.times.length, 0);
    }
    const afterReturn: number[] = [];
    const roundTrips: number[] = [];
    let missing = 0;
    for (let round = 0; round < CROSSINGS; round++) {
      await Promise.all(clients.map((client) => client.command({ cmd: 'reset' }, 5000)));
      const { sent, returned } = await cross();
      roundTrips.push(returned - sent);
      for (const collected of await Promise.all(clients.map((client) => client.command<{ times: number[]; missing: number }>({ cmd: 'collect', timeoutMs: 5000 }, 15_000)))) {
        missing += collected.missing;
        for (const t of collected.times) afterReturn.push(t - returned);
      }
    }
    const label = `${store.label}: crystallizationReady to ${connected} subscribers over ${REPLICAS} replicas (Redis)`;
    await Promise.all(clients.map((client) => client.command({ cmd: 'close' }, 20_000)));
    return [
      { name: `${label}: p50 after the mutation returned (ms, ${CROSSINGS} crossings)`, value: percentile(afterReturn, 50).toFixed(1) },
      { name: `${label}: p99 after the mutation returned (ms; target ≤ 200)`, value: percentile(afterReturn, 99).toFixed(1) },
      { name: `${label}: the crossing dropShard's round trip (ms, median)`, value: median(roundTrips).toFixed(1) },
      { name: `${label}: deliveries missing (of ${CROSSINGS} × ${connected}; ${seen} saw a probe)`, value: String(missing) },
    ];
  } finally {
    await Promise.all(clients.map((client) => client.finish(3000)));
    for (const replica of replicas) replica.child.kill('SIGTERM');
    await Promise.all(replicas.map((replica) => new Promise((resolve) => (replica.child.exitCode !== null ? resolve(null) : replica.child.once('exit', resolve)))));
  }
}

export async function benchReplicas(): Promise<BenchRow[]> {
  process.on('exit', killChildren);
  const rows: BenchRow[] = [];
  const stores: Store[] = [sqliteStore()];
  const pgProblem = await postgresProblem(PG_URL);
  if (pgProblem) rows.push({ name: 'PostgreSQL', value: `${pgProblem}: apt-get install postgresql, or set SOULS_BENCH_PG_URL` });
  else stores.push(postgresStore());
  const redisDown = await redisProblem(REDIS_URL);
  if (redisDown) rows.push({ name: 'Redis', value: `${redisDown}: apt-get install redis-server, or set SOULS_BENCH_REDIS_URL` });
  const redis = redisDown === null;
  try {
    for (const store of stores) rows.push(...(await dashboardOn(store)));
    if (redis) for (const store of stores) rows.push(...(await fanOutOn(store)));
  } finally {
    killChildren();
    process.off('exit', killChildren);
    for (const store of stores) await store.drop();
  }
  return rows;
}
