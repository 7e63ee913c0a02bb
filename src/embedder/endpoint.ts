/**
 * The user's own embedding model behind an OpenAI-compatible endpoint (OpenAI, Ollama, llama.cpp's server, vLLM,
 * Hugging Face TEI, LM Studio), as the Embedder of similarity `semantic`:
 *   POST {url} { model, input: [texts] }  →  { data: [{ embedding, index }] }
 * with the key, if any, as `Authorization: Bearer`. Each call has a timeout; a failure worth retrying (a timeout,
 * the network, 408, 429, 5xx, an answer that is not a valid set of vectors or is larger than its cap) is retried
 * after an exponential backoff with jitter, or after the server's Retry-After. A circuit stops calling an endpoint
 * that keeps failing: after `circuitFailures` failures in a row it is left alone for `circuitCooldownMs`, then one
 * call probes it, and its answer closes the circuit or opens it again. Calls wait while the circuit is open, however
 * long, so shards queued during an outage get their vectors once it ends; a call refused for good (another 4xx, or a
 * redirect: none is followed, so the texts go to no other place than the URL given), or failing `maxAttempts` times
 * while the endpoint answers others, is given up: its shards stay lexical until `souls reindex`.
 * An answer is read as a stream, decompressed as it arrives, and cut off (the connection closed) once it passes its
 * cap, in bytes read or decompressed: a gzip bomb or an endless answer costs no more memory than the cap.
 * Time and randomness are injected, so tests run the same every time. The key is never logged, counted or put in
 * an error; the URL is shown without its credentials and query.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { EmbedError, type CircuitState, type EmbedFailureReason, type Embedder, type EmbedderObserver } from '../engine/semantic.ts';
import { encodeEmbedding } from '../engine/provided.ts';
import { ValidationError } from '../engine/errors.ts';

/** Waits and reads time: real ones by default, a test's own to run without waiting. */
export type EmbedderTimers = {
  /** Epoch milliseconds (a Retry-After date is read against it). */
  now(): number;
  /** Resolves after `ms`, or rejects once `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
};

export type EndpointOptions = {
  /** A base URL (http://127.0.0.1:11434/v1), to which /embeddings is added, or the full URL ending in /embeddings. */
  url: string;
  model: string;
  /** Sent as `Authorization: Bearer <key>`; none when null. */
  key?: string | null;
  batchSize?: number;
  concurrency?: number;
  /** How long one call may take. */
  timeoutMs?: number;
  /** Failed attempts of one batch, while the circuit is closed, before it is given up. */
  maxAttempts?: number;
  /** The first retry's backoff; each next one doubles, up to maxBackoffMs. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** The longest Retry-After honoured (a longer one is cut to this). */
  maxRetryAfterMs?: number;
  circuitFailures?: number;
  circuitCooldownMs?: number;
  /** The most bytes one answer may take, read and decompressed alike; null or absent: answerCap's, per call. */
  maxAnswerBytes?: number | null;
  timers?: EmbedderTimers;
  /** In [0, 1): the jitter's draw. */
  random?: () => number;
};

export const endpointDefaults = {
  // Ollama, TEI and llama.cpp's server take 32 inputs a call without complaint (TEI's default max is 32); OpenAI takes 2,048.
  batchSize: 32,
  concurrency: 2,
  timeoutMs: 30_000,
  maxAttempts: 6,
  backoffMs: 500,
  maxBackoffMs: 30_000,
  maxRetryAfterMs: 300_000,
  circuitFailures: 5,
  circuitCooldownMs: 30_000,
} as const;

/** The longest vector taken from an endpoint (maxEmbeddingDimension's ceiling). */
const MAX_DIMENSION = 16_384;

/**
 * What an answer may take, generously: a number printed compactly takes about 20 bytes, pretty-printed about 35;
 * each item's index and keys some dozens; the answer's model, usage and spacing a few hundred.
 */
const ANSWER_BYTES = { perNumber: 48, perText: 1_024, base: 64 * 1_024 } as const;

/** The largest cap, derived or set: the answer is parsed as one string, and V8's strings end at 512 MiB. */
export const MAX_ANSWER_BYTES = 256 * 1_024 * 1_024;

/**
 * The most bytes an answer for `texts` texts may take, read from the socket and decompressed alike: each text's
 * vector of `dimension` numbers (the longest taken while the model's dimension is not known yet) at 48 bytes a number.
 */
export function answerCap(texts: number, dimension: number | null): number {
  return Math.min(MAX_ANSWER_BYTES, ANSWER_BYTES.base + texts * (ANSWER_BYTES.perText + (dimension ?? MAX_DIMENSION) * ANSWER_BYTES.perNumber));
}

export const realTimers: EmbedderTimers = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      // A retry waiting must not keep a process alive that has nothing else to do.
      timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** The URL calls go to: a base gets /embeddings; one already ending in /embeddings is used as it is. Refuses anything but http(s). */
export function embeddingsUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ValidationError('embedderUrl', 'must be an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ValidationError('embedderUrl', `must be an http:// or https:// URL, got ${url.protocol}//…`);
  if (!/\/embeddings\/?$/.test(url.pathname)) url.pathname = `${url.pathname.replace(/\/+$/, '')}/embeddings`;
  return url;
}

/** The URL for people and logs: no user, password, query or fragment (any of which may carry a secret). */
export function shownUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

type Failure = { reason: EmbedFailureReason; retryable: boolean; retryAfterMs: number | null; message: string };

class CallFailure extends Error {
  readonly failure: Failure;
  constructor(failure: Failure) {
    super(failure.message);
    this.failure = failure;
  }
}

const fail = (reason: EmbedFailureReason, message: string, retryable = true, retryAfterMs: number | null = null): never => {
  throw new CallFailure({ reason, retryable, retryAfterMs, message });
};

/** Retry-After as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number): number | null {
  if (header === null) return null;
  const text = header.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** The decompressors of the encodings asked for (Accept-Encoding); another is a malformed answer. */
const decoders = new Map<string, () => Transform>([
  ['gzip', createGunzip],
  ['x-gzip', createGunzip],
  ['deflate', createInflate],
  ['br', createBrotliDecompress],
]);

/** One POST; resolves with the answer's head, its body unread. node:http follows no redirect. */
function post(url: URL, headers: Record<string, string>, payload: string, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(url, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(payload)) }, signal }, resolve);
    request.on('error', reject);
    request.end(payload);
  });
}

/** Where a redirect pointed, for the error: its origin and path only (a query may carry a secret). */
function redirectTarget(location: string | undefined, base: URL): string {
  if (location === undefined) return 'nowhere (no Location)';
  try {
    return shownUrl(new URL(location, base));
  } catch {
    return 'an unreadable Location';
  }
}

/** Any answer but a 2xx is a CallFailure, its body left unread (the connection is closed). */
function refuseStatus(response: IncomingMessage, endpoint: { shown: string; url: URL; model: string; now: number; maxRetryAfterMs: number }): void {
  const { shown, url, model } = endpoint;
  const status = response.statusCode ?? 0;
  if (status >= 200 && status < 300) return;
  response.destroy();
  if (status >= 300 && status < 400) {
    fail('redirected', `${shown} answered ${status}, redirecting to ${redirectTarget(response.headers.location, url)}: Souls follows no redirect (the texts go nowhere but --embedder-url); give the URL the endpoint is at`, false);
  }
  const wait = retryAfterMs(response.headers['retry-after'] ?? null, endpoint.now);
  const capped = wait === null ? null : Math.min(wait, endpoint.maxRetryAfterMs);
  if (status === 429) fail('rate_limited', `${shown} answered 429 (rate limited)`, true, capped);
  if (status >= 500) fail('server_error', `${shown} answered ${status}`, true, capped);
  if (status === 408) fail('timeout', `${shown} answered 408 (request timeout)`, true, capped);
  fail('rejected', `${shown} refused the request with ${status}${status === 401 || status === 403 ? ' (check the key: SOULS_EMBEDDER_KEY or --embedder-key-file)' : status === 404 ? ` (check the URL and that the model "${model}" is there)` : ''}`, false);
}

/**
 * The answer's body, decompressed, once at most `cap` bytes were read and at most `cap` decompressed: past either,
 * reading stops and the connection is closed (a too_large CallFailure). The decompressor is pulled, never pushed,
 * so nothing is inflated or buffered much beyond the cap.
 */
async function readCapped(response: IncomingMessage, cap: number, count: number, shown: string): Promise<Buffer> {
  const tooLarge = (): never =>
    fail('too_large', `${shown} answered more than ${cap} bytes for ${count} text${count === 1 ? '' : 's'}: cut off there (the cap follows the batch size and the vectors' dimension; --embedder-max-answer-bytes sets it)`);
  if (Number(response.headers['content-length']) > cap) {
    response.destroy();
    tooLarge();
  }
  const coding = (response.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const decoder = coding === 'identity' || coding === '' ? null : decoders.get(coding)?.();
  if (decoder === undefined) {
    response.destroy();
    fail('malformed', `${shown} answered in a Content-Encoding Souls cannot read (${coding})`);
  }
  let read = 0;
  let decoded = 0;
  const chunks: Buffer[] = [];
  const counted = async function* (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) {
      if ((read += chunk.length) > cap) tooLarge();
      yield chunk;
    }
  };
  const kept = async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) {
      if ((decoded += chunk.length) > cap) tooLarge();
      chunks.push(chunk);
    }
  };
  let undecodable = false;
  decoder?.once('error', () => (undecodable = true));
  try {
    await (decoder ? pipeline(response, counted, decoder, kept) : pipeline(response, counted, kept));
  } catch (error) {
    if (error instanceof CallFailure) throw error;
    if (undecodable) fail('malformed', `${shown} answered a ${coding} body that does not decompress`);
    throw error;
  }
  return Buffer.concat(chunks, decoded);
}

/**
 * The circuit: closed, open until a moment, or half open with one probe out (the others wait for its answer).
 * Transitions are told to the observer of the call that caused them.
 */
class Circuit {
  state: CircuitState = 'closed';
  private failures = 0;
  private openUntil = 0;
  private probeDone: Promise<void> | null = null;
  private endProbe: () => void = () => {};
  private readonly threshold: number;
  private readonly cooldownMs: number;
  private readonly timers: EmbedderTimers;

  constructor(threshold: number, cooldownMs: number, timers: EmbedderTimers) {
    this.threshold = threshold;
    this.cooldownMs = cooldownMs;
    this.timers = timers;
  }

  /** Waits until a call may go out; true when this call is the probe of a half-open circuit. */
  async permit(signal: AbortSignal, observer: EmbedderObserver): Promise<boolean> {
    for (;;) {
      if (this.state === 'closed') return false;
      if (this.state === 'open') {
        const wait = this.openUntil - this.timers.now();
        if (wait > 0) {
          await this.timers.sleep(wait, signal);
          continue;
        }
        this.probeDone = new Promise((resolve) => (this.endProbe = resolve));
        this.move('half_open', null, observer);
        return true;
      }
      await abortable(this.probeDone!, signal);
    }
  }

  succeeded(observer: EmbedderObserver): void {
    this.failures = 0;
    if (this.state !== 'closed') this.move('closed', null, observer);
  }

  failed(failure: Failure, probing: boolean, observer: EmbedderObserver): void {
    this.failures++;
    if (!probing && (this.state !== 'closed' || this.failures < this.threshold)) return;
    this.openUntil = this.timers.now() + Math.max(this.cooldownMs, failure.retryAfterMs ?? 0);
    this.move('open', failure.reason, observer);
  }

  private move(state: CircuitState, reason: EmbedFailureReason | null, observer: EmbedderObserver): void {
    const from = this.state;
    this.state = state;
    if (from === 'half_open') this.endProbe();
    observer.embedCircuit?.({ state, from, failures: this.failures, reason });
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => (signal.removeEventListener('abort', onAbort), resolve(value)),
      (error: unknown) => (signal.removeEventListener('abort', onAbort), reject(error)),
    );
  });
}

export type EndpointEmbedder = Embedder & {
  readonly url: string;
  /** The circuit's state now. */
  readonly circuit: CircuitState;
};

export function createEndpointEmbedder(options: EndpointOptions): EndpointEmbedder {
  const url = embeddingsUrl(options.url);
  const shown = shownUrl(url);
  const model = options.model.trim();
  if (model === '') throw new ValidationError('embedderModel', 'must name the model, e.g. nomic-embed-text');
  const settings = { ...endpointDefaults, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as typeof endpointDefaults & EndpointOptions;
  const timers = options.timers ?? realTimers;
  const random = options.random ?? Math.random;
  const circuit = new Circuit(settings.circuitFailures, settings.circuitCooldownMs, timers);
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', 'accept-encoding': 'gzip, deflate, br' };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  /** The dimension of the first valid answer: every later one must have it (as the database's, once fixed). */
  let learned: number | null = null;

  const backoff = (attempt: number): number => {
    const ceiling = Math.min(settings.maxBackoffMs, settings.backoffMs * 2 ** attempt);
    // Half fixed, half drawn: retries spread out, none comes sooner than half its step.
    return Math.round(ceiling / 2 + random() * (ceiling / 2));
  };

  /** One POST, its answer checked: the texts' vectors in order, or a CallFailure. */
  async function call(texts: readonly string[], signal: AbortSignal, dimension: number | null): Promise<Uint8Array[]> {
    const known = dimension ?? learned;
    const cap = settings.maxAnswerBytes ?? answerCap(texts.length, known);
    const timeout = new AbortController();
    const stop = () => timeout.abort();
    signal.addEventListener('abort', stop, { once: true });
    const timer = new AbortController();
    void timers.sleep(settings.timeoutMs, timer.signal).then(stop, () => {});
    let body: Buffer;
    try {
      const response = await post(url, headers, JSON.stringify({ model, input: texts }), timeout.signal);
      refuseStatus(response, { shown, url, model, now: timers.now(), maxRetryAfterMs: settings.maxRetryAfterMs });
      body = await readCapped(response, cap, texts.length, shown);
    } catch (error) {
      if (error instanceof CallFailure) throw error;
      if (signal.aborted) throw signal.reason;
      if (timeout.signal.aborted) fail('timeout', `${shown} did not answer within ${settings.timeoutMs} ms`);
      return fail('network', `${shown} could not be reached (connection refused, reset or closed)`);
    } finally {
      timer.abort();
      signal.removeEventListener('abort', stop);
    }
    return vectorsOf(body.toString('utf8'), texts.length, known);
  }

  /** The answer's vectors in input order, normalized; anything else is a counted failure and stores nothing. */
  function vectorsOf(body: string, count: number, dimension: number | null): Uint8Array[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      fail('malformed', `${shown} answered something that is not JSON`);
    }
    const data = (parsed as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) fail('malformed', `${shown} answered JSON without a data list`);
    const items = data as unknown[];
    if (items.length !== count) fail('wrong_count', `${shown} answered ${items.length} embeddings for ${count} texts`);
    const vectors = new Array<Uint8Array | undefined>(count);
    items.forEach((item, position) => {
      const { index, embedding } = (item ?? {}) as { index?: unknown; embedding?: unknown };
      // An answer without indexes is in input order (some servers leave them out).
      const at = index === undefined ? position : index;
      if (typeof at !== 'number' || !Number.isInteger(at) || at < 0 || at >= count || vectors[at] !== undefined) fail('wrong_count', `${shown} answered an embedding with index ${JSON.stringify(at)} for ${count} texts`);
      if (!Array.isArray(embedding)) fail('malformed', `${shown} answered an embedding that is not a list of numbers`);
      const values = embedding as unknown[];
      if (dimension !== null && values.length !== dimension) fail('wrong_dimension', `${shown} answered an embedding of ${values.length} numbers; the model's have ${dimension}`);
      if (values.some((v) => typeof v !== 'number' || !Number.isFinite(v))) fail('non_finite', `${shown} answered an embedding holding something other than finite numbers`);
      try {
        vectors[at as number] = encodeEmbedding('embedding', values, MAX_DIMENSION);
      } catch (error) {
        fail('malformed', `${shown} answered an embedding that cannot be used: ${(error as Error).message}`);
      }
    });
    const dimensions = new Set(vectors.map((v) => v!.byteLength / 4));
    if (dimensions.size !== 1) fail('wrong_dimension', `${shown} answered embeddings of ${[...dimensions].join(' and ')} numbers in one answer`);
    learned ??= [...dimensions][0];
    return vectors as Uint8Array[];
  }

  return {
    model,
    url: shown,
    batchSize: settings.batchSize,
    concurrency: settings.concurrency,
    get circuit() {
      return circuit.state;
    },
    async embed(texts, { signal, observer, dimension }) {
      let failedWhileClosed = 0;
      for (let attempt = 0; ; attempt++) {
        const probing = await circuit.permit(signal, observer);
        const started = timers.now();
        try {
          const vectors = await call(texts, signal, dimension);
          observer.embedCall?.({ ms: timers.now() - started, texts: texts.length, outcome: 'ok' });
          circuit.succeeded(observer);
          return vectors;
        } catch (error) {
          if (!(error instanceof CallFailure)) throw error;
          const { failure } = error;
          observer.embedCall?.({ ms: timers.now() - started, texts: texts.length, outcome: failure.reason });
          circuit.failed(failure, probing, observer);
          if (!failure.retryable) throw new EmbedError(failure.reason, failure.message);
          // A probe failing says the endpoint is down, not that this batch is bad: only failures beside answers count.
          if (!probing && ++failedWhileClosed >= settings.maxAttempts) throw new EmbedError(failure.reason, `gave up after ${settings.maxAttempts} attempts: ${failure.message}`);
          await timers.sleep(failure.retryAfterMs ?? backoff(attempt), signal);
        }
      }
    },
  };
}
