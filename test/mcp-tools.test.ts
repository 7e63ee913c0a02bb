// Every MCP tool through a real SDK client over the in-memory transport: happy paths, each refusal, paging.
import { describe, expect, it } from 'vitest';
import { getSoul, getTrait, listShards, listTraits, type SoulsDb } from '../src/engine/index.ts';
import { call, callerWith, connect, demoSessionPerTest, type Connected, type DemoSession } from './support/mcp.ts';

let db: SoulsDb;
let clock: DemoSession['clock'];
let ids: Record<string, number>;
let session: Connected;

const { tool } = demoSessionPerTest((demo) => ({ db, clock, session, summary: { souls: ids } } = demo));

describe('the tool list', () => {
  it('lists ten tools, each with a title, a description for a model, input and output schemas without unions, and annotations', async () => {
    const { tools } = await session.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['soul_read', 'shard_search', 'soul_evidence', 'shard_observe', 'evidence_judge', 'trait_change', 'levelup', 'levelup_revert', 'soul_attune', 'soul_manage']);
    for (const t of tools) {
      expect(t.title, t.name).toBeTruthy();
      expect(t.description!.length, t.name).toBeGreaterThan(150);
      expect(t.outputSchema, t.name).toBeDefined();
      expect(t.annotations?.openWorldHint, t.name).toBe(false);
      expect(typeof t.annotations?.readOnlyHint, t.name).toBe('boolean');
      expect(typeof t.annotations?.destructiveHint, t.name).toBe('boolean');
      expect(typeof t.annotations?.idempotentHint, t.name).toBe('boolean');
      expect(JSON.stringify(t.inputSchema), t.name).not.toMatch(/"(anyOf|oneOf|allOf)"/);
    }
    const readOnly = tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name);
    expect(readOnly).toEqual(['soul_read', 'shard_search', 'soul_evidence']);
  });

  it('mirrors the structured content as text', async () => {
    const r = await tool('soul_read', { soulId: ids.Mira });
    expect(JSON.parse(r.text)).toEqual(r.data);
  });
});

describe('soul_read', () => {
  it('lists the roster most ready first and pages it with cursors', async () => {
    const all = await tool('soul_read', {});
    expect(all.isError).toBe(false);
    expect(all.data.totalCount).toBe(4);
    expect(all.data.souls.map((s: { name: string }) => s.name)).toEqual(['Brannoc', 'Relay', 'Mira', 'Sela']);
    expect(all.data.souls[3]).toMatchObject({ ready: false, unmet: ['SOURCE_DIVERSITY needs shards from 1 more source (1 of the 2 needed)'] });
    const first = await tool('soul_read', { limit: 3 });
    expect(first.data.souls).toHaveLength(3);
    expect(first.data.nextCursor).toEqual(expect.any(String));
    const second = await tool('soul_read', { limit: 3, cursor: first.data.nextCursor });
    expect(second.data.souls.map((s: { name: string }) => s.name)).toEqual(['Sela']);
    expect(second.data.nextCursor).toBeNull();
    const dormant = await tool('soul_read', { dormant: true });
    expect(dormant.data.souls.map((s: { name: string }) => s.name)).toEqual(['Wenna']);
  });

  it('reads one soul by id or name, with the sections asked for', async () => {
    const lean = await tool('soul_read', { name: 'mira' });
    expect(lean.data.soul).toMatchObject({ id: ids.Mira, name: 'Mira', level: 1, dormant: false, activeTraitCount: 5, traitLimit: 10, renderedClipped: false });
    expect(lean.data.soul.rendered).toMatch(/^# Mira\n/);
    expect(lean.data.soul.traits).toBeUndefined();
    const full = await tool('soul_read', { soulId: ids.Mira, render: 'full', sections: ['traits', 'inactiveTraits', 'crystallization', 'levels', 'shardCounts'] });
    const soul = full.data.soul;
    expect(soul.rendered).toContain(' — ');
    expect(soul.traits).toHaveLength(5);
    expect(soul.traits[0]).toEqual(expect.objectContaining({ id: expect.any(Number), principle: expect.any(String), provenance: expect.any(String), citationCount: expect.any(Number) }));
    expect(soul.inactiveTraits.map((t: { status: string }) => t.status).sort()).toEqual(['consolidated', 'consolidated', 'promoted']);
    expect(soul.crystallization).toMatchObject({ ready: true, unmet: [] });
    expect(soul.levels).toHaveLength(1);
    expect(soul.shardCounts.bySource.length).toBeGreaterThan(1);
  });

  it('refuses an unknown soul, naming the field and the tool that lists souls', async () => {
    const r = await tool('soul_read', { soulId: 999 });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('soulId: there is no soul 999');
    expect(r.text).toContain('soul_read without soulId');
    expect((await tool('soul_read', { name: 'Nobody' })).text).toContain('name: no soul is named "Nobody"');
  });

  it('refuses a cursor it did not give out, and a cursor with one soul', async () => {
    expect((await tool('soul_read', { cursor: 'not-a-cursor' })).text).toContain('cursor: is not a cursor this server gave out');
    expect((await tool('soul_read', { soulId: ids.Mira, cursor: 'x' })).text).toContain('cursor: pages only the roster');
  });

  it('refuses bad input by the schema, naming the field and the allowed values', async () => {
    const r = await tool('soul_read', { render: 'pretty' });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('render');
    expect(r.text).toMatch(/lean.*full/);
  });
});

describe('shard_search', () => {
  it('searches full text, best first, and pages the hits', async () => {
    const hits = await tool('shard_search', { query: 'ledger', limit: 2 });
    expect(hits.isError).toBe(false);
    expect(hits.data.shards).toHaveLength(2);
    for (const s of hits.data.shards) expect(s.content.toLowerCase()).toContain('ledger');
    const next = await tool('shard_search', { query: 'ledger', limit: 2, cursor: hits.data.nextCursor });
    const seen = new Set(hits.data.shards.map((s: { id: number }) => s.id));
    for (const s of next.data.shards) expect(seen.has(s.id)).toBe(false);
  });

  it('lists by soul, source and tags with cursors, covering every shard once', async () => {
    const expected = await listShards(db, { soulId: ids.Mira, first: 500 });
    const got: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await tool('shard_search', { soulId: ids.Mira, limit: 5, ...(cursor ? { cursor } : {}) });
      expect(page.data.shards.length).toBeLessThanOrEqual(5);
      got.push(...page.data.shards.map((s: { id: number }) => s.id));
      cursor = page.data.nextCursor ?? undefined;
    } while (cursor);
    expect(got).toEqual(expected.items.map((s) => s.id));
    const source = expected.items[0].source;
    const bySource = await tool('shard_search', { soulId: ids.Mira, source });
    expect(bySource.data.shards.every((s: { source: string }) => s.source === source)).toBe(true);
  });

  it('returns shards whole by id and names the ids it did not find', async () => {
    const long = 'The quartermaster wrote a very long account of the stores. '.repeat(30);
    const { data } = await tool('shard_observe', { shards: [{ content: long, source: 'test', soulIds: [ids.Mira] }] });
    const listed = await tool('shard_search', { soulId: ids.Mira, limit: 1 });
    expect(listed.data.shards[0]).toMatchObject({ id: data.shardIds[0], clipped: true });
    const whole = await tool('shard_search', { ids: [data.shardIds[0], 9999] });
    expect(whole.data.shards[0]).toMatchObject({ clipped: false, content: long.trim() });
    expect(whole.data.notFound).toEqual([9999]);
    expect((await tool('shard_search', { ids: [9999] })).text).toContain('ids: no shard has any of the ids 9999');
  });

  it('refuses filters combined with a query, naming the filter', async () => {
    const r = await tool('shard_search', { query: 'ledger', source: 'playtest' });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('source: cannot be combined with query');
  });
});

describe('soul_evidence', () => {
  it('answers the verdict, suggested actions and the markdown report', async () => {
    const r = await tool('soul_evidence', { soulId: ids.Mira });
    expect(r.data.verdict).toMatchObject({ ready: true, unmet: [] });
    expect(r.data.suggestedActions[0].kind).toBe('READY_FOR_REFINEMENT');
    expect(r.blocks[0]).toMatch(/^# Evidence: Mira/);
    expect(JSON.parse(r.blocks[1])).toEqual(r.data);
    expect(r.data).toMatchObject({ markdownClipped: false, reportUri: `souls://${ids.Mira}/evidence.md` });
  });

  it('gives the unmet conditions of a soul that is not ready, each with what would meet it', async () => {
    const r = await tool('soul_evidence', { soulId: ids.Sela });
    expect(r.data.verdict).toMatchObject({ ready: false, unmet: ['SOURCE_DIVERSITY needs shards from 1 more source (1 of the 2 needed)'] });
    expect(r.blocks[0]).toContain('Readiness: not ready — SOURCE_DIVERSITY needs shards from 1 more source (1 of the 2 needed)\n');
  });

  it('after an attunement, names its time and that a shard recorded since counts; a backdated one recorded later makes the soul ready (SPEC §13)', async () => {
    clock.advance(60_000);
    expect((await tool('soul_attune', { soulId: ids.Mira })).isError).toBe(false);
    const recency = `RECENCY needs a shard recorded or revealed after the last attunement (${new Date(clock.now()).toISOString()}): any shard recorded since counts, whatever its createdAt`;
    expect((await tool('soul_evidence', { soulId: ids.Mira })).data.verdict).toMatchObject({ ready: false, unmet: [recency] });
    expect((await tool('soul_read', { soulId: ids.Mira, sections: ['crystallization'] })).data.soul.crystallization.unmet).toEqual([recency]);
    clock.advance(60_000);
    const observed = await tool('shard_observe', { shards: [{ content: 'Logged a ledger entry from last season', source: 'import', soulIds: [ids.Mira], createdAt: new Date(clock.now() - 30 * 86_400_000).toISOString() }] });
    expect(observed.isError, observed.text).toBe(false);
    expect((await tool('soul_evidence', { soulId: ids.Mira })).data.verdict).toMatchObject({ ready: true, unmet: [] });
  });

  it('pages the clusters of the json report with cursors', async () => {
    const first = await tool('soul_evidence', { soulId: ids.Mira, format: 'json', limit: 4 });
    const report = first.data.report;
    expect(report.clusters).toHaveLength(4);
    expect(report.clusterCount).toBeGreaterThan(4);
    expect(report.clusters[0]).toEqual(expect.objectContaining({ representativeId: expect.any(Number), alignment: expect.objectContaining({ kind: expect.stringMatching(/REINFORCING|NOVEL/) }) }));
    let total = report.clusters.length;
    let cursor = first.data.nextCursor;
    while (cursor) {
      const page = await tool('soul_evidence', { soulId: ids.Mira, format: 'json', limit: 4, cursor });
      total += page.data.report.clusters.length;
      cursor = page.data.nextCursor;
    }
    expect(total).toBe(report.clusterCount);
    expect((await tool('soul_evidence', { soulId: ids.Mira, cursor: first.data.nextCursor })).text).toContain('cursor: pages clusters of format "json" only');
  });
});

describe('shard_observe', () => {
  it('drops many shards in one write and reports the souls it made ready', async () => {
    const r = await tool('shard_observe', {
      shards: [
        { content: 'Sela counted the arrows twice before the report.', source: 'chat', soulIds: [ids.Sela], tags: ['Counting'] },
        { content: 'Sela refused to pass on a rumour about the bridge.', source: 'review', soulIds: [ids.Sela] },
      ],
    });
    expect(r.isError).toBe(false);
    expect(r.data.shardIds).toHaveLength(2);
    expect(r.data.readySouls).toEqual([{ id: ids.Sela, name: 'Sela' }]);
  });

  it('writes nothing when one shard is bad, and names it', async () => {
    const before = (await listShards(db, { first: 500 })).totalCount;
    const r = await tool('shard_observe', {
      shards: [
        { content: 'A fine observation.', source: 'chat', soulIds: [ids.Mira] },
        { content: '   ...   ', source: 'chat', soulIds: [ids.Mira] },
      ],
    });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('shards[1].content: must not be empty');
    expect((await listShards(db, { first: 500 })).totalCount).toBe(before);
    const unknown = await tool('shard_observe', { shards: [{ content: 'x y z', source: 's', soulIds: [ids.Mira] }, { content: 'x y z', source: 's', soulIds: [ids.Mira, 999] }] });
    expect(unknown.text).toBe('shards[1].soulIds: there is no soul 999. Call soul_read to list the souls and their ids.');
  });

  it('reveals sealed shards and refuses to reveal shards that are not sealed', async () => {
    const sealed = await tool('shard_observe', { shards: [{ content: 'A spoiler about the siege.', source: 'script', soulIds: [ids.Mira], sealed: true }] });
    const [shardId] = sealed.data.shardIds;
    expect((await tool('shard_search', { soulId: ids.Mira, sealed: true })).data.shards.map((s: { id: number }) => s.id)).toEqual([shardId]);
    const revealed = await tool('shard_observe', { reveal: [shardId] });
    expect(revealed.data.revealed).toEqual([shardId]);
    const again = await tool('shard_observe', { reveal: [shardId] });
    expect(again.isError).toBe(true);
    expect(again.text).toContain(`reveal: shards ${shardId} are not sealed: revealing them would change nothing`);
    expect((await tool('shard_observe', {})).text).toContain('shards: give at least one shard');
  });
});

describe('trait_change', () => {
  it('adds a trait citing shards, after a dry run that writes nothing', async () => {
    const shards = (await tool('shard_search', { soulId: ids.Sela, limit: 2 })).data.shards.map((s: { id: number }) => s.id);
    const args = { action: 'add', soulId: ids.Sela, principle: 'Report only what the scouts confirm.', provenance: 'Two reports this week.', citeShardIds: shards };
    const dry = await tool('trait_change', { ...args, dryRun: true });
    expect(dry.data.preview.after).toContain('- Report only what the scouts confirm.');
    expect(dry.data.preview.before).not.toContain('Report only what the scouts confirm.');
    expect(await listTraits(db, ids.Sela)).toHaveLength(2);
    const added = await tool('trait_change', args);
    expect(added.data.trait).toMatchObject({ soulId: ids.Sela, status: 'active', principle: 'Report only what the scouts confirm.' });
    expect(added.data.cited).toEqual(shards);
    const again = await tool('trait_change', { action: 'cite', traitId: added.data.trait.id, citeShardIds: shards });
    expect(again.isError).toBe(true);
    expect(again.text).toContain('nothing changed');
  });

  it('revises, reverts and reactivates, refusing each no-op', async () => {
    const [trait] = await listTraits(db, ids.Sela, { status: 'active' });
    const same = await tool('trait_change', { action: 'revise', traitId: trait.id, principle: trait.principle });
    expect(same.text).toContain('principle: is the same as trait');
    const revised = await tool('trait_change', { action: 'revise', traitId: trait.id, principle: 'Report what was seen with your own eyes.' });
    expect(revised.data.trait.principle).toBe('Report what was seen with your own eyes.');
    expect((await tool('trait_change', { action: 'revert', traitId: trait.id })).data.trait.status).toBe('reverted');
    const twice = await tool('trait_change', { action: 'revert', traitId: trait.id });
    expect(twice.text).toContain('is reverted, not active: nothing to revert');
    expect(twice.text).toContain('reactivate');
    expect((await tool('trait_change', { action: 'reactivate', traitId: trait.id })).data.trait.status).toBe('active');
    expect((await tool('trait_change', { action: 'reactivate', traitId: trait.id })).text).toContain('already active: nothing changed');
  });

  it('refuses fields the action does not use, missing fields, and unknown traits', async () => {
    expect((await tool('trait_change', { action: 'revert', traitId: 1, principle: 'x' })).text).toContain('principle: is not used by action "revert". Action "revert" takes traitId');
    expect((await tool('trait_change', { action: 'add', soulId: ids.Sela, principle: 'x' })).text).toContain('provenance: is required by action "add"');
    expect((await tool('trait_change', { action: 'revise', traitId: 9999, principle: 'x' })).text).toContain('traitId: there is no trait 9999');
    const [active] = await listTraits(db, ids.Sela, { status: 'active' });
    expect((await tool('trait_change', { action: 'cite', traitId: active.id, citeShardIds: [9999] })).text).toContain('citeShardIds: no shard has the ids 9999');
    expect((await tool('trait_change', { action: 'reactivate', traitId: 1, dryRun: true })).text).toContain('dryRun: is only for add, revise and revert');
    expect((await tool('trait_change', { action: 'merge', traitId: 1 })).text).toMatch(/action[\s\S]*add[\s\S]*revise[\s\S]*revert[\s\S]*reactivate[\s\S]*cite/);
  });

  it('refuses an add at capacity and points to levelup', async () => {
    const r = await tool('trait_change', { action: 'add', soulId: ids.Brannoc, principle: 'One more.', provenance: 'Too many.' });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('limit 10');
    expect(r.text).toContain('levelup');
    expect(await listTraits(db, ids.Brannoc, { status: 'active' })).toHaveLength(10);
  });
});

describe('levelup and levelup_revert', () => {
  async function planFor(soulId: number) {
    const active = await listTraits(db, soulId, { status: 'active' });
    return { active, plan: { soulId, newEssence: 'Relay plans small, verifiable tasks for a team of coding agents.', consolidations: [{ sourceTraitIds: [active[2].id, active[3].id], mergedPrinciple: 'Split work into small tasks before delegating it.', mergedProvenance: 'Two delegation habits.' }], promotedTraitIds: [], carriedTraitIds: [active[0].id, active[1].id, active[4].id] } };
  }

  it('dry-runs a plan without writing, applies it, and rolls it back', async () => {
    const { plan } = await planFor(ids.Relay);
    const dry = await tool('levelup', { ...plan, dryRun: true });
    expect(dry.data).toMatchObject({ applied: false, soul: { level: 0 } });
    expect(dry.data.preview.after).toContain('Split work into small tasks before delegating it.');
    expect((await getSoul(db, ids.Relay))!.level).toBe(0);
    const applied = await tool('levelup', plan);
    expect(applied.data).toMatchObject({ applied: true, soul: { level: 1 }, mergedTraitIds: [expect.any(Number)] });
    const back = await tool('levelup_revert', { soulId: ids.Relay });
    expect(back.data).toMatchObject({ soul: { level: 0 }, revertedLevelEventId: applied.data.levelEventId });
    const none = await tool('levelup_revert', { soulId: ids.Relay });
    expect(none.isError).toBe(true);
    expect(none.text).toContain('has no level-up to revert');
  });

  it('answers a plan that misses traits with their ids and principles, and writes nothing', async () => {
    const { plan, active } = await planFor(ids.Relay);
    const partial = { ...plan, carriedTraitIds: [active[0].id, 9999, active[0].id] };
    for (const dryRun of [true, false]) {
      const r = await tool('levelup', { ...partial, dryRun });
      expect(r.isError).toBe(true);
      expect(r.text).toContain(`#${active[1].id} "${active[1].principle}"`);
      expect(r.text).toContain(`#${active[4].id} "${active[4].principle}"`);
      expect(r.text).toContain(`traits listed more than once: ${active[0].id}`);
      expect(r.text).toContain('not active traits of soul');
      expect(r.text).toContain('9999');
    }
    expect((await getSoul(db, ids.Relay))!.level).toBe(0);
    expect((await tool('levelup', { ...plan, newEssence: '  ' })).text).toContain('newEssence: must not be empty');
  });
});

describe('soul_attune and soul_manage', () => {
  it('attunes a soul and refuses a fade that fades nothing', async () => {
    const r = await tool('soul_attune', { soulId: ids.Mira });
    expect(r.data.attuned).toMatchObject({ id: ids.Mira, lastAttunedAt: new Date(clock.now()).toISOString() });
    expect((await getSoul(db, ids.Mira))!.lastAttunedAt).toBe(clock.now());
    const fade = await tool('soul_attune', { fadeExhaustedShards: true });
    expect(fade.isError).toBe(true);
    expect(fade.text).toContain('nothing faded');
    expect((await tool('soul_attune', {})).text).toContain('soulId: give soulId, fadeExhaustedShards true, or both');
  });

  it('fades shards cited by enough distinct traits', async () => {
    const { data } = await tool('shard_observe', { shards: [{ content: 'Mira and the recruit counted the arrows together.', source: 'chat', soulIds: [ids.Mira] }] });
    const [a, b] = await listTraits(db, ids.Mira, { status: 'active' });
    for (const t of [a, b]) expect((await tool('trait_change', { action: 'cite', traitId: t.id, citeShardIds: data.shardIds })).isError).toBe(false);
    expect((await tool('soul_attune', { fadeExhaustedShards: true })).data.fadedCount).toBeGreaterThanOrEqual(1);
  });

  it('creates, updates, retires and awakens souls, refusing no-ops', async () => {
    const created = await tool('soul_manage', { action: 'create', name: 'Oswin', essence: 'A ferryman who remembers every crossing.' });
    const id = created.data.soul.id;
    expect(created.data.soul).toMatchObject({ name: 'Oswin', slug: 'oswin', level: 0, dormant: false });
    expect((await tool('soul_manage', { action: 'create', name: 'oswin', essence: 'again' })).text).toContain('name: an awake soul is already named');
    expect((await tool('soul_manage', { action: 'update', soulId: id, name: 'Oswin' })).text).toContain('changes nothing');
    expect((await tool('soul_manage', { action: 'update', soulId: id, description: 'Ferryman of the ford' })).isError).toBe(false);
    expect((await tool('soul_manage', { action: 'retire', soulId: id })).data.soul.dormant).toBe(true);
    expect((await tool('soul_manage', { action: 'retire', soulId: id })).text).toContain('already dormant: nothing changed');
    expect((await tool('soul_manage', { action: 'awaken', soulId: id })).data.soul.dormant).toBe(false);
    expect((await tool('soul_manage', { action: 'retire' })).text).toContain('soulId: is required by action "retire"');
  });
});

describe('a session that may only read', () => {
  it('lists only the read tools, and refuses the others by name and scope', async () => {
    const reader = await connect(db, { caller: callerWith('read') });
    try {
      const { tools } = await reader.client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['soul_read', 'shard_search', 'soul_evidence']);
      const r = await call(reader.client, 'trait_change', { action: 'revert', traitId: 1 });
      expect(r.isError).toBe(true);
      expect(r.text).toContain('the tool trait_change needs the "refine" scope, and this caller (test-read) has read');
      expect((await getTrait(db, 1))!.status).not.toBe('reverted');
      const unknown = await call(reader.client, 'no_such_tool', {});
      expect(unknown.isError).toBe(true);
      expect(unknown.text).toContain('there is no tool "no_such_tool"');
    } finally {
      await reader.close();
    }
  });
});

