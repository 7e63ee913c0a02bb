/**
 * API benchmarks: the GraphQL server (buildApp over a file database in a temp
 * dir) hosted in this process, with the load coming from separate processes
 * (bench/load-client.ts) over 127.0.0.1:
 *
 * 1. the dashboard query over 100 souls: the first request after the server
 *    starts, then the median of 30 warm ones;
 * 2. soul(id) { rendered } requests/s over 16 keep-alive connections, beside
 *    bare Yoga over the same schema and data (no plugins, no layers) and a bare
 *    Yoga { hello }, in alternating slices from one client; then, in this
 *    process without sockets, the CPU each request layer costs (the app's Yoga
 *    with that layer switched off);
 * 3. dropShard mutations/s, one connection sequentially and 8 concurrent;
 * 4. crystallizationReady delivered to 1,000 graphql-ws subscribers: the
 *    delay from the crossing mutation's return to each subscriber's receipt,
 *    and this process's RSS before and after they connect.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createSchema, createYoga } from 'graphql-yoga';
import { buildApp, REQUEST_LAYERS, type App, type RequestLayer } from '../src/server/app.ts';
import { createContext } from '../src/server/context.ts';
import { createSoulsPubSub } from '../src/server/pubsub.ts';
import { builder } from '../schema/builder.ts';
import { schema } from '../schema/index.ts';
import { DAY_MS, addTrait, closeSoulsDb, createSoul, crystallizationReadiness, dropShards, openSoulsDb, type SoulsDb } from '../src/engine/index.ts';
import { makeObservationCorpus, makeRng } from './corpus.ts';
import { initSoulsTables } from '../src/store/sqlite.ts';
import type { BenchRow } from './engine.ts';
import type { AlternatingConfig, AlternatingReport, HttpConfig, HttpReport, SliceMark, WsCommand } from './load-client.ts';

const LOAD_CLIENT = fileURLToPath(new URL('./load-client.ts', import.meta.url));
const SOURCES = ['delegation', 'distillation', 'quest_turnin', 'manual_review', 'reader_feedback', 'session_observation'];
const PRINCIPLES = [
  'Verifies results before reporting them',
  'Asks before discarding shared context',
  'Prefers small reversible steps over large rewrites',
  'Keeps promises made to strangers',
  'Escalates early when the budget runs low',
  'Summarizes long threads for the next shift',
  'Haggles hard but never cheats',
  'Reuses cached answers only when they are fresh',
];

const DASHBOARD = `query Dashboard { souls { id name level activeTraitCount traitLimit pendingShardCount health rendered
  crystallization { ready priority unmet } traits { principle signals { citationCount citationDensity stale } } } }`;
const RENDERED = 'query Rendered($id: ID!) { soul(id: $id) { rendered } }';
export const DROP = `mutation Drop($input: DropShardInput!) { dropShard(input: $input) { __typename
  ... on DropShardPayload { shard { id } readySouls { id } } ... on Error { message } } }`;
export const STAMP = 'mutation Stamp($id: ID!) { stampAttuned(soulId: $id) { __typename ... on Error { message } } }';
export const READY_SUBSCRIPTION = 'subscription Ready($ids: [ID!]) { crystallizationReady(soulIds: $ids) { soul { id name } priority at } }';

const SOULS = 100;
const TRAITS_PER_SOUL = 5;
const DASHBOARD_RUNS = 30;
const RENDER_SLICE_MS = 250;
const RENDER_CYCLES = 12;
const DROP_MS = 3000;
const SUBSCRIBERS = 1000;
const CROSSINGS = 5;

export const wallClock = () => performance.timeOrigin + performance.now();

/** A full garbage collection before reading memory, so the figures compare live data rather than uncollected garbage. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

function memory(): NodeJS.MemoryUsage {
  collectGarbage();
  return process.memoryUsage();
}

export function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const kib = (bytes: number) => `${bytes < 0 ? '' : '+'}${(bytes / 1024).toFixed(1)} KiB`;

/** Every child this module started; killed on the way out, whatever happens. */
const children = new Set<ChildProcess>();
export const killChildren = () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
};

/** One load-client process: its stdout as a queue of JSON lines, its stdin for commands. */
export class LoadClient {
  readonly child: ChildProcess;
  private readonly lines: unknown[] = [];
  private wake: (() => void) | null = null;
  private readonly exited: Promise<number | null>;
  private stderr = '';

  /** `marks` hears the lines that are slice marks (alternate mode) as they arrive; they are not queued. */
  constructor(mode: 'http' | 'alternate' | 'ws', config: unknown, marks?: (mark: SliceMark) => void) {
    this.child = spawn(process.execPath, [LOAD_CLIENT, mode, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'] });
    children.add(this.child);
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (!line.trim()) return;
      const parsed = JSON.parse(line);
      if (marks && typeof parsed.slice === 'number') return marks(parsed);
      this.lines.push(parsed);
      this.wake?.();
    });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-2000);
    });
    this.child.stdin!.on('error', () => {});
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code) => {
        children.delete(this.child);
        this.wake?.();
        resolve(code);
      }),
    );
  }

  /** The next JSON line, or an error naming the child's stderr if it exits or the timeout passes first. */
  async next<T>(timeoutMs: number, what: string): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    while (this.lines.length === 0) {
      const exited = this.child.exitCode !== null || this.child.signalCode !== null;
      const left = deadline - performance.now();
      if (exited || left <= 0) {
        this.kill();
        throw new Error(`load client ${exited ? `exited (${this.child.exitCode ?? this.child.signalCode})` : 'timed out'} waiting for ${what}: ${this.stderr.trim() || 'no stderr'}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
    return this.lines.shift() as T;
  }

  async command<T>(command: WsCommand, timeoutMs: number): Promise<T> {
    this.child.stdin!.write(`${JSON.stringify(command)}\n`);
    return this.next<T>(timeoutMs, command.cmd);
  }

  /** Waits for the exit (up to timeoutMs), then kills it if still there. */
  async finish(timeoutMs: number): Promise<void> {
    this.child.stdin!.end();
    await Promise.race([this.exited, sleep(timeoutMs)]);
    this.kill();
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

/** One http-mode run in its own process; throws on errors so no figure is reported over failed requests. */
export async function httpRun(config: HttpConfig, what: string): Promise<HttpReport> {
  const client = new LoadClient('http', config);
  try {
    const report = await client.next<HttpReport>((config.warmupMs ?? 0) + config.durationMs + 20_000, what);
    if (report.errors > 0) throw new Error(`${what}: ${report.errors} of ${report.requests} requests failed, first: ${report.firstError}`);
    if (report.requests === 0) throw new Error(`${what}: no request completed`);
    return report;
  } finally {
    await client.finish(2000);
  }
}

const body = (query: string, variables?: Record<string, unknown>) => JSON.stringify({ query, variables });

/** 100 souls, each with 5 traits citing some of its shards; every third soul has diverse, spread-out shards and is ready. */
export async function seed(db: SoulsDb): Promise<{ soulIds: number[]; shards: number; ready: number }> {
  const now = db.clock.now();
  const rng = makeRng(42);
  const texts = makeObservationCorpus(SOULS * 16, 42);
  const soulIds: number[] = [];
  let shards = 0;
  for (let i = 0; i < SOULS; i++) {
    const soul = await createSoul(db, { name: `soul-${i}`, essence: `Soul ${i} is a ${i % 2 ? 'game character' : 'coding agent'} that learns from what it is seen to do.` });
    soulIds.push(soul.id);
    const diverse = i % 3 === 0;
    const count = 6 + (i % 10);
    const inputs = texts.slice(i * 16, i * 16 + count).map((content) => ({
      content,
      source: diverse ? SOURCES[Math.floor(rng() * SOURCES.length)] : `channel-${i}`,
      soulIds: [soul.id],
      createdAt: now - Math.floor(rng() * (diverse ? 20 : 0.5) * DAY_MS) - 60_000,
    }));
    const { shardIds } = await dropShards(db, inputs);
    shards += shardIds.length;
    for (let t = 0; t < TRAITS_PER_SOUL; t++) {
      const cite = shardIds.filter((_, k) => k % TRAITS_PER_SOUL === t).slice(0, 1 + (t % 3));
      await addTrait(db, soul.id, {
        principle: `${PRINCIPLES[(i + t) % PRINCIPLES.length]} (${t + 1})`,
        provenance: `Seen across ${cite.length} observations of soul ${i}.`,
        citeShardIds: cite,
      });
    }
  }
  return { soulIds, shards, ready: (await crystallizationReadiness(db)).length };
}

/** A Yoga without plugins on node:http, plus /ping outside Yoga for warming the client. */
function bareServer(yoga: (req: IncomingMessage, res: ServerResponse) => unknown): Server {
  return createServer((req, res) => {
    if (req.url === '/ping') res.end('ok');
    else void yoga(req, res);
  });
}

/** The floor for the API: one field, no data. */
export function bareHello(): Server {
  return bareServer(
    createYoga({
      schema: createSchema({ typeDefs: 'type Query { hello: String! }', resolvers: { Query: { hello: () => 'world' } } }),
      logging: false,
    }),
  );
}

/** The baseline for soul(id) { rendered }: the same schema, context and data, without any plugin or request layer. */
function bareSouls(db: SoulsDb) {
  const pubsub = createSoulsPubSub();
  const yoga = createYoga({ schema, context: () => createContext(db, pubsub), logging: false });
  return { yoga, server: bareServer(yoga) };
}

export async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('no address');
  return address.port;
}

export async function dashboard(url: string, pingUrl: string): Promise<BenchRow[]> {
  const report = await httpRun(
    { url, bodies: [body(DASHBOARD)], concurrency: 1, durationMs: 60_000, maxRequests: DASHBOARD_RUNS + 1, expect: '"crystallization"', pingUrl, samples: true },
    'dashboard query',
  );
  const [cold, ...warm] = report.samples!;
  return [
    { name: `dashboard query, ${SOULS} souls, first request after start (cold, ms)`, value: cold.toFixed(1) },
    { name: `dashboard query, ${SOULS} souls (ms, median of ${warm.length} warm; target ≤ 25)`, value: median(warm).toFixed(1) },
  ];
}

/**
 * Requests/s and latencies of each target, measured in alternating slices by one load client, and the CPU time of
 * this process's main thread per request answered in each target's slices (the servers all run here, one loaded at a
 * time): it holds up better than throughput on a machine other work is using.
 */
async function alternating(config: AlternatingConfig): Promise<Array<AlternatingReport['targets'][number] & { cpuUs: number }>> {
  const cpu = config.targets.map(() => 0);
  let started: NodeJS.CpuUsage | null = null;
  const client = new LoadClient('alternate', config, (mark) => {
    if (mark.at === 'start') started = process.threadCpuUsage();
    else if (started) {
      const used = process.threadCpuUsage(started);
      cpu[mark.slice] += used.user + used.system;
      started = null;
    }
  });
  try {
    const report = await client.next<AlternatingReport>(config.sliceMs * config.targets.length * (config.cycles + 1) * 2 + 20_000, 'alternating runs');
    return report.targets.map((target, i) => {
      if (target.errors > 0) throw new Error(`${config.targets[i].url}: ${target.errors} of ${target.requests} requests failed, first: ${target.firstError}`);
      if (target.requests === 0) throw new Error(`${config.targets[i].url}: no request completed`);
      return { ...target, cpuUs: cpu[i] / target.requests };
    });
  } finally {
    await client.finish(2000);
  }
}

type Fetch = (request: Request) => Response | Promise<Response>;

/** Main-thread CPU per request (µs) of `count` requests through `fetch` in this process, 16 in flight. */
async function fetchCpu(fetch: Fetch, bodies: readonly string[], count: number, what: string): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const request = new Request('http://127.0.0.1/graphql', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: bodies[next++ % bodies.length] });
      const text = await (await fetch(request)).text();
      if (!text.includes('"rendered":"')) throw new Error(`${what}: ${text.slice(0, 300)}`);
    }
  };
  const before = process.threadCpuUsage();
  await Promise.all(Array.from({ length: 16 }, worker));
  const cpu = process.threadCpuUsage(before);
  return (cpu.user + cpu.system) / count;
}

const BREAKDOWN_ROUNDS = 7;
const BREAKDOWN_REQUESTS = 1000;

/**
 * What each layer costs soul(id) { rendered } inside Yoga, without sockets or a client competing for the CPU: the
 * app's Yoga with one layer off, beside the whole app's and a bare Yoga's, in interleaved rounds (medians).
 */
async function layerBreakdown(targets: ReadonlyMap<string, Fetch>, bodies: readonly string[]): Promise<Map<string, number>> {
  const samples = new Map<string, number[]>([...targets.keys()].map((name) => [name, []]));
  for (const [name, fetch] of targets) await fetchCpu(fetch, bodies, BREAKDOWN_REQUESTS / 4, name);
  const order = [...targets];
  for (let round = 0; round < BREAKDOWN_ROUNDS; round++) {
    // Each round starts one target later, so no target always follows the same one (garbage left to collect, caches).
    for (let i = 0; i < order.length; i++) {
      const [name, fetch] = order[(i + round) % order.length];
      samples.get(name)!.push(await fetchCpu(fetch, bodies, BREAKDOWN_REQUESTS, name));
    }
  }
  return new Map([...samples].map(([name, cpu]) => [name, median(cpu)]));
}

/** What each request layer costs: the app without it, beside the whole app. */
const LAYER_NAMES: Record<RequestLayer | 'scopeAuth', string> = {
  requestLine: 'request line (request id, operation record, log line, metrics)',
  csrf: 'CSRF prevention',
  nesting: 'bracket nesting bound',
  armor: 'graphql-armor (depth, aliases, tokens, directives)',
  requestErrors: 'request-error shaping (variables, JSON)',
  cost: 'cost and list bounds (boundingCost)',
  masking: 'error masking',
  scopeAuth: 'scope-auth (Pothos)',
};
const layerName = (name: string) => (name === 'all' ? 'every layer and scope-auth' : LAYER_NAMES[name as RequestLayer | 'scopeAuth']);

type Urls = { app: string; bare: string; hello: string; withoutRequestLine: string };

async function renderedVsBare(urls: Urls, yogas: ReadonlyMap<string, Fetch>, soulIds: number[]): Promise<BenchRow[]> {
  const rendered = soulIds.map((id) => body(RENDERED, { id: String(id) }));
  const expect = '"rendered":"';
  const [hello, bare, app, withoutLine] = await alternating({
    targets: [
      { url: urls.hello, bodies: [body('{ hello }')], expect: '"hello":"world"' },
      { url: urls.bare, bodies: rendered, expect },
      { url: urls.app, bodies: rendered, expect },
      { url: urls.withoutRequestLine, bodies: rendered, expect },
    ],
    concurrency: 16,
    sliceMs: RENDER_SLICE_MS,
    cycles: RENDER_CYCLES,
  });
  const slices = `${RENDER_CYCLES} slices of ${RENDER_SLICE_MS} ms each, alternating`;
  const rows: BenchRow[] = [
    { name: `soul(id) { rendered }, 16 keep-alive connections (req/s, ${slices})`, value: app.perSecond.toFixed(0) },
    { name: `soul(id) { rendered }, latency p50 / p99 (ms)`, value: `${app.p50.toFixed(2)} / ${app.p99.toFixed(2)}` },
    { name: `soul(id) { rendered } on bare Yoga: same schema and data, no plugins (req/s)`, value: bare.perSecond.toFixed(0) },
    {
      name: 'soul(id) { rendered } ÷ the same on bare Yoga, req/s (target ≥ 0.95)',
      value: (app.perSecond / bare.perSecond).toFixed(2),
      numbers: [app.perSecond / bare.perSecond],
      unit: 'ratio',
      better: 'higher',
    },
    { name: 'server main-thread CPU per request, soul(id) { rendered } / the same on bare Yoga (µs)', value: `${app.cpuUs.toFixed(0)} / ${bare.cpuUs.toFixed(0)}` },
    { name: '  bare Yoga ÷ app, CPU per request (the ratio above, less exposed to other load)', value: (bare.cpuUs / app.cpuUs).toFixed(2) },
    { name: `bare Yoga { hello }, same client (req/s)`, value: hello.perSecond.toFixed(0) },
    { name: `bare Yoga { hello }, server main-thread CPU per request (µs)`, value: hello.cpuUs.toFixed(0) },
    { name: 'soul(id) { rendered } ÷ bare Yoga { hello } (req/s; CPU)', value: `${(app.perSecond / hello.perSecond).toFixed(2)}; ${(hello.cpuUs / app.cpuUs).toFixed(2)}` },
    { name: `  without the ${layerName('requestLine')}: CPU saved per request (µs)`, value: (app.cpuUs - withoutLine.cpuUs).toFixed(0) },
    { name: `  without the ${layerName('requestLine')}: req/s ÷ the whole app`, value: (withoutLine.perSecond / app.perSecond).toFixed(2) },
  ];
  const cpu = await layerBreakdown(yogas, rendered);
  const whole = cpu.get('app')!;
  rows.push(
    { name: `inside Yoga (in process, no sockets): main-thread CPU per request, app / bare Yoga (µs, median of ${BREAKDOWN_ROUNDS} × ${BREAKDOWN_REQUESTS})`, value: `${whole.toFixed(0)} / ${cpu.get('bare')!.toFixed(0)}` },
    { name: '  bare Yoga ÷ app, CPU per request inside Yoga', value: (cpu.get('bare')! / whole).toFixed(2) },
  );
  for (const [name, variant] of cpu) {
    if (name === 'app' || name === 'bare') continue;
    rows.push({ name: `  without ${layerName(name)}: CPU saved per request (µs)`, value: (whole - variant).toFixed(0) });
  }
  return rows;
}

/**
 * Bare Yoga doing what a dropShard writes and nothing more: in one transaction, the shard, its souls and its tags
 * (FTS5 through the trigger), on a file of its own with the same tables and souls; answered in the same shape.
 */
function bareDrop(path: string, soulIds: readonly number[]): { server: Server; close: () => void } {
  const database = new DatabaseSync(path);
  database.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON');
  initSoulsTables(database);
  const soul = database.prepare('INSERT INTO souls (id, name, name_key, slug, essence, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, 0)');
  for (const id of soulIds) soul.run(id, `soul-${id}`, `soul-${id}`, `soul-${id}`, 'Essence.');
  const shard = database.prepare(`INSERT INTO soul_shards (content, source, status, sealed, created_at, updated_at, recorded_at) VALUES (?, ?, 'pending', 0, ?, ?, ?)`);
  const attribution = database.prepare('INSERT INTO shard_souls (shard_id, soul_id) VALUES (?, ?)');
  const tag = database.prepare('INSERT OR IGNORE INTO shard_tags (shard_id, tag) VALUES (?, ?)');
  type Input = { content: string; source: string; soulIds: string[]; tags?: string[] | null };
  const yoga = createYoga({
    schema: createSchema({
      typeDefs: `
        input DropShardInput { content: String! source: String! soulIds: [ID!]! tags: [String!] }
        interface Error { message: String! }
        type ValidationError implements Error { message: String! }
        type Shard { id: ID! }
        type Soul { id: ID! }
        type DropShardPayload { shard: Shard! readySouls: [Soul!]! }
        union DropShardResult = DropShardPayload | ValidationError
        type Query { hello: String }
        type Mutation { dropShard(input: DropShardInput!): DropShardResult! }`,
      resolvers: {
        DropShardResult: { __resolveType: () => 'DropShardPayload' },
        Mutation: {
          dropShard: (_: unknown, { input }: { input: Input }) => {
            const now = Date.now();
            database.exec('BEGIN IMMEDIATE');
            try {
              const id = Number(shard.run(input.content, input.source, now, now, now).lastInsertRowid);
              for (const soulId of input.soulIds) attribution.run(id, Number(soulId));
              for (const t of input.tags ?? []) tag.run(id, t);
              database.exec('COMMIT');
              return { shard: { id }, readySouls: [] };
            } catch (error) {
              database.exec('ROLLBACK');
              throw error;
            }
          },
        },
      },
    }),
    logging: false,
  });
  return { server: bareServer(yoga), close: () => database.close() };
}

/** dropShard bodies over the seeded souls (a third tagged), in a file for the load client. */
function dropBodies(dir: string, soulIds: readonly number[]): string {
  const rng = makeRng(11);
  const bodies = makeObservationCorpus(20_000, 211).map((content, i) =>
    body(DROP, { input: { content, source: SOURCES[Math.floor(rng() * SOURCES.length)], soulIds: [String(soulIds[Math.floor(rng() * soulIds.length)])], tags: i % 3 ? [] : ['bench'] } }),
  );
  const file = join(dir, 'drop-vs-bare.json');
  writeFileSync(file, JSON.stringify(bodies));
  return file;
}

/** dropShard over HTTP ÷ bare Yoga inserting the same rows, 1 and 8 connections, in alternating slices of one run. */
async function dropShardVsBare(url: string, bareUrl: string, bodiesFile: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const concurrency of [1, 8]) {
    const expect = '"DropShardPayload"';
    const [app, bare] = await alternating({
      targets: [
        { url, bodiesFile, expect },
        { url: bareUrl, bodiesFile, expect },
      ],
      concurrency,
      sliceMs: RENDER_SLICE_MS,
      cycles: RENDER_CYCLES,
    });
    const label = concurrency === 1 ? 'one connection' : `${concurrency} connections`;
    rows.push(
      { name: `dropShard, ${label}: app / bare Yoga inserting the same rows (req/s, alternating slices)`, value: `${app.perSecond.toFixed(0)} / ${bare.perSecond.toFixed(0)}` },
      {
        name: `dropShard ÷ bare Yoga's insert, ${label}, req/s (target ≥ 0.85)`,
        value: (app.perSecond / bare.perSecond).toFixed(2),
        numbers: [app.perSecond / bare.perSecond],
        unit: 'ratio',
        better: 'higher',
      },
      { name: `  the same in server main-thread CPU per request, bare ÷ app (µs: ${app.cpuUs.toFixed(0)} / ${bare.cpuUs.toFixed(0)})`, value: (bare.cpuUs / app.cpuUs).toFixed(2) },
    );
  }
  return rows;
}

async function dropShardRate(url: string, dir: string, soulIds: number[]): Promise<BenchRow[]> {
  const rng = makeRng(7);
  const write = (name: string, count: number, seed: number) => {
    const bodies = makeObservationCorpus(count, seed).map((content, i) =>
      body(DROP, { input: { content, source: SOURCES[Math.floor(rng() * SOURCES.length)], soulIds: [String(soulIds[Math.floor(rng() * soulIds.length)])], tags: i % 3 ? [] : ['bench'] } }),
    );
    const file = join(dir, name);
    writeFileSync(file, JSON.stringify(bodies));
    return file;
  };
  const rows: BenchRow[] = [];
  for (const [concurrency, label] of [
    [1, 'sequential, one connection'],
    [8, '8 concurrent connections'],
  ] as const) {
    const bodiesFile = write(`drop-${concurrency}.json`, 12_000, 100 + concurrency);
    const report = await httpRun({ url, bodiesFile, concurrency, warmupMs: 300, durationMs: DROP_MS, maxRequests: 11_000, expect: '"DropShardPayload"' }, `dropShard ×${concurrency}`);
    rows.push({ name: `dropShard mutations/s, ${label}`, value: `${report.perSecond.toFixed(0)} (${report.requests} in ${(report.elapsedMs / 1000).toFixed(1)} s)`, numbers: [Math.round(report.perSecond)], unit: 'ops/s', better: 'higher' });
    rows.push({ name: `dropShard, ${label}, latency p50 / p99 (ms)`, value: `${report.p50.toFixed(2)} / ${report.p99.toFixed(2)}` });
  }
  return rows;
}

export async function post(url: string, query: string, variables: Record<string, unknown>): Promise<any> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: body(query, variables) });
  const json = await response.json();
  if (response.status !== 200 || json.errors) throw new Error(`HTTP ${response.status}: ${JSON.stringify(json).slice(0, 300)}`);
  return json.data;
}

async function subscriptions(app: App, url: string, wsUrl: string): Promise<BenchRow[]> {
  // A soul made ready by three shards (three sources, over two days, at least
  // two clusters). stampAttuned makes it not ready (no shard newer than the
  // attunement); the next dropShard crosses again: a repeatable crossing.
  const db = app.db;
  const now = db.clock.now();
  const soul = await createSoul(db, { name: 'subscribed-soul', essence: 'The soul every subscriber watches.' });
  const corpus = makeObservationCorpus(200, 99);
  await dropShards(db, [
    { content: corpus[0], source: 'delegation', soulIds: [soul.id], createdAt: now - 3 * DAY_MS },
    { content: corpus[1], source: 'manual_review', soulIds: [soul.id], createdAt: now - 2 * DAY_MS },
    { content: corpus[2], source: 'distillation', soulIds: [soul.id], createdAt: now - DAY_MS },
  ]);
  let text = 3;
  const id = String(soul.id);
  const cross = async (): Promise<{ sent: number; returned: number }> => {
    await post(url, STAMP, { id });
    await sleep(5); // the next shard must be created strictly after the attunement
    const sent = wallClock();
    const data = await post(url, DROP, { input: { content: corpus[text++ % corpus.length], source: 'reader_feedback', soulIds: [id] } });
    const returned = wallClock();
    const result = data.dropShard;
    if (result.__typename !== 'DropShardPayload' || !result.readySouls.some((s: { id: string }) => s.id === id)) throw new Error(`the crossing did not happen: ${JSON.stringify(result)}`);
    return { sent, returned };
  };
  await cross(); // warms this process's fetch and the mutation path

  const before = memory();
  const client = new LoadClient('ws', { url: wsUrl, clients: SUBSCRIBERS, query: READY_SUBSCRIPTION, variables: { ids: [id] } });
  try {
    const ready = await client.next<{ connected: number; connectMs: number; firstError?: string }>(60_000, 'subscribers to connect');
    if (ready.connected === 0) throw new Error(`no subscriber connected: ${ready.firstError}`);
    // Subscribing has no acknowledgement in graphql-ws: probe crossings until every subscriber has seen one.
    let seen = 0;
    for (let probe = 0; probe < 10 && seen < ready.connected; probe++) {
      await cross();
      seen = (await client.command<{ times: number[] }>({ cmd: 'collect', timeoutMs: 2000 }, 10_000)).times.length;
    }
    const subscribed = memory();
    const afterReturn: number[] = [];
    const afterSend: number[] = [];
    const roundTrips: number[] = [];
    let missing = 0;
    for (let round = 0; round < CROSSINGS; round++) {
      await client.command({ cmd: 'reset' }, 5000);
      const { sent, returned } = await cross();
      roundTrips.push(returned - sent);
      const collected = await client.command<{ times: number[]; missing: number }>({ cmd: 'collect', timeoutMs: 5000 }, 15_000);
      missing += collected.missing;
      for (const t of collected.times) {
        afterReturn.push(t - returned);
        afterSend.push(t - sent);
      }
    }
    const subscribers = `${ready.connected} graphql-ws subscribers`;
    const rows: BenchRow[] = [];
    if (ready.connected < SUBSCRIBERS) rows.push({ name: `graphql-ws subscribers that failed to connect (of ${SUBSCRIBERS})`, value: `${SUBSCRIBERS - ready.connected}: ${ready.firstError ?? ''}` });
    rows.push(
      { name: `crystallizationReady to ${subscribers}: time to connect all (ms)`, value: ready.connectMs.toFixed(0) },
      { name: `crystallizationReady to ${subscribers}: p50 after the mutation returned (ms, ${CROSSINGS} crossings; < 0: before)`, value: percentile(afterReturn, 50).toFixed(1) },
      { name: `crystallizationReady to ${subscribers}: p99 after the mutation returned (ms; target ≤ 200)`, value: percentile(afterReturn, 99).toFixed(1) },
      { name: `crystallizationReady to ${subscribers}: p50 / p99 after the mutation was sent (ms)`, value: `${percentile(afterSend, 50).toFixed(1)} / ${percentile(afterSend, 99).toFixed(1)}` },
      { name: `the crossing dropShard with ${subscribers}: round trip (ms, median)`, value: median(roundTrips).toFixed(1) },
      { name: `crystallizationReady deliveries missing (of ${CROSSINGS} × ${ready.connected})`, value: `${missing} (${seen} saw a probe)`, numbers: [missing], unit: 'count', better: 'lower' },
      { name: 'server RSS / JS heap used before the subscribers connect (after a full GC)', value: `${mib(before.rss)} / ${mib(before.heapUsed)}` },
      {
        name: `server RSS / JS heap used with ${subscribers}`,
        value: `${mib(subscribed.rss)} / ${mib(subscribed.heapUsed)} (${kib((subscribed.rss - before.rss) / ready.connected)} / ${kib((subscribed.heapUsed - before.heapUsed) / ready.connected)} each)`,
        numbers: [subscribed.rss, subscribed.heapUsed].map((bytes) => Number((bytes / 2 ** 20).toFixed(1))),
        unit: 'MiB',
        better: 'lower',
      },
    );
    await client.command({ cmd: 'close' }, 20_000);
    return rows;
  } finally {
    await client.finish(3000);
  }
}

export async function benchApi(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'souls-bench-api-'));
  process.on('exit', killChildren);
  let app: App | null = null;
  const variantApps = new Map<string, App>();
  let bareConnection: SoulsDb | null = null;
  const bare = bareHello();
  const servers: Server[] = [];
  const closers: Array<() => void> = [];
  try {
    const db = openSoulsDb({ path: join(dir, 'api.db') });
    app = buildApp({ db, graphiql: false });
    const seeded = await seed(db);
    const { url } = await app.start(0, '127.0.0.1');
    const barePort = await listen(bare);
    const bareUrl = `http://127.0.0.1:${barePort}/graphql`;
    const bareSchema = bareSouls(db);
    servers.push(bareSchema.server);
    const soulsUrl = `http://127.0.0.1:${await listen(bareSchema.server)}/graphql`;
    // In the breakdown, every Yoga (the whole app's, bare Yoga's, each variant's) has a connection of its own to the file.
    const connect = () => openSoulsDb({ path: join(dir, 'api.db') });
    bareConnection = connect();
    const withoutScopeAuth = builder.toSchema({ disableScopeAuth: true });
    const yogas = new Map<string, Fetch>([['bare', bareSouls(bareConnection).yoga.fetch]]);
    const omissions: Array<[string, { omit?: ReadonlySet<RequestLayer>; schema?: typeof schema }]> = [
      ['app', {}],
      ...REQUEST_LAYERS.map((layer): [string, { omit: ReadonlySet<RequestLayer> }] => [layer, { omit: new Set([layer]) }]),
      ['scopeAuth', { schema: withoutScopeAuth }],
      ['all', { omit: new Set(REQUEST_LAYERS), schema: withoutScopeAuth }],
    ];
    for (const [name, omission] of omissions) {
      const variant = buildApp({ db: connect(), graphiql: false, ...omission });
      variantApps.set(name, variant);
      yogas.set(name, variant.yoga.fetch);
    }
    const withoutRequestLine = (await variantApps.get('requestLine')!.start(0, '127.0.0.1')).url;
    const rows: BenchRow[] = [
      { name: 'data: souls / traits / shards / ready souls', value: `${seeded.soulIds.length} / ${seeded.soulIds.length * TRAITS_PER_SOUL} / ${seeded.shards} / ${seeded.ready}` },
    ];
    rows.push(...(await dashboard(url, `http://127.0.0.1:${barePort}/ping`)));
    rows.push(...(await renderedVsBare({ app: url, bare: soulsUrl, hello: bareUrl, withoutRequestLine }, yogas, seeded.soulIds)));
    rows.push(...(await dropShardRate(url, dir, seeded.soulIds)));
    const dropBare = bareDrop(join(dir, 'bare-drop.db'), seeded.soulIds);
    servers.push(dropBare.server);
    closers.push(dropBare.close);
    rows.push(...(await dropShardVsBare(url, `http://127.0.0.1:${await listen(dropBare.server)}/graphql`, dropBodies(dir, seeded.soulIds))));
    rows.push(...(await subscriptions(app, url, url.replace(/^http/, 'ws'))));
    return rows;
  } finally {
    killChildren();
    process.off('exit', killChildren);
    for (const variant of variantApps.values()) await variant.stop();
    if (bareConnection) closeSoulsDb(bareConnection);
    await app?.stop();
    for (const server of [bare, ...servers]) {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    }
    for (const close of closers) close();
    rmSync(dir, { recursive: true, force: true });
  }
}
