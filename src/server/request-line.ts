// The request line: one record per HTTP request and WebSocket connection (its id, when it started, the operation it
// ran and the error codes it met), written as one log line and the request metrics when the response closes. The
// socket knows the method, path and status; the GraphQL layer fills in the rest through `recordingOperations`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST, type DocumentNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { HEALTH_PATH, READY_PATH } from './health.ts';
import { loggable, requestIdOf, type Logger } from './log.ts';
import type { Metrics } from './metrics.ts';

/** What the request line says beyond what the socket knows, filled in by the GraphQL layer. */
export type RequestRecord = { id: string; started: number; operation: string | null; operationType: string | null; errorCodes: Set<string> };

export type RequestLine = {
  /** A new record for this request (or WebSocket upgrade): its id is the one answered in `x-request-id`. */
  open(req: IncomingMessage): RequestRecord;
  recordOf(req: object): RequestRecord | undefined;
  /** Opens the request's record and writes its log line and metrics when the response closes. */
  writeOnClose(req: IncomingMessage, res: ServerResponse): void;
  /** Milliseconds since the record opened, to the microsecond. */
  durationOf(record: RequestRecord): number;
  /** Names the operation and gathers the error codes of a GraphQL request on its record. */
  plugin: Plugin;
};

export const errorCodeOf = (error: { extensions?: Readonly<Record<string, unknown>> }): string | null => (typeof error.extensions?.code === 'string' ? error.extensions.code : null);

export function createRequestLine(options: { logger: Logger; metrics: Metrics; callerName: (authorization: unknown) => string | null }): RequestLine {
  const { logger, metrics, callerName } = options;
  const records = new WeakMap<object, RequestRecord>();
  const open = (req: IncomingMessage): RequestRecord => {
    const record = { id: requestIdOf(req.headers['x-request-id']), started: performance.now(), operation: null, operationType: null, errorCodes: new Set<string>() };
    records.set(req, record);
    return record;
  };
  const durationOf = (record: RequestRecord) => Math.round((performance.now() - record.started) * 1000) / 1000;
  const writeOnClose = (req: IncomingMessage, res: ServerResponse) => {
    const record = open(req);
    res.setHeader('x-request-id', record.id);
    res.once('close', () => {
      const path = loggable((req.url ?? '/').split('?')[0]);
      const line = {
        requestId: record.id,
        method: req.method,
        path,
        operation: record.operation,
        operationType: record.operationType,
        caller: callerName(req.headers.authorization),
        status: res.statusCode,
        durationMs: durationOf(record),
        errorCodes: [...record.errorCodes],
        ...(res.writableFinished ? {} : { aborted: true }),
      };
      metrics.request(line);
      // Probes every few seconds would drown the log: they show at debug level unless they fail.
      const probe = (path === HEALTH_PATH || path === READY_PATH) && res.statusCode < 500;
      if (probe) logger.debug(line, 'request');
      else logger.info(line, 'request');
    });
  };
  return { open, recordOf: (req) => records.get(req), writeOnClose, durationOf, plugin: recordingOperations(records) };
}

/** Records the operation and the error codes of a GraphQL request on its request line. */
function recordingOperations(records: WeakMap<object, RequestRecord>): Plugin {
  const recordOf = (context: unknown) => records.get((context as { req?: object } | undefined)?.req ?? {});
  const name = (context: unknown, document: DocumentNode, operationName: string | null | undefined) => {
    const record = recordOf(context);
    if (!record) return;
    const operation = getOperationAST(document, operationName);
    record.operation = operation?.name ? loggable(operation.name.value) : record.operation;
    record.operationType = operation?.operation ?? record.operationType;
  };
  const named = ({ args }: { args: { contextValue: unknown; document: DocumentNode; operationName?: string | null } }) => name(args.contextValue, args.document, args.operationName);
  return {
    onParams: ({ params, context }) => {
      const record = recordOf(context);
      if (record && typeof params.operationName === 'string') record.operation = loggable(params.operationName);
    },
    // Validation runs before the caller is known: a refused or invalid operation is named too.
    onValidate: ({ context, params }) => name(context, params.documentAST, (context as { params?: { operationName?: string } }).params?.operationName),
    onExecute: named,
    onSubscribe: named,
    onResultProcess: ({ result, serverContext }) => {
      const record = recordOf(serverContext);
      if (!record || Symbol.asyncIterator in (result as object)) return;
      for (const each of Array.isArray(result) ? result : [result]) {
        for (const error of (each as { errors?: ReadonlyArray<{ extensions?: { code?: unknown } }> }).errors ?? []) {
          record.errorCodes.add(errorCodeOf(error) ?? 'UNKNOWN');
        }
      }
    },
  };
}
