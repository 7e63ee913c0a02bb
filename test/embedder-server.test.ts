import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { awaitEmbeddings, DAY_MS, getShardEmbeddings, manualClock } from '../src/engine/index.ts';
import { sentenceEncoder } from '../src/engine/semantic.ts';
import { createEndpointEmbedder } from '../src/embedder/endpoint.ts';
import { createLogger } from '../src/server/log.ts';
import { startEmbeddingServer, type EmbeddingServer } from './support/embedding-server.ts';
import { trackListeners } from './support/listeners.ts';
import { metricSample as sample, serverPerTest } from './support/server.ts';

vi.setConfig({ testTimeout: 60_000 });

const KEY = 'sk-test-SECRET-4f9a2c71';
const T0 = Date.UTC(2026, 3, 1);
const TABLE = 'The agent dropped the production table without a backup';
const TABLE_PARAPHRASE = 'The agent deleted the production database table with no backup first';
const INNKEEPER = 'The innkeeper dropped the table he was carrying';

let embeddings: EmbeddingServer;
beforeAll(async () => {
  embeddings = await startEmbeddingServer({ key: KEY });
  await sentenceEncoder.embed(['warm']);
});
afterAll(() => embeddings.stop());
const server = serverPerTest(afterEach);


describe('similarity semantic through an embeddings endpoint, as a user of the API sees it', () => {
  it('writes answer while the endpoint fails; the circuit opens and closes with one log line each and in /metrics; vectors land, the soul is announced; the key shows nowhere', async () => {
    const lines: string[] = [];
    const logger = createLogger({ clock: manualClock(T0), destination: { write: (line: string) => lines.push(line) } });
    const embedder = createEndpointEmbedder({ url: embeddings.url, model: 'use-lite', key: KEY, backoffMs: 1, maxBackoffMs: 2, circuitFailures: 2, circuitCooldownMs: 50, timeoutMs: 5_000 });
    const live = await server({ settings: { similarity: 'semantic' }, start: T0, embedder, app: { logger } });
    const metrics = async () => (await fetch(live.url.replace(/\/graphql$/, '/metrics'))).text();
    const listeners = trackListeners(live);
    const client = createClient({ url: live.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    const events: unknown[] = [];
    client.subscribe({ query: 'subscription { crystallizationReady { soul { name } } }' }, { next: (r) => events.push(r.data), error: () => {}, complete: () => {} });
    await listeners.until('crystallizationReady', 1);

    embeddings.failAll({ kind: 'status', status: 503 });
    const answers: string[] = [];
    const soulId = (await live.data('mutation { createSoul(input: { name: "Sable", essence: "A coding agent." }) { ... on SoulPayload { soul { id } } } }')).createSoul.soul.id;
    for (const [i, content] of [TABLE, INNKEEPER, TABLE_PARAPHRASE].entries()) {
      const { status, body } = await live.request('mutation($input: DropShardInput!) { dropShard(input: $input) { __typename ... on DropShardPayload { readySouls { id } } } }', {
        input: { content, source: i % 2 ? 'chat' : 'review', soulIds: [soulId] },
      });
      expect(status).toBe(200);
      answers.push(JSON.stringify(body));
      expect(body.data.dropShard).toEqual({ __typename: 'DropShardPayload', readySouls: [] });
      live.clock.advance(DAY_MS);
    }
    await vi.waitFor(() => expect(lines.filter((l) => l.includes('embedder circuit open'))).toHaveLength(1));
    const failing = await metrics();
    expect(sample(failing, 'souls_embed_circuit_state', { state: 'closed' }) + sample(failing, 'souls_embed_circuit_state', { state: 'open' }) + sample(failing, 'souls_embed_circuit_state', { state: 'half_open' })).toBe(1);
    expect(sample(failing, 'souls_embed_circuit_state', { state: 'closed' })).toBe(0);
    expect(sample(failing, 'souls_embed_failures_total', { reason: 'server_error' })).toBeGreaterThanOrEqual(2);
    expect(sample(failing, 'souls_embed_pending_vectors')).toBe(3);
    expect(sample(failing, 'souls_embed_duration_seconds_count', { outcome: 'server_error' })).toBeGreaterThanOrEqual(2);
    // Not ready yet: compared lexically, the three texts are one cluster.
    expect((await live.data('query($id: ID!) { soul(id: $id) { crystallization { ready } } }', { id: soulId })).soul.crystallization.ready).toBe(false);

    embeddings.failAll(null);
    await awaitEmbeddings(live.app.db);
    expect((await getShardEmbeddings(live.app.db, [1, 2, 3])).size).toBe(3);
    await vi.waitFor(() => expect(events).toEqual([{ crystallizationReady: { soul: { name: 'Sable' } } }]));
    expect(lines.filter((l) => l.includes('embedder circuit open'))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('embedder circuit closed'))).toHaveLength(1);
    expect(JSON.parse(lines.find((l) => l.includes('embedder circuit open'))!)).toMatchObject({ level: 'warn', model: 'use-lite', reason: 'server_error' });
    const recovered = await metrics();
    expect(sample(recovered, 'souls_embed_circuit_state', { state: 'closed' })).toBe(1);
    expect(sample(recovered, 'souls_embed_vectors_total', { source: 'embedded' })).toBe(3);
    expect(sample(recovered, 'souls_embed_pending_vectors')).toBe(0);
    expect(sample(recovered, 'souls_embed_queue_depth')).toBe(0);
    const report = await live.data('query($id: ID!) { soul(id: $id) { crystallization { ready } evidence { similarity { mode } clusters { memberCount } } } }', { id: soulId });
    expect(report.soul.crystallization.ready).toBe(true);
    expect(report.soul.evidence.clusters.map((c: { memberCount: number }) => c.memberCount).sort()).toEqual([1, 2]);

    // The key went to the endpoint, and nowhere else.
    expect(embeddings.authorizations.at(-1)).toBe(`Bearer ${KEY}`);
    for (const text of [lines.join('\n'), failing, recovered, answers.join('\n')]) expect(text).not.toContain(KEY);
    await client.dispose();
  });

  it('an answer past its cap (a gzip bomb) is cut off, logged and counted under too_large; the retry lands the vector', async () => {
    const lines: string[] = [];
    const logger = createLogger({ clock: manualClock(T0), destination: { write: (line: string) => lines.push(line) } });
    const embedder = createEndpointEmbedder({ url: embeddings.url, model: 'use-lite', key: KEY, backoffMs: 1, maxBackoffMs: 2 });
    const live = await server({ settings: { similarity: 'semantic' }, start: T0, embedder, app: { logger } });
    embeddings.faults.push({ kind: 'gzip_bomb', padding: Infinity });
    const soulId = (await live.data('mutation { createSoul(input: { name: "Sable", essence: "A coding agent." }) { ... on SoulPayload { soul { id } } } }')).createSoul.soul.id;
    await live.data('mutation($input: DropShardInput!) { dropShard(input: $input) { __typename } }', { input: { content: TABLE, source: 'chat', soulIds: [soulId] } });
    await awaitEmbeddings(live.app.db);
    expect((await getShardEmbeddings(live.app.db, [1])).size).toBe(1);
    const cut = lines.filter((l) => l.includes('embedder answer cut off'));
    expect(cut).toHaveLength(1);
    expect(JSON.parse(cut[0])).toMatchObject({ level: 'warn', model: 'use-lite', reason: 'too_large', texts: 1 });
    const text = await (await fetch(live.url.replace(/\/graphql$/, '/metrics'))).text();
    expect(sample(text, 'souls_embed_failures_total', { reason: 'too_large' })).toBe(1);
    expect(sample(text, 'souls_embed_failures_total', { reason: 'redirected' })).toBe(0);
    expect(sample(text, 'souls_embed_duration_seconds_count', { outcome: 'ok' })).toBe(1);
  });

  it('a wrong key is a counted refusal whose error names the remedy, not the key', async () => {
    const embedder = createEndpointEmbedder({ url: embeddings.url, model: 'use-lite', key: 'sk-wrong-SECRET-0000' });
    const live = await server({ settings: { similarity: 'semantic' }, start: T0, embedder });
    const soulId = (await live.data('mutation { createSoul(input: { name: "Sable", essence: "A coding agent." }) { ... on SoulPayload { soul { id } } } }')).createSoul.soul.id;
    const dropped = await live.data('mutation($input: DropShardInput!) { dropShard(input: $input) { __typename } }', { input: { content: TABLE, source: 'chat', soulIds: [soulId] } });
    expect(dropped.dropShard.__typename).toBe('DropShardPayload');
    const failure = (await awaitEmbeddings(live.app.db).then(() => null, (e: unknown) => e)) as Error;
    expect(failure.message).toContain('refused the request with 401 (check the key: SOULS_EMBEDDER_KEY or --embedder-key-file)');
    expect(failure.message).not.toContain('sk-wrong-SECRET-0000');
    const text = await (await fetch(live.url.replace(/\/graphql$/, '/metrics'))).text();
    expect(sample(text, 'souls_embed_failures_total', { reason: 'rejected' })).toBe(1);
    expect(sample(text, 'souls_embed_dropped_shards_total', { reason: 'failed' })).toBe(1);
    expect(text).not.toContain('sk-wrong-SECRET-0000');
  });
});
