import { afterEach, describe, expect, it, vi } from 'vitest';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { manualClock } from '../src/engine/index.ts';
import { loadConfig } from '../src/server/config.ts';
import { createLogger } from '../src/server/log.ts';
import { reduceMemory, startMemoryRelease, type MemoryReleased } from '../src/server/memory-release.ts';
import { serverPerTest } from './support/server.ts';

const MiB = 2 ** 20;

/** A release policy on a hand-moved clock: timers fire when `advance` passes them; resident memory is set by hand. */
function harness(options: { quietMs?: number; minGrowthBytes?: number } = {}) {
  let time = 0;
  let rss = 100 * MiB;
  let timers: Array<{ at: number; run: () => void; id: number }> = [];
  let nextId = 0;
  const released: MemoryReleased[] = [];
  let collections = 0;
  const release = startMemoryRelease({
    quietMs: options.quietMs ?? 1000,
    minGrowthBytes: options.minGrowthBytes,
    onRelease: (r) => released.push(r),
    collect: () => {
      collections++;
      time += 40;
      rss = 120 * MiB;
    },
    rss: () => rss,
    now: () => time,
    timers: {
      set: (run, ms) => {
        const timer = { at: time + ms, run, id: nextId++ };
        timers.push(timer);
        return timer.id;
      },
      clear: (id) => {
        timers = timers.filter((timer) => timer.id !== id);
      },
    },
  });
  const advance = (ms: number) => {
    const until = time + ms;
    for (;;) {
      const due = timers.filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      timers = timers.filter((timer) => timer !== due);
      time = due.at;
      due.run();
    }
    time = until;
  };
  return { release, advance, released, collections: () => collections, pending: () => timers.length, setRss: (mib: number) => (rss = mib * MiB) };
}

describe('memory release policy', () => {
  it('collects once after the quiet period that follows activity, when resident memory grew', () => {
    const h = harness();
    h.release.activity();
    h.setRss(180);
    h.advance(999);
    expect(h.collections()).toBe(0);
    h.advance(1);
    expect(h.collections()).toBe(1);
    expect(h.released).toEqual([{ after: 'quiet', durationMs: 40, rssBefore: 180 * MiB, rssAfter: 120 * MiB }]);
    // Quiet with no new activity: nothing more, and no timer left behind.
    h.advance(60_000);
    expect(h.collections()).toBe(1);
    expect(h.pending()).toBe(0);
  });

  it('waits while requests keep coming: the quiet period starts again at each one', () => {
    const h = harness();
    h.setRss(180);
    for (let i = 0; i < 20; i++) {
      h.release.activity();
      h.advance(900);
    }
    expect(h.collections()).toBe(0);
    // One timer at a time, however many requests.
    expect(h.pending()).toBe(1);
    h.advance(100);
    expect(h.collections()).toBe(1);
  });

  it('does not collect when resident memory grew less than the threshold since the last release', () => {
    const h = harness({ minGrowthBytes: 16 * MiB });
    h.release.activity();
    h.setRss(180);
    h.advance(1000);
    expect(h.collections()).toBe(1);
    // The baseline is now 120 MiB: 130 is 10 MiB more, not worth a collection; 140 is.
    h.release.activity();
    h.setRss(130);
    h.advance(1000);
    expect(h.collections()).toBe(1);
    h.release.activity();
    h.setRss(140);
    h.advance(1000);
    expect(h.collections()).toBe(2);
  });

  it('releases at once when asked (start-up over), whatever the growth, and measures the next growth from there', () => {
    const h = harness({ minGrowthBytes: 16 * MiB });
    h.setRss(101);
    h.release.releaseNow();
    expect(h.released).toEqual([{ after: 'start', durationMs: 40, rssBefore: 101 * MiB, rssAfter: 120 * MiB }]);
    h.release.activity();
    h.setRss(130);
    h.advance(1000);
    expect(h.collections()).toBe(1);
  });

  it('stop cancels the pending check', () => {
    const h = harness();
    h.release.activity();
    h.setRss(180);
    h.release.stop();
    expect(h.pending()).toBe(0);
    h.advance(10_000);
    expect(h.collections()).toBe(0);
  });
});

describe('reduceMemory', () => {
  it("gives the heap pages a burst freed back to the operating system, which V8's own collections keep pooled", () => {
    let burst: unknown[] | null = [];
    for (let i = 0; i < 1_200_000; i++) burst.push({ i, text: `burst ${i}`, list: [i] });
    burst = null;
    const before = process.memoryUsage.rss();
    reduceMemory();
    const after = process.memoryUsage.rss();
    // The burst held well over 100 MiB of heap; most of it goes back.
    expect(before - after).toBeGreaterThan(48 * MiB);
    expect(globalThis).not.toHaveProperty('gc');
  });
});

describe('souls serve --release-memory-after', () => {
  it('defaults to 10 s, takes seconds from the flag, the environment or the config, 0 for never, and names the flag when bad', () => {
    expect(loadConfig([], {}).releaseMemoryAfterMs).toBe(10_000);
    expect(loadConfig(['--release-memory-after', '2.5'], {}).releaseMemoryAfterMs).toBe(2500);
    expect(loadConfig([], { SOULS_RELEASE_MEMORY_AFTER: '0' }).releaseMemoryAfterMs).toBe(0);
    expect(() => loadConfig(['--release-memory-after', '-1'], {})).toThrow(expect.objectContaining({ field: '--release-memory-after', message: expect.stringMatching(/from 0 \(never\) to 86400/) }));
    expect(() => loadConfig([], { SOULS_RELEASE_MEMORY_AFTER: 'soon' })).toThrow(expect.objectContaining({ field: 'SOULS_RELEASE_MEMORY_AFTER', message: expect.stringMatching(/must be a number/) }));
  });
});

describe('a server that releases memory', () => {
  const start = serverPerTest(afterEach);

  /** Waits until the releases counted reach `n` (bounded for a hang only), then checks there are exactly `n`. */
  async function countReaches(count: () => Promise<number>, n: number): Promise<void> {
    await vi.waitFor(async () => expect(await count()).toBeGreaterThanOrEqual(n), { timeout: 60_000, interval: 25 });
    expect(await count()).toBe(n);
  }

  async function metric(url: string, name: string): Promise<number> {
    const text = await (await fetch(url.replace(/\/graphql$/, '/metrics'))).text();
    return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  }

  it('once listening, then after a quiet spell following requests: counted in /metrics and logged; probes and scrapes alone never set it off', async () => {
    const lines: string[] = [];
    const logger = createLogger({ clock: manualClock(Date.UTC(2026, 0, 2)), destination: { write: (line: string) => lines.push(line) } });
    const server = await start({ app: { logger, memoryRelease: { quietMs: 50, minGrowthBytes: 0 } } });
    const count = () => metric(server.url, 'souls_memory_release_duration_seconds_count');

    const released = () => lines.map((l) => JSON.parse(l)).filter((record) => record.msg === 'memory released');
    expect(released()).toEqual([expect.objectContaining({ level: 'info', after: 'start', durationMs: expect.any(Number), rssBeforeMiB: expect.any(Number), rssAfterMiB: expect.any(Number) })]);
    await fetch(server.url.replace(/\/graphql$/, '/health'));
    await fetch(server.url.replace(/\/graphql$/, '/ready'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await count()).toBe(1);

    const made = await server.request('mutation { createSoul(input: { name: "Mira", essence: "Calm." }) { __typename } }');
    expect(made.status).toBe(200);
    await countReaches(count, 2);
    expect(await metric(server.url, 'souls_memory_released_bytes_total')).toBeGreaterThanOrEqual(0);
    expect(released()[1]).toMatchObject({ after: 'quiet' });

    // Only the scrapes since: no third release.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await count()).toBe(2);
  });

  it('is not set off while the server works only over its sockets: graphql-ws operations and events sent count as activity', async () => {
    // Quiet means 2 s without activity, against activity every 25 ms: only a process stalled for 2 s would see a quiet
    // spell in the bursts below (at 100 ms, a loaded machine's stalls set it off).
    const server = await start({ app: { memoryRelease: { quietMs: 2_000, minGrowthBytes: 0 } } });
    const count = () => metric(server.url, 'souls_memory_release_duration_seconds_count');
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const client = createClient({ url: server.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, lazy: false });
    try {
      const once = (query: string) =>
        new Promise<any>((resolve, reject) => {
          let result: unknown;
          client.subscribe({ query }, { next: (value) => (result = value), error: reject, complete: () => resolve(result) });
        });
      const made = await once('mutation { createSoul(input: { name: "Mira", essence: "Calm." }) { ... on SoulPayload { soul { id } } } }');
      const soulId = made.data.createSoul.soul.id;
      // The release after start, then the one after the mutation's quiet spell: the bursts start from a settled count.
      await countReaches(count, 2);
      const settled = await count();

      // An HTTP request, then queries over the socket every 25 ms for 0.6 s; again, then events alone (as another replica's writes arrive).
      expect((await server.request('{ __typename }')).status).toBe(200);
      for (let t = 0; t < 600; t += 25) {
        expect(await once('{ souls { name } }')).toMatchObject({ data: { souls: [{ name: 'Mira' }] } });
        await sleep(25);
      }
      const received: string[] = [];
      client.subscribe(
        { query: `subscription { soulChanged(soulId: "${soulId}") { kind soul { name } } }` },
        { next: (value: any) => received.push(value.data.soulChanged.soul.name), error: () => {}, complete: () => {} },
      );
      expect((await server.request('{ __typename }')).status).toBe(200);
      for (let t = 0; t < 600; t += 25) {
        server.app.pubsub.publish('soulChanged', { soulId: Number(soulId), kind: 'UPDATED', at: server.clock.now() });
        await sleep(25);
      }
      expect(received.length).toBeGreaterThan(10);
      expect(received[0]).toBe('Mira');
      expect(await count()).toBe(settled);

      // Quiet at last: one release.
      await countReaches(count, settled + 1);
    } finally {
      await client.dispose();
    }
  });
});
