// The judge over MCP: evidence_judge puts shards in themes (new or existing), moves them, takes them out, renames a
// theme and marks it as counter-evidence, with a dry run that writes nothing; soul_evidence shows the themes, the
// unjudged count, suggested themes, the similarity mode and the vectors still pending. Through real SDK clients.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  addTrait,
  closeSoulsDb,
  createSoul,
  dropShards,
  formatEvidence,
  getThemeHistory,
  listShards,
  listThemes,
  manualClock,
  openSoulsDb,
  reindexEmbeddings,
  stopSentenceEncoder,
  type SoulsDb,
} from '../src/engine/index.ts';
import { initRefiner, OUTCOME_SOURCE } from '../src/mcp/refiner.ts';
import { createSoulsPubSub } from '../src/server/pubsub.ts';
import { call, connect, type Connected } from './support/mcp.ts';
import { startServer, type LiveServer } from './support/server.ts';

const DAY_MS = 86_400_000;
const T0 = Date.UTC(2026, 3, 1);
const TEXTS = [
  'Fixed the Docker build cache for the api image',
  'Fixed the Docker build cache for the web image',
  'Fixed the Docker build cache for the worker image',
  'Cooked a spicy curry for the whole team on friday',
];

const open: { close(): Promise<void> | void }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});
afterAll(() => stopSentenceEncoder());

/** A soul with the four texts as shards from two sources over four days, a trait citing the third, and another soul. */
async function seed(db: SoulsDb) {
  const soul = await createSoul(db, { name: 'Ada', essence: 'A careful engineer.' });
  const other = await createSoul(db, { name: 'Bea', essence: 'A baker.' });
  const { shardIds } = await dropShards(
    db,
    TEXTS.map((content, i) => ({ content, source: i % 2 ? 'chat' : 'journal', soulIds: [soul.id], createdAt: db.clock.now() - (4 - i) * DAY_MS })),
  );
  const { shardIds: otherShards } = await dropShards(db, [{ content: 'Baked bread at dawn', source: 'chat', soulIds: [other.id] }]);
  const trait = await addTrait(db, soul.id, { principle: 'Fixed the Docker build cache for every image', provenance: 'p', citeShardIds: [shardIds[2]] });
  return { soulId: soul.id, otherId: other.id, shardIds, otherShard: otherShards[0], traitId: trait.id };
}

async function local(options: { refinerId?: number } = {}) {
  const clock = manualClock(T0);
  const db = openSoulsDb({ clock });
  open.push({ close: () => void closeSoulsDb(db) });
  const seeded = await seed(db);
  const session: Connected = await connect(db, { refinerId: options.refinerId });
  open.push(session);
  return { db, session, ...seeded, judge: (args: Record<string, unknown>) => call(session.client, 'evidence_judge', args) };
}

/** What a dry run must leave as it was: the themes and their history. */
async function state(db: SoulsDb, soulId: number) {
  return JSON.stringify({ themes: await listThemes(db, soulId), history: await getThemeHistory(db, [soulId]) });
}

describe('evidence_judge', () => {
  it('assigns to a new and an existing theme, moves a reassigned shard, unassigns, and names the caller as the actor', async () => {
    const { db, judge, soulId, shardIds } = await local();
    const created = await judge({ action: 'assign', soulId: String(soulId), assignments: [{ shardIds: [shardIds[0], String(shardIds[1])], newThemeName: 'Builds' }, { shardIds: [shardIds[3]], newThemeName: 'Food' }] });
    expect(created.isError, created.text).toBe(false);
    const [builds, food] = created.data.themes.map((t: { id: number }) => t.id);
    expect(created.data).toEqual({
      soul: { id: soulId, name: 'Ada' },
      applied: true,
      themes: [
        { id: builds, name: 'Builds', memberCount: 2, opposes: [] },
        { id: food, name: 'Food', memberCount: 1, opposes: [] },
      ],
      moves: [
        { shardId: shardIds[0], fromThemeId: null, toThemeId: builds },
        { shardId: shardIds[1], fromThemeId: null, toThemeId: builds },
        { shardId: shardIds[3], fromThemeId: null, toThemeId: food },
      ],
      unjudgedCount: 1,
      readySouls: [],
    });
    expect((await formatEvidence(db, soulId)).unjudgedCount).toBe(1);

    const joined = await judge({ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[2]], themeId: String(builds) }] });
    expect(joined.data).toMatchObject({ themes: [{ id: builds, memberCount: 3 }], moves: [{ shardId: shardIds[2], fromThemeId: null, toThemeId: builds }], unjudgedCount: 0 });

    const moved = await judge({ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[1]], themeId: food }] });
    expect(moved.data).toMatchObject({ themes: [{ id: food, memberCount: 2 }], moves: [{ shardId: shardIds[1], fromThemeId: builds, toThemeId: food }], unjudgedCount: 0 });
    expect((await listThemes(db, soulId)).map((t) => [t.name, t.memberIds])).toEqual([
      ['Builds', [shardIds[0], shardIds[2]]],
      ['Food', [shardIds[1], shardIds[3]]],
    ]);

    const back = await judge({ action: 'unassign', soulId, shardIds: [shardIds[1], shardIds[2]] });
    expect(back.data).toMatchObject({
      themes: [{ id: builds, memberCount: 1 }, { id: food, memberCount: 1 }],
      moves: [
        { shardId: shardIds[1], fromThemeId: food, toThemeId: null },
        { shardId: shardIds[2], fromThemeId: builds, toThemeId: null },
      ],
      unjudgedCount: 2,
    });
    const history = await getThemeHistory(db, [soulId]);
    expect(new Set(history.map((e) => e.actor))).toEqual(new Set(['local']));
    expect(history.map((e) => e.kind)).toEqual(['assign', 'assign', 'assign', 'assign', 'assign', 'unassign', 'unassign']);
  });

  it('renames a theme and makes it counter-evidence for a trait, then takes that back', async () => {
    const { db, judge, soulId, shardIds, traitId } = await local();
    const theme = (await judge({ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[3]], newThemeName: 'Food' }] })).data.themes[0].id;
    const renamed = await judge({ action: 'rename', themeId: theme, name: '  Team meals ' });
    expect(renamed.data).toEqual({ soul: { id: soulId, name: 'Ada' }, applied: true, themes: [{ id: theme, name: 'Team meals', memberCount: 1, opposes: [] }] });
    const opposed = await judge({ action: 'oppose', themeId: String(theme), traitId: String(traitId) });
    expect(opposed.data.themes).toEqual([{ id: theme, name: 'Team meals', memberCount: 1, opposes: [traitId] }]);
    expect((await formatEvidence(db, soulId)).counterEvidence).toEqual([{ traitId, themeIds: [theme], shardIds: [shardIds[3]] }]);
    const unopposed = await judge({ action: 'unoppose', themeId: theme, traitId });
    expect(unopposed.data.themes[0].opposes).toEqual([]);
    expect((await formatEvidence(db, soulId)).counterEvidence).toEqual([]);
    expect((await getThemeHistory(db, [soulId])).map((e) => e.kind)).toEqual(['assign', 'rename', 'oppose', 'unoppose']);
  });

  it('dry runs every action from the current state, the same twice, writing nothing, and the write then matches it', async () => {
    const { db, judge, soulId, shardIds, traitId } = await local();
    const builds = (await judge({ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0]], newThemeName: 'Builds' }] })).data.themes[0].id;
    const before = await state(db, soulId);
    const plan = { action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0], shardIds[1]], newThemeName: 'Docker' }, { shardIds: [shardIds[2]], themeId: builds }] };
    const dry = await judge({ ...plan, dryRun: true });
    expect(dry.isError, dry.text).toBe(false);
    expect(dry.data).toEqual({
      soul: { id: soulId, name: 'Ada' },
      applied: false,
      themes: [
        { id: null, name: 'Docker', memberCount: 2, opposes: [] },
        { id: builds, name: 'Builds', memberCount: 1, opposes: [] },
      ],
      moves: [
        { shardId: shardIds[0], fromThemeId: builds, toThemeId: null, toNewTheme: 'Docker' },
        { shardId: shardIds[1], fromThemeId: null, toThemeId: null, toNewTheme: 'Docker' },
        { shardId: shardIds[2], fromThemeId: null, toThemeId: builds },
      ],
      unjudgedCount: 1,
    });
    expect((await judge({ ...plan, dryRun: true })).text).toBe(dry.text);
    expect((await judge({ action: 'unassign', soulId, shardIds: [shardIds[0], shardIds[3]], dryRun: true })).data).toMatchObject({
      applied: false,
      themes: [{ id: builds, memberCount: 0 }],
      moves: [{ shardId: shardIds[0], fromThemeId: builds, toThemeId: null }],
      unjudgedCount: 4,
    });
    expect((await judge({ action: 'rename', themeId: builds, name: 'Docker builds', dryRun: true })).data.themes).toEqual([{ id: builds, name: 'Docker builds', memberCount: 1, opposes: [] }]);
    expect((await judge({ action: 'oppose', themeId: builds, traitId, dryRun: true })).data.themes[0].opposes).toEqual([traitId]);
    expect(await state(db, soulId)).toBe(before);

    const applied = await judge(plan);
    const docker = applied.data.themes[0].id;
    expect(applied.data.moves).toEqual(dry.data.moves.map((m: { toNewTheme?: string }) => (m.toNewTheme ? { ...m, toNewTheme: undefined, toThemeId: docker } : m)).map(({ toNewTheme: _, ...m }: { toNewTheme?: string }) => m));
    expect(applied.data.unjudgedCount).toBe(dry.data.unjudgedCount);
    expect(applied.data.themes.map((t: { memberCount: number }) => t.memberCount)).toEqual([2, 1]);
  });

  it('refuses by field, writing nothing: another soul\'s shard or theme, both or neither of themeId and newThemeName, unknown ids, a field the action does not use', async () => {
    const { db, judge, soulId, otherId, shardIds, otherShard, traitId } = await local();
    const otherTheme = (await judge({ action: 'assign', soulId: otherId, assignments: [{ shardIds: [otherShard], newThemeName: 'Bread' }] })).data.themes[0].id;
    const before = await state(db, soulId);
    const refusals: [Record<string, unknown>, string][] = [
      [{ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0], otherShard], newThemeName: 'Mixed' }] }, `assignments[0].shardIds[1]: shard ${otherShard} is not attributed to soul ${soulId}.`],
      [{ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0]], themeId: otherTheme }] }, `assignments[0].themeId: theme ${otherTheme} belongs to another soul.`],
      [{ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0]], themeId: otherTheme, newThemeName: 'Both' }] }, 'assignments[0]: give exactly one of themeId and newThemeName.'],
      [{ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0]] }] }, 'assignments[0]: give exactly one of themeId and newThemeName.'],
      [{ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0]], themeId: 99_999 }] }, 'assignments[0].themeId: there is no theme 99999. Call soul_evidence with soulId to see theme ids.'],
      [{ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[1], 88_888], newThemeName: 'Ghost' }] }, 'assignments[0].shardIds[1]: there is no shard 88888.'],
      [{ action: 'assign', soulId: 77_777, assignments: [{ shardIds: [shardIds[0]], newThemeName: 'Nobody' }] }, 'soulId: there is no soul 77777.'],
      [{ action: 'unassign', soulId, shardIds: [otherShard] }, `shardIds[0]: shard ${otherShard} is not attributed to soul ${soulId}.`],
      [{ action: 'unassign', soulId, shardIds: [] }, 'shardIds: must name at least one shard.'],
      [{ action: 'unassign', soulId, shardIds: [shardIds[0], shardIds[0]] }, `shardIds[1]: shard ${shardIds[0]} is named more than once in this call.`],
      [{ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0]], newThemeName: 'A' }, { shardIds: [shardIds[0]], newThemeName: 'B' }] }, `assignments[1].shardIds[0]: shard ${shardIds[0]} is named more than once in this call.`],
      [{ action: 'rename', themeId: 99_999, name: 'X' }, 'themeId: there is no theme 99999.'],
      [{ action: 'assign', soulId: otherId, assignments: [{ shardIds: [otherShard], newThemeName: ' bread ' }] }, `assignments[0].newThemeName: the soul already has a theme named "bread" (theme ${otherTheme}): assign to its themeId.`],
      [{ action: 'rename', themeId: otherTheme, name: '   ' }, 'name: '],
      [{ action: 'oppose', themeId: otherTheme, traitId }, `traitId: trait ${traitId} belongs to another soul than theme ${otherTheme}.`],
      [{ action: 'oppose', themeId: otherTheme, traitId: 66_666 }, 'traitId: there is no trait 66666.'],
      [{ action: 'rename', themeId: otherTheme, traitId, name: 'X' }, 'traitId: is not used by action "rename". Action "rename" takes themeId, name.'],
      [{ action: 'assign', soulId }, 'assignments: is required by action "assign".'],
      [{ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0]], newThemeName: 'A', colour: 'red' }] }, 'assignments[0].colour: is not a field of assignments[0]'],
    ];
    for (const [args, message] of refusals) {
      for (const dryRun of [false, true]) {
        const refused = await judge({ ...args, dryRun });
        expect(refused.isError, `${JSON.stringify(args)} ${refused.text}`).toBe(true);
        expect(refused.text, `dryRun ${dryRun}`).toContain(message);
      }
    }
    expect(await state(db, soulId)).toBe(before);
  });

  it('refuses, dry run or not, counter-evidence as support and a change of nothing (SPEC §13), naming the field; nothing written', async () => {
    const { db, session, judge, soulId, shardIds, traitId } = await local();
    const [builds, food] = (await judge({ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0], shardIds[1]], newThemeName: 'Builds' }, { shardIds: [shardIds[2]], newThemeName: 'Food' }] })).data.themes.map(
      (t: { id: number }) => t.id,
    );
    expect((await judge({ action: 'oppose', themeId: builds, traitId })).isError).toBe(false);
    const before = await state(db, soulId);
    const refusals: [Record<string, unknown>, string][] = [
      // The trait cites shardIds[2], a member of Food: Food may not oppose it, nor may the shard join Builds, which does.
      [{ action: 'oppose', themeId: food, traitId }, `traitId: trait ${traitId} cites shard ${shardIds[2]} of theme "Food" (#${food}): a theme whose members a trait cites cannot oppose it`],
      [{ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[3], shardIds[2]], themeId: builds }] }, `assignments[0].shardIds[1]: trait ${traitId} cites shard ${shardIds[2]}, and theme "Builds" (#${builds}) opposes it`],
      [{ action: 'oppose', themeId: builds, traitId }, `theme ${builds} already opposes trait ${traitId}: nothing to change.`],
      [{ action: 'unoppose', themeId: food, traitId }, `theme ${food} does not oppose trait ${traitId}: nothing to take back.`],
      [{ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[1], shardIds[0]], themeId: builds }] }, `shards ${shardIds[0]}, ${shardIds[1]} are in theme ${builds} already: nothing to change.`],
      [{ action: 'unassign', soulId, shardIds: [shardIds[3]] }, `shard ${shardIds[3]} has no theme in soul ${soulId}: nothing to unassign.`],
      [{ action: 'rename', themeId: food, name: ' Food ' }, `theme ${food} is already named "Food": nothing to change.`],
    ];
    for (const [args, message] of refusals) {
      for (const dryRun of [false, true]) {
        const refused = await judge({ ...args, dryRun });
        expect(refused.isError, `${JSON.stringify(args)} dryRun ${dryRun}: ${refused.text}`).toBe(true);
        expect(refused.text, `dryRun ${dryRun}`).toContain(message);
      }
    }
    // Nor may the trait cite a member of Builds.
    const cite = await call(session.client, 'trait_change', { action: 'cite', traitId, citeShardIds: [shardIds[3], shardIds[1]] });
    expect(cite.isError).toBe(true);
    expect(cite.text).toContain(`citeShardIds: shard ${shardIds[1]} is a member of theme "Builds" (#${builds}), which opposes trait ${traitId}: judged counter-evidence is never support`);
    expect(await state(db, soulId)).toBe(before);
    expect((await db.store.citationsOfTraits([traitId])).map((c) => c.shardId)).toEqual([shardIds[2]]);
  });

  it('records a refiner session\'s changes under the refiner\'s slug', async () => {
    const clock = manualClock(T0);
    const db = openSoulsDb({ clock });
    open.push({ close: () => void closeSoulsDb(db) });
    const { soulId, shardIds } = await seed(db);
    const refiner = (await initRefiner(db)).soul;
    const session = await connect(db, { refinerId: refiner.id });
    open.push(session);
    const r = await call(session.client, 'evidence_judge', { action: 'assign', soulId, assignments: [{ shardIds: [shardIds[3]], newThemeName: 'Food' }] });
    expect(r.isError, r.text).toBe(false);
    expect((await getThemeHistory(db, [soulId])).map((e) => e.actor)).toEqual(['refiner']);
    const outcomes = await listShards(db, { soulId: refiner.id, source: OUTCOME_SOURCE });
    expect(outcomes.items.map((s) => [s.content, s.tags])).toEqual([[`Assigned 1 shard of Ada (soul #${soulId}) to themes #${r.data.themes[0].id} "Food".`, ['action:assign', `soul:${soulId}`]]]);
  });
});

describe('soul_evidence and themes', () => {
  it('shows the themes, the unjudged count, the similarity mode, and for unjudged clusters the theme they resemble', async () => {
    const { session, judge, soulId, shardIds, traitId } = await local();
    const before = await call(session.client, 'soul_evidence', { soulId });
    expect(before.data).toMatchObject({ unjudgedCount: 4, themes: [], similarity: { mode: expect.any(String), vectorsPending: 0 } });
    const created = await judge({ action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0], shardIds[1]], newThemeName: 'Builds' }, { shardIds: [shardIds[3]], newThemeName: 'Food' }] });
    const [builds, food] = created.data.themes.map((t: { id: number }) => t.id);
    await judge({ action: 'oppose', themeId: food, traitId });
    const markdown = await call(session.client, 'soul_evidence', { soulId });
    expect(markdown.data).toMatchObject({
      unjudgedCount: 1,
      themes: [
        { id: builds, name: 'Builds', memberCount: 2, opposes: [] },
        { id: food, name: 'Food', memberCount: 1, opposes: [traitId] },
      ],
    });
    const json = await call(session.client, 'soul_evidence', { soulId, format: 'json' });
    expect(json.data.unjudgedCount).toBe(1);
    expect(json.data.report.clusters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ memberIds: [shardIds[0], shardIds[1]], themeId: builds, suggestedTheme: null, opposes: [] }),
        expect.objectContaining({ memberIds: [shardIds[3]], themeId: food, suggestedTheme: null, opposes: [traitId], alignment: { kind: 'CONTRADICTING', traitId } }),
        expect.objectContaining({ memberIds: [shardIds[2]], themeId: null, suggestedTheme: { id: builds, name: 'Builds', similarity: expect.any(Number) }, opposes: [] }),
      ]),
    );
  });

  it('says that shards written before vectors were configured compare lexically until souls reindex, and that they have vectors after it', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-mcp-themes-'));
    open.push({ close: () => rmSync(dir, { recursive: true, force: true }) });
    const path = join(dir, 'souls.db');
    const clock = manualClock(T0);
    const lexical = openSoulsDb({ path, clock, settings: { similarity: 'lexical' } });
    const { soulId } = await seed(lexical);
    closeSoulsDb(lexical);
    const db = openSoulsDb({ path, clock, settings: { similarity: 'semantic' } });
    open.push({ close: () => void closeSoulsDb(db) });
    const session = await connect(db, { pubsub: createSoulsPubSub() });
    open.push(session);
    const pending = await call(session.client, 'soul_evidence', { soulId });
    // None of them waits for a vector: they were written before vectors were configured (the issue: silently lexical).
    expect(pending.data.similarity).toEqual({
      mode: 'semantic',
      vectorsPending: 0,
      vectors: '0 of the 4 clustered shards have vectors of use-lite-512; 4 are compared lexically and will get none until `souls reindex` (written before vectors were configured, or their embedding failed)',
    });
    expect(pending.blocks[0]).toContain('\nVectors (similarity semantic): 0 of the 4 clustered shards have vectors of use-lite-512; 4 are compared lexically');
    await reindexEmbeddings(db);
    expect((await call(session.client, 'soul_evidence', { soulId })).data.similarity).toEqual({ mode: 'semantic', vectorsPending: 0, vectors: '4 of the 4 clustered shards have vectors of use-lite-512' });
  });
});

describe('over HTTP', { timeout: 30_000 }, () => {
  let server: LiveServer;
  afterEach(async () => {
    await server?.stop();
  });

  async function client(token: string) {
    const c = new Client({ name: 'themes-test', version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(server.url.replace(/graphql$/, 'mcp')), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    open.push({ close: () => c.close() });
    return c;
  }

  it('records the token\'s name as the actor, and gives a refine-only token ids only and no dry run', async () => {
    server = await startServer({
      start: T0,
      app: {
        tokens: [
          { name: 'judge-token', token: 'tok-judge-0123456789abcdef', scopes: ['read', 'refine'] },
          { name: 'blind-judge', token: 'tok-blind-0123456789abcdef', scopes: ['refine'] },
        ],
      },
    });
    const { soulId, shardIds } = await seed(server.app.db);
    const judge = await client('tok-judge-0123456789abcdef');
    const seen = await call(judge, 'evidence_judge', { action: 'assign', soulId, assignments: [{ shardIds: [shardIds[0]], newThemeName: 'Builds' }] });
    expect(seen.data.themes[0]).toMatchObject({ name: 'Builds' });

    const blind = await client('tok-blind-0123456789abcdef');
    const listed = (await blind.listTools()).tools.find((t) => t.name === 'evidence_judge')!;
    expect(JSON.stringify(listed.outputSchema)).not.toContain('"name"');
    const assigned = await call(blind, 'evidence_judge', { action: 'assign', soulId, assignments: [{ shardIds: [shardIds[3]], newThemeName: 'Food' }] });
    expect(assigned.isError, assigned.text).toBe(false);
    expect(assigned.data.soul).toEqual({ id: soulId });
    expect(assigned.data.themes).toEqual([{ id: expect.any(Number) }]);
    expect(assigned.text).not.toContain('Food');
    expect(assigned.text).not.toContain('Ada');
    const dry = await call(blind, 'evidence_judge', { action: 'rename', themeId: assigned.data.themes[0].id, name: 'Meals', dryRun: true });
    expect(dry.isError).toBe(true);
    expect(dry.text).toContain('dryRun: shows the names and texts a change would touch, which needs the "read" scope');
    expect((await getThemeHistory(server.app.db, [soulId])).map((e) => e.actor)).toEqual(['judge-token', 'blind-judge']);
  });

  it('costs an assign or unassign one evidence report, as maxCost counts it, refusing an over-cost batch before anything is written', async () => {
    server = await startServer({ start: T0, app: { tokens: [{ name: 'judge-token', token: 'tok-judge-0123456789abcdef', scopes: ['read', 'refine'] }], limits: { maxCost: 1300 } } });
    const { soulId, shardIds } = await seed(server.app.db);
    const post = async (body: unknown) => {
      const response = await fetch(server.url.replace(/graphql$/, 'mcp'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer tok-judge-0123456789abcdef', 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify(body),
      });
      return { status: response.status, text: await response.text() };
    };
    const assign = (i: number) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'evidence_judge', arguments: { action: 'assign', soulId, assignments: [{ shardIds: [shardIds[i % 4]], newThemeName: `Theme ${i}` }] } } });
    // Each one a report of the soul's four shards, their partition held, analysed afresh (each assignment changes what
    // its analysis reads): 150 + 5 × 4 + 12 × 4, the call 10, 228; six pass 1,300, five do not.
    const refused = await post(Array.from({ length: 6 }, (_, i) => assign(i)));
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('over the cost limit of 1300 (maxCost, as on /graphql)');
    expect(await listThemes(server.app.db, soulId)).toEqual([]);
    const fits = await post(Array.from({ length: 5 }, (_, i) => assign(i)));
    expect(fits.status).toBe(200);
  });
});
