// Which browsers' pages may talk to this server. Browsers attach `Origin` to cross-site requests and WebSocket
// upgrades, and a page can reach a loopback server by a name of its own (DNS rebinding), so every request is
// checked twice before anything runs: its Origin (same origin, or one the operator allowed) and, on a server
// without tokens, its Host (a loopback name, or one the operator allowed).
import { isIP } from 'node:net';
import { isLoopback } from './auth.ts';
import { ValidationError } from '../engine/index.ts';

export type OriginPolicy = {
  /** Origins besides the server's own whose pages may call the API (CORS and WebSocket), e.g. https://ops.example. */
  corsOrigins: readonly string[];
  /** Host names served besides loopback ones; null serves any Host (a server with tokens: a page cannot hold one). */
  allowedHosts: readonly string[] | null;
};

export type Refusal = { status: number; code: string; message: string };

/** `scheme://host[:port]` exactly, as browsers send it; anything else names the setting it came from. */
export function normalizeOrigin(where: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ValidationError(where, `${JSON.stringify(raw)} is not an origin like https://app.example or http://localhost:5173`);
  }
  if (!/^https?:$/.test(url.protocol) || url.username || url.password || url.pathname !== '/' || url.search || url.hash) {
    throw new ValidationError(where, `${JSON.stringify(raw)} is not an origin: give scheme, host and port only, like https://app.example`);
  }
  return url.origin;
}

/** A host name (or address) to serve, without port: `souls.internal`, `10.0.0.5`, `[fd00::1]`. */
export function normalizeHost(where: string, raw: string): string {
  const host = raw.trim().toLowerCase();
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 6) return `[${bare}]`;
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host)) {
    throw new ValidationError(where, `${JSON.stringify(raw)} is not a host name (give the name without scheme or port, like souls.internal)`);
  }
  return host;
}

/** The host name of a Host header value, lowercased (IPv6 in brackets); null when it is not one. */
function hostName(header: string): string | null {
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/i.exec(header);
  return match ? match[1].toLowerCase() : null;
}

/** null when the request may go on; else why it may not. */
export function refuseByOriginOrHost(headers: { origin?: string; host?: string }, policy: OriginPolicy): Refusal | null {
  const { origin, host } = headers;
  if (policy.allowedHosts !== null && host !== undefined) {
    const name = hostName(host);
    if (name === null || !(isLoopback(name) || policy.allowedHosts.includes(name))) {
      return {
        status: 403,
        code: 'FORBIDDEN_HOST',
        message: `this server without tokens answers only to loopback names (localhost, 127.0.0.1, [::1]), not ${JSON.stringify(host)}: start it with --allowed-host ${name ?? 'NAME'} to serve that name`,
      };
    }
  }
  if (origin === undefined || isSameOrigin(origin, host) || policy.corsOrigins.includes(origin)) return null;
  return {
    status: 403,
    code: 'FORBIDDEN_ORIGIN',
    message: `requests from pages of ${JSON.stringify(origin)} are not allowed: start the server with --cors-origin ${origin === 'null' ? 'ORIGIN' : origin} to allow them`,
  };
}

function isSameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined || origin === 'null') return false;
  try {
    return new URL(origin).host === new URL(`http://${host}`).host;
  } catch {
    return false;
  }
}

/** What an allowed page may send: the API's headers, and the stream token and methods of graphql-sse's single connection mode. */
const CORS_HEADERS = ['accept', 'authorization', 'content-type', 'x-graphql-yoga-csrf', 'x-graphql-event-stream-token'];

/** CORS headers only for allowed cross-origin pages; same-origin pages need none and others get none. */
export function corsFor(request: Request, policy: OriginPolicy) {
  const origin = request.headers.get('origin');
  if (origin === null || !policy.corsOrigins.includes(origin)) return false as const;
  return { origin: [origin], methods: ['GET', 'POST', 'PUT', 'DELETE'], allowedHeaders: CORS_HEADERS, credentials: false, maxAge: 600 };
}

/** For an answer the server writes itself rather than Yoga: the header that lets an allowed page of another origin read it. */
export function allowedOriginHeaders(origin: string | undefined, policy: OriginPolicy): Record<string, string> {
  return origin !== undefined && policy.corsOrigins.includes(origin) ? { 'access-control-allow-origin': origin, vary: 'Origin' } : {};
}
