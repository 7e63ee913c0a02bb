// What a client sees of the tools, through real SDK clients over Streamable HTTP and stdio: a tools/list that fits
// 4,000 tokens and still validates every result, inputs that refuse unknown keys and take ids as GraphQL gives
// them, the evidence markdown as its own text block with shard ids, and refusals that name the field and a next step.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, fromJsonSchema, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { closeSoulsDb, listShards, listTraits, manualClock, openSoulsDb } from '../src/engine/index.ts';
import { RESPONSE_BUDGET_CHARS } from '../src/mcp/results.ts';
import { seedDemo } from '../scripts/demo.ts';
import { cleanEnv } from './support/cli.ts';
import { call, DEMO_NOW } from './support/mcp.ts';
import { startServer, type LiveServer } from './support/server.ts';

const TOKEN = 'shape-token-0123456789';
/** The bound the issue sets: under 4,000 tokens, counted as characters ÷ 4 of the JSON tools/list result. */
const TOOLS_LIST_MAX_CHARS = 16_000;

let server: LiveServer;
let souls: Record<string, number>;
let client: Client;

beforeAll(async () => {
  server = await startServer({ start: DEMO_NOW, app: { tokens: [{ name: 'shape', token: TOKEN, scopes: ['read', 'observe', 'refine', 'admin'] }] } });
  souls = (await seedDemo(server.app.db, server.clock, { now: DEMO_NOW })).souls;
  client = new Client({ name: 'shape-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url.replace(/graphql$/, 'mcp')), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
  // The client validates structured content against the output schemas it listed.
  await client.listTools();
}, 30_000);
afterAll(async () => {
  await client?.close();
  await server?.stop();
});

const tool = (name: string, args: Record<string, unknown>) => call(client, name, args);

describe('tools/list', { timeout: 30_000 }, () => {
  it('fits 4,000 tokens over stdio and HTTP, keeping titles, descriptions, input bounds and output outlines', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-shape-'));
    const dbFile = join(dir, 'souls.db');
    closeSoulsDb(openSoulsDb({ path: dbFile, clock: manualClock(DEMO_NOW) }));
    const stdio = new Client({ name: 'shape-stdio', version: '1.0.0' });
    try {
      const cli = fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
      await stdio.connect(new StdioClientTransport({ command: process.execPath, args: [cli, 'mcp', '--db', dbFile], env: cleanEnv() as Record<string, string>, stderr: 'pipe' }));
      for (const listed of [await stdio.listTools(), await client.listTools()]) {
        expect(listed.tools).toHaveLength(10);
        expect(JSON.stringify(listed).length).toBeLessThanOrEqual(TOOLS_LIST_MAX_CHARS);
        for (const t of listed.tools) {
          expect(t.outputSchema, t.name).toMatchObject({ type: 'object', properties: expect.any(Object) });
          expect(t.inputSchema.additionalProperties, t.name).toBe(false);
          expect(JSON.stringify(t), t.name).not.toContain('9007199254740991');
        }
        const search = listed.tools.find((t) => t.name === 'shard_search')!;
        expect(search.inputSchema.properties!.limit).toEqual({ default: 20, type: 'integer', minimum: 1, maximum: 50 });
        expect(search.inputSchema.properties!.soulId).toEqual({ type: ['integer', 'string'], pattern: '^[0-9]+$' });
      }
    } finally {
      await stdio.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has output schemas that validate every real result, and refuse a result of the wrong shape', async () => {
    const { tools } = await client.listTools();
    const schemaOf = (name: string) => fromJsonSchema(tools.find((t) => t.name === name)!.outputSchema as never)['~standard'];
    const results = new Map<string, unknown[]>();
    const run = async (name: string, args: Record<string, unknown>) => {
      // callTool itself throws when the structured content does not match the listed output schema.
      const r = await tool(name, args);
      expect(r.isError, `${name} ${r.text}`).toBe(false);
      results.set(name, [...(results.get(name) ?? []), r.data]);
      return r.data;
    };
    await run('soul_read', {});
    await run('soul_read', { soulId: souls.Mira, render: 'full', sections: ['traits', 'inactiveTraits', 'crystallization', 'levels', 'shardCounts'] });
    await run('shard_search', { soulId: souls.Mira });
    await run('shard_search', { query: 'ledger' });
    await run('soul_evidence', { soulId: souls.Brannoc });
    await run('soul_evidence', { soulId: souls.Brannoc, format: 'json', limit: 3 });
    const { shardIds } = await run('shard_observe', { shards: [{ content: 'Sela checked the rope twice before the climb.', source: 'review', soulIds: [souls.Sela] }] });
    await run('evidence_judge', { action: 'assign', soulId: souls.Sela, assignments: [{ shardIds, newThemeName: 'Rope checks' }], dryRun: true });
    const judged = await run('evidence_judge', { action: 'assign', soulId: souls.Sela, assignments: [{ shardIds, newThemeName: 'Rope checks' }] });
    await run('evidence_judge', { action: 'rename', themeId: judged.themes[0].id, name: 'Rope safety' });
    const added = await run('trait_change', { action: 'add', soulId: souls.Sela, principle: 'Check the rope twice.', provenance: 'The climb.', citeShardIds: shardIds });
    await run('trait_change', { action: 'revise', traitId: added.trait.id, principle: 'Check every rope twice.', dryRun: true });
    const relay = await listTraits(server.app.db, souls.Relay, { status: 'active' });
    const plan = { soulId: souls.Relay, newEssence: 'Relay plans small, verifiable work for a team of agents.', carriedTraitIds: relay.map((t) => t.id) };
    await run('levelup', { ...plan, dryRun: true });
    await run('levelup', plan);
    await run('levelup_revert', { soulId: souls.Relay });
    await run('soul_attune', { soulId: souls.Sela });
    await run('soul_manage', { action: 'create', name: 'Shape', essence: 'A soul made by the shape test.' });
    for (const t of tools) {
      expect(results.has(t.name), t.name).toBe(true);
      for (const data of results.get(t.name)!) expect(await schemaOf(t.name).validate(data), t.name).not.toHaveProperty('issues');
    }
    expect(await schemaOf('soul_read').validate({ souls: 'Mira' })).toHaveProperty('issues');
    expect(await schemaOf('shard_search').validate({ shards: [{ id: 'one' }], totalCount: 1, nextCursor: null })).toHaveProperty('issues');
    expect(await schemaOf('soul_evidence').validate({ soul: { id: 1, name: 'Mira', level: 1 }, suggestedActions: [] })).toHaveProperty('issues');
  });
});

describe('tool inputs', () => {
  it('refuse a key the tool does not know, at any depth, naming it and the ones allowed', async () => {
    const misspelt = await tool('soul_evidence', { soulId: souls.Mira, fromat: 'json' });
    expect(misspelt.isError).toBe(true);
    expect(misspelt.text).toContain('fromat: is not a parameter of soul_evidence (did you mean format?). soul_evidence takes soulId, format, tags, query, since, cursor, limit.');
    const before = (await listShards(server.app.db, { first: 500 })).totalCount;
    const nested = await tool('shard_observe', { shards: [{ content: 'A note.', source: 'chat', soulIds: [souls.Mira], creatdAt: '2026-05-01T00:00:00Z' }] });
    expect(nested.isError).toBe(true);
    expect(nested.text).toContain('shards[0].creatdAt: is not a field of shards[0] (did you mean createdAt?). shards[0] takes content, source, soulIds, tags, sealed, createdAt, embedding.');
    expect((await listShards(server.app.db, { first: 500 })).totalCount).toBe(before);
  });

  it('take ids as numbers or as GraphQL gives them, strings of digits, anywhere', async () => {
    const byString = await tool('soul_read', { soulId: String(souls.Mira) });
    expect(byString.data.soul).toMatchObject({ id: souls.Mira, name: 'Mira' });
    const [shard] = (await tool('shard_search', { soulId: `${souls.Mira}`, limit: 1 })).data.shards;
    expect((await tool('shard_search', { ids: [String(shard.id)] })).data.shards.map((s: { id: number }) => s.id)).toEqual([shard.id]);
  });

  it('refuse an id that is not one with the tool that finds it: a name goes to soul_read with name', async () => {
    const byName = await tool('soul_evidence', { soulId: 'Wren' });
    expect(byName.isError).toBe(true);
    expect(byName.text).toContain('soulId: must be a soul id, a whole number such as 12 or "12" (got "Wren"). To find a soul by its name, call soul_read with name "Wren".');
    expect((await tool('trait_change', { action: 'revert', traitId: 0 })).text).toContain('traitId: must be a trait id, a whole number such as 12 or "12" (got 0). Call soul_read with soulId and sections ["traits"] to see trait ids.');
    expect((await tool('soul_read', { limit: 500 })).text).toContain('limit: must be at most 50 (got 500).');
  });
});

describe('shard_observe createdAt', () => {
  it('dates a shard in the past, as GraphQL does, and refuses a future or malformed time by field', async () => {
    const dated = await tool('shard_observe', { shards: [{ content: 'Sela kept the old watch log.', source: 'archive', soulIds: [souls.Sela], createdAt: '2026-01-15T08:30:00Z' }] });
    expect(dated.isError).toBe(false);
    const [stored] = (await tool('shard_search', { ids: dated.data.shardIds })).data.shards;
    expect(stored.createdAt).toBe('2026-01-15T08:30:00.000Z');
    const before = (await listShards(server.app.db, { first: 500 })).totalCount;
    const future = await tool('shard_observe', {
      shards: [
        { content: 'A fine note.', source: 'chat', soulIds: [souls.Sela] },
        { content: 'A note from the future.', source: 'chat', soulIds: [souls.Sela], createdAt: '2999-01-01T00:00:00Z' },
      ],
    });
    expect(future.text).toBe('shards[1].createdAt: may not lie in the future.');
    const malformed = await tool('shard_observe', { shards: [{ content: 'A note.', source: 'chat', soulIds: [souls.Sela], createdAt: 'last Tuesday' }] });
    expect(malformed.text).toContain('shards[0].createdAt: must be an ISO-8601 date-time such as 2026-01-31T12:00:00Z (got "last Tuesday")');
    expect((await listShards(server.app.db, { first: 500 })).totalCount).toBe(before);
  });
});

describe('soul_evidence markdown', () => {
  it('comes as its own text block, once, with shard ids and what to act on before the clusters', async () => {
    const r = await tool('soul_evidence', { soulId: souls.Brannoc });
    const [markdown, json] = r.blocks;
    expect(markdown).toMatch(/^# Evidence: Brannoc \(soul #\d+, level 0\)\n/);
    expect(JSON.parse(json)).toEqual(r.data);
    expect(r.data).toMatchObject({ markdownClipped: false, reportUri: `souls://${souls.Brannoc}/evidence.md` });
    expect(JSON.stringify(r.result).split(JSON.stringify(markdown).slice(1, -1))).toHaveLength(2);
    expect(r.data).not.toHaveProperty('markdown');
    const at = (heading: string) => markdown.indexOf(heading);
    for (const heading of ['## Traits', '## Consolidation candidates', '## Promotion candidates', 'Trend (']) expect(at(heading), heading).toBeLessThan(at('## Clusters'));
    expect(markdown).toMatch(/\n1\. \[weight [^\]]+\] #\d+ "[^"]+" \+3 similar: #\d+, #\d+, #\d+\n/);
    expect(markdown).toMatch(/\n9 shards resemble nothing else \(highest weight first\): ids #\d+(, #\d+( \(reinforces #\d+\))?){8}\n$/);
    const resource = await client.readResource({ uri: r.data.reportUri });
    expect((resource.contents[0] as { text: string }).text).toBe(markdown);
  });

  it('when cut, keeps traits and candidates, drops the lightest clusters and names the resource with the whole report', async () => {
    const created = await tool('soul_manage', { action: 'create', name: 'Archivist', essence: 'Keeps every record of the keep.' });
    const soulId = created.data.soul.id;
    for (let i = 0; i < 3; i++) await tool('trait_change', { action: 'add', soulId, principle: `Keep record book ${i} dry.`, provenance: 'Setup.' });
    // Words no two topics share, so each pair of copies is a cluster of its own.
    const word = (n: number) => [...createHash('sha256').update(String(n)).digest('hex').slice(0, 7)].map((c) => String.fromCharCode(97 + parseInt(c, 16))).join('');
    const topic = (i: number) => Array.from({ length: 45 }, (_, k) => word(i * 100 + k)).join(' ');
    const shards = Array.from({ length: 40 }, (_, i) => [0, 1].map((copy) => ({ content: `${topic(i)} ${copy === 0 ? 'noted' : 'seen'}`, source: copy === 0 ? 'chat' : 'review', soulIds: [soulId] }))).flat();
    expect((await tool('shard_observe', { shards })).isError).toBe(false);
    const r = await tool('soul_evidence', { soulId });
    const [markdown] = r.blocks;
    expect(r.data.markdownClipped).toBe(true);
    expect(JSON.stringify(r.result).length).toBeLessThanOrEqual(RESPONSE_BUDGET_CHARS);
    expect(markdown).toContain('\n## Traits\n');
    expect(markdown).toContain('\n## Clusters (highest weight first)\n1. [');
    expect(markdown).toMatch(new RegExp(`\\n… \\d+ more lines: the whole report is the resource souls://${soulId}/evidence\\.md; or narrow with tags or query, or page clusters with format "json"\\n$`));
    const whole = (await client.readResource({ uri: `souls://${soulId}/evidence.md` })).contents[0] as { text: string };
    expect(whole.text.startsWith(markdown.slice(0, markdown.lastIndexOf('\n…') + 1))).toBe(true);
    expect(whole.text.length).toBeGreaterThan(markdown.length);
  });
});

describe('refusals and clipping', () => {
  it('name the field of a missing shard, with the tool that finds shards', async () => {
    const r = await tool('trait_change', { action: 'add', soulId: souls.Sela, principle: 'Watch the ford.', provenance: 'Reports.', citeShardIds: [99_999] });
    expect(r.isError).toBe(true);
    expect(r.text).toBe('citeShardIds: there is no shard 99999. Call shard_search to find shard ids.');
  });

  it('flag a trait whose text soul_read cut, and leave the others unflagged', async () => {
    const provenance = `Seen at every muster: ${'the quartermaster counted twice and wrote it down. '.repeat(20)}`;
    const added = await tool('trait_change', { action: 'add', soulId: souls.Sela, principle: 'Count twice at muster.', provenance });
    const read = await tool('soul_read', { soulId: souls.Sela, render: 'full', sections: ['traits'] });
    const long = read.data.soul.traits.find((t: { id: number }) => t.id === added.data.trait.id);
    expect(long).toMatchObject({ clipped: true, provenance: expect.stringMatching(/…$/) });
    expect(long.provenance.length).toBeLessThan(provenance.length);
    expect(read.data.soul.traits.filter((t: { id: number }) => t.id !== added.data.trait.id).every((t: { clipped: boolean }) => t.clipped === false)).toBe(true);
  });
});
