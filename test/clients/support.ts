// What the client tests share: one live server per file (and one with tokens), a small roster for the dashboard,
// the operations every client runs, and waiting for a subscription to be live on the server (a state, not a time).
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, expect, vi } from 'vitest';
import { seedShards, seedSouls } from '../../examples/seed.ts';
import type { TokenEntry } from '../../src/server/auth.ts';
import { metricSample, startServer, type LiveServer } from '../support/server.ts';

/** The dashboard of examples/dashboard.graphql, as a client sends it. */
export const DASHBOARD = readFileSync(new URL('../../examples/dashboard.graphql', import.meta.url), 'utf8');

export const DROP_SHARDS = /* GraphQL */ `
  mutation ClientsDropShards($inputs: [DropShardInput!]!) {
    dropShards(inputs: $inputs) {
      __typename
      ... on DropShardsPayload {
        shards { id content }
        readySouls { id name pendingShardCount crystallization { ready priority unmet } }
      }
      ... on ValidationError { field }
      ... on Error { message }
    }
  }
`;

export const CRYSTALLIZATION_READY = /* GraphQL */ `
  subscription ClientsCrystallizationReady($soulIds: [ID!]) {
    crystallizationReady(soulIds: $soulIds) { soul { id name crystallization { ready priority unmet } } }
  }
`;

/** A token with every scope the client tests use; the server of `serverPerFile({ tokens: true })` needs it. */
export const TOKEN = 'clients-test-token-5c1e9a7b3d2f';
const tokens: TokenEntry[] = [{ name: 'client', token: TOKEN, scopes: ['read', 'observe', 'refine', 'admin'] }];

const START = Date.UTC(2026, 5, 1, 9, 30);
const DAY_MS = 86_400_000;

/** A server for a file's tests, seeded with two souls (traits, shards, one ready), started before them and stopped after. */
export function serverPerFile(options: { tokens?: boolean } = {}): () => LiveServer {
  let server: LiveServer | null = null;
  beforeAll(async () => {
    server = await startServer({ start: START, app: { tokens: options.tokens ? tokens : null } });
    await seedRoster(server, options.tokens ? bearer(TOKEN) : {});
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (!server) throw new Error('the server starts in beforeAll');
    return server;
  };
}

afterEach(() => {
  vi.restoreAllMocks();
});

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Mira and Relay of examples/seed.ts, with their shards and first trait: the dashboard has rows, clusters and traits. */
async function seedRoster(server: LiveServer, headers: Record<string, string>): Promise<void> {
  const ids = new Map<string, string>();
  for (const soul of seedSouls.filter((s) => s.key === 'mira' || s.key === 'relay')) {
    const { createSoul } = await server.data(
      'mutation($input: CreateSoulInput!) { createSoul(input: $input) { ... on SoulPayload { soul { id } } } }',
      { input: { name: soul.name, description: soul.description, essence: soul.essence } },
      headers,
    );
    ids.set(soul.key, createSoul.soul.id);
    const [trait] = soul.traits;
    await server.data('mutation($id: ID!, $input: AddTraitInput!) { addTrait(soulId: $id, input: $input) { __typename } }', { id: createSoul.soul.id, input: { principle: trait.principle, provenance: trait.provenance } }, headers);
  }
  const inputs = seedShards
    .filter((shard) => shard.souls.every((key) => ids.has(key)))
    .map((shard) => ({ content: shard.content, source: shard.source, tags: shard.tags, soulIds: shard.souls.map((key) => ids.get(key)), createdAt: daysAgo(server, shard.daysAgo) }));
  await server.data('mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename } }', { inputs }, headers);
}

const daysAgo = (server: LiveServer, days: number) => new Date(server.clock.now() - days * DAY_MS).toISOString();

/** A new soul, not ready: its id. */
export async function newSoul(server: LiveServer, name: string, headers: Record<string, string> = {}): Promise<string> {
  const { createSoul } = await server.data(
    'mutation($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } ... on Error { message } } }',
    { input: { name, essence: `${name} keeps watch over the crossing.` } },
    headers,
  );
  if (createSoul.__typename !== 'SoulPayload') throw new Error(`createSoul ${name}: ${createSoul.__typename} ${createSoul.message}`);
  return createSoul.soul.id;
}

/** Three shards from two sources over three days: they make a fresh soul ready for refinement. */
export function readyingShards(server: LiveServer, soulId: string) {
  return [
    { content: 'Guarded the ferry through the night without complaint.', source: 'session_observation', soulIds: [soulId], createdAt: daysAgo(server, 3) },
    { content: 'Haggled hard over the fare with a travelling merchant.', source: 'dialogue', soulIds: [soulId], createdAt: daysAgo(server, 2) },
    { content: 'Sang an old river song while mending the ferry rope.', source: 'dialogue', soulIds: [soulId], createdAt: daysAgo(server, 1) },
  ];
}

/** A batch whose second shard is empty: the answer is a ValidationError naming `inputs[1].content`. */
export const invalidShards = (soulId: string) => [
  { content: 'Counted the coins twice.', source: 'dialogue', soulIds: [soulId] },
  { content: '', source: 'dialogue', soulIds: [soulId] },
];

/** The ValidationError a client must read whole: the field it names and the message `... on Error` selects. */
export const INVALID_SHARDS_ERROR = { __typename: 'ValidationError', field: 'inputs[1].content', message: 'must not be empty once whitespace and punctuation noise are removed' };

export async function until(check: () => boolean | Promise<boolean>, what: () => string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Live subscriptions the server counts on a transport (souls_subscriptions_active). */
async function liveSubscriptions(server: LiveServer, transport: 'websocket' | 'sse', headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(server.url.replace(/\/graphql$/, '/metrics'), { headers });
  return metricSample(await response.text(), 'souls_subscriptions_active', { transport });
}

/** Resolves once the server counts `count` live subscriptions on the transport: events published from then on reach them. */
export function subscriptionsLive(server: LiveServer, transport: 'websocket' | 'sse', count: number, headers: Record<string, string> = {}): Promise<void> {
  let seen = -1;
  return until(
    async () => (seen = await liveSubscriptions(server, transport, headers)) === count,
    () => `${count} live ${transport} subscriptions (the server counts ${seen})`,
  );
}

/** A client as the readiness check drives it: it subscribes with CRYSTALLIZATION_READY, and sends DROP_SHARDS itself. */
export type ReadinessClient = {
  /** Subscribes to the soul's readiness: the data of the first event, and how to stop. */
  subscribe(soulId: string): { event: Promise<unknown>; stop(): void };
  /** The data of the client's own DROP_SHARDS. */
  dropShards(inputs: unknown[]): Promise<unknown>;
};

/**
 * A client hears crystallizationReady when its own dropShards makes a new soul ready: it subscribes, the server counts
 * the subscription live on the transport, the client drops the shards, the event arrives; stopped, the server counts none.
 */
export async function readinessHeard(live: LiveServer, transport: 'websocket' | 'sse', name: string, client: ReadinessClient, headers: Record<string, string> = {}): Promise<void> {
  const id = await newSoul(live, name, headers);
  const { event, stop } = client.subscribe(id);
  try {
    await subscriptionsLive(live, transport, 1, headers);
    expect(await client.dropShards(readyingShards(live, id))).toMatchObject({ dropShards: { __typename: 'DropShardsPayload', readySouls: [{ id, name, pendingShardCount: 3 }] } });
    expect(await event).toMatchObject({ crystallizationReady: { soul: { id, name, crystallization: { ready: true } } } });
  } finally {
    stop();
  }
  await subscriptionsLive(live, transport, 0, headers);
}

/** The roster as the server answers the dashboard over plain HTTP: what every client must get. */
export async function dashboardAnswer(server: LiveServer, headers: Record<string, string> = {}): Promise<{ souls: unknown[] }> {
  return server.data(DASHBOARD, {}, headers);
}

/** A client's dashboard is the server's, but for the `__typename` fields a normalising cache adds; and the roster is not empty. */
export async function expectDashboard(server: LiveServer, data: unknown, headers: Record<string, string> = {}): Promise<void> {
  const answer = await dashboardAnswer(server, headers);
  expect(withoutTypenames(data)).toEqual(answer);
  expect(answer.souls.length).toBeGreaterThanOrEqual(2);
}

export type SentRequest = { method: string; document: boolean; hash: boolean; headers: Record<string, string> };

/**
 * The GraphQL requests sent over fetch from now on, as the server sees them: the method, whether the document and a
 * persisted query hash went, and the headers; fetch is restored after the test.
 */
export function recordRequests(): SentRequest[] {
  const sent: SentRequest[] = [];
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const body = request.method === 'POST' ? await request.clone().json() : {};
    const extensions = request.method === 'GET' ? JSON.parse(url.searchParams.get('extensions') ?? '{}') : (body.extensions ?? {});
    if (url.pathname === '/graphql') {
      sent.push({
        method: request.method,
        document: request.method === 'GET' ? url.searchParams.has('query') : 'query' in body,
        hash: 'persistedQuery' in extensions,
        headers: Object.fromEntries(request.headers),
      });
    }
    return realFetch(request);
  });
  return sent;
}

/** A result without the `__typename` fields a normalising cache adds to every selection. */
function withoutTypenames(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutTypenames);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => key !== '__typename').map(([key, inner]) => [key, withoutTypenames(inner)]));
}
