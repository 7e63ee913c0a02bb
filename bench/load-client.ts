/**
 * The load generator for bench/api.ts, run as a separate process:
 *
 *   node bench/load-client.ts http '<json HttpConfig>'
 *   node bench/load-client.ts alternate '<json AlternatingConfig>'
 *   node bench/load-client.ts ws '<json WsConfig>'
 *
 * `http`: POSTs GraphQL bodies over `concurrency` keep-alive connections for a
 * warm-up and then a measured phase (bounded by time and by count), and prints
 * one JSON line: counts, elapsed time, requests/s and latency percentiles.
 *
 * `alternate`: the same against several servers in turn, short slices each
 * (see runAlternating), one report line with a report per server.
 *
 * `ws`: opens `clients` graphql-ws clients, each with one subscription, and
 * then follows commands given as JSON lines on stdin, answering each with a
 * JSON line on stdout (see WsCommand). Receive times are wall-clock
 * milliseconds, `performance.timeOrigin + performance.now()`, comparable with
 * the same reading in the parent process.
 *
 * Only 127.0.0.1 is accepted as a target. The process exits when its stdin
 * closes (its parent is gone) or when its hard time limit passes.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

export type HttpConfig = {
  url: string;
  /** Request bodies (JSON strings), used in turn; or a file holding a JSON array of them. */
  bodies?: string[];
  bodiesFile?: string;
  concurrency: number;
  warmupMs?: number;
  durationMs: number;
  /** Upper bound on measured requests. */
  maxRequests?: number;
  /** A response counts as an error unless it is a 200 whose body contains this. */
  expect?: string;
  /** Before anything else, this many GETs to `pingUrl` (warms this process's HTTP client, not the server under test). */
  pingUrl?: string;
  pings?: number;
  /** Include every measured latency (ms) in the report. */
  samples?: boolean;
};

export type HttpReport = {
  requests: number;
  /** Every request answered, the warm-up's included. */
  sent: number;
  errors: number;
  firstError?: string;
  elapsedMs: number;
  perSecond: number;
  p50: number;
  p99: number;
  samples?: number[];
};

/** `alternate` mode: the targets in turn, each for `sliceMs` over `concurrency` keep-alive connections of its own. */
/** Each target's bodies inline, or in a file holding a JSON array of them (a command line holds about 128 KiB). */
export type AlternatingConfig = { targets: Array<{ url: string; bodies?: string[]; bodiesFile?: string; expect?: string }>; concurrency: number; sliceMs: number; cycles: number };
/** Written before and after each recorded slice of the alternate mode. */
export type SliceMark = { slice: number; at: 'start' | 'end' };
export type AlternatingReport = { targets: Array<Omit<HttpReport, 'sent' | 'samples'>> };

export type WsConfig = { url: string; clients: number; query: string; variables?: Record<string, unknown>; connectBatch?: number };

/** Commands on stdin (one JSON object a line); each is answered with one line carrying the same `cmd`. */
export type WsCommand =
  /** How many clients have received at least one event since the last reset. */
  | { cmd: 'count' }
  /** Forget every receive time. */
  | { cmd: 'reset' }
  /** Wait (up to timeoutMs) until every subscribed client has an event since the last reset; then send the first receive time of each. */
  | { cmd: 'collect'; timeoutMs: number }
  /** Close every client and exit. */
  | { cmd: 'close' };

const HARD_LIMIT_MS = 170_000;
const MAX_DURATION_MS = 15_000;

const now = () => performance.timeOrigin + performance.now();

function loopback(url: string, protocols: string[]): URL {
  const parsed = new URL(url);
  if (!protocols.includes(parsed.protocol) || parsed.hostname !== '127.0.0.1') throw new Error(`load-client only targets 127.0.0.1, not ${url}`);
  return parsed;
}

function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function send(line: unknown): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function exchangeOn(agent: Agent, url: URL, method: string, body: string | null): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { accept: 'application/json' };
    if (body !== null) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const req = request({ agent, host: url.hostname, port: url.port, path: url.pathname, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

/**
 * Several servers under the same load in turn, `sliceMs` each, for `cycles` rounds after one unrecorded round: each
 * sees the same share of whatever else the machine is doing, so their ratios hold up under other load. Each recorded
 * slice is announced by a `{ slice, at: 'start' }` line and followed by `{ slice, at: 'end' }`, 20 ms of quiet apart.
 */
async function runAlternating(config: AlternatingConfig): Promise<AlternatingReport> {
  const targets = config.targets.map((t) => {
    const bodies: string[] = t.bodies ?? (t.bodiesFile ? JSON.parse(readFileSync(t.bodiesFile, 'utf8')) : []);
    if (bodies.length === 0) throw new Error(`no request bodies for ${t.url}`);
    return { ...t, bodies, parsed: loopback(t.url, ['http:']), agent: new Agent({ keepAlive: true, maxSockets: config.concurrency }) };
  });
  const totals = targets.map(() => ({ elapsedMs: 0, errors: 0, firstError: undefined as string | undefined, latencies: [] as number[] }));
  let next = 0;
  const slice = async (i: number, record: boolean) => {
    const target = targets[i];
    const deadline = performance.now() + config.sliceMs;
    const worker = async () => {
      while (performance.now() < deadline) {
        const body = target.bodies[next++ % target.bodies.length];
        const start = performance.now();
        let failure: string | undefined;
        try {
          const { status, text } = await exchangeOn(target.agent, target.parsed, 'POST', body);
          if (status !== 200 || (target.expect !== undefined && !text.includes(target.expect))) failure = `HTTP ${status}: ${text.slice(0, 300)}`;
        } catch (error) {
          failure = String(error);
        }
        if (!record) continue;
        totals[i].latencies.push(performance.now() - start);
        if (failure !== undefined) {
          totals[i].errors++;
          totals[i].firstError ??= failure;
        }
      }
    };
    const start = performance.now();
    await Promise.all(Array.from({ length: config.concurrency }, worker));
    if (record) totals[i].elapsedMs += performance.now() - start;
  };
  const pause = () => new Promise((resolve) => setTimeout(resolve, 20));
  for (let cycle = 0; cycle <= config.cycles; cycle++) {
    for (let i = 0; i < targets.length; i++) {
      // Marks around each recorded slice, with the servers idle on both sides, so the parent can read its CPU time.
      if (cycle > 0) send({ slice: i, at: 'start' });
      await pause();
      await slice(i, cycle > 0);
      if (cycle > 0) send({ slice: i, at: 'end' });
      await pause();
    }
  }
  for (const target of targets) target.agent.destroy();
  return {
    targets: totals.map(({ latencies, elapsedMs, errors, firstError }) => {
      const sorted = Float64Array.from(latencies).sort();
      return { requests: latencies.length, errors, ...(firstError === undefined ? {} : { firstError }), elapsedMs, perSecond: (latencies.length * 1000) / elapsedMs, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
    }),
  };
}

async function runHttp(config: HttpConfig): Promise<HttpReport> {
  const target = loopback(config.url, ['http:']);
  const bodies: string[] = config.bodies ?? (config.bodiesFile ? JSON.parse(readFileSync(config.bodiesFile, 'utf8')) : []);
  if (bodies.length === 0) throw new Error('no request bodies');
  const concurrency = Math.max(1, Math.min(256, Math.floor(config.concurrency)));
  const durationMs = Math.min(MAX_DURATION_MS, config.durationMs);
  const warmupMs = Math.min(MAX_DURATION_MS, config.warmupMs ?? 0);
  const maxRequests = config.maxRequests ?? 1_000_000;
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });

  const exchange = (url: URL, method: string, body: string | null) => exchangeOn(agent, url, method, body);

  if (config.pingUrl) {
    const ping = loopback(config.pingUrl, ['http:']);
    for (let i = 0; i < (config.pings ?? 5); i++) await exchange(ping, 'GET', null);
  }

  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const latencies: number[] = [];
  const phase = async (ms: number, record: boolean, limit: number) => {
    const deadline = performance.now() + ms;
    let issued = 0;
    const worker = async () => {
      while (performance.now() < deadline && issued < limit) {
        issued++;
        const body = bodies[next++ % bodies.length];
        const start = performance.now();
        let failure: string | undefined;
        try {
          const { status, text } = await exchange(target, 'POST', body);
          if (status !== 200 || (config.expect !== undefined && !text.includes(config.expect))) failure = `HTTP ${status}: ${text.slice(0, 300)}`;
        } catch (error) {
          failure = String(error);
        }
        if (!record) continue;
        latencies.push(performance.now() - start);
        if (failure !== undefined) {
          errors++;
          firstError ??= failure;
        }
      }
    };
    const start = performance.now();
    await Promise.all(Array.from({ length: concurrency }, worker));
    return performance.now() - start;
  };
  if (warmupMs > 0) await phase(warmupMs, false, Number.MAX_SAFE_INTEGER);
  const elapsedMs = await phase(durationMs, true, maxRequests);
  agent.destroy();
  const sorted = Float64Array.from(latencies).sort();
  return {
    requests: latencies.length,
    sent: next,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    elapsedMs,
    perSecond: (latencies.length * 1000) / elapsedMs,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    ...(config.samples ? { samples: latencies } : {}),
  };
}

async function runWs(config: WsConfig): Promise<void> {
  loopback(config.url, ['ws:']);
  const count = Math.max(1, Math.min(5000, Math.floor(config.clients)));
  const batch = config.connectBatch ?? 100;
  const clients: Client[] = [];
  /** First receive time of each client since the last reset (NaN = none yet). */
  const received = new Float64Array(count).fill(NaN);
  const failed = new Uint8Array(count);
  let firstError: string | undefined;
  let waiter: (() => void) | null = null;
  let gotCount = 0;
  let failedCount = 0;
  const fail = (i: number, error: unknown) => {
    if (!failed[i]) {
      failed[i] = 1;
      failedCount++;
    }
    firstError ??= error instanceof Error ? error.message : typeof error === 'string' ? error : JSON.stringify(error);
  };
  const live = () => count - failedCount;

  const connectStart = performance.now();
  for (let start = 0; start < count; start += batch) {
    const connecting: Array<Promise<void>> = [];
    for (let i = start; i < Math.min(count, start + batch); i++) {
      connecting.push(
        new Promise<void>((resolve) => {
          let settled = false;
          const done = () => {
            if (!settled) {
              settled = true;
              resolve();
            }
          };
          const client = createClient({
            url: config.url,
            webSocketImpl: WebSocket,
            lazy: false,
            retryAttempts: 0,
            onNonLazyError: (error) => {
              fail(i, error instanceof Error ? error : `connection closed (${(error as { code?: number })?.code ?? 'no code'})`);
              done();
            },
            on: {
              connected: () => done(),
              closed: () => {
                if (!settled) fail(i, 'closed before the connection was acknowledged');
                done();
              },
            },
          });
          clients[i] = client;
        }),
      );
    }
    await Promise.all(connecting);
  }
  const connectMs = performance.now() - connectStart;

  for (let i = 0; i < count; i++) {
    if (failed[i]) continue;
    clients[i].subscribe(
      { query: config.query, variables: config.variables },
      {
        next: (result) => {
          if (result.errors) {
            firstError ??= JSON.stringify(result.errors).slice(0, 300);
            return;
          }
          if (Number.isNaN(received[i])) {
            received[i] = now();
            gotCount++;
            if (waiter && gotCount >= live()) waiter();
          }
        },
        error: (error) => fail(i, error),
        complete: () => {},
      },
    );
  }
  send({ cmd: 'ready', clients: count, connected: live(), connectMs, ...(firstError ? { firstError } : {}) });

  const close = async () => {
    await Promise.all(clients.map((client) => client?.dispose()));
    send({ cmd: 'close', ok: true });
    process.exit(0);
  };
  const lines = createInterface({ input: process.stdin });
  lines.on('close', () => void close());
  for await (const line of lines) {
    if (!line.trim()) continue;
    const command = JSON.parse(line) as WsCommand;
    if (command.cmd === 'count') send({ cmd: 'count', received: gotCount, live: live(), ...(firstError ? { firstError } : {}) });
    else if (command.cmd === 'reset') {
      received.fill(NaN);
      gotCount = 0;
      send({ cmd: 'reset', ok: true });
    } else if (command.cmd === 'collect') {
      if (gotCount < live()) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(command.timeoutMs, 30_000));
          waiter = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        waiter = null;
      }
      const times: number[] = [];
      for (let i = 0; i < count; i++) if (!failed[i] && !Number.isNaN(received[i])) times.push(received[i]);
      send({ cmd: 'collect', times, missing: live() - times.length, ...(firstError ? { firstError } : {}) });
    } else if (command.cmd === 'close') {
      await close();
    }
  }
}

async function main(): Promise<void> {
  const [mode, json] = process.argv.slice(2);
  setTimeout(() => {
    process.stderr.write('load-client: hard time limit reached\n');
    process.exit(3);
  }, HARD_LIMIT_MS).unref();
  if (mode === 'http' || mode === 'alternate') {
    // The parent holds our stdin open; when it goes away, so do we.
    process.stdin.on('end', () => process.exit(4));
    process.stdin.resume();
    send(mode === 'http' ? await runHttp(JSON.parse(json) as HttpConfig) : await runAlternating(JSON.parse(json) as AlternatingConfig));
    process.exit(0);
  } else if (mode === 'ws') {
    await runWs(JSON.parse(json) as WsConfig);
  } else {
    throw new Error(`unknown mode ${mode}: expected http, alternate or ws`);
  }
}

main().catch((error) => {
  process.stderr.write(`load-client: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
