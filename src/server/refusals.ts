// Where a request is refused before anything reads its body: a page of another site or a foreign Host name
// (origin.ts), a body over the limit or without a declared length (body-limits.ts), and, on a server with tokens, a
// body from a caller no token names. Each is answered from the headers alone, with a GraphQL-shaped error (a JSON-RPC
// one at /mcp), and the connection closed.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerChallenge, TOKEN_REQUIRED, type Callers } from './auth.ts';
import { hasBody, oversizedBody } from './body-limits.ts';
import { refuseByOriginOrHost, type OriginPolicy, type Refusal } from './origin.ts';
import type { RequestLine } from './request-line.ts';
import { graphqlAnswer } from './sse.ts';

export type Refusals = {
  /** Origin and Host: why a request or a WebSocket upgrade may not go on, or null. */
  byOrigin(req: IncomingMessage): Refusal | null;
  /** Answers the request when it is refused from its headers; false when it may go on. */
  refused(req: IncomingMessage, res: ServerResponse): boolean;
};

export type RefusalOptions = {
  originPolicy: OriginPolicy;
  callers: Callers;
  maxBodyBytes: number;
  requestLine: Pick<RequestLine, 'recordOf'>;
  /** Whether the request is for /mcp, whose clients read JSON-RPC errors. */
  isMcp(req: IncomingMessage): boolean;
};

export function createRefusals(options: RefusalOptions): Refusals {
  const { originPolicy, callers, maxBodyBytes } = options;
  const byOrigin = (req: IncomingMessage) => refuseByOriginOrHost({ origin: req.headers.origin, host: req.headers.host }, originPolicy);
  /**
   * With tokens, a body from nobody known is never read: refused from its headers, so that unauthenticated clients
   * cannot make the server hold their bodies (GraphQL, MCP and any other path alike).
   */
  const unauthenticatedBody = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (!callers.required || !hasBody(req) || callers.of(req.headers.authorization) !== null) return false;
    options.requestLine.recordOf(req)?.errorCodes.add('UNAUTHENTICATED');
    const origin = req.headers.origin;
    // A page of an allowed origin can read why, as it could when GraphQL answered.
    const cors = origin && originPolicy.corsOrigins.includes(origin) ? { 'access-control-allow-origin': origin, vary: 'Origin' } : {};
    const { type, text } = options.isMcp(req)
      ? { type: 'application/json', text: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: TOKEN_REQUIRED } }) }
      : graphqlAnswer(req.headers.accept, { errors: [{ message: TOKEN_REQUIRED, extensions: { code: 'UNAUTHENTICATED' } }] });
    res.writeHead(401, { 'content-type': `${type}; charset=utf-8`, 'www-authenticate': bearerChallenge(req.headers.authorization), connection: 'close', ...cors });
    res.end(text);
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
      return unauthenticatedBody(req, res);
    },
  };
}

/** Answers a refused request with a GraphQL-shaped error before anything reads its body. */
function refuse(req: IncomingMessage, res: ServerResponse, { status, code, message }: Refusal): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
  res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
  req.resume();
}
