// graphql-ws on the API's port and path: upgrades refused by Origin/Host like any request, a bound on what a socket may
// send before connection_ack, the caller authenticated once at connection_init, and each operation run through Yoga's
// envelop (the same plugins, limits and cost as over HTTP) with its own operation metric.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { WebSocket, WebSocketServer } from 'ws';
import type { Caller, Callers } from './auth.ts';
import type { Limits } from './limits.ts';
import type { Logger } from './log.ts';
import { loggable } from './log.ts';
import type { MemoryRelease } from './memory-release.ts';
import type { Metrics } from './metrics.ts';
import { clientErrors, clientResult, isRefused, prepareOperation, runPrepared } from './operation.ts';
import type { Refusals } from './refusals.ts';
import { errorCodeOf, type RequestLine } from './request-line.ts';
import { GRAPHQL_PATH, type SoulsYoga } from './yoga.ts';

/** What a WebSocket may send before connection_ack: a connection_init with its connectionParams, no more. */
export const PRE_ACK_MAX_BYTES = 64 * 1024;

export const SUBPROTOCOL = 'graphql-transport-ws';
/** subscriptions-transport-ws's protocol (Apollo's old WebSocketLink), which graphql-ws replaced. */
const LEGACY_SUBPROTOCOL = 'graphql-ws';
/** Sent with close code 4406 to a socket that did not choose graphql-transport-ws (at most 123 bytes). */
export const SUBPROTOCOL_REFUSAL = 'Subprotocol not acceptable: use graphql-transport-ws (the graphql-ws library), not subscriptions-transport-ws';

export type WebSocketOptions = {
  yoga: SoulsYoga;
  limits: Pick<Limits, 'maxBodyBytes'>;
  refusals: Pick<Refusals, 'byOrigin'>;
  callers: Callers;
  requestLine: Pick<RequestLine, 'open' | 'recordOf' | 'durationOf'>;
  metrics: Metrics;
  logger: Logger;
  release: MemoryRelease | null;
  /** How long a socket may stay open without connection_init before it is closed with 4408. */
  initTimeoutMs: number;
  /** How often graphql-ws pings each socket; one that has not answered by the next ping is closed. */
  keepAliveMs: number;
};

export type WebSockets = {
  /** Hands an HTTP upgrade to graphql-ws (loaded by the first one). */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void;
  /** Completes every operation and closes every socket. */
  close(): Promise<void>;
};

/** An operation on a graphql-ws socket, from its subscribe message to its end, for the operation metrics. */
type WsOperation = { started: number; operation: string | null; type: string | null; errorCodes: Set<string> };

type Opened = { wsServer: WebSocketServer; dispose: () => Promise<void> | void };

/**
 * ws and graphql-ws (about 12 MiB resident) are loaded by the first WebSocket upgrade rather than at start: a server
 * no socket ever reaches never holds them.
 */
export function createWebSockets(options: WebSocketOptions): WebSockets {
  let opened: Promise<Opened> | null = null;
  return {
    upgrade: (req, socket, head) => {
      options.release?.activity();
      (opened ??= openWebSockets(options)).then(
        ({ wsServer }) => wsServer.handleUpgrade(req, socket, head, (client) => wsServer.emit('connection', client, req)),
        (error: unknown) => {
          console.error(`souls: WebSockets could not start: ${error instanceof Error ? error.message : String(error)}`);
          socket.destroy();
        },
      );
    },
    close: async () => {
      const ws = await opened?.catch(() => null);
      if (!ws) return;
      await ws.dispose();
      for (const client of ws.wsServer.clients) client.terminate();
      await new Promise<void>((resolve) => ws.wsServer.close(() => resolve()));
    },
  };
}

async function openWebSockets(options: WebSocketOptions): Promise<Opened> {
  const [{ WebSocketServer }, { useServer }] = await Promise.all([import('ws'), import('graphql-ws/use/ws')]);
  const { refusals, requestLine } = options;
  const wsServer = new WebSocketServer({
    noServer: true,
    path: GRAPHQL_PATH,
    // One message is at most one request body; ws closes a socket that sends more with 1009.
    maxPayload: options.limits.maxBodyBytes,
    verifyClient: ({ req }, done) => {
      const refusal = refusals.byOrigin(req);
      if (refusal) done(false, refusal.status, refusal.message);
      else done(true);
    },
  });
  wsServer.on('headers', (headers, request) => {
    headers.push(`x-request-id: ${requestLine.open(request).id}`);
  });
  const callersBySocket = new WeakMap<object, Caller>();
  const preAckLimits = boundingPreAck(wsServer);
  refusingOtherSubprotocols(wsServer);
  wsServer.on('connection', (socket, request) => {
    options.metrics.webSockets.inc();
    socket.once('close', (code) => {
      options.metrics.webSockets.dec();
      const record = requestLine.recordOf(request);
      if (!record) return;
      const caller = callersBySocket.get(socket);
      options.logger.info({ requestId: record.id, method: 'GET', path: loggable(request.url?.split('?')[0] ?? '/'), protocol: 'websocket', caller: caller?.name ?? null, status: 101, closeCode: code, durationMs: requestLine.durationOf(record) }, 'websocket closed');
    });
  });
  const operations = operationMetrics(options.metrics);
  const graphqlWs = useServer(
    {
      // Internal errors close a socket with "Internal server error", never with their message (and no console
      // warning for each client that tries the legacy subprotocol).
      isProd: true,
      connectionInitWaitTimeout: options.initTimeoutMs,
      ...runPrepared,
      // Refused here, the socket closes with 4403 Forbidden.
      onConnect: (ctx) => {
        const caller = options.callers.of(ctx.connectionParams?.authorization);
        if (!caller) return false;
        preAckLimits.lift(ctx.extra.socket);
        callersBySocket.set(ctx.extra.socket, caller);
        return true;
      },
      onSubscribe: async (ctx, id, payload) => {
        const caller = callersBySocket.get(ctx.extra.socket)!;
        const record = operations.started(ctx.extra.socket, id, payload.operationName ?? null);
        const prepared = await prepareOperation(options.yoga, { ...ctx, req: ctx.extra.request, socket: ctx.extra.socket, caller }, payload);
        record.operation = prepared.operation?.name?.value ?? record.operation;
        record.type = prepared.operation?.operation ?? null;
        // A syntax error, a limit or an invalid document is an error message for this operation, never a closed socket.
        if (!isRefused(prepared)) return prepared.args;
        for (const error of prepared.errors) record.errorCodes.add(errorCodeOf(error) ?? 'GRAPHQL_PARSE_FAILED');
        return prepared.errors;
      },
      onNext: (ctx, id, _payload, _args, result) => {
        operations.failed(ctx.extra.socket, id, result.errors ?? []);
        return clientResult(result);
      },
      onError: (ctx, id, _payload, errors) => {
        operations.failed(ctx.extra.socket, id, errors);
        operations.ended(ctx.extra.socket, id);
        return clientErrors(errors);
      },
      onComplete: (ctx, id) => operations.ended(ctx.extra.socket, id),
    },
    wsServer,
    options.keepAliveMs,
  );
  // After useServer, which sets its own.
  wsServer.options.handleProtocols = choosingSubprotocol;
  return { wsServer, dispose: () => graphqlWs.dispose() };
}

/**
 * Until connection_ack nobody is known: a socket that sends more than a connection_init needs is closed (1009)
 * before its bytes pile up, counted on the TCP stream because ws buffers a whole message before handing it over.
 */
function boundingPreAck(wsServer: WebSocketServer): { lift(socket: object): void } {
  const lifts = new WeakMap<object, () => void>();
  wsServer.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    const stream = request.socket;
    let received = 0;
    const count = (chunk: Buffer) => {
      received += chunk.length;
      if (received <= PRE_ACK_MAX_BYTES) return;
      stream.off('data', count);
      // The close frame goes out, then the connection ends: nothing more of the message is read or kept.
      socket.close(1009, `more than ${PRE_ACK_MAX_BYTES} bytes before connection_ack`);
      stream.pause();
      stream.end(() => socket.terminate());
    };
    stream.on('data', count);
    lifts.set(socket, () => stream.off('data', count));
  });
  return { lift: (socket) => lifts.get(socket)?.() };
}

/**
 * A client that asks only for the legacy subprotocol is given it, so that its handshake succeeds and it hears why it
 * is closed at once: a browser fails a handshake whose answer names none of the protocols it asked for, and its page
 * learns nothing.
 */
function choosingSubprotocol(protocols: Set<string>): string | false {
  if (protocols.has(SUBPROTOCOL)) return SUBPROTOCOL;
  return protocols.has(LEGACY_SUBPROTOCOL) ? LEGACY_SUBPROTOCOL : false;
}

/** A socket on any protocol but graphql-transport-ws is closed with 4406 and a reason that names the one to use (before graphql-ws closes it without one). */
function refusingOtherSubprotocols(wsServer: WebSocketServer): void {
  wsServer.on('connection', (socket: WebSocket) => {
    if (socket.protocol !== SUBPROTOCOL) socket.close(4406, SUBPROTOCOL_REFUSAL);
  });
}

/** Each socket's operations in flight, by their id, until they complete or fail: one operation metric each. */
function operationMetrics(metrics: Metrics) {
  const bySocket = new WeakMap<object, Map<string, WsOperation>>();
  const find = (socket: object, id: string) => bySocket.get(socket)?.get(id);
  return {
    started(socket: object, id: string, operation: string | null): WsOperation {
      const record: WsOperation = { started: performance.now(), operation, type: null, errorCodes: new Set() };
      if (!bySocket.has(socket)) bySocket.set(socket, new Map());
      bySocket.get(socket)!.set(id, record);
      return record;
    },
    failed(socket: object, id: string, errors: ReadonlyArray<{ extensions?: Readonly<Record<string, unknown>> }>): void {
      const record = find(socket, id);
      for (const error of errors) record?.errorCodes.add(errorCodeOf(error) ?? 'UNKNOWN');
    },
    ended(socket: object, id: string): void {
      const record = find(socket, id);
      if (!record) return;
      bySocket.get(socket)!.delete(id);
      metrics.operation({ ...record, transport: 'websocket', durationMs: performance.now() - record.started });
    },
  };
}
