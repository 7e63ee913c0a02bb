// Where a request is refused from its headers: before anything reads its body, a page of another site or a foreign
// Host name (origin.ts), a body over the limit or without a declared length (body-limits.ts), and, on a server with
// tokens, a body from a caller no token names; before the API answers, any other request without a valid token.
// Each is answered with a GraphQL-shaped error in the form the client reads (a JSON-RPC one at /mcp).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerChallenge, TOKEN_REQUIRED, type Callers } from './auth.ts';
import { hasBody, oversizedBody } from './body-limits.ts';
import { allowedOriginHeaders, refuseByOriginOrHost, type OriginPolicy, type Refusal } from './origin.ts';
import type { RequestLine } from './request-line.ts';

export type Refusals = {
  /** Origin and Host: why a request or a WebSocket upgrade may not go on, or null. */
  byOrigin(req: IncomingMessage): Refusal | null;
  /** Answers the request when it is refused before its body is read; false when it may go on. */
  refused(req: IncomingMessage, res: ServerResponse): boolean;
  /**
   * With tokens, answers 401 to a request for the API without a valid token, whatever its path and method; false
   * when it may go on. What a browser asks for without a token is let through: a CORS preflight, GraphiQL's page.
   */
  unauthenticated(req: IncomingMessage, res: ServerResponse): boolean;
};

export type RefusalOptions = {
  originPolicy: OriginPolicy;
  callers: Callers;
  maxBodyBytes: number;
  requestLine: Pick<RequestLine, 'recordOf'>;
  /** Whether the request is for /mcp, whose clients read JSON-RPC errors. */
  isMcp(req: IncomingMessage): boolean;
  /** Where GraphiQL's page is, which a browser opens without a token. */
  graphqlPath: string;
};

export function createRefusals(options: RefusalOptions): Refusals {
  const { originPolicy, callers, maxBodyBytes } = options;
  const byOrigin = (req: IncomingMessage) => refuseByOriginOrHost({ origin: req.headers.origin, host: req.headers.host }, originPolicy);
  const unauthenticated = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (!callers.required || callers.of(req.headers.authorization) !== null) return false;
    options.requestLine.recordOf(req)?.errorCodes.add('UNAUTHENTICATED');
    // A page of an allowed origin can read why, as it could when GraphQL answered.
    const cors = allowedOriginHeaders(req.headers.origin, originPolicy);
    const { type, text } = options.isMcp(req)
      ? { type: 'application/json', text: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: TOKEN_REQUIRED } }) }
      : graphqlAnswer(req.headers.accept, { errors: [{ message: TOKEN_REQUIRED, extensions: { code: 'UNAUTHENTICATED' } }] });
    const close = hasBody(req) ? { connection: 'close' } : {};
    res.writeHead(401, { 'content-type': `${type}; charset=utf-8`, 'www-authenticate': bearerChallenge(req.headers.authorization), ...close, ...cors });
    res.end(req.method === 'HEAD' ? undefined : text);
    req.resume();
    return true;
  };
  return {
    byOrigin,
    refused: (req, res) => {
      const refusal = byOrigin(req) ?? oversizedBody(req, maxBodyBytes);
      if (refusal) {
        refuse(req, res, refusal);
        return true;
      }
      // A body from nobody known is never read, so that unauthenticated clients cannot make the server hold bodies.
      return hasBody(req) && unauthenticated(req, res);
    },
    unauthenticated: (req, res) => !isOpenToBrowsers(req, options.graphqlPath) && unauthenticated(req, res),
  };
}

const accepts = (accept: string | undefined, type: string) => accept?.includes(type) === true;

/** Whether a client asked for an event stream and for no JSON answer: Yoga would answer it as SSE. */
export function wantsEventStream(accept: string | undefined): boolean {
  return accepts(accept, 'text/event-stream') && !accepts(accept, 'application/json') && !accepts(accept, 'application/graphql-response+json');
}

/** A GraphQL result in the form the client accepts, as Yoga would send it: one SSE event then `complete`, or JSON. */
export function graphqlAnswer(accept: string | undefined, result: object): { type: string; text: string } {
  const json = JSON.stringify(result);
  if (wantsEventStream(accept)) return { type: 'text/event-stream', text: `event: next\ndata: ${json}\n\nevent: complete\ndata:\n\n` };
  return { type: accepts(accept, 'application/graphql-response+json') ? 'application/graphql-response+json' : 'application/json', text: json };
}

/** A CORS preflight (a browser never sends credentials with one) or a browser opening GraphiQL's page. */
function isOpenToBrowsers(req: IncomingMessage, graphqlPath: string): boolean {
  const { method, headers } = req;
  if (method === 'OPTIONS') return headers.origin !== undefined && headers['access-control-request-method'] !== undefined;
  const path = (req.url ?? '/').split('?')[0];
  return method === 'GET' && headers.accept?.includes('text/html') === true && (path === graphqlPath || path === `${graphqlPath}/`);
}

/** Answers a refused request with a GraphQL-shaped error before anything reads its body. */
function refuse(req: IncomingMessage, res: ServerResponse, { status, code, message }: Refusal): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
  res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
  req.resume();
}
