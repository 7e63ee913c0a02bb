import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadParaphraseCorpus } from '../bench/paraphrase.ts';
import {
  awaitEmbeddings,
  closeSoulsDb,
  createSoul,
  dropShard,
  dropShards,
  EmbedError,
  formatEvidence,
  getShardEmbeddings,
  manualClock,
  openSoulsDb,
  ValidationError,
  type EmbedderObserver,
  type SoulsDb,
} from '../src/engine/index.ts';
import { contentHash, sentenceEncoder } from '../src/engine/semantic.ts';
import { createEndpointEmbedder, embeddingsUrl, realTimers, retryAfterMs, shownUrl, type EmbedderTimers, type EndpointOptions } from '../src/embedder/endpoint.ts';
import { startEmbeddingServer, type EmbeddingServer } from './support/embedding-server.ts';

// The first request loads the model in the encoder's worker: seconds on a busy machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const T0 = Date.UTC(2026, 3, 1);
let server: EmbeddingServer;
beforeAll(async () => {
  server = await startEmbeddingServer();
  // The model loads on its first text; no call should time out on that.
  await sentenceEncoder.embed(['warm']);
});
afterAll(() => server.stop());

const open: SoulsDb[] = [];
afterEach(() => {
  for (const db of open.splice(0)) closeSoulsDb(db);
  server.faults.length = 0;
  server.embedded.clear();
  server.failAll(null);
  server.resume();
});

/** Small steps, so a test with real timers finishes at once; no jitter spread (random 0.5). A call's timeout is held (heldTimers). */
const quick: Partial<EndpointOptions> = { backoffMs: 1, maxBackoffMs: 4, timeoutMs: 60_000, random: () => 0.5 };

/**
 * Timers whose short waits (the backoffs of a few ms) are real, and whose waits of a second or more (a call's
 * timeout, a circuit's cooldown) end only when the test calls `expire`: on a slow machine no call times out, so a
 * test sees the failures it injected and no others.
 */
function heldTimers(): EmbedderTimers & { expire(): void } {
  const held = new Set<() => void>();
  return {
    now: () => Date.now(),
    sleep(ms, signal) {
      if (ms < 1_000) return realTimers.sleep(ms, signal);
      return new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        const fire = () => (held.delete(fire), resolve());
        held.add(fire);
        signal?.addEventListener('abort', () => (held.delete(fire), reject(signal.reason)), { once: true });
      });
    },
    expire: () => [...held].forEach((fire) => fire()),
  };
}

/** Waits for a state, however long a loaded machine takes to reach it (within the test's own timeout). */
const until = (check: () => void) => vi.waitFor(check, { timeout: 50_000, interval: 5 });

/** What the embedder told its observer: calls by outcome, circuit changes, vectors landed. */
function watcher() {
  const outcomes: string[] = [];
  const circuit: string[] = [];
  const landed = { embedded: 0, reused: 0 };
  const observer: EmbedderObserver = {
    embedCall: ({ outcome }) => outcomes.push(outcome),
    embedCircuit: ({ state, from }) => circuit.push(`${from}->${state}`),
    vectorsLanded: ({ embedded, reused }) => ((landed.embedded += embedded), (landed.reused += reused)),
  };
  return { outcomes, circuit, landed, observer };
}

function endpointDb(options: Partial<EndpointOptions> = {}, observer: EmbedderObserver = {}): SoulsDb {
  const embedder = createEndpointEmbedder({ url: server.url, model: 'use-lite', timers: heldTimers(), ...quick, ...options });
  const db = openSoulsDb({ clock: manualClock(T0), settings: { similarity: 'semantic' }, embedder, observer });
  open.push(db);
  return db;
}

const texts = loadParaphraseCorpus()
  .records.filter((r) => ['no-tests', 'over-tests'].includes(r.theme ?? ''))
  .slice(0, 12)
  .map((r) => r.text);

async function dropAll(db: SoulsDb, contents: readonly string[]) {
  const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
  const { shardIds } = await dropShards(db, contents.map((content, i) => ({ content, source: i % 2 ? 'chat' : 'review', soulIds: [soul.id], createdAt: T0 - (contents.length - i) * 3_600_000 })));
  return { soulId: soul.id, shardIds };
}

/** Timers that move only when the test says: `advance` runs the sleeps that fall due; every sleep asked for is recorded. */
function steppedTimers(start = T0) {
  let now = start;
  const waiting: Array<{ at: number; resolve: () => void }> = [];
  const asked: number[] = [];
  const timers: EmbedderTimers & { advance(ms: number): void; asked: number[]; sleeping(): number[] } = {
    now: () => now,
    sleep(ms, signal) {
      asked.push(ms);
      return new Promise((resolve, reject) => {
        const entry = { at: now + ms, resolve };
        waiting.push(entry);
        signal?.addEventListener('abort', () => {
          waiting.splice(waiting.indexOf(entry), 1);
          reject(signal.reason);
        }, { once: true });
      });
    },
    advance(ms) {
      now += ms;
      for (const entry of waiting.filter((w) => w.at <= now)) {
        waiting.splice(waiting.indexOf(entry), 1);
        entry.resolve();
      }
    },
    asked,
    sleeping: () => waiting.map((w) => w.at - now).sort((a, b) => a - b),
  };
  return timers;
}

describe('an OpenAI-compatible endpoint as the vector source', () => {
  it('lands a vector per shard from the endpoint, binds the database to its model, and embeds each distinct text once', async () => {
    const seen = watcher();
    const db = endpointDb({ batchSize: 4, concurrency: 2 }, seen.observer);
    const before = server.requests;
    // Three copies of one text in the batch, and the same text again in a later write.
    const contents = [...texts.slice(0, 6), texts[0], texts[0]];
    const { soulId, shardIds } = await dropAll(db, contents);
    await awaitEmbeddings(db);
    const { shardId } = await dropShard(db, texts[0], 'chat', [soulId]);
    await awaitEmbeddings(db);
    const vectors = await getShardEmbeddings(db, [...shardIds, shardId]);
    expect(vectors.size).toBe(contents.length + 1);
    for (const v of vectors.values()) expect(v.length).toBe(512);
    // Copies share the first's vector, bit for bit.
    expect(vectors.get(shardIds[6])).toEqual(vectors.get(shardIds[0]));
    expect(vectors.get(shardId)).toEqual(vectors.get(shardIds[0]));
    expect(db.store.embeddingModel()).toBe('use-lite');
    expect(db.store.embeddingDimension()).toBe(512);
    // Each distinct text reached the model once, in ceil(6 / 4) = 2 requests.
    for (const text of texts.slice(0, 6)) expect(server.embedded.get(text)).toBe(1);
    expect(server.requests - before).toBe(2);
    // Reused: the copies in the second batch (the text was being embedded by the first) and the later write's.
    expect(seen.landed).toEqual({ embedded: 6, reused: 2 });
    expect(seen.outcomes).toEqual(['ok', 'ok']);
  });

  it('every fault is a counted failure, never a write that waits or fails, never a bad vector; the vectors land once it recovers', async () => {
    const seen = watcher();
    const timers = heldTimers();
    const db = endpointDb({ maxAttempts: 20, circuitFailures: 100, timers }, seen.observer);
    const { soulId } = await dropAll(db, texts.slice(0, 1));
    await awaitEmbeddings(db);
    server.pause();
    server.faults.push(
      { kind: 'status', status: 500 },
      { kind: 'status', status: 429, retryAfter: '0' },
      { kind: 'status', status: 503, retryAfter: '0' },
      { kind: 'hang' },
      { kind: 'malformed' },
      { kind: 'undecodable' },
      { kind: 'wrong_dimension' },
      { kind: 'non_finite' },
      { kind: 'wrong_count' },
      { kind: 'drop' },
    );
    // The endpoint holds every request: the write answers all the same, its shards without vectors yet.
    const write = await dropShards(db, texts.slice(1, 4).map((content) => ({ content, source: 'chat', soulIds: [soulId] })));
    expect(write.shardIds).toHaveLength(3);
    expect((await getShardEmbeddings(db, write.shardIds)).size).toBe(0);
    server.resume();
    // The endpoint holds the fourth attempt unanswered: its timeout ends it.
    await until(() => expect(server.hanging).toBe(1));
    timers.expire();
    await awaitEmbeddings(db);
    const vectors = await getShardEmbeddings(db, write.shardIds);
    expect([...vectors.values()].map((v) => v.length)).toEqual([512, 512, 512]);
    expect(seen.outcomes.slice(1)).toEqual(['server_error', 'rate_limited', 'server_error', 'timeout', 'malformed', 'malformed', 'wrong_dimension', 'non_finite', 'wrong_count', 'network', 'ok']);
    for (const text of texts.slice(1, 4)) expect(server.embedded.get(text)).toBe(1);
    expect(db.store.embeddingDimension()).toBe(512);
  });

  it('a refused request (another 4xx) gives the batch up at once: its shards stay lexical, counted, and the queue goes on', async () => {
    const dropped: string[] = [];
    const seen = watcher();
    const db = endpointDb({}, { ...seen.observer, embedDropped: ({ reason, shards }) => dropped.push(`${reason}:${shards}`) });
    server.faults.push({ kind: 'status', status: 400 });
    const { soulId, shardIds } = await dropAll(db, texts.slice(0, 2));
    const failure = await awaitEmbeddings(db).then(() => null, (e: unknown) => e);
    expect(failure).toBeInstanceOf(EmbedError);
    expect((failure as EmbedError).reason).toBe('rejected');
    expect(dropped).toEqual(['failed:2']);
    expect((await getShardEmbeddings(db, shardIds)).size).toBe(0);
    const { shardId } = await dropShard(db, texts[5], 'chat', [soulId]);
    await awaitEmbeddings(db);
    expect((await getShardEmbeddings(db, [shardId])).size).toBe(1);
    expect(seen.outcomes).toEqual(['rejected', 'ok']);
  });

  it('cuts an answer off at its cap (a body too large, declared or not, an endless stream, a gzip bomb): each a counted failure of its batch, which is retried', async () => {
    const seen = watcher();
    const circuit: string[] = [];
    const db = endpointDb({}, { ...seen.observer, embedCircuit: ({ reason }) => circuit.push(String(reason)) });
    const { soulId } = await dropAll(db, texts.slice(0, 1));
    await awaitEmbeddings(db);
    // Valid answers padded with 8 MiB of spaces (the old client took them whole), numbers for ever, and a gzip
    // stream of spaces without end: a few bytes on the wire per KiB it inflates to.
    server.faults.push(
      { kind: 'oversized', padding: 8 << 20, declared: true },
      { kind: 'oversized', padding: 8 << 20, declared: false },
      { kind: 'endless' },
      { kind: 'gzip_bomb', padding: Infinity },
      // Then a gzip answer within the cap, read whole.
      { kind: 'gzip_bomb', padding: 16 << 10 },
    );
    const { shardId } = await dropShard(db, texts[1], 'chat', [soulId]);
    await awaitEmbeddings(db);
    expect(seen.outcomes).toEqual(['ok', 'too_large', 'too_large', 'too_large', 'too_large', 'ok']);
    expect((await getShardEmbeddings(db, [shardId])).size).toBe(1);
    expect(circuit).toEqual([]);
    // Each was cut off by the client: the connection closed before the answer ended, a bounded number of bytes
    // written (what the sockets' kernel buffers hold at most, far below the endless), and nothing stored from it.
    await until(() => expect(server.streamed).toHaveLength(5));
    expect(server.streamed.map((answer) => answer.cutOff)).toEqual([true, true, true, true, false]);
    for (const answer of server.streamed) expect(answer.written).toBeLessThan(64 << 20);
  });

  it('a cap set (maxAnswerBytes) applies to every answer; a batch cut off every time is given up and counted, and opens the circuit saying why', async () => {
    const dropped: string[] = [];
    const seen = watcher();
    const db = endpointDb({ maxAnswerBytes: 4_096, maxAttempts: 2 }, { ...seen.observer, embedDropped: ({ reason, shards }) => dropped.push(`${reason}:${shards}`) });
    const { shardIds } = await dropAll(db, texts.slice(0, 1));
    // One vector of 512 numbers is some 11 KB of JSON.
    const failure = (await awaitEmbeddings(db).then(() => null, (e: unknown) => e)) as EmbedError;
    expect(failure).toBeInstanceOf(EmbedError);
    expect(failure.reason).toBe('too_large');
    expect(failure.message).toMatch(/^gave up after 2 attempts: http:\/\/127\.0\.0\.1:\d+\/v1\/embeddings answered more than 4096 bytes for 1 text: cut off there/);
    expect(seen.outcomes).toEqual(['too_large', 'too_large']);
    expect(dropped).toEqual(['failed:1']);
    expect((await getShardEmbeddings(db, shardIds)).size).toBe(0);

    const reasons: string[] = [];
    const failing = endpointDb({ maxAnswerBytes: 4_096, circuitFailures: 2 }, { embedCircuit: ({ from, state, reason }) => reasons.push(`${from}->${state}:${reason}`) });
    await dropAll(failing, texts.slice(2, 3));
    await until(() => expect(reasons).toEqual(['closed->open:too_large']));
  });

  it('follows no redirect: a 307 to another origin sends it nothing, a 308 to the same URL is refused too; the batch is given up at once', async () => {
    const other = await startEmbeddingServer();
    try {
      const dropped: string[] = [];
      const seen = watcher();
      const db = endpointDb({}, { ...seen.observer, embedDropped: ({ reason, shards }) => dropped.push(`${reason}:${shards}`) });
      server.faults.push({ kind: 'redirect', status: 307, location: `${other.url}/embeddings?key=s3cret` });
      const { soulId, shardIds } = await dropAll(db, texts.slice(0, 2));
      const failure = (await awaitEmbeddings(db).then(() => null, (e: unknown) => e)) as EmbedError;
      expect(failure).toBeInstanceOf(EmbedError);
      expect(failure.reason).toBe('redirected');
      expect(failure.message).toContain(`answered 307, redirecting to ${other.url}/embeddings: Souls follows no redirect`);
      expect(failure.message).not.toContain('s3cret');
      expect(other.received).toEqual({ requests: 0, bytes: 0 });

      server.faults.push({ kind: 'redirect', status: 308, location: '/v1/embeddings' });
      const { shardId } = await dropShard(db, texts[5], 'chat', [soulId]);
      await expect(awaitEmbeddings(db)).rejects.toMatchObject({ reason: 'redirected' });
      expect(seen.outcomes).toEqual(['redirected', 'redirected']);
      expect(dropped).toEqual(['failed:2', 'failed:1']);
      expect((await getShardEmbeddings(db, [...shardIds, shardId])).size).toBe(0);
      expect(server.embedded.size).toBe(0);
    } finally {
      await other.stop();
    }
  });

  it('a full queue leaves the overflow lexical, counted, and takes the rest; closing while the endpoint is down ends the wait, storing nothing', async () => {
    const dropped: string[] = [];
    const embedder = createEndpointEmbedder({ url: server.url, model: 'use-lite', timers: heldTimers(), ...quick });
    const db = openSoulsDb({ clock: manualClock(T0), settings: { similarity: 'semantic' }, embedder, maxEmbedQueue: 2, observer: { embedDropped: ({ reason, shards }) => dropped.push(`${reason}:${shards}`) } });
    open.push(db);
    const { shardIds } = await dropAll(db, texts.slice(0, 5));
    expect(dropped).toEqual(['queue_full:3']);
    await awaitEmbeddings(db);
    expect([...(await getShardEmbeddings(db, shardIds)).keys()]).toEqual(shardIds.slice(0, 2));

    server.failAll({ kind: 'status', status: 503 });
    const seen = watcher();
    const down = endpointDb({ circuitFailures: 1, circuitCooldownMs: 60_000 }, seen.observer);
    await dropAll(down, texts.slice(5, 7));
    // The batch now waits out a minute's cooldown; closing the database must not wait for it.
    await until(() => expect(seen.circuit).toEqual(['closed->open']));
    expect(down.semantic!.pending).toBe(2);
    closeSoulsDb(down);
    open.splice(open.indexOf(down), 1);
    await expect(awaitEmbeddings(down)).resolves.toBeUndefined();
    expect(down.semantic!.pending).toBe(0);
    expect(seen.landed).toEqual({ embedded: 0, reused: 0 });
  });

  it('retries after an exponential backoff with jitter, or after the Retry-After the server sent (seconds or a date)', async () => {
    const timers = steppedTimers();
    const seen = watcher();
    const db = endpointDb({ timers, random: () => 0.25, backoffMs: 100, maxBackoffMs: 1_000, timeoutMs: 60_000, circuitFailures: 100, maxAttempts: 20 }, seen.observer);
    const { soulId } = await dropAll(db, texts.slice(0, 1));
    await awaitEmbeddings(db);
    server.faults.push(
      { kind: 'status', status: 500 },
      { kind: 'status', status: 502 },
      { kind: 'status', status: 429, retryAfter: '7' },
      { kind: 'status', status: 503, retryAfter: new Date(T0 + 10_000).toUTCString() },
      { kind: 'status', status: 500 },
      { kind: 'status', status: 500 },
      { kind: 'status', status: 500 },
    );
    const { shardId } = await dropShard(db, texts[1], 'chat', [soulId]);
    const landed = awaitEmbeddings(db);
    for (let failures = 1; failures <= 7; failures++) {
      await until(() => expect(seen.outcomes.length).toBe(1 + failures));
      await until(() => expect(timers.sleeping().filter((ms) => ms !== 60_000)).toHaveLength(1));
      timers.advance(timers.sleeping().find((ms) => ms !== 60_000)!);
    }
    await landed;
    expect((await getShardEmbeddings(db, [shardId])).size).toBe(1);
    // Attempt k waits min(1000, 100·2^k)·(1/2 + 0.25/2): 62.5→63, 125; then 7 s as told, and until the date told
    // (T0 + 10 s, the clock at T0 + 7,188 ms); then 1000 (capped)·0.625 three times.
    expect(timers.asked.filter((ms) => ms !== 60_000)).toEqual([63, 125, 7_000, 2_812, 625, 625, 625]);
  });

  it('the circuit opens after failures in a row, leaves the endpoint alone for its cooldown, probes once, and closes when the probe is answered', async () => {
    const timers = steppedTimers();
    const seen = watcher();
    const db = endpointDb({ timers, backoffMs: 10, maxBackoffMs: 10, timeoutMs: 60_000, circuitFailures: 2, circuitCooldownMs: 1_000 }, seen.observer);
    const { soulId } = await dropAll(db, texts.slice(0, 1));
    await awaitEmbeddings(db);
    const start = server.requests;
    server.failAll({ kind: 'status', status: 500 });
    const { shardId } = await dropShard(db, texts[1], 'chat', [soulId]);
    const landed = awaitEmbeddings(db);
    /** Waits until one sleep (besides calls' timeouts) is pending, and lets it fall due; returns its length. */
    const step = async () => {
      let ms = 0;
      await until(() => {
        const pending = timers.sleeping().filter((t) => t !== 60_000);
        expect(pending).toHaveLength(1);
        ms = pending[0];
      });
      timers.advance(ms);
      return ms;
    };
    // Two failures in a row (each followed by its backoff, 8 ms) open the circuit.
    expect(await step()).toBe(8);
    expect(await step()).toBe(8);
    expect(seen.circuit).toEqual(['closed->open']);
    // Open: the rest of the cooldown is all that waits, and no request goes out meanwhile.
    expect(await step()).toBe(992);
    expect(server.requests - start).toBe(2);
    // The probe fails: open again, for another cooldown.
    await until(() => expect(seen.circuit).toEqual(['closed->open', 'open->half_open', 'half_open->open']));
    expect(server.requests - start).toBe(3);
    server.failAll(null);
    expect(await step()).toBe(8);
    expect(await step()).toBe(992);
    await landed;
    expect(seen.circuit).toEqual(['closed->open', 'open->half_open', 'half_open->open', 'open->half_open', 'half_open->closed']);
    expect(server.requests - start).toBe(4);
    expect((await getShardEmbeddings(db, [shardId])).size).toBe(1);
  });

  it('gives the same report bytes on two fresh databases: other batch sizes and concurrency, the same vectors', async () => {
    const run = async (options: Partial<EndpointOptions>) => {
      const db = endpointDb(options);
      const { soulId, shardIds } = await dropAll(db, texts);
      await awaitEmbeddings(db);
      const vectors = await getShardEmbeddings(db, shardIds);
      return { vectors: shardIds.map((id) => Buffer.from(vectors.get(id)!.buffer).toString('base64')), report: JSON.stringify(await formatEvidence(db, soulId)) };
    };
    const first = await run({ batchSize: 3, concurrency: 3 });
    const second = await run({ batchSize: 32, concurrency: 1 });
    // Each database asked the endpoint for every text once.
    expect(texts.every((text) => server.embedded.get(text) === 2)).toBe(true);
    expect(first.vectors).toHaveLength(texts.length);
    expect(second.vectors).toEqual(first.vectors);
    expect(second.report).toBe(first.report);
    expect(JSON.parse(first.report).similarity.mode).toBe('semantic');
  });

  it('refuses to open a database whose vectors come from another model, naming the flag; a caller\'s vector too', async () => {
    const db = endpointDb();
    await dropAll(db, texts.slice(0, 2));
    await awaitEmbeddings(db);
    const other = createEndpointEmbedder({ url: server.url, model: 'use-lite-reversed' });
    const refused = (() => {
      try {
        openSoulsDb({ store: db.store, settings: { similarity: 'semantic' }, embedder: other });
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).field).toBe('embedderModel');
    expect((refused as ValidationError).message).toContain('the model "use-lite"');
    expect((refused as ValidationError).message).toContain('--embedder-model use-lite');
    expect((refused as ValidationError).message).toContain('souls reindex');
    expect(() => openSoulsDb({ store: db.store, settings: { similarity: 'provided' }, checkEmbeddingModel: true })).toThrow(/callers' vectors/);
  });
});

describe('the endpoint\'s URL and Retry-After', () => {
  it('adds /embeddings to a base URL, keeps a full one, refuses anything but http(s), and shows no credentials', () => {
    expect(embeddingsUrl('http://127.0.0.1:11434/v1').href).toBe('http://127.0.0.1:11434/v1/embeddings');
    expect(embeddingsUrl('http://127.0.0.1:11434/v1/').href).toBe('http://127.0.0.1:11434/v1/embeddings');
    expect(embeddingsUrl('https://api.openai.com/v1/embeddings').href).toBe('https://api.openai.com/v1/embeddings');
    expect(() => embeddingsUrl('ftp://host/v1')).toThrow(ValidationError);
    expect(() => embeddingsUrl('not a url')).toThrow(ValidationError);
    expect(shownUrl(embeddingsUrl('https://user:pw@host/v1?key=s3cret'))).toBe('https://host/v1/embeddings');
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('3', T0)).toBe(3_000);
    expect(retryAfterMs(new Date(T0 + 4_000).toUTCString(), T0)).toBe(4_000);
    expect(retryAfterMs(new Date(T0 - 4_000).toUTCString(), T0)).toBe(0);
    expect(retryAfterMs('soon', T0)).toBeNull();
    expect(retryAfterMs(null, T0)).toBeNull();
  });

  it('hashes contents for reuse: equal texts, equal hashes', () => {
    expect(contentHash('a b')).toBe(contentHash('a b'));
    expect(contentHash('a b')).not.toBe(contentHash('a c'));
  });
});
