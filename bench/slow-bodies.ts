/**
 * Issue 25 item D from outside: `souls serve` with a tokens file (a child process over an in-memory database) is sent
 * 40 POSTs /graphql without a token, each announcing a body just under the body limit (16 MiB) and sending it slowly
 * (1 MiB every 250 ms); the table shows the server's resident memory (VmRSS from /proc) before, at its highest while
 * the bodies are under way, and after, and how each request ended.
 *
 *   node bench/slow-bodies.ts [--connections 40] [--root DIR]   (DIR: another checkout's souls to measure)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { connections: { type: 'string', default: '40' }, root: { type: 'string' } } });
const root = values.root ?? fileURLToPath(new URL('..', import.meta.url));
const connections = Number(values.connections);
const BODY = 16 * 1024 * 1024 - 1024;
const CHUNK = 1024 * 1024;

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

function startServer(tokensFile: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--max-semi-space-size=2', join(root, 'src/cli/souls.js'), 'serve', '--db', ':memory:', '--port', '0', '--tokens-file', tokensFile, '--log-level', 'warn'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const seen = (chunk: Buffer) => {
      output += chunk;
      const match = /on http:\/\/127\.0\.0\.1:(\d+)\//.exec(output);
      if (match) resolve({ child, port: Number(match[1]) });
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.once('exit', (code) => reject(new Error(`server exited (${code}): ${output}`)));
  });
}

/** One unauthenticated POST whose body trickles in; resolves with how it ended. */
function slowPost(port: number): Promise<string> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/graphql', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': String(BODY) } });
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const done = (how: string) => {
      clearTimeout(timer);
      resolve(how);
    };
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => done(`${res.statusCode} after ${Math.round(sent / CHUNK)} MiB sent`));
    });
    req.on('error', (error: NodeJS.ErrnoException) => done(`${error.code ?? error.message} after ${Math.round(sent / CHUNK)} MiB sent`));
    const chunk = Buffer.alloc(CHUNK, 0x20);
    const more = () => {
      if (req.destroyed) return;
      const size = Math.min(CHUNK, BODY - sent);
      if (size <= 0) return;
      sent += size;
      req.write(size === CHUNK ? chunk : chunk.subarray(0, size));
      timer = setTimeout(more, 250);
    };
    req.flushHeaders();
    more();
  });
}

const dir = mkdtempSync(join(tmpdir(), 'souls-slow-bodies-'));
const tokensFile = join(dir, 'tokens.json');
writeFileSync(tokensFile, JSON.stringify([{ name: 'bench', token: 'tok-bench-0f1e2d3c4b5a69788796a5b4', scopes: ['read'] }]), { mode: 0o600 });
const { child, port } = await startServer(tokensFile);
try {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const before = rssMiB(child.pid!);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(child.pid!))), 50);
  const started = performance.now();
  const endings = await Promise.all(Array.from({ length: connections }, () => slowPost(port)));
  const seconds = (performance.now() - started) / 1000;
  await new Promise((resolve) => setTimeout(resolve, 1000));
  clearInterval(sampler);
  const after = rssMiB(child.pid!);
  const counts = new Map<string, number>();
  for (const ending of endings) counts.set(ending.replace(/ after \d+ MiB sent/, ''), (counts.get(ending.replace(/ after \d+ MiB sent/, '')) ?? 0) + 1);
  const mostSent = Math.max(...endings.map((e) => Number(/after (\d+) MiB/.exec(e)?.[1] ?? 0)));
  console.log(`| connections | RSS before | RSS peak | growth | RSS 1 s after | endings | most sent by one | took |`);
  console.log(`| --- | --- | --- | --- | --- | --- | --- | --- |`);
  console.log(`| ${connections} | ${before.toFixed(1)} MiB | ${peak.toFixed(1)} MiB | +${(peak - before).toFixed(1)} MiB | ${after.toFixed(1)} MiB | ${[...counts].map(([k, n]) => `${n}× ${k}`).join(', ')} | ${mostSent} MiB | ${seconds.toFixed(1)} s |`);
} finally {
  child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
