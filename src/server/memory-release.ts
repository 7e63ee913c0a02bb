import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Plugin } from 'graphql-yoga';

/**
 * Gives back to the operating system what a burst of work left resident, once the server has been quiet.
 *
 * V8 keeps the heap pages a collection frees in a pool for its next allocations, and unmaps them only in a
 * collection asked to reduce memory. Its memory reducer runs one when it finds the allocation rate low; in the
 * server it never did, and only its watchdog gave the pool back, about 100 s after the last full collection. After
 * 50,000 shards were written through the API the pool held 55 MiB of a 270 MiB server (docs/performance.md,
 * "Memory").
 */
export type MemoryRelease = {
  /** A request or a connection came in: the quiet period starts again, and memory may be worth releasing after it. */
  activity(): void;
  /** Releases at once, whatever the growth: once start-up is over (loading a thousand modules leaves the pool full too). */
  releaseNow(): void;
  stop(): void;
};

export type MemoryReleased = { after: 'start' | 'quiet'; durationMs: number; rssBefore: number; rssAfter: number };

export type MemoryReleaseOptions = {
  /** How long the server must be quiet (no activity) before it releases. */
  quietMs: number;
  /** Releases only when resident memory grew by at least this much since the last release (or the start): 16 MiB by default. */
  minGrowthBytes?: number;
  onRelease(released: MemoryReleased): void;
  /** For tests: the collection, resident memory, time and timers. */
  collect?: () => void;
  rss?: () => number;
  now?: () => number;
  timers?: { set(run: () => void, ms: number): unknown; clear(handle: unknown): void };
};

const systemTimers = {
  set: (run: () => void, ms: number) => setTimeout(run, ms).unref(),
  clear: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout),
};

let lastResortCollection: ((options: object) => void) | null = null;

/**
 * A full collection that reduces memory: V8's "last resort" collection, which also unmaps the pooled pages. Only
 * the gc extension reaches it from JavaScript, so the extension is switched on for one new context and off again.
 */
export function reduceMemory(): void {
  if (!lastResortCollection) {
    setFlagsFromString('--expose-gc');
    lastResortCollection = runInNewContext('gc') as (options: object) => void;
    setFlagsFromString('--no-expose-gc');
  }
  lastResortCollection({ type: 'major', flavor: 'last-resort' });
}

export function startMemoryRelease(options: MemoryReleaseOptions): MemoryRelease {
  const { quietMs, onRelease } = options;
  const minGrowth = options.minGrowthBytes ?? 16 * 2 ** 20;
  const collect = options.collect ?? reduceMemory;
  const rss = options.rss ?? (() => process.memoryUsage.rss());
  const now = options.now ?? (() => performance.now());
  const timers = options.timers ?? systemTimers;
  let baseline = rss();
  let lastActivity = 0;
  let active = false;
  let timer: unknown = null;

  const check = () => {
    timer = null;
    const quietFor = now() - lastActivity;
    if (quietFor < quietMs) {
      timer = timers.set(check, quietMs - quietFor);
      return;
    }
    if (!active) return;
    active = false;
    if (rss() - baseline >= minGrowth) release('quiet');
  };

  const release = (after: MemoryReleased['after']) => {
    const rssBefore = rss();
    const started = now();
    collect();
    const durationMs = now() - started;
    baseline = rss();
    onRelease({ after, durationMs, rssBefore, rssAfter: baseline });
  };

  return {
    activity() {
      lastActivity = now();
      active = true;
      timer ??= timers.set(check, quietMs);
    },
    releaseNow: () => release('start'),
    stop() {
      if (timer !== null) timers.clear(timer);
      timer = null;
      active = false;
    },
  };
}

/**
 * GraphQL work on long-lived connections is activity too: operations over graphql-ws and each event a subscription
 * sends (over a socket or SSE), so a server busy only with its sockets is never taken for a quiet one.
 */
export function countsAsActivity(release: MemoryRelease): Plugin {
  const active = () => release.activity();
  return {
    onExecute: active,
    onSubscribe: () => {
      active();
      return { onSubscribeResult: () => ({ onNext: active }) };
    },
  };
}
