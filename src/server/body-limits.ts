// How much a request body may weigh and how long it may take to arrive: checked from the headers, before anything
// reads the body (GraphQL, MCP and any other path alike), and by Node's own timers while it arrives.
import type { IncomingMessage, ServerOptions } from 'node:http';
import type { Limits } from './limits.ts';
import type { Refusal } from './origin.ts';

export const hasBody = (req: IncomingMessage) => req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS';

/** Bodies must declare their length and stay under the limit: a refusal from the headers alone, or null. */
export function oversizedBody(req: IncomingMessage, maxBytes: number): Refusal | null {
  if (!hasBody(req)) return null;
  const declared = req.headers['content-length'];
  const chunked = declared === undefined && req.headers['transfer-encoding'] !== undefined;
  if (!chunked && (declared === undefined || Number(declared) <= maxBytes)) return null;
  return chunked
    ? { status: 411, code: 'LENGTH_REQUIRED', message: 'request bodies must declare their Content-Length' }
    : { status: 413, code: 'PAYLOAD_TOO_LARGE', message: `request body over the limit of ${maxBytes} bytes` };
}

/** The body of a request, read once up to the limit (the edge has already refused a longer declared length), or null when longer. */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    received += chunk.byteLength;
    if (received > maxBytes) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Node's requestTimeout bounds how long headers and body take to arrive (answered 408); it is checked every
 * connectionsCheckingInterval, so that interval follows it.
 */
export function arrivalTimeouts(limits: Pick<Limits, 'bodyTimeoutMs'>): ServerOptions {
  return {
    requestTimeout: limits.bodyTimeoutMs,
    headersTimeout: Math.min(60_000, limits.bodyTimeoutMs),
    connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.round(limits.bodyTimeoutMs / 10))),
  };
}
