// Streamable HTTP at /mcp on the API's own server and port: the same bearer tokens (a caller sees the tools its scopes allow),
// the same Origin/Host policy and body limit (applied by the server before this runs). Each request gets a server instance
// for its caller; resource updates reach 2026-era clients on their subscriptions/listen streams.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createMcpHandler, InMemoryServerEventBus, isJsonContentType, type AuthInfo, type McpHttpHandler, type ServerEvent, type ServerEventBus } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import type { SoulsDb } from '../engine/index.ts';
import { bearerChallenge, scopes as knownScopes, TOKEN_REQUIRED, type Caller, type Scope } from '../server/auth.ts';
import { readBody } from '../server/body-limits.ts';
import type { SoulsPubSub } from '../server/pubsub.ts';
import { findRefinerBySlug, isRefiner } from './refiner.ts';
import { costRefusal, listenFilterRefusal, messagesOf, priceFacts, shapeRefusal, type McpLimits, type McpRefusal } from './requests.ts';
import { createSoulsMcpServer, evidenceUri, followSoulChanges, soulUri } from './server.ts';
import { loadSkillSet, type SkillSet } from './skills.ts';

export type McpEndpointOptions = {
  db: SoulsDb;
  pubsub: SoulsPubSub;
  /** The caller a credential names (the same function GraphQL uses), or null. */
  callerOf: (authorization: unknown) => Caller | null;
  maxBodyBytes: number;
  limits: McpLimits;
  version?: string;
};

export type McpEndpoint = {
  /** Whether the request is for /mcp. */
  handles(req: IncomingMessage): boolean;
  serve(req: IncomingMessage, res: ServerResponse): Promise<void>;
  close(): Promise<void>;
};

function answer(res: ServerResponse, id: unknown, { status, code, message, data }: McpRefusal): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: typeof id === 'string' || typeof id === 'number' ? id : null, error: { code, message, ...(data ? { data } : {}) } }));
}

const isListen = (body: unknown): body is { id?: unknown; method: string; params?: unknown } =>
  body !== null && typeof body === 'object' && !Array.isArray(body) && (body as { method?: unknown }).method === 'subscriptions/listen';

const callerOfAuth = (auth: AuthInfo | undefined): Caller =>
  auth ? { name: auth.clientId, scopes: new Set(auth.scopes.filter((s): s is Scope => (knownScopes as readonly string[]).includes(s))) } : { name: 'nobody', scopes: new Set() };

/**
 * The bus subscriptions/listen streams hear: per-request instances are gone when a soul changes, so the event bus is
 * followed here, and only while a stream is open (a bulk import publishes an event per shard).
 */
class ListenedBus implements ServerEventBus {
  readonly #inner = new InMemoryServerEventBus();
  readonly #pubsub: SoulsPubSub;
  #listeners = 0;
  #stop: (() => void) | null = null;
  constructor(pubsub: SoulsPubSub) {
    this.#pubsub = pubsub;
  }
  publish(event: ServerEvent): void {
    this.#inner.publish(event);
  }
  subscribe(listener: (event: ServerEvent) => void): () => void {
    const unsubscribe = this.#inner.subscribe(listener);
    if (this.#listeners++ === 0) {
      this.#stop = followSoulChanges(this.#pubsub, (soulId, what) => {
        if (what === 'soul') this.publish({ kind: 'resource_updated', uri: soulUri(soulId) });
        this.publish({ kind: 'resource_updated', uri: evidenceUri(soulId) });
      });
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      unsubscribe();
      if (--this.#listeners === 0) this.stop();
    };
  }
  stop(): void {
    this.#stop?.();
    this.#stop = null;
  }
}

export function createMcpEndpoint(options: McpEndpointOptions): Omit<McpEndpoint, 'handles'> {
  const { db, pubsub } = options;
  let skills: Promise<SkillSet> | null = null;
  const bus = new ListenedBus(pubsub);
  const handler: McpHttpHandler = createMcpHandler(
    async ({ authInfo }) => {
      const caller = callerOfAuth(authInfo);
      // A token named like a refiner's slug ("refiner", "refiner-scout") acts as that refiner.
      const refiner = isRefiner({ slug: caller.name }) ? await findRefinerBySlug(db, caller.name) : null;
      return createSoulsMcpServer({ db, pubsub, caller, refinerId: refiner?.id ?? null, skills: await (skills ??= loadSkillSet()), updates: 'none', version: options.version });
    },
    { maxRequestBodySize: options.maxBodyBytes, onerror: () => undefined, bus },
  );
  const node = toNodeHandler(handler, { maxRequestBodySize: options.maxBodyBytes });
  const { limits } = options;
  /** Open listen streams by token name. */
  const listening = new Map<string, number>();

  /** Parses a JSON POST once, refuses what the limits do not allow, and hands the parsed body on (or null when answered). */
  const screened = async (req: IncomingMessage, res: ServerResponse, caller: Caller): Promise<{ body?: unknown } | null> => {
    if (req.method !== 'POST' || !isJsonContentType(req.headers['content-type'] ?? null)) return {};
    const text = await readBody(req, options.maxBodyBytes);
    if (text === null) {
      answer(res, null, { status: 413, code: -32000, message: `Payload Too Large: Request body must not exceed ${options.maxBodyBytes} bytes` });
      return null;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      answer(res, null, { status: 400, code: -32700, message: 'Parse error: the request body is not valid JSON' });
      return null;
    }
    const id = (body as { id?: unknown } | null)?.id;
    const shaped = shapeRefusal(body, limits);
    const refusal = shaped ?? costRefusal(body, limits, await priceFacts(db, messagesOf(body))) ?? (isListen(body) ? listenFilterRefusal(body, limits) : null);
    if (refusal) {
      answer(res, id, refusal);
      return null;
    }
    if (isListen(body)) {
      const open = listening.get(caller.name) ?? 0;
      if (open >= limits.maxListenStreamsPerToken) {
        answer(res, id, {
          status: 200,
          code: -32603,
          message: `Subscription limit reached: the token "${caller.name}" has ${open} open subscriptions/listen streams, the most one token may hold (maxListenStreamsPerToken); close one first`,
          data: { limit: limits.maxListenStreamsPerToken, setting: 'maxListenStreamsPerToken' },
        });
        return null;
      }
      listening.set(caller.name, open + 1);
      res.once('close', () => {
        const left = (listening.get(caller.name) ?? 1) - 1;
        if (left > 0) listening.set(caller.name, left);
        else listening.delete(caller.name);
      });
    }
    return { body };
  };

  return {
    serve: async (req, res) => {
      const authorization = req.headers.authorization;
      const caller = options.callerOf(authorization);
      if (!caller) {
        res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': bearerChallenge(authorization) });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: TOKEN_REQUIRED } }));
        req.resume();
        return;
      }
      // The SDK takes validated credentials from req.auth; the token itself is never passed on.
      (req as IncomingMessage & { auth?: AuthInfo }).auth = { token: '', clientId: caller.name, scopes: [...caller.scopes] };
      const passed = await screened(req, res, caller);
      if (passed) await node(req as IncomingMessage & { auth?: AuthInfo }, res, passed.body);
    },
    close: async () => {
      bus.stop();
      await handler.close();
    },
  };
}
