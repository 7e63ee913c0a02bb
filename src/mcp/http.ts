// Streamable HTTP at /mcp on the API's own server and port: the same bearer tokens (a caller sees the tools its scopes allow),
// the same Origin/Host policy and body limit (applied by the server before this runs). Each request gets a server instance
// for its caller; resource updates reach 2026-era clients on their subscriptions/listen streams.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createMcpHandler, InMemoryServerEventBus, type AuthInfo, type McpHttpHandler, type ServerEvent, type ServerEventBus } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import type { SoulsDb } from '../engine/index.ts';
import { bearerChallenge, scopes as knownScopes, type Caller, type Scope } from '../server/auth.ts';
import type { SoulsPubSub } from '../server/pubsub.ts';
import { findRefinerBySlug, isRefiner } from './refiner.ts';
import { createSoulsMcpServer, evidenceUri, followSoulChanges, soulUri } from './server.ts';
import { loadSkillSet, type SkillSet } from './skills.ts';

export type McpEndpointOptions = {
  db: SoulsDb;
  pubsub: SoulsPubSub;
  /** The caller a credential names (the same function GraphQL uses), or null. */
  callerOf: (authorization: unknown) => Caller | null;
  maxBodyBytes: number;
  version?: string;
};

export type McpEndpoint = {
  /** Whether the request is for /mcp. */
  handles(req: IncomingMessage): boolean;
  serve(req: IncomingMessage, res: ServerResponse): Promise<void>;
  close(): Promise<void>;
};

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

  return {
    serve: async (req, res) => {
      const authorization = req.headers.authorization;
      const caller = options.callerOf(authorization);
      if (!caller) {
        res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': bearerChallenge(authorization) });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'a valid bearer token is required (Authorization: Bearer <token>)' } }));
        req.resume();
        return;
      }
      // The SDK takes validated credentials from req.auth; the token itself is never passed on.
      (req as IncomingMessage & { auth?: AuthInfo }).auth = { token: '', clientId: caller.name, scopes: [...caller.scopes] };
      await node(req as IncomingMessage & { auth?: AuthInfo }, res);
    },
    close: async () => {
      bus.stop();
      await handler.close();
    },
  };
}
