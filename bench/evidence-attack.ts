/**
 * The evidence attack of issue 9 item 3, from outside: a server (src/cli/index.ts
 * serve, a child process over a temp file) receives one at-limit dropShards
 * (10,000 shards of 1,400 characters from a 20-word vocabulary, one soul,
 * two sources, spread over days, so the soul passes the cheap gate and
 * clusters), then the expensive reads: evidence { shardCount } three times,
 * four aliased evidence(query:) fields, a restart, and the first
 * souls { crystallization }. While each phase runs, a probe query
 * (soul(id) { name }) is sent every 10 ms on its own connection; the table
 * shows each phase's time and the probes' p50 / p99 / max latency.
 *
 *   node bench/evidence-attack.ts [--shards 10000] [--length 1400]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { makeRng } from './corpus.ts';

const CLI = fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
const DAY_MS = 86_400_000;
const VOCABULARY = ['ledger', 'grain', 'north', 'keep', 'ration', 'count', 'winter', 'raid', 'rumour', 'proof',
  'sack', 'famine', 'trust', 'plain', 'soldier', 'number', 'promise', 'record', 'claim', 'verify'];

export function lowVarietyText(rng: () => number, length: number): string {
  const words: string[] = [];
  let size = 0;
  while (size < length) {
    const word = VOCABULARY[Math.floor(rng() * VOCABULARY.length)];
    words.push(word);
    size += word.length + 1;
  }
  return words.join(' ').slice(0, length);
}

type Server = { child: ChildProcess; url: string };

function startServer(db: string): Promise<Server> {
  const child = spawn(process.execPath, [CLI, 'serve', '--db', db, '--port', '0', '--host', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (chunk) => (output += chunk));
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      const match = /on (http:\/\/\S+\/graphql)/.exec(output);
      if (match) resolve({ child, url: match[1] });
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}): ${output}`)));
  });
}

function stopServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.child.removeAllListeners('exit');
    server.child.once('exit', () => resolve());
    server.child.kill('SIGTERM');
  });
}

/** One request on a fresh connection: a kept-alive socket can be closed by the server while a long phase keeps it busy. */
function post(url: string, query: string, variables?: unknown): Promise<any> {
  const body = JSON.stringify({ query, variables });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c) => (text += c));
        res.on('end', () => resolve(JSON.parse(text)));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

type PhaseResult = { phase: string; ms: number; probes: number; p50: number; p99: number; max: number; note: string };

/** Runs `work` while probing the server every 10 ms on a separate connection. */
async function phase(name: string, url: string, work: () => Promise<string>): Promise<PhaseResult> {
  await post(url, '{ soul(id: "1") { name } }');
  const latencies: number[] = [];
  let running = true;
  const probing = (async () => {
    const pending: Promise<void>[] = [];
    while (running) {
      const sent = performance.now();
      pending.push(post(url, '{ soul(id: "1") { name } }').then(() => void latencies.push(performance.now() - sent)));
      await new Promise((r) => setTimeout(r, 10));
    }
    await Promise.all(pending);
  })();
  const start = performance.now();
  const note = await work();
  const ms = performance.now() - start;
  running = false;
  await probing;
  const sorted = latencies.sort((a, b) => a - b);
  return { phase: name, ms, probes: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0, note };
}

function errorsOf(result: any): string {
  return result.errors ? `errors: ${result.errors.map((e: any) => e.extensions?.code ?? e.message).join(', ')}` : '';
}

export async function evidenceAttack(options: { shards: number; length: number }): Promise<PhaseResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'souls-evidence-attack-'));
  const db = join(dir, 'souls.db');
  let server = await startServer(db);
  const results: PhaseResult[] = [];
  try {
    await post(server.url, 'mutation { createSoul(input: { name: "Target", essence: "Counts everything." }) { __typename } }');
    const rng = makeRng(9);
    const now = Date.now();
    const inputs = Array.from({ length: options.shards }, (_, i) => ({
      content: lowVarietyText(rng, options.length),
      source: i % 2 === 0 ? 'dialogue' : 'quest_turnin',
      soulIds: ['1'],
      createdAt: new Date(now - (1 + (i % 30)) * DAY_MS).toISOString(),
    }));
    results.push(await phase('idle (baseline)', server.url, () => new Promise((r) => setTimeout(() => r(''), 1000))));
    const drop = 'mutation Drop($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { readySouls { id } } ... on Error { message } } }';
    results.push(
      await phase(`dropShards × ${options.shards}`, server.url, async () => {
        const result = await post(server.url, drop, { inputs });
        return errorsOf(result) || result.data.dropShards.__typename;
      }),
    );
    for (let round = 1; round <= 3; round++) {
      results.push(
        await phase(`evidence { shardCount } #${round}`, server.url, async () => {
          const result = await post(server.url, '{ soul(id: "1") { evidence { shardCount clusters { memberCount } } } }');
          return errorsOf(result) || `${result.data.soul.evidence.shardCount} shards, ${result.data.soul.evidence.clusters.length} clusters`;
        }),
      );
    }
    const aliased = `{ soul(id: "1") { ${['ledger', 'grain', 'winter', 'proof'].map((w, i) => `e${i}: evidence(query: "${w}") { shardCount }`).join(' ')} } }`;
    results.push(
      await phase('4 aliased evidence(query:)', server.url, async () => {
        const result = await post(server.url, aliased);
        return errorsOf(result) || `${Object.keys(result.data.soul).length} reports`;
      }),
    );
    await stopServer(server);
    server = await startServer(db);
    results.push(
      await phase('first souls { crystallization } after restart', server.url, async () => {
        const result = await post(server.url, '{ souls { crystallization { ready clusterCount } } }');
        return errorsOf(result) || JSON.stringify(result.data.souls[0].crystallization);
      }),
    );
    results.push(
      await phase('evidence after restart', server.url, async () => {
        const result = await post(server.url, '{ soul(id: "1") { evidence { shardCount markdown } } }');
        return errorsOf(result) || `${result.data.soul.evidence.shardCount} shards`;
      }),
    );
  } finally {
    await stopServer(server);
    rmSync(dir, { recursive: true, force: true });
  }
  return results;
}

export function printPhases(results: readonly PhaseResult[]): void {
  const rows = results.map((r) => [r.phase, `${r.ms.toFixed(0)} ms`, String(r.probes), r.p50.toFixed(1), r.p99.toFixed(1), r.max.toFixed(1), r.note]);
  const header = ['phase', 'time', 'probes', 'probe p50 ms', 'p99 ms', 'max ms', 'result'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  for (const row of [header, ...rows]) console.log(row.map((cell, i) => cell.padEnd(widths[i])).join('  '));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { shards: { type: 'string', default: '10000' }, length: { type: 'string', default: '1400' } } });
  printPhases(await evidenceAttack({ shards: Number(values.shards), length: Number(values.length) }));
}
