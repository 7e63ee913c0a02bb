// Every list whose length depends on the data is bounded and says so (SPEC §13): paged plain lists through first/after
// over HTTP, the roster as a connection in each order, and the themes a soul may hold.
import { getNamedType, getNullableType, isInterfaceType, isListType, isObjectType, type GraphQLField } from 'graphql';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../schema/index.ts';
import {
  addTrait,
  assignThemes,
  citeShards,
  createSoul,
  DAY_MS,
  dropShards,
  levelUp,
  listTraits,
  opposeTrait,
  revertTrait,
  retireSoul,
  type SoulsDb,
} from '../src/engine/index.ts';
import { outputBounds } from '../src/server/price-list.ts';
import { call, connect } from './support/mcp.ts';
import { serverPerTest, startServer, type LiveServer } from './support/server.ts';

/** Every list field of the schema's object and interface types, by coordinate. */
function listFields(): Map<string, GraphQLField<unknown, unknown>> {
  const found = new Map<string, GraphQLField<unknown, unknown>>();
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || !(isObjectType(type) || isInterfaceType(type))) continue;
    for (const field of Object.values(type.getFields())) if (isListType(getNullableType(field.type))) found.set(`${type.name}.${field.name}`, field);
  }
  return found;
}

describe('every list field of the schema', () => {
  it('has a bound in the price list and says it in its description', () => {
    const fields = listFields();
    expect(fields.size).toBeGreaterThan(60);
    const unpriced = [...fields.keys()].filter((coordinate) => !(coordinate in outputBounds));
    expect(unpriced).toEqual([]);
    const unsaid = [...fields].filter(([, field]) => !/at most|one per/i.test(field.description ?? '')).map(([coordinate]) => coordinate);
    expect(unsaid).toEqual([]);
  });

  it('takes first (default and most as the price list has them) where its bound is a page', () => {
    for (const [coordinate, bound] of Object.entries(outputBounds)) {
      if (!('page' in bound) || coordinate.endsWith('Connection.edges')) continue;
      const [typeName, fieldName] = coordinate.split('.');
      const type = schema.getType(typeName);
      const field = type && (isObjectType(type) || isInterfaceType(type)) ? type.getFields()[fieldName] : undefined;
      expect(field?.args.find((a) => a.name === 'first')?.defaultValue, coordinate).toBe(bound.default);
      expect(field?.args.find((a) => a.name === 'first')?.description, coordinate).toBe(`at most ${bound.max}`);
    }
  });

  it('gives every connection what Relay’s @connection needs: first/after, edges of node and cursor, a complete PageInfo', () => {
    const pageInfo = schema.getType('PageInfo');
    expect(isObjectType(pageInfo) && Object.fromEntries(Object.values(pageInfo.getFields()).map((f) => [f.name, String(f.type)]))).toEqual({
      hasNextPage: 'Boolean!',
      hasPreviousPage: 'Boolean!',
      startCursor: 'String',
      endCursor: 'String',
    });
    const query = schema.getQueryType()!.getFields();
    const soul = (schema.getType('Soul') as any).getFields();
    for (const field of [query.shards, query.soulsConnection, soul.shards]) {
      expect(field.args.map((a: { name: string; type: unknown }) => `${a.name}: ${String(a.type)}`)).toEqual(expect.arrayContaining(['first: Int', 'after: String']));
      const connection = getNamedType(field.type) as any;
      const fields = connection.getFields();
      expect(String(fields.pageInfo.type)).toBe('PageInfo!');
      const edge = getNamedType(fields.edges.type) as any;
      expect(String(edge.getFields().cursor.type)).toBe('String!');
      expect(edge.getFields().node).toBeDefined();
    }
  });
});

type Ids = { soul: number; others: number[]; traits: number[]; reverted: number; shared: number; cited: number; theme: number; opposed: number[] };

/** A soul with enough of everything to page: shards shared by three souls, traits cited and opposed, a theme, three level-ups. */
async function build(db: SoulsDb): Promise<Ids> {
  const ada = await createSoul(db, { name: 'Ada', essence: 'Keeps the harbour ledger.' });
  const others = [(await createSoul(db, { name: 'Bram', essence: 'Sails.' })).id, (await createSoul(db, { name: 'Cole', essence: 'Mends nets.' })).id];
  const now = db.clock.now();
  const texts = [
    'Counted the barrels twice before signing the ledger',
    'Checked the harbour ledger against the manifest',
    'Asked the captain to sign for the cargo',
    'Wrote the tide times on the board at dawn',
    'Sorted the rope by length in the store',
    'Reconciled the ledger with the customs record',
    'Noted a missing crate in the evening tally',
    'Sent the tally to the harbour master',
    'Mended a torn sail with the old needle',
    'Refused to sign a manifest she had not read',
    'Painted the hull of the small boat blue',
    'Taught the new clerk how the ledger is kept',
  ];
  const { shardIds } = await dropShards(
    db,
    texts.map((content, i) => ({ content, source: ['ledger', 'dock', 'office'][i % 3], soulIds: i === 0 ? [ada.id, ...others] : [ada.id], tags: [`week-${i % 4}`], createdAt: now - (i + 1) * DAY_MS })),
  );
  const traits: number[] = [];
  for (let t = 0; t < 5; t++) traits.push((await addTrait(db, ada.id, { principle: `Principle ${t}: the ledger is kept honest`, provenance: 'Seen at the harbour.' })).id);
  await citeShards(db, traits[0], shardIds.slice(0, 5));
  for (const trait of traits.slice(1, 3)) await citeShards(db, trait, [shardIds[0]]);
  const { themes } = await assignThemes(db, ada.id, [{ newThemeName: 'Tallies', shardIds: shardIds.slice(6, 11) }]);
  for (const trait of traits.slice(2, 5)) await opposeTrait(db, themes[0].id, trait);
  for (let level = 1; level <= 3; level++) {
    const active = (await listTraits(db, ada.id, { status: 'active' })).map((t) => t.id);
    await levelUp(db, ada.id, { newEssence: `Keeps the harbour ledger, level ${level}.`, consolidations: [], promotedTraitIds: [], carriedTraitIds: active });
  }
  await revertTrait(db, traits[4]);
  return { soul: ada.id, others, traits, reverted: traits[4], shared: shardIds[0], cited: shardIds[0], theme: themes[0].id, opposed: traits.slice(2, 5) };
}

describe('plain lists page with first and after', () => {
  let server: LiveServer;
  let ids: Ids;
  beforeAll(async () => {
    server = await startServer();
    ids = await build(server.app.db);
  });
  afterAll(() => server.stop());

  /** The list at `path` in the answer to `query(args)`. */
  const listAt = async (query: (args: string) => string, path: (data: any) => any[], args: string) => path(await server.data(query(args)));

  /** Pages of two, each after the last id of the one before, until a short page: together, the whole list once. */
  async function pageThrough(query: (args: string) => string, path: (data: any) => any[], idOf: (item: any) => string = (item) => item.id): Promise<void> {
    const whole = await listAt(query, path, 'first: 500');
    expect(whole.length, query('')).toBeGreaterThanOrEqual(3);
    const paged: any[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await listAt(query, path, after === null ? 'first: 2' : `first: 2, after: "${after}"`);
      paged.push(...page);
      if (page.length < 2) break;
      after = idOf(page.at(-1));
    }
    expect(paged.map(idOf)).toEqual(whole.map(idOf));
  }

  it('Theme.members, Theme.opposes and Trait.counterEvidence', async () => {
    const theme = (field: string) => (args: string) => `{ soul(id: "${ids.soul}") { themes { ${field}(${args}) { id } } } }`;
    await pageThrough(theme('members'), (d) => d.soul.themes[0].members);
    await pageThrough(theme('opposes'), (d) => d.soul.themes[0].opposes);
    await pageThrough((args) => `{ trait(id: "${ids.opposed[0]}") { counterEvidence(${args}) { id } } }`, (d) => d.trait.counterEvidence);
    const first = await server.data(`{ soul(id: "${ids.soul}") { themes { memberCount members(first: 1) { id } } } }`);
    expect(first.soul.themes[0]).toEqual({ memberCount: 5, members: [{ id: expect.any(String) }] });
  });

  it('Trait.citations, Shard.citedBy and Shard.souls', async () => {
    await pageThrough((args) => `{ trait(id: "${ids.traits[0]}") { citations(${args}) { id } } }`, (d) => d.trait.citations);
    await pageThrough((args) => `{ shard(id: "${ids.cited}") { citedBy(${args}) { id } } }`, (d) => d.shard.citedBy);
    await pageThrough((args) => `{ shard(id: "${ids.shared}") { souls(${args}) { id } } }`, (d) => d.shard.souls);
  });

  it('Soul.traits of every status and Soul.levelHistory', async () => {
    await pageThrough((args) => `{ soul(id: "${ids.soul}") { traits(status: [], ${args}) { id } } }`, (d) => d.soul.traits);
    await pageThrough((args) => `{ soul(id: "${ids.soul}") { levelHistory(${args}) { id } } }`, (d) => d.soul.levelHistory);
  });

  it('EvidenceReport.clusters, after a representative, and ShardCluster.members', async () => {
    const clusters = (args: string) => `{ soul(id: "${ids.soul}") { evidence { clusterCount clusters(${args}) { representative { id } memberCount } } } }`;
    await pageThrough(clusters, (d) => d.soul.evidence.clusters, (c) => c.representative.id);
    const report = (await server.data(clusters('first: 500'))).soul.evidence;
    expect(report.clusters).toHaveLength(report.clusterCount);
    // The cluster of at least three, alone: the one after the representative before it.
    const big = report.clusters.findIndex((c: any) => c.memberCount >= 3);
    const before = big === 0 ? '' : `, after: "${report.clusters[big - 1].representative.id}"`;
    const members = (args: string) => `{ soul(id: "${ids.soul}") { evidence { clusters(first: 1${before}) { members(${args}) { id } } } } }`;
    await pageThrough(members, (d) => d.soul.evidence.clusters[0].members);
  });

  it('lists ranked by a count or a score take first alone', async () => {
    const firstOnly = [
      `{ souls(orderBy: NAME, first: $) { id } }`,
      `{ shardCountsPerSoul(first: $) { pending } }`,
      `{ shardCountsByTag(first: $) { tag } }`,
      `{ soul(id: "${ids.soul}") { shardCountsBySource(first: $) { source } } }`,
      `{ searchShards(query: "ledger", first: $) { score } }`,
    ];
    for (const template of firstOnly) {
      const all = JSON.stringify(await server.data(template.replace('$', '500')));
      const one = await server.data(template.replace('$', '1'));
      const lengthOf = (data: any): number => (Array.isArray(data) ? data.length : lengthOf(Object.values(data)[0]));
      expect(lengthOf(one), template).toBe(1);
      expect(lengthOf(JSON.parse(all)), template).toBeGreaterThan(1);
    }
    await retireSoul(server.app.db, ids.others[1]);
    expect((await server.data('{ dormantSouls(first: 0) { id } }')).dormantSouls).toEqual([]);
    expect((await server.data('{ dormantSouls(first: 1) { id } }')).dormantSouls).toEqual([{ id: String(ids.others[1]) }]);
  });

  it('refuses first over its most and an after not in the list, naming the argument', async () => {
    const over = await server.request(`{ soul(id: "${ids.soul}") { themes { members(first: 501) { id } } } }`);
    expect(over.body.errors[0]).toMatchObject({ message: 'must be a whole number from 0 to 500', extensions: { code: 'BAD_USER_INPUT', field: 'first' } });
    const stranger = await server.request(`{ soul(id: "${ids.soul}") { themes { members(after: "999999") { id } } } }`);
    expect(stranger.body.errors[0]).toMatchObject({ message: '999999 is not an item of this list', extensions: { code: 'BAD_USER_INPUT', field: 'after' } });
    const roster = await server.request('{ souls(first: 1001) { id } }');
    expect(roster.body.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'first' } });
  });
});

describe('soulsConnection', () => {
  let server: LiveServer;
  beforeAll(async () => {
    server = await startServer();
    const db = server.app.db;
    for (let i = 0; i < 23; i++) {
      server.clock.advance(60_000);
      // Repeated names and levels: the order's ties go by name, then id.
      const soul = await createSoul(db, { name: `Soul ${String.fromCharCode(65 + (i % 7))} ${i}`, essence: `Soul ${i} keeps watch.` });
      if (i % 3 === 0) {
        const now = db.clock.now();
        await dropShards(db, [0, 1, 2, 3].map((k) => ({ content: `Soul ${i} ${['rowed', 'sang at', 'mended nets by', 'lit the lamp at'][k]} the harbour`, source: k % 2 ? 'dock' : 'tower', soulIds: [soul.id], createdAt: now - (k + 1) * (i + 1) * DAY_MS })));
      }
      if (i % 4 === 0) {
        const trait = await addTrait(db, soul.id, { principle: `Watches the water, ${i}`, provenance: 'Seen.' });
        await levelUp(db, soul.id, { newEssence: `Soul ${i} keeps watch, wiser.`, consolidations: [], promotedTraitIds: [], carriedTraitIds: [trait.id] });
      }
    }
  });
  afterAll(() => server.stop());

  const page = `query($first: Int, $after: String, $orderBy: SoulOrder) {
    soulsConnection(first: $first, after: $after, orderBy: $orderBy) {
      totalCount
      edges { cursor node { id } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }`;

  it.each(['READINESS', 'NAME', 'LEVEL', 'UPDATED'])('pages through every soul ordered by %s once, in the order of souls', async (orderBy) => {
    const expected = (await server.data(`{ souls(orderBy: ${orderBy}) { id } }`)).souls.map((s: { id: string }) => s.id);
    expect(expected).toHaveLength(23);
    const seen: string[] = [];
    let after: string | null = null;
    for (let pages = 0; ; pages++) {
      const { soulsConnection: connection } = await server.data(page, { first: 4, after, orderBy });
      expect(connection.totalCount).toBe(23);
      expect(connection.pageInfo.hasPreviousPage).toBe(after !== null);
      expect(connection.pageInfo.startCursor).toBe(connection.edges[0]?.cursor ?? null);
      expect(connection.pageInfo.endCursor).toBe(connection.edges.at(-1)?.cursor ?? null);
      seen.push(...connection.edges.map((e: { node: { id: string } }) => e.node.id));
      if (!connection.pageInfo.hasNextPage) break;
      after = connection.pageInfo.endCursor;
      expect(pages).toBeLessThan(10);
    }
    expect(seen).toEqual(expected);
  });

  it('refuses a cursor of another order, or none of its own, naming after', async () => {
    const { soulsConnection: first } = await server.data(page, { first: 2, orderBy: 'NAME' });
    const crossed = await server.request(page, { first: 2, after: first.pageInfo.endCursor, orderBy: 'LEVEL' });
    expect(crossed.body.errors[0]).toMatchObject({ message: 'is a cursor of the NAME order; this page is ordered by LEVEL', extensions: { code: 'BAD_USER_INPUT', field: 'after' } });
    const junk = await server.request(page, { first: 2, after: 'not-a-cursor' });
    expect(junk.body.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'after' } });
  });
});

describe('maxThemesPerSoul', () => {
  const dedicated = serverPerTest(afterEach);

  async function judged(server: LiveServer) {
    const soul = await createSoul(server.app.db, { name: 'Ada', essence: 'Keeps the ledger.' });
    const { shardIds } = await dropShards(server.app.db, [0, 1, 2, 3, 4].map((i) => ({ content: `Ledger entry ${i} was checked twice`, source: 'ledger', soulIds: [soul.id] })));
    await assignThemes(server.app.db, soul.id, [0, 1, 2].map((i) => ({ newThemeName: `Theme ${i}`, shardIds: [shardIds[i]] })));
    return { soulId: soul.id, shardIds };
  }

  it('refuses, over GraphQL, a judgement creating a theme past it, naming the field and writing nothing', async () => {
    const server = await dedicated({ settings: { maxThemesPerSoul: 3 } });
    const { soulId, shardIds } = await judged(server);
    expect((await server.data('{ settings { maxThemesPerSoul } }')).settings.maxThemesPerSoul).toBe(3);
    const assign = `mutation($soulId: ID!, $assignments: [ThemeAssignmentInput!]!) {
      assignThemes(soulId: $soulId, assignments: $assignments) { __typename ... on ValidationError { field message } ... on AssignThemesPayload { themes { name } } }
    }`;
    const refused = await server.data(assign, { soulId, assignments: [{ themeId: '1', shardIds: [String(shardIds[3])] }, { newThemeName: 'Fourth', shardIds: [String(shardIds[4])] }] });
    expect(refused.assignThemes).toEqual({
      __typename: 'ValidationError',
      field: 'assignments[1].newThemeName',
      message: 'the soul has 3 themes and may hold at most 3 (maxThemesPerSoul): assign to an existing theme (themeId) or rename one, or raise maxThemesPerSoul',
    });
    const themes = await server.data(`{ soul(id: "${soulId}") { themes { name memberCount } } }`);
    expect(themes.soul.themes).toEqual([0, 1, 2].map((i) => ({ name: `Theme ${i}`, memberCount: 1 })));
    const existing = await server.data(assign, { soulId, assignments: [{ themeId: '1', shardIds: [String(shardIds[3])] }] });
    expect(existing.assignThemes).toEqual({ __typename: 'AssignThemesPayload', themes: [{ name: 'Theme 0' }] });
  });

  it('refuses it over MCP too, naming the field', async () => {
    const server = await dedicated({ settings: { maxThemesPerSoul: 3 } });
    const { soulId, shardIds } = await judged(server);
    const session = await connect(server.app.db);
    try {
      const refused = await call(session.client, 'evidence_judge', { action: 'assign', soulId, assignments: [{ shardIds: [shardIds[4]], newThemeName: 'Fourth' }] });
      expect(refused.isError).toBe(true);
      expect(refused.text).toContain('assignments[0].newThemeName');
      expect(refused.text).toContain('maxThemesPerSoul');
    } finally {
      await session.close();
    }
  });
});
