import { spawn, type ChildProcess } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

const CLI = fileURLToPath(new URL('../../src/cli/index.ts', import.meta.url));
const PROJECT = fileURLToPath(new URL('../..', import.meta.url));

export type Child = { process: ChildProcess; output: () => { stdout: string; stderr: string } };
export type Exit = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

/** This process' environment without SOULS_* settings or NODE_OPTIONS (so each test states its own), plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('SOULS_') && key !== 'NODE_OPTIONS') env[key] = value;
  return { ...env, ...extra };
}

/**
 * Runs a command line in this process through the dispatcher `souls` runs, stdout and stderr not terminals, with
 * `cleanEnv(env)`: for tests about what a command prints and returns. Each behaviour of the process itself (its
 * exit code, signals, what it leaves on disk once gone) keeps a test through cliRunner's real child.
 */
export async function runInProcess(args: string[], env: Record<string, string> = {}): Promise<Exit> {
  const sink = () => {
    let text = '';
    const stream = new Writable({
      write(chunk, _encoding, done) {
        text += String(chunk);
        done();
      },
    });
    return { stream: Object.assign(stream, { isTTY: false }), text: () => text };
  };
  // Loaded here, not with this module: most files using cliRunner never need the whole program in their process.
  const [{ runCli }, { commands }] = await Promise.all([import('../../src/cli/dispatch.ts'), import('../../src/cli/index.ts')]);
  const stdout = sink();
  const stderr = sink();
  const code = await runCli(commands, args, { stdout: stdout.stream, stderr: stderr.stream, env: cleanEnv(env) });
  return { code, signal: null, stdout: stdout.text(), stderr: stderr.text() };
}

/** Runs `src/cli/index.ts` as real child processes; `killAll()` (in afterEach) leaves none behind. */
export function cliRunner(timeouts: { startMs?: number; exitMs?: number } = {}) {
  // Bounds for a hang only: at load 20 on two cores a server's start was seen to take over 15 s.
  const startMs = timeouts.startMs ?? 60_000;
  const exitMs = timeouts.exitMs ?? 60_000;
  let children: Child[] = [];

  function cli(args: string[], env: Record<string, string> = {}): Child {
    const proc = spawn(process.execPath, [CLI, ...args], { cwd: PROJECT, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const child = { process: proc, output: () => ({ stdout, stderr }) };
    children.push(child);
    return child;
  }

  function exited(child: Child, ms = exitMs): Promise<Exit> {
    const { process: proc } = child;
    const done = () => ({ code: proc.exitCode, signal: proc.signalCode, ...child.output() });
    if (proc.exitCode !== null || proc.signalCode !== null) return new Promise((resolve) => setImmediate(() => resolve(done())));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the CLI did not exit within ${ms} ms; output so far: ${JSON.stringify(child.output())}`)), ms);
      proc.once('close', () => {
        clearTimeout(timer);
        resolve(done());
      });
    });
  }

  /** Resolves with the match once stdout (or `stream`) matches `pattern`; fails with the child's output if it exits or hangs first. */
  function printed(child: Child, pattern: RegExp, stream: 'stdout' | 'stderr' = 'stdout'): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(child.output()[stream]);
        if (match) {
          cleanup();
          resolve(match);
        }
      };
      const onExit = () => {
        cleanup();
        reject(new Error(`the CLI exited before printing ${pattern}: ${JSON.stringify(child.output())}`));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`the CLI did not print ${pattern} within ${startMs} ms: ${JSON.stringify(child.output())}`));
      }, startMs);
      const cleanup = () => {
        clearTimeout(timer);
        child.process[stream]!.off('data', check);
        child.process.off('exit', onExit);
      };
      child.process[stream]!.on('data', check);
      child.process.once('exit', onExit);
      check();
    });
  }

  function killAll(): void {
    for (const child of children) if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
    children = [];
  }

  return { cli, exited, printed, killAll };
}

/** Output meant for people: no stack frames, no source paths. */
export function expectNoStack(text: string): void {
  expect(text).not.toMatch(/^\s+at .+/m);
  expect(text).not.toMatch(/\.ts:\d+/);
}

export type NpmStarted = { url: string; stdout: () => string; stop: () => Promise<void> };

/**
 * `npm start -- ARGS` exactly as the README says, with `env` added to a clean environment; resolves once it prints
 * its API's address. `stop()` ends npm and the server it started together (they share a process group).
 */
export async function npmStart(args: readonly string[], env: Record<string, string> = {}): Promise<NpmStarted> {
  const child = spawn('npm', ['start', '--silent', '--', ...args], {
    cwd: PROJECT,
    env: cleanEnv({ PATH: `${PROJECT}node_modules/.bin:${process.env.PATH}`, ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const closed = new Promise((resolve) => child.once('close', resolve));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
    await closed;
  };
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        const found = /Souls API on (http:\S+\/graphql)/.exec(stdout);
        if (found) resolve(found[1]);
      });
      child.once('close', (code) => reject(new Error(`npm start exited with ${code}: ${stdout}${stderr}`)));
    });
    return { url, stdout: () => stdout, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
