// Shard search's match and spellings over GraphQL (HTTP) and MCP (the shard_search tool).
import { afterEach, describe, expect, it } from 'vitest';
import { createSoul, dropShards, manualClock, openSoulsDb, type SoulsDb } from '../src/engine/index.ts';
import { call, connect, type Connected } from './support/mcp.ts';
import { serverPerTest } from './support/server.ts';

const T0 = Date.UTC(2026, 2, 1);
const texts = ['I apologise for the late delivery', 'Kept apologising to the innkeeper', 'Sorry, I apologize for the mess', 'Said sorry twice before leaving', 'Cats sleep all day'];

async function seed(db: SoulsDb): Promise<void> {
  const soul = await createSoul(db, { name: 'Wren', essence: 'Says sorry a lot.' });
  await dropShards(db, texts.map((content, i) => ({ content, source: `s${i % 2}`, soulIds: [soul.id], createdAt: T0 - (i + 1) * 86_400_000 })));
}

const contents = (hits: { shard: { content: string } }[]) => hits.map((h) => h.shard.content).sort();

describe('searchShards over HTTP', () => {
  const start = serverPerTest(afterEach);

  it('takes match: ALL (the default, as the schema says) or ANY, and finds every spelling', async () => {
    const server = await start({ start: T0 });
    await seed(server.app.db);
    const search = async (args: string) => {
      const { status, body } = await server.request(`{ searchShards(${args}) { score shard { content } } }`);
      expect(status).toBe(200);
      expect(body.errors).toBeUndefined();
      return body.data.searchShards;
    };
    expect(contents(await search('query: "apologize"'))).toEqual([texts[0], texts[1], texts[2]].sort());
    expect(contents(await search('query: "apologize sorry"'))).toEqual([texts[2]]);
    expect(contents(await search('query: "apologize sorry", match: ALL'))).toEqual([texts[2]]);
    const any = await search('query: "apologize sorry", match: ANY');
    expect(any[0].shard.content).toBe(texts[2]);
    expect(contents(any)).toEqual(texts.slice(0, 4).sort());

    const refused = await server.request('{ searchShards(query: "sorry", match: SOME) { score } }');
    expect(refused.body.errors[0].message).toMatch(/SOME.*ShardSearchMatch/);

    const { body } = await server.request(`{ __schema { queryType { fields { name description args { name defaultValue description } } } } }`);
    const field = body.data.__schema.queryType.fields.find((f: { name: string }) => f.name === 'searchShards');
    const match = field.args.find((a: { name: string }) => a.name === 'match');
    expect(match.defaultValue).toBe('ALL');
    expect(match.description).toMatch(/ALL \(the default\)/);
    expect(field.description).toMatch(/ALL \(the default\)/);
  });
});

describe('shard_search over MCP', () => {
  let session: Connected | null = null;
  afterEach(async () => {
    await session?.close();
    session = null;
  });

  it('takes match ALL (the default, as the description says) or ANY, only with query', async () => {
    const db = openSoulsDb({ clock: manualClock(T0) });
    await seed(db);
    session = await connect(db);
    const { tools } = await session.client.listTools();
    const tool = tools.find((t) => t.name === 'shard_search')!;
    expect(tool.description).toContain('match ALL words (default) or ANY');
    expect((tool.inputSchema.properties as Record<string, { enum?: string[] }>).match.enum).toEqual(['ALL', 'ANY']);

    const search = async (args: Record<string, unknown>) => {
      const result = await call(session!.client, 'shard_search', args);
      expect(result.isError, result.text).toBe(false);
      return result.data.shards.map((s: { content: string }) => s.content);
    };
    expect(await search({ query: 'apologize sorry' })).toEqual([texts[2]]);
    expect(await search({ query: 'apologize sorry', match: 'ALL' })).toEqual([texts[2]]);
    const any = await search({ query: 'apologize sorry', match: 'ANY' });
    expect(any[0]).toBe(texts[2]);
    expect([...any].sort()).toEqual(texts.slice(0, 4).sort());
    expect([...(await search({ query: 'apologising' }))].sort()).toEqual([texts[0], texts[1], texts[2]].sort());

    const alone = await call(session.client, 'shard_search', { match: 'ANY' });
    expect(alone.isError).toBe(true);
    expect(alone.text).toContain('match');
    expect(alone.text).toContain('only with query');
  });
});
