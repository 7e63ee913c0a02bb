// The operations README.md's five-minute tour offers for GraphiQL, run as written against a server holding the demo world
// (`npm run demo` first is the path the README suggests), so they keep working for a reader who follows it.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, print, type OperationDefinitionNode } from 'graphql';
import { buildApp, type App } from '../src/server/app.ts';
import { manualClock, openSoulsDb } from '../src/engine/index.ts';
import { DEMO_SPAN_DAYS, seedDemo } from '../scripts/demo.ts';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const tour = readme.slice(readme.indexOf('## A five-minute tour'), readme.indexOf('\n## ', readme.indexOf('## A five-minute tour') + 1));
const block = /```graphql[^\n]*\n([\s\S]*?)```/.exec(tour)?.[1] ?? '';
const operations = new Map(
  parse(block)
    .definitions.filter((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')
    .map((d) => [d.name!.value, print(d)]),
);
/** The variables the README tells the reader to put in GraphiQL's Variables pane, as JSON, with the id Create answered. */
const variablesLine = /Variables[^`]*`(\{[^`]*\})`/.exec(tour)?.[1];

let app: App;
let url: string;
let demoNames: string[];
const NOW = Date.UTC(2026, 10, 23, 12);

async function post(query: string, variables?: Record<string, unknown>): Promise<any> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' }, body: JSON.stringify({ query, variables }) });
  expect(response.status).toBe(200);
  return response.json();
}

beforeAll(async () => {
  const clock = manualClock(NOW - DEMO_SPAN_DAYS * 86_400_000);
  const db = openSoulsDb({ clock });
  const summary = await seedDemo(db, clock, { now: NOW });
  demoNames = Object.keys(summary.souls);
  app = buildApp({ db });
  ({ url } = await app.start(0, '127.0.0.1'));
});
afterAll(() => app.stop());

describe('README tour operations after `npm run demo`', () => {
  it('names a soul the demo does not have, and every operation works as written', async () => {
    expect([...operations.keys()]).toEqual(['Create', 'Observe', 'Refine']);
    const created = await post(operations.get('Create')!);
    expect(created.errors).toBeUndefined();
    expect(created.data.createSoul.__typename, JSON.stringify(created)).toBe('SoulPayload');
    const { id, name } = created.data.createSoul.soul;
    expect(demoNames).not.toContain(name);

    expect(variablesLine, 'the README says which variables to give Observe').toBeDefined();
    const variables = JSON.parse(variablesLine!.replace(/<[^>]+>/, id));
    const observed = await post(operations.get('Observe')!, variables);
    expect(observed.data.dropShards.__typename, JSON.stringify(observed)).toBe('DropShardsPayload');
    expect(observed.data.dropShards.shards).toHaveLength(3);

    const refine = await post(operations.get('Refine')!);
    expect(refine.errors).toBeUndefined();
    const soul = refine.data.soulByName;
    expect(soul.crystallization).toEqual(expect.objectContaining({ ready: expect.any(Boolean), unmet: expect.any(Array) }));
    expect(soul.evidence.clusters.map((c: { representative: { content: string } }) => c.representative.content)).toContain('Refused to hand out rations until the ledger was checked.');
    // Three unrelated shards are three single-shard clusters: the markdown lists them on one line of ids.
    for (const { id: shardId } of observed.data.dropShards.shards) expect(soul.evidence.markdown).toContain(`#${shardId}`);
  });
});
