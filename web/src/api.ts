// The app's only way to the server: typed GraphQL over HTTP (queries, mutations) and graphql-ws (subscriptions),
// both on /graphql of the origin that served the page. The same pattern as examples/typed-client.ts, for a browser:
// the token (when the server requires one) is kept in localStorage and sent on every request and socket.
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql/language';
import { createClient, type Client } from 'graphql-ws';

export const GRAPHQL_PATH = '/graphql';
const TOKEN_KEY = 'souls.token';

export type GraphQLErrorShape = { message: string; path?: readonly (string | number)[]; extensions?: Record<string, unknown> };

/** A failed request: the errors array of the response, or a bad HTTP answer. `code` is the first error's code. */
export class ApiError extends Error {
  readonly status: number;
  readonly errors: readonly GraphQLErrorShape[];
  constructor(message: string, status: number, errors: readonly GraphQLErrorShape[] = []) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.errors = errors;
  }
  get code(): string | undefined {
    const code = this.errors[0]?.extensions?.code;
    return typeof code === 'string' ? code : undefined;
  }
  get unauthenticated(): boolean {
    return this.status === 401 || this.code === 'UNAUTHENTICATED';
  }
}

// --- The token ------------------------------------------------------------------------------------------------------

function readStoredToken(): string | null {
  try {
    return localStorage.getItem(TOKEN_KEY);
  } catch {
    return null; // storage disabled: the token lives for this page only
  }
}

let token: string | null = readStoredToken();

export function currentToken(): string | null {
  return token;
}

/** Stores (or, with null, forgets) the token and reconnects the subscription socket with it. */
export function setToken(value: string | null): void {
  token = value && value.trim() ? value.trim() : null;
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    // storage disabled: keep it in memory
  }
  resetSocket();
}

function authorization(): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

// --- Whether the server answers ---------------------------------------------------------------------------------------

/** What a request that never reached the server says: the browser's own words ("Failed to fetch") say nothing. */
export const UNREACHABLE = 'Cannot reach the Souls server. Check that it is running, then try again.';

let reachable = true;
const reachListeners = new Set<(reachable: boolean) => void>();

function setReachable(value: boolean): void {
  if (value === reachable) return;
  reachable = value;
  for (const listener of reachListeners) listener(value);
}

/** Called with false when a request cannot reach the server, and with true once one (or the live socket) does again. */
export function onReachable(listener: (reachable: boolean) => void): () => void {
  reachListeners.add(listener);
  listener(reachable);
  return () => reachListeners.delete(listener);
}

// --- Queries and mutations ------------------------------------------------------------------------------------------

/** Operations without required variables may omit them. */
type VariablesArgument<TVars> = {} extends TVars ? [variables?: TVars] : [variables: TVars];

const printed = new WeakMap<object, string>();
function source(document: TypedDocumentNode<unknown, unknown>): string {
  let text = printed.get(document);
  if (text === undefined) {
    text = print(document);
    printed.set(document, text);
  }
  return text;
}

const unauthenticatedListeners = new Set<(error: ApiError) => void>();

/** Called whenever the server answers 401 (no token, or one it does not know). */
export function onUnauthenticated(listener: (error: ApiError) => void): () => void {
  unauthenticatedListeners.add(listener);
  return () => unauthenticatedListeners.delete(listener);
}

/**
 * One typed operation over HTTP POST (JSON, so no CSRF header is needed). Domain errors come back as data
 * (result unions); anything in `errors` throws an ApiError.
 */
export async function request<TResult, TVars>(document: TypedDocumentNode<TResult, TVars>, ...[variables]: VariablesArgument<TVars>): Promise<TResult> {
  let response: Response;
  try {
    response = await fetch(GRAPHQL_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', ...authorization() },
      body: JSON.stringify({ query: source(document as TypedDocumentNode<unknown, unknown>), variables: variables ?? {} }),
    });
  } catch {
    setReachable(false);
    throw new ApiError(UNREACHABLE, 0);
  }
  setReachable(true);
  let body: { data?: TResult | null; errors?: GraphQLErrorShape[] };
  try {
    body = await response.json();
  } catch {
    throw new ApiError(`the server answered HTTP ${response.status} without JSON`, response.status);
  }
  if (body.errors?.length) {
    const error = new ApiError(body.errors.map((e) => e.message).join('; '), response.status, body.errors);
    if (error.unauthenticated) for (const listener of unauthenticatedListeners) listener(error);
    throw error;
  }
  if (!response.ok || body.data == null) throw new ApiError(`the server answered HTTP ${response.status} without data`, response.status);
  return body.data;
}

// --- Subscriptions --------------------------------------------------------------------------------------------------

let socket: Client | null = null;
const socketListeners = new Set<(state: SocketState) => void>();
/** `closed`: no subscription needs the socket; `reconnecting`: it dropped or could not open, and is retried. */
export type SocketState = 'connecting' | 'live' | 'closed' | 'reconnecting' | 'refused';
let socketState: SocketState = 'closed';

function setSocketState(state: SocketState): void {
  socketState = state;
  for (const listener of socketListeners) listener(state);
}

export function onSocketState(listener: (state: SocketState) => void): () => void {
  socketListeners.add(listener);
  listener(socketState);
  return () => socketListeners.delete(listener);
}

function socketUrl(): string {
  return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}${GRAPHQL_PATH}`;
}

function getSocket(): Client {
  if (socket) return socket;
  socket = createClient({
    url: socketUrl(),
    lazy: true,
    lazyCloseTimeout: 1000,
    // The token is read at every (re)connect, so a new one takes effect on the next socket.
    connectionParams: () => authorization(),
    retryAttempts: Infinity,
    shouldRetry: (event) => !(isCloseEvent(event) && event.code === 4403),
    retryWait: async (retries) => new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** retries))),
    on: {
      connecting: () => setSocketState(socketState === 'reconnecting' ? 'reconnecting' : 'connecting'),
      connected: () => {
        setReachable(true);
        setSocketState('live');
      },
      // 1000 is the client's own close once no subscription is left; anything else is a lost or refused connection.
      closed: (event) => setSocketState(!isCloseEvent(event) ? 'reconnecting' : event.code === 4403 ? 'refused' : event.code === 1000 ? 'closed' : 'reconnecting'),
    },
  });
  return socket;
}

function isCloseEvent(value: unknown): value is CloseEvent {
  return typeof value === 'object' && value !== null && 'code' in value;
}

function resetSocket(): void {
  const old = socket;
  socket = null;
  if (old) {
    // Live subscriptions resubscribe through the new socket (see subscribe below).
    for (const restart of restarters) restart();
    void old.dispose();
  }
}

const restarters = new Set<() => void>();

/**
 * Subscribes to one typed operation; `onData` gets every event's data. Returns the unsubscribe function.
 * Errors (a refused token, a dropped socket) are retried by the client; they never throw here.
 */
export function subscribe<TResult, TVars>(document: TypedDocumentNode<TResult, TVars>, variables: TVars, onData: (data: TResult) => void): () => void {
  let stop: (() => void) | null = null;
  const start = () => {
    stop?.();
    stop = getSocket().subscribe<TResult>(
      { query: source(document as TypedDocumentNode<unknown, unknown>), variables: (variables ?? {}) as Record<string, unknown> },
      {
        next: (result) => {
          if (result.data) onData(result.data as TResult);
        },
        error: () => {},
        complete: () => {},
      },
    );
  };
  start();
  restarters.add(start);
  return () => {
    restarters.delete(start);
    stop?.();
    stop = null;
  };
}
