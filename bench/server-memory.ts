/**
 * A real server's memory: `souls serve` started as its own process on a new
 * database, its resident memory read from the operating system
 * (/proc/<pid>/status: VmRSS now, VmHWM the peak so far) and its JS heap from
 * its own /metrics, at each stage of a day's work:
 *
 * 1. idle after start, empty;
 * 2. after 50,000 shards over 200 souls were dropped through the API (batched
 *    dropShards mutations), read at 25,000 as well: the figure must not grow
 *    with the number of shards ever written;
 * 3. after 2,000 `soul { rendered crystallization traits }` queries;
 * 4. after 20 evidence reports;
 * 5. with 1,000 graphql-ws subscribers connected (the cost per socket);
 * 6. the same, once the server has been quiet long enough to give memory back (`--release-memory-after`, 10 s).
 *
 * The server runs with Node's flags from `npm start`; SOULS_BENCH_NODE_FLAGS adds more (e.g. to compare
 * `--max-semi-space-size` values), and the environment is passed on (NODE_COMPILE_CACHE, MALLOC_ARENA_MAX).
 * `node bench/server-memory.ts` runs it alone. With SOULS_BENCH_HEAPSNAPSHOTS=<folder>
 * the server is started with --heapsnapshot-signal=SIGUSR2 and a heap snapshot
 * is written into that folder at every stage (slow: seconds each).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { LoadClient, httpRun, mib, post, sleep } from './api.ts';
import { makeObservationCorpus, makeRng } from './corpus.ts';
import type { BenchRow } from './engine.ts';

/** `npm start` as package.json gives it (`node --max-semi-space-size=2 src/cli/souls.js serve`): Node's flags and the program. */
const START_WORDS = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.start as string).split(' ');
const START_FLAGS = START_WORDS.filter((word) => word.startsWith('--'));
const CLI = fileURLToPath(new URL(`../${START_WORDS.find((word) => /\.[jt]s$/.test(word))}`, import.meta.url));
const SOURCES = ['delegation', 'distillation', 'quest_turnin', 'manual_review', 'reader_feedback', 'session_observation'];
const DAY_MS = 86_400_000;
const SOULS = 200;
const SHARDS = 50_000;
const BATCH = 1000;
const QUERIES = 2000;
const REPORTS = 20;
const SUBSCRIBERS = 1000;
/** The server's default `--release-memory-after` (10 s), and time for the collection. */
const QUIET_MS = 13_000;

const CREATE = 'mutation Create($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } ... on Error { message } } }';
const ADD_TRAIT = 'mutation Add($soulId: ID!, $input: AddTraitInput!) { addTrait(soulId: $soulId, input: $input) { __typename ... on Error { message } } }';
const DROP_MANY = 'mutation Drop($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { shards { id } } ... on Error { message } } }';
const SOUL = 'query Soul($id: ID!) { soul(id: $id) { rendered crystallization { ready priority unmet } traits { principle provenance } } }';
const EVIDENCE = 'query Evidence($id: ID!) { soul(id: $id) { evidence { markdown clusters { weight representative { content } } } } }';
const SUBSCRIPTION = 'subscription Changed($id: ID!) { soulChanged(soulId: $id) { soul { id rendered } } }';


type Reading = { rss: number; peak: number; heapUsed: number; heapTotal: number; external: number };

/** The server process: started on a new database, its address read from the banner it prints. */
class ServerProcess {
  readonly child: ChildProcess;
  readonly url: Promise<string>;
  private stderr = '';

  constructor(db: string, snapshots: string | null) {
    const flags = [...START_FLAGS, ...(process.env.SOULS_BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []), ...(snapshots ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshots}`] : [])];
    this.child = spawn(process.execPath, [...flags, CLI, 'serve', '--db', db, '--port', '0', '--log-level', 'warn'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // The server's settings are its defaults: none comes from this shell.
      env: Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SOULS_'))),
    });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-2000);
    });
    this.url = new Promise((resolve, reject) => {
      createInterface({ input: this.child.stdout! }).on('line', (line) => {
        const match = /^Souls API on (\S+)/.exec(line);
        if (match) resolve(match[1]);
      });
      this.child.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening: ${this.stderr.trim()}`)));
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** VmRSS and VmHWM from the kernel, heap figures from the server's own /metrics. */
  async read(url: string): Promise<Reading> {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    const metrics = await (await fetch(url.replace(/graphql$/, 'metrics'))).text();
    const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(metrics)?.[1] ?? NaN);
    return { rss: kib('VmRSS'), peak: kib('VmHWM'), heapUsed: gauge('nodejs_heap_size_used_bytes'), heapTotal: gauge('nodejs_heap_size_total_bytes'), external: gauge('nodejs_external_memory_bytes') };
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000)]);
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

/** 200 souls with two traits each, then 50,000 shards in batches of 1,000, each for one soul, from six sources over 60 days. */
async function fill(url: string, onHalf: () => Promise<void>): Promise<string[]> {
  const soulIds: string[] = [];
  for (let i = 0; i < SOULS; i++) {
    const data = await post(url, CREATE, { input: { name: `soul-${i}`, essence: `Soul ${i} is a ${i % 2 ? 'game character' : 'coding agent'} that learns from what it is seen to do.` } });
    const id: string = data.createSoul.soul.id;
    soulIds.push(id);
    for (let t = 0; t < 2; t++) await post(url, ADD_TRAIT, { soulId: id, input: { principle: `Principle ${t} of soul ${i}: verify before acting.`, provenance: `Seen in review ${t}.` } });
  }
  const rng = makeRng(5);
  const now = Date.now();
  for (let start = 0; start < SHARDS; start += BATCH) {
    const inputs = makeObservationCorpus(BATCH, 1000 + start).map((content) => ({
      content,
      source: SOURCES[Math.floor(rng() * SOURCES.length)],
      soulIds: [soulIds[Math.floor(rng() * SOULS)]],
      createdAt: new Date(now - 60_000 - Math.floor(rng() * 60 * DAY_MS)).toISOString(),
    }));
    const data = await post(url, DROP_MANY, { inputs });
    if (data.dropShards.__typename !== 'DropShardsPayload') throw new Error(`dropShards: ${JSON.stringify(data.dropShards)}`);
    if (start + BATCH === SHARDS / 2) await onHalf();
  }
  return soulIds;
}

export async function benchServerMemory(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'souls-bench-memory-'));
  const snapshots = process.env.SOULS_BENCH_HEAPSNAPSHOTS ? resolve(process.env.SOULS_BENCH_HEAPSNAPSHOTS) : null;
  const server = new ServerProcess(join(dir, 'souls.db'), snapshots);
  const rows: BenchRow[] = [];
  const readings: Reading[] = [];
  /** Settles (timers, sockets), reads, and writes a heap snapshot when asked. */
  const stage = async (url: string, label: string): Promise<Reading> => {
    await sleep(1000);
    const reading = await server.read(url);
    readings.push(reading);
    rows.push({ name: `server RSS / peak RSS / JS heap used / heap total / external: ${label}`, value: `${mib(reading.rss)} / ${mib(reading.peak)} / ${mib(reading.heapUsed)} / ${mib(reading.heapTotal)} / ${mib(reading.external)}` });
    if (snapshots) await heapSnapshot(server, snapshots);
    return reading;
  };
  try {
    const url = await Promise.race([server.url, sleep(60_000).then(() => Promise.reject(new Error('the server did not start in 60 s')))]);
    const started = performance.now();
    const idle = await stage(url, 'idle after start, empty (target ≤ 100 MiB)');
    let half: Reading | null = null;
    const soulIds = await fill(url, async () => {
      half = await stage(url, `after ${(SHARDS / 2).toLocaleString('en')} shards`);
    });
    const full = await stage(url, `after ${SHARDS.toLocaleString('en')} shards over ${SOULS} souls (dropShards, batches of ${BATCH})`);
    rows.push({ name: `RSS growth from ${(SHARDS / 2).toLocaleString('en')} to ${SHARDS.toLocaleString('en')} shards (should be ~0)`, value: mib(full.rss - half!.rss) });

    const bodies = soulIds.map((id) => JSON.stringify({ query: SOUL, variables: { id } }));
    await httpRun({ url, bodies, concurrency: 4, durationMs: 15_000, maxRequests: QUERIES, expect: '"rendered"' }, 'soul queries');
    await stage(url, `after ${QUERIES.toLocaleString('en')} soul { rendered crystallization traits } queries`);

    for (const id of soulIds.slice(0, REPORTS)) await post(url, EVIDENCE, { id });
    const reported = await stage(url, `after ${REPORTS} evidence reports`);

    const client = new LoadClient('ws', { url: url.replace(/^http/, 'ws'), clients: SUBSCRIBERS, query: SUBSCRIPTION, variables: { id: soulIds[0] } });
    try {
      const ready = await client.next<{ connected: number; firstError?: string }>(60_000, 'subscribers to connect');
      if (ready.connected === 0) throw new Error(`no subscriber connected: ${ready.firstError}`);
      const subscribed = await stage(url, `with ${ready.connected} graphql-ws subscribers`);
      rows.push({ name: 'per graphql-ws subscriber: RSS / JS heap', value: `${((subscribed.rss - reported.rss) / ready.connected / 1024).toFixed(1)} KiB / ${((subscribed.heapUsed - reported.heapUsed) / ready.connected / 1024).toFixed(1)} KiB` });
      await sleep(QUIET_MS);
      await stage(url, 'the same after 10 s without requests: memory given back (target ≤ 200 MiB)');
      await client.command({ cmd: 'close' }, 20_000);
    } finally {
      await client.finish(3000);
    }
    rows.push({ name: 'idle → final RSS (MiB); this section took (s)', value: `${(idle.rss / 2 ** 20).toFixed(1)} → ${(readings.at(-1)!.rss / 2 ** 20).toFixed(1)}; ${((performance.now() - started) / 1000).toFixed(0)}` });
    return rows;
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** SIGUSR2 makes the server write Heap.<date>.<pid>...heapsnapshot into the diagnostic folder; waits until it is complete. */
async function heapSnapshot(server: ServerProcess, folder: string): Promise<void> {
  const before = new Set(existsSync(folder) ? readdirSync(folder) : []);
  server.child.kill('SIGUSR2');
  for (let waited = 0; waited < 120_000; waited += 500) {
    await sleep(500);
    const fresh = readdirSync(folder).find((name) => !before.has(name) && name.endsWith('.heapsnapshot'));
    // The file is written in one pass and ends with the strings table's closing brackets.
    if (fresh && readFileSync(join(folder, fresh), 'utf8').trimEnd().endsWith('}')) return;
  }
  throw new Error('no heap snapshot after 120 s');
}

if (import.meta.main) {
  for (const row of await benchServerMemory()) console.log(`${row.name}  ${row.value}`);
}
