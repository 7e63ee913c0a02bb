/**
 * A real OpenAI-compatible embeddings server for tests: POST /v1/embeddings { model, input } answers
 * { object: 'list', data: [{ object: 'embedding', embedding, index }], model } with the project's own model,
 * Universal Sentence Encoder lite (the built-in encoder's worker), one text at a time. Two models are served:
 * `use-lite`, and `use-lite-reversed` (the same numbers in reverse order: another model, as far as Souls can tell).
 * Faults are injected on the same server: queued ones answer the next requests one each, and `failAll` answers
 * every request with one until cleared. It counts requests and, per text, how often it was embedded. An answer too
 * large to buffer (an oversized body, an endless stream, a gzip bomb) is written as the client reads it (waiting for
 * the socket to drain), and `streamed` records how many bytes each wrote before the client closed the connection.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createGzip } from 'node:zlib';
import { decodeEmbedding } from '../../src/engine/provided.ts';
import { sentenceEncoder } from '../../src/engine/semantic.ts';

export type Fault =
  | { kind: 'status'; status: number; retryAfter?: string }
  /** Never answers: the client's timeout ends the call. */
  | { kind: 'hang' }
  /** Closes the connection without an answer. */
  | { kind: 'drop' }
  | { kind: 'malformed' }
  /** Says gzip, is not. */
  | { kind: 'undecodable' }
  | { kind: 'wrong_dimension' }
  | { kind: 'non_finite' }
  | { kind: 'wrong_count' }
  /** A valid answer followed by `padding` bytes of spaces (valid JSON still), with or without a Content-Length. */
  | { kind: 'oversized'; padding: number; declared: boolean }
  /** The start of an answer, then numbers for ever: no end, no Content-Length. */
  | { kind: 'endless' }
  /** A valid answer padded with `padding` spaces (Infinity: for ever), gzip-compressed as it is written: a few bytes on the wire per KiB. */
  | { kind: 'gzip_bomb'; padding: number }
  /** Sends the client elsewhere (`location`, absolute or relative), keeping the method and body (307, 308). */
  | { kind: 'redirect'; status: number; location: string };

/** One streamed answer: the bytes written to the socket (compressed, for the bomb) and whether the client closed it first. */
export type Streamed = { kind: string; written: number; cutOff: boolean };

export const SERVED_MODELS = ['use-lite', 'use-lite-reversed'] as const;

export type EmbeddingServer = {
  /** The base URL, http://127.0.0.1:PORT/v1 (the client adds /embeddings). */
  url: string;
  /** Answered one per request, before any real answer. */
  faults: Fault[];
  /** Every request answered with this fault until set back to null. */
  failAll(fault: Fault | null): void;
  /** While paused, requests wait (unanswered) until resume(). */
  pause(): void;
  resume(): void;
  /** POSTs received (every attempt, failed or not). */
  readonly requests: number;
  /** Every request received, whatever its method and path, and the bytes of their bodies. */
  readonly received: { requests: number; bytes: number };
  /** Per text, how many times it was embedded in an answer that carried vectors. */
  readonly embedded: Map<string, number>;
  /** The Authorization headers received. */
  readonly authorizations: (string | undefined)[];
  /** Requests held unanswered by a 'hang' fault right now. */
  readonly hanging: number;
  /** The answers of the streamed faults, once each ended. */
  readonly streamed: Streamed[];
  stop(): Promise<void>;
};

/** `key`: the Bearer token every request must carry (401 otherwise). */
export async function startEmbeddingServer(options: { key?: string } = {}): Promise<EmbeddingServer> {
  const release = sentenceEncoder.hold();
  const sockets = new Set<Socket>();
  let persistent: Fault | null = null;
  let paused: Promise<void> | null = null;
  let resume = () => {};
  let requests = 0;
  const received = { requests: 0, bytes: 0 };
  let hanging = 0;
  const streamed: Streamed[] = [];
  const embedded = new Map<string, number>();
  const authorizations: (string | undefined)[] = [];
  const faults: Fault[] = [];

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    received.requests++;
    for await (const chunk of req) chunks.push(chunk as Buffer);
    received.bytes += Buffer.concat(chunks).length;
    if (req.method !== 'POST' || req.url !== '/v1/embeddings') return json(res, 404, { error: { message: 'not found' } });
    requests++;
    authorizations.push(req.headers.authorization);
    if (paused) await paused;
    if (options.key !== undefined && req.headers.authorization !== `Bearer ${options.key}`) return json(res, 401, { error: { message: 'invalid api key' } });
    let body: { model?: unknown; input?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return json(res, 400, { error: { message: 'body is not JSON' } });
    }
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (!Array.isArray(input) || input.some((t) => typeof t !== 'string')) return json(res, 400, { error: { message: 'input must be a string or a list of strings' } });
    if (!SERVED_MODELS.includes(body.model as (typeof SERVED_MODELS)[number])) return json(res, 404, { error: { message: `model ${String(body.model)} not found` } });
    const fault = faults.shift() ?? persistent;
    if (fault && !['oversized', 'gzip_bomb'].includes(fault.kind)) return injure(fault, req, res, input.length);
    const vectors = (await sentenceEncoder.embed(input)).map((bytes) => Array.from(decodeEmbedding(bytes)));
    const served = body.model === 'use-lite-reversed' ? vectors.map((v) => v.reverse()) : vectors;
    // Listed in reverse: a client must place each vector by its index, not by its position.
    const data = served.map((embedding, index) => ({ object: 'embedding', embedding, index })).reverse();
    const answer = JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 0, total_tokens: 0 } });
    if (fault?.kind === 'oversized' || fault?.kind === 'gzip_bomb') return stream(fault, res, answer);
    for (const text of input as string[]) embedded.set(text, (embedded.get(text) ?? 0) + 1);
    json(res, 200, answer);
  }

  /** Writes an answer too large to hold, `chunk` after chunk as the socket drains, until it ends or the client closes. */
  async function stream(fault: Fault, res: ServerResponse, answer = ''): Promise<void> {
    const spaces = Buffer.alloc(64 * 1024, 0x20);
    const numbers = Buffer.from('0.125, '.repeat(8 * 1024));
    const record: Streamed = { kind: fault.kind, written: 0, cutOff: false };
    res.on('close', () => {
      record.cutOff = !res.writableFinished;
      streamed.push(record);
    });
    const padding = fault.kind === 'oversized' || fault.kind === 'gzip_bomb' ? fault.padding : Infinity;
    const head = fault.kind === 'endless' ? '{"data": [{"index": 0, "embedding": [' : answer.slice(0, -1);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (fault.kind === 'oversized' && fault.declared) headers['content-length'] = String(Buffer.byteLength(answer) + padding);
    if (fault.kind === 'gzip_bomb') headers['content-encoding'] = 'gzip';
    res.writeHead(200, headers);
    // The bomb's bytes on the wire are the gzip stream's; the others' are the body's.
    const gzip = fault.kind === 'gzip_bomb' ? createGzip({ level: 9 }) : null;
    gzip?.on('data', (chunk: Buffer) => (record.written += chunk.length));
    gzip?.pipe(res);
    res.on('close', () => gzip?.destroy());
    const sink = gzip ?? res;
    const write = async (chunk: Buffer | string) => {
      if (res.destroyed) return;
      if (gzip === null) record.written += Buffer.byteLength(chunk);
      if (sink.write(chunk)) return;
      // The listener of the event that did not come is removed, so that a long answer does not pile them up.
      const settled = new AbortController();
      await Promise.race([once(sink, 'drain', { signal: settled.signal }), once(res, 'close', { signal: settled.signal })]).finally(() => settled.abort());
    };
    await write(head);
    for (let left = padding; left > 0 && !res.destroyed; left -= spaces.length) await write(fault.kind === 'endless' ? numbers : left >= spaces.length ? spaces : spaces.subarray(0, left));
    if (!res.destroyed) sink.end('}');
  }

  function injure(fault: Fault, req: IncomingMessage, res: ServerResponse, count: number): void {
    const one = Array.from({ length: 512 }, (_, i) => (i === 0 ? 1 : 0));
    switch (fault.kind) {
      case 'status':
        return json(res, fault.status, { error: { message: `injected ${fault.status}` } }, fault.retryAfter === undefined ? {} : { 'retry-after': fault.retryAfter });
      case 'hang':
        hanging++;
        res.on('close', () => hanging--);
        return;
      case 'drop':
        req.socket.destroy();
        return;
      case 'malformed':
        return json(res, 200, '{"data": [{"embedding": [0.1, 0.2');
      case 'undecodable':
        return json(res, 200, '{"data": []}', { 'content-encoding': 'gzip' });
      case 'wrong_dimension':
        return json(res, 200, { data: Array.from({ length: count }, (_, index) => ({ embedding: [1, 2, 3], index })) });
      case 'non_finite':
        // 1e999 is valid JSON that parses to Infinity.
        return json(res, 200, `{"data": [${Array.from({ length: count }, (_, index) => `{"index": ${index}, "embedding": [1e999${', 0'.repeat(511)}]}`).join(', ')}]}`);
      case 'wrong_count':
        return json(res, 200, { data: [{ embedding: one, index: 0 }, ...Array.from({ length: count }, (_, index) => ({ embedding: one, index }))] });
      case 'redirect':
        res.writeHead(fault.status, { location: fault.location, 'content-type': 'application/json' });
        res.end('{}');
        return;
      case 'endless':
        void stream(fault, res);
        return;
    }
  }

  const server = createServer((req, res) => {
    answer(req, res).catch((error: unknown) => {
      if (!res.headersSent) json(res, 500, { error: { message: String(error) } });
    });
  });
  // Idle connections stay open until stop(): a client's kept-alive socket is never closed under a request it sends.
  server.keepAliveTimeout = 0;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    faults,
    failAll(fault) {
      persistent = fault;
    },
    pause() {
      paused ??= new Promise((resolve) => (resume = resolve));
    },
    resume() {
      paused = null;
      resume();
    },
    get requests() {
      return requests;
    },
    embedded,
    authorizations,
    received,
    get hanging() {
      return hanging;
    },
    streamed,
    async stop() {
      resume();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      release();
    },
  };
}
