/**
 * Issue 32 item 5 from outside: `souls serve` (a child process over an in-memory database) with SUBSCRIBERS reading
 * SSE streams of shardDropped (half of them asking the same operation, so sharing one resolution; the others each
 * their own), then one dropShards of SHARDS shards. While the events go out, /health is asked again and again, one
 * request at a time: its slowest answer is how long the server's event loop was held. The table also shows how long
 * the write took to answer, and how long until every subscriber had every shard (each checked complete and in order).
 *
 *   node bench/batch-delivery.ts [--subscribers 10] [--shards 10000] [--root DIR]   (DIR: another checkout's souls)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { get } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { median } from './engine.ts';
import { sseData } from '../test/support/sse.ts';

const { values } = parseArgs({ options: { subscribers: { type: 'string', default: '10' }, shards: { type: 'string', default: '10000' }, root: { type: 'string' } } });
const root = values.root ?? fileURLToPath(new URL('..', import.meta.url));
const SUBSCRIBERS = Number(values.subscribers);
const SHARDS = Number(values.shards);

let serverOutput = '';

function startServer(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--max-semi-space-size=2', join(root, 'src/cli/souls.js'), 'serve', '--db', ':memory:', '--port', '0', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const seen = (chunk: Buffer) => {
      output += chunk;
      serverOutput += chunk;
      const match = /Souls API on (http:\/\/\S+)/.exec(output);
      if (match) resolve({ child, url: match[1] });
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.once('exit', (code) => reject(new Error(`server exited (${code}): ${output}`)));
  });
}

/** GET /health on a connection of its own (a kept-alive one can be reset when the server was too busy to keep it). */
function askHealth(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`/health answered ${res.statusCode}`))));
    }).on('error', reject);
  });
}

async function graphql(url: string, query: string, variables?: Record<string, unknown>): Promise<any> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  return response.json();
}

/** One SSE subscription, read as it streams: the shard ids it received, in order. */
async function subscribe(url: string, query: string, abort: AbortSignal): Promise<{ ids: string[]; done: Promise<void> }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify({ query }), signal: abort });
  const ids: string[] = [];
  const done = (async () => {
    try {
      for await (const event of sseData(response.body!)) ids.push(event.data.shardDropped.shard.id);
    } catch {
      // aborted at the end
    }
  })();
  return { ids, done };
}

const { child, url } = await startServer();
const health = url.replace(/graphql$/, 'health');
const metrics = url.replace(/graphql$/, 'metrics');
try {
  const soul = (await graphql(url, 'mutation { createSoul(input: { name: "Ledger", essence: "Counts every crate." }) { ... on SoulPayload { soul { id } } } }')).data.createSoul.soul.id;
  const abort = new AbortController();
  const streams = await Promise.all(
    Array.from({ length: SUBSCRIBERS }, (_, i) => {
      // Half share one operation (one resolution for all of them); each of the others asks its own (an alias apart).
      const own = i % 2 === 0 ? '' : ` s${i}: source`;
      return subscribe(url, `subscription { shardDropped(soulId: "${soul}") { shard { id content${own} } } }`, abort.signal);
    }),
  );
  // Listening: every stream is attached once the server counts it.
  for (;;) {
    const text = await (await fetch(metrics)).text();
    if (new RegExp(`^souls_subscriptions_active\\{transport="sse"\\} ${SUBSCRIBERS}$`, 'm').test(text)) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }

  // The loop's delay histogram restarts at each scrape: the next one covers the write and its delivery only.
  await (await fetch(metrics)).text();
  const inputs = Array.from({ length: SHARDS }, (_, i) => ({ soulIds: [soul], content: `Entry ${i} of the ledger: counted the crates at the north gate and wrote the tally down.`, source: 'ledger' }));
  const started = performance.now();
  const write = graphql(url, 'mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { ... on DropShardsPayload { shards { id } } } }', { inputs }).then((body) => ({ body, at: performance.now() - started }));
  const delivered = () => streams.every((s) => s.ids.length >= SHARDS);
  let writeAnswered: number | null = null;
  void write.then((w) => (writeAnswered = w.at));
  // Every answer from the write on, and apart those asked once the write had answered (the events going out).
  const healthAll: number[] = [];
  const healthDuringDelivery: number[] = [];
  while (!delivered()) {
    const asked = performance.now();
    const afterWrite = writeAnswered !== null;
    await askHealth(health);
    healthAll.push(performance.now() - asked);
    if (afterWrite) healthDuringDelivery.push(performance.now() - asked);
  }
  const deliveredAt = performance.now() - started;
  const scraped = await (await fetch(metrics)).text();
  const lag = (name: string) => Number(new RegExp(`^nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(scraped)?.[1] ?? NaN) * 1000;
  const { body, at } = await write;
  const expected: string[] = body.data.dropShards.shards.map((s: { id: string }) => s.id);
  const complete = streams.every((s) => s.ids.length === expected.length && s.ids.every((id, i) => id === expected[i]));
  abort.abort();
  await Promise.all(streams.map((s) => s.done));
  const sorted = [...healthDuringDelivery].sort((a, b) => a - b);
  console.log(`${SUBSCRIBERS} SSE subscribers, one write of ${SHARDS} shards (${root}); load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(`dropShards answered after ${at.toFixed(0)} ms; every subscriber had every shard after ${deliveredAt.toFixed(0)} ms; complete and in order: ${complete}`);
  console.log(`/health asked after the write answered, until the last shard arrived: ${sorted.length} answers, median ${sorted.length ? median(sorted).toFixed(1) : '-'} ms, slowest ${(sorted.at(-1) ?? 0).toFixed(1)} ms`);
  console.log(`the server's event loop from the write to the last shard: delay p99 ${lag('p99').toFixed(0)} ms, max ${lag('max').toFixed(0)} ms (nodejs_eventloop_lag_*)`);
  console.log(`/health from the write on (its own work included): ${healthAll.length} answers, slowest ${Math.max(...healthAll).toFixed(1)} ms`);
} catch (error) {
  console.error(`bench failed: ${String(error)}; the server said:\n${serverOutput.slice(-4000)}`);
  process.exitCode = 1;
} finally {
  child.kill();
}
