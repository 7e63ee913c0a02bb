// Server-Sent Events. Yoga streams subscriptions (and any operation a client asks for as `text/event-stream`) in the
// GraphQL over SSE "distinct connections" mode (refusals before Yoga take the same form: refusals.ts).
// The "single connection mode" of the same protocol (graphql-sse's `singleConnection: true`) is served here: a PUT
// reserves a stream and answers its token, one request with that token opens the stream, and operations sent with
// the token answer 202 and stream their results on it, each under its operation id, until the stream closes.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GraphQLError, type ExecutionResult } from 'graphql';
import type { Caller, Callers } from './auth.ts';
import { readBody } from './body-limits.ts';
import { allowedOriginHeaders, type OriginPolicy } from './origin.ts';
import { wantsEventStream } from './refusals.ts';
import type { Limits } from './limits.ts';
import { clientResult, isRefused, prepareOperation, runPrepared, type OperationParams } from './operation.ts';
import type { SoulsYoga } from './yoga.ts';

/** The header (or, for an EventSource, the query parameter) that carries a stream's token, as graphql-sse names them. */
export const STREAM_TOKEN_HEADER = 'x-graphql-event-stream-token';
const STREAM_TOKEN_PARAM = 'token';
/** A comment line that keeps proxies from closing a quiet stream, as often as Yoga sends one. */
const PING_MS = 12_000;

type Stream = {
  caller: string;
  response: ServerResponse | null;
  /** Operations in flight by id; null until a subscription's iterator exists. */
  operations: Map<string, AsyncIterator<unknown> | null>;
  timers: NodeJS.Timeout[];
};

export type SingleConnectionOptions = {
  yoga: SoulsYoga;
  callers: Callers;
  limits: Pick<Limits, 'maxSubscriptions' | 'maxSubscriptionsPerConnection' | 'maxBodyBytes'>;
  /** How long a reservation waits for its stream to open before it lapses. */
  reservationTimeoutMs: number;
  originPolicy: OriginPolicy;
  graphqlPath: string;
};

export type SingleConnections = {
  /** Whether a request belongs to the single connection mode: a PUT, a DELETE, or one that carries a stream token. */
  handles(req: IncomingMessage): boolean;
  serve(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Ends every stream and the operations on it. */
  close(): Promise<void>;
};

const urlOf = (req: IncomingMessage) => new URL(req.url ?? '/', 'http://souls.invalid');

/** Whether the request is for `path`, parsing its URL only when it is not plainly written (every request asks this). */
function isFor(req: IncomingMessage, path: string): boolean {
  const url = req.url ?? '/';
  return url === path || url.startsWith(`${path}?`) || urlOf(req).pathname === path;
}

function tokenOf(req: IncomingMessage): string | null {
  const header = req.headers[STREAM_TOKEN_HEADER];
  if (typeof header === 'string') return header;
  return req.url?.includes('?') ? urlOf(req).searchParams.get(STREAM_TOKEN_PARAM) : null;
}

function answer(res: ServerResponse, status: number, message: string | null, code?: string, headers: Record<string, string> = {}): void {
  if (message === null) return void res.writeHead(status, headers).end();
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
}

export function singleConnections(options: SingleConnectionOptions): SingleConnections {
  const streams = new Map<string, Stream>();
  const end = (token: string) => {
    const stream = streams.get(token);
    if (!stream) return;
    streams.delete(token);
    for (const timer of stream.timers) clearTimeout(timer);
    const iterators = [...stream.operations.values()];
    stream.operations.clear();
    for (const iterator of iterators) void iterator?.return?.();
    stream.response?.end();
  };
  const handlers = { streams, end, options };
  return {
    handles: (req) => isFor(req, options.graphqlPath) && (req.method === 'PUT' || req.method === 'DELETE' || tokenOf(req) !== null),
    serve: async (req, res) => {
      for (const [name, value] of Object.entries(allowedOriginHeaders(req.headers.origin, options.originPolicy))) res.setHeader(name, value);
      // The edge has refused requests without a valid token: every request here has a caller.
      const caller = options.callers.of(req.headers.authorization)!;
      if (req.method === 'PUT') return reserve(handlers, req, res, caller.name);
      const token = tokenOf(req);
      const stream = token === null ? undefined : streams.get(token);
      if (!token || !stream) return answer(res, 404, 'no stream has this token: reserve one with PUT first (it lapses if not opened in time)', 'STREAM_NOT_FOUND');
      // Only the caller that reserved a stream may open it or run operations on it.
      if (stream.caller !== caller.name) return answer(res, 403, 'this stream was reserved by another caller', 'FORBIDDEN');
      if (req.method === 'DELETE') return cancel(stream, req, res);
      if (wantsEventStream(req.headers.accept)) return open(handlers, token, stream, req, res);
      if (req.method !== 'GET' && req.method !== 'POST') return answer(res, 405, 'only GET, POST, PUT and DELETE are allowed', 'METHOD_NOT_ALLOWED', { allow: 'GET, POST, PUT, DELETE' });
      return start(handlers, stream, req, res, caller);
    },
    close: async () => {
      for (const token of [...streams.keys()]) end(token);
    },
  };
}

type Handlers = { streams: Map<string, Stream>; end: (token: string) => void; options: SingleConnectionOptions };

function reserve({ streams, end, options }: Handlers, req: IncomingMessage, res: ServerResponse, caller: string): void {
  req.resume();
  const accept = req.headers.accept ?? '*/*';
  if (accept !== '*/*' && !accept.includes('text/plain')) return answer(res, 406, null);
  const { maxSubscriptions } = options.limits;
  if (streams.size >= maxSubscriptions) {
    return answer(res, 503, `the server holds ${maxSubscriptions} event streams, its limit (maxSubscriptions): try again later, or use the distinct connections mode`, 'TOO_MANY_STREAMS');
  }
  const token = randomUUID();
  const lapse = setTimeout(() => {
    if (streams.get(token)?.response === null) end(token);
  }, options.reservationTimeoutMs);
  lapse.unref();
  streams.set(token, { caller, response: null, operations: new Map(), timers: [lapse] });
  res.writeHead(201, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }).end(token);
}

function open({ end }: Handlers, token: string, stream: Stream, req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  if (stream.response) return answer(res, 409, 'this stream is already open', 'STREAM_ALREADY_OPEN');
  stream.response = res;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'content-encoding': 'none' });
  // Some browsers wait for a first chunk before they report the stream open.
  res.write(':\n\n');
  const ping = setInterval(() => res.write(':\n\n'), PING_MS);
  ping.unref();
  stream.timers.push(ping);
  res.once('close', () => {
    clearInterval(ping);
    end(token);
  });
}

function cancel(stream: Stream, req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  const id = urlOf(req).searchParams.get('operationId');
  if (!id) return answer(res, 400, 'the operationId parameter is missing', 'BAD_REQUEST');
  const iterator = stream.operations.get(id);
  stream.operations.delete(id);
  void iterator?.return?.();
  answer(res, 200, null);
}

/**
 * Writes one event; resolves once the client has taken what was written before, so that an operation's results are
 * pulled only as fast as the stream is read (a subscriber that falls behind is cut off upstream, as on any transport).
 */
async function send(stream: Stream, event: 'next' | 'complete', data: object): Promise<void> {
  const response = stream.response;
  if (!response?.writable || response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.once('drain', done);
    response.once('close', done);
  });
}

/** Accepts an operation (202) and streams its results under its id; a refused one streams its errors, so that clients report them at once. */
async function start({ options }: Handlers, stream: Stream, req: IncomingMessage, res: ServerResponse, caller: Caller): Promise<void> {
  const params = await paramsOf(req, options.limits.maxBodyBytes);
  if (typeof params === 'string') return answer(res, 400, params, 'BAD_REQUEST');
  const id = params.extensions?.operationId;
  if (typeof id !== 'string' || id === '') return answer(res, 400, 'extensions.operationId is missing: the single connection mode needs an id for each operation', 'BAD_REQUEST');
  if (!stream.response) return answer(res, 409, 'open the stream (a request with Accept: text/event-stream and the token) before sending operations', 'STREAM_NOT_OPEN');
  if (stream.operations.has(id)) return answer(res, 409, `an operation with id ${JSON.stringify(id)} is already running on this stream`, 'OPERATION_ID_IN_USE');
  const { maxSubscriptionsPerConnection } = options.limits;
  if (stream.operations.size >= maxSubscriptionsPerConnection) {
    return answer(res, 429, `this stream runs ${maxSubscriptionsPerConnection} operations, its limit (maxSubscriptionsPerConnection): complete one first`, 'TOO_MANY_SUBSCRIPTIONS');
  }
  stream.operations.set(id, null);
  answer(res, 202, null);
  try {
    await run(options.yoga, stream, id, req, caller, params);
  } catch (error) {
    // Resolver errors are masked by Yoga's plugins; what escapes them is logged and masked the same way.
    if (!(error instanceof GraphQLError)) console.error('souls: an operation on an event stream failed:', error);
    await finish(stream, id, [{ errors: [error instanceof GraphQLError ? error : new GraphQLError('Unexpected error.', { extensions: { code: 'INTERNAL_SERVER_ERROR' } })] }]);
  }
}

async function run(yoga: SoulsYoga, stream: Stream, id: string, req: IncomingMessage, caller: Caller, params: OperationParams): Promise<void> {
  const prepared = await prepareOperation(yoga, { req, caller }, params);
  if (isRefused(prepared)) return finish(stream, id, [{ errors: prepared.errors }]);
  const type = prepared.operation?.operation;
  if (req.method === 'GET' && type === 'mutation') return finish(stream, id, [{ errors: [new GraphQLError('mutations are sent with POST, never GET', { extensions: { code: 'BAD_REQUEST' } })] }]);
  const result = (await (type === 'subscription' ? runPrepared.subscribe : runPrepared.execute)(prepared.args)) as ExecutionResult | AsyncIterable<ExecutionResult>;
  if (!(Symbol.asyncIterator in result)) return finish(stream, id, [result]);
  const iterator = result[Symbol.asyncIterator]();
  // Cancelled (DELETE) or its stream closed while it subscribed.
  if (!stream.operations.has(id)) return void iterator.return?.();
  stream.operations.set(id, iterator);
  return finish(stream, id, { [Symbol.asyncIterator]: () => iterator });
}

/** Streams an operation's results, then `complete`, unless it was cancelled or its stream ended meanwhile. */
async function finish(stream: Stream, id: string, results: Iterable<ExecutionResult> | AsyncIterable<ExecutionResult>): Promise<void> {
  for await (const result of results) {
    if (!stream.operations.has(id)) return;
    await send(stream, 'next', { id, payload: clientResult(result) });
  }
  if (!stream.operations.delete(id)) return;
  await send(stream, 'complete', { id });
}

/** The operation's parameters from a JSON body (POST) or the URL (GET); a string says what is wrong with them. */
async function paramsOf(req: IncomingMessage, maxBytes: number): Promise<(OperationParams & { extensions?: Record<string, unknown> | null }) | string> {
  let raw: Record<string, unknown>;
  try {
    if (req.method === 'GET') {
      const search = urlOf(req).searchParams;
      const json = (name: string) => (search.has(name) ? JSON.parse(search.get(name)!) : undefined);
      raw = { query: search.get('query'), operationName: search.get('operationName'), variables: json('variables'), extensions: json('extensions') };
    } else {
      if (!req.headers['content-type']?.includes('application/json')) return 'operations are sent as JSON (Content-Type: application/json)';
      const body = await readBody(req, maxBytes);
      if (body === null) return `the request body is over the limit of ${maxBytes} bytes`;
      raw = JSON.parse(body);
    }
  } catch {
    return 'the request is not valid JSON';
  }
  if (typeof raw !== 'object' || raw === null || typeof raw.query !== 'string') return 'the request has no query';
  const isObject = (value: unknown) => value === undefined || value === null || (typeof value === 'object' && !Array.isArray(value));
  if (!isObject(raw.variables) || !isObject(raw.extensions)) return 'variables and extensions must be objects';
  return raw as OperationParams & { extensions?: Record<string, unknown> | null };
}
