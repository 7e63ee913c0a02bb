// Issue 34: the cheap path for an agent over MCP. Reports since a revision (unchanged: one line; unknown: the full
// report, saying so), unjudged shards with their text grouped by the theme each resembles (with its similarity), a
// suggestion into a theme judged against a trait read as counter-evidence, NEW_THEME for a cluster that fits no theme,
// several traits cited in one all-or-nothing call, and a theme named, filled and judged against a trait in one call.
import { afterEach, describe, expect, it } from 'vitest';
import { addTrait, closeSoulsDb, createSoul, dropShards, formatEvidence, getCitations, listThemes, manualClock, openSoulsDb, type SoulsDb } from '../src/engine/index.ts';
import { call, connect, type Connected } from './support/mcp.ts';
import { serverPerTest } from './support/server.ts';

const DAY_MS = 86_400_000;
const T0 = Date.UTC(2026, 3, 1);
const open: { close(): Promise<void> | void }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

const SKIPS = ['Pushed the hotfix to production without writing any test', 'Merged the urgent patch without writing any test', 'Shipped the login fix without writing any test'];
const DOCS = ['Wrote a runbook for restoring the database backups', 'Wrote a runbook for rotating the database keys'];

/** A soul on lexical similarity: a trait, two judged themes (one opposing the trait), shards from three sources. */
async function world() {
  const db = openSoulsDb({ clock: manualClock(T0), settings: { similarity: 'lexical' } });
  open.push({ close: () => void closeSoulsDb(db) });
  const soul = await createSoul(db, { name: 'Ines', essence: 'A release engineer.' });
  const texts = [...SKIPS.slice(0, 2), ...DOCS];
  const { shardIds } = await dropShards(db, texts.map((content, i) => ({ content, source: ['chat', 'journal', 'review'][i % 3], soulIds: [soul.id], createdAt: T0 - (5 - i) * DAY_MS })));
  const trait = await addTrait(db, soul.id, { principle: 'Writes a failing test before fixing any bug.', provenance: 'p' });
  const docsTrait = await addTrait(db, soul.id, { principle: 'Writes runbooks for others.', provenance: 'p' });
  const session: Connected = await connect(db);
  open.push(session);
  const tool = (name: string, args: Record<string, unknown>) => call(session.client, name, args);
  const judged = await tool('evidence_judge', {
    action: 'assign',
    soulId: soul.id,
    assignments: [
      { shardIds: shardIds.slice(0, 2), newThemeName: 'Skips tests under pressure', opposes: [trait.id] },
      { shardIds: shardIds.slice(2, 4), newThemeName: 'Writes runbooks' },
    ],
  });
  expect(judged.isError, judged.text).toBe(false);
  const [skips, docs] = judged.data.themes.map((t: { id: number }) => t.id);
  return { db, soulId: soul.id, traitId: trait.id, docsTraitId: docsTrait.id, shardIds, skips, docs, tool, session };
}

async function observe(db: SoulsDb, soulId: number, items: { content: string; source: string }[]) {
  return (await dropShards(db, items.map((s) => ({ ...s, soulIds: [soulId] })))).shardIds;
}

describe('soul_evidence since a revision', () => {
  it('answers one line when nothing changed, only what changed after new shards, and the full report for an unknown revision', async () => {
    const { db, soulId, tool } = await world();
    const first = await tool('soul_evidence', { soulId });
    expect(first.data.revision).toMatch(/^\d+-[0-9a-f]{12}$/);
    expect(first.data.sinceKnown).toBeUndefined();

    const same = await tool('soul_evidence', { soulId, since: first.data.revision });
    expect(same.blocks[0]).toBe(`# Evidence: Ines (soul #${soulId}): unchanged since revision ${first.data.revision}\n`);
    expect(same.data).toMatchObject({ revision: first.data.revision, sinceKnown: true, suggestedActions: [], themes: [] });

    const [fresh] = await observe(db, soulId, [{ content: 'Wrote a runbook for restoring the cache servers', source: 'standup' }]);
    const since = await tool('soul_evidence', { soulId, since: first.data.revision });
    expect(since.data.sinceKnown).toBe(true);
    expect(since.data.revision).not.toBe(first.data.revision);
    expect(since.data.changes).toMatchObject({ newShardIds: [fresh], goneShardIds: [], changedThemeIds: [] });
    const text = since.blocks[0];
    expect(text.split('\n')[0]).toBe(`# Evidence: Ines (soul #${soulId}) since revision ${first.data.revision} (now ${since.data.revision}): only what changed`);
    expect(text).toMatch(new RegExp(`\\n- #${fresh} · standup · \\d{4}-\\d\\d-\\d\\d · Wrote a runbook for restoring the cache servers \\(0\\.\\d\\d\\)\\n`));
    // What was already read is not sent again: the judged themes' members.
    expect(text).not.toContain(SKIPS[0]);
    expect(text.length).toBeLessThan(first.blocks[0].length / 2);

    const unknown = await tool('soul_evidence', { soulId, since: '1-000000000000' });
    expect(unknown.data.sinceKnown).toBe(false);
    expect(unknown.blocks[0].split('\n')[1]).toBe(`Revision 1-000000000000 is not known here (another scope, a restart, or too old): this is the full report, revision ${since.data.revision}.`);
    expect(unknown.blocks[0]).toContain('## Unjudged shards (1)');
  });
});

describe('unjudged shards with their text and scored suggestions', () => {
  it('groups unjudged shards by the theme each resembles, with the similarity, and reads one resembling an opposing theme as counter-evidence', async () => {
    const { db, soulId, traitId, skips, docs, tool, session } = await world();
    const [skip, doc, none] = await observe(db, soulId, [
      { content: SKIPS[2], source: 'standup' },
      { content: 'Wrote a runbook for restoring the database servers', source: 'chat' },
      { content: 'Baked sourdough bread on sunday morning', source: 'journal' },
    ]);
    const report = await formatEvidence(db, soulId);
    const bySuggestion = Object.fromEntries(report.unjudged.map((u) => [u.shardId, u.suggestion && { themeId: u.suggestion.themeId, opposes: u.suggestion.opposes }]));
    expect(bySuggestion).toEqual({ [skip]: { themeId: skips, opposes: [traitId] }, [doc]: { themeId: docs, opposes: [] }, [none]: null });
    expect(report.unjudged.find((u) => u.shardId === skip)!.suggestion!.similarity).toBeGreaterThanOrEqual(report.similarity.threshold);
    // Never plain support: the suggestion into the opposing theme is possible counter-evidence of its trait.
    expect(report.possibleCounterEvidence.filter((h) => h.shardId === skip && h.traitId === traitId)).toEqual([
      expect.objectContaining({ traitId, reason: expect.stringMatching(new RegExp(`^resembles theme "Skips tests under pressure" \\(#${skips}, lexical 0\\.\\d\\d\\), judged against trait ${traitId}|^same topic`)) }),
    ]);

    const markdown = (await tool('soul_evidence', { soulId })).blocks[0];
    expect(markdown.split('\n')[1]).toMatch(/^Next: judge the unjudged shards below into themes .* — ready, 3 unjudged\.$/);
    const section = markdown.slice(markdown.indexOf('## Unjudged shards (3)'), markdown.indexOf('\n## Traits'));
    expect(section.split('\n').map((l) => l.replace(/ \(0\.\d\d\)$/, ' (s)').replace(/\d{4}-\d\d-\d\d/, 'D'))).toEqual([
      '## Unjudged shards (3): id · source · date · text',
      `Resembling theme "Skips tests under pressure" (#${skips}; lexical ≥ ${report.similarity.threshold.toFixed(2)}), judged against trait #${traitId}: possible counter-evidence, never support:`,
      `- #${skip} · standup · D · ${SKIPS[2]} (s)`,
      `Resembling theme "Writes runbooks" (#${docs}; lexical ≥ ${report.similarity.threshold.toFixed(2)}):`,
      `- #${doc} · chat · D · Wrote a runbook for restoring the database servers (s)`,
      `Fits no theme (lexical ≥ ${report.similarity.threshold.toFixed(2)}): candidates for a new theme:`,
      `- #${none} · journal · D · Baked sourdough bread on sunday morning`,
      '',
    ]);
    // The resource lists them all the same way, without a report around them.
    const resource = await session.client.readResource({ uri: `souls://${soulId}/unjudged.md` });
    expect((resource.contents[0] as { text: string }).text.trimEnd()).toBe(section.trimEnd());
    const json = await tool('soul_evidence', { soulId, format: 'json' });
    expect(json.data.report.unjudged.find((u: { id: number }) => u.id === skip)).toMatchObject({ source: 'standup', text: SKIPS[2], themeId: skips, opposes: [traitId] });
  });

  it('suggests NEW_THEME for a cluster of unjudged shards from two sources that fits no theme', async () => {
    const { db, soulId } = await world();
    await observe(db, soulId, [
      { content: 'Ran a blameless postmortem after the outage', source: 'chat' },
      { content: 'Ran a blameless postmortem after the failed outage', source: 'review' },
    ]);
    const report = await formatEvidence(db, soulId);
    const action = report.suggestedActions.find((a) => a.kind === 'NEW_THEME');
    expect(action?.count).toBe(1);
    expect(action?.message).toMatch(/^1 cluster of unjudged shards from two or more sources fits no theme: #\d+ \(size 2\); judge it into a new theme$/);
  });
});

describe('fewer calls for the same change', () => {
  it('cites several shards for several traits in one trait_change, all or nothing, with a dry run that writes nothing', async () => {
    const { db, shardIds, traitId, docsTraitId, tool } = await world();
    const before = await getCitations(db, [traitId, docsTraitId]);
    // A shard of the theme opposing trait 1 is refused as its support: nothing is written, not even the docs citations.
    const refused = await tool('trait_change', { action: 'cite', cites: [{ traitId: docsTraitId, shardIds: shardIds.slice(2, 4) }, { traitId, shardIds: [shardIds[0]] }] });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/^cites: /);
    expect(await getCitations(db, [traitId, docsTraitId])).toEqual(before);

    const cites = [{ traitId: docsTraitId, shardIds: shardIds.slice(2, 4) }];
    const dry = await tool('trait_change', { action: 'cite', cites, dryRun: true });
    expect(dry.data.byTrait).toEqual({ [docsTraitId]: { cited: shardIds.slice(2, 4), alreadyCited: [] } });
    expect(await getCitations(db, [traitId, docsTraitId])).toEqual(before);
    const done = await tool('trait_change', { action: 'cite', cites });
    expect(done.data.byTrait).toEqual(dry.data.byTrait);
    expect((await getCitations(db, [docsTraitId])).map((c) => c.shardId).sort()).toEqual(shardIds.slice(2, 4).sort());
    expect((await tool('trait_change', { action: 'cite', cites, traitId })).text).toContain('traitId: is not used with cites');
  });

  it('names, fills and judges a theme against a trait in one evidence_judge call, or writes nothing', async () => {
    const { db, soulId, shardIds, docsTraitId, traitId, tool } = await world();
    const [a, b] = await observe(db, soulId, [
      { content: 'Skipped the review of the billing change', source: 'chat' },
      { content: 'Skipped the review of the search change', source: 'review' },
    ]);
    await tool('trait_change', { action: 'cite', traitId: docsTraitId, citeShardIds: [a] });
    const themes = JSON.stringify(await listThemes(db, soulId));
    // The trait cites a member: the opposition is refused, and the theme is not created either.
    const refused = await tool('evidence_judge', { action: 'assign', soulId, assignments: [{ shardIds: [a, b], newThemeName: 'Skips reviews', opposes: [docsTraitId] }] });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(await listThemes(db, soulId))).toBe(themes);
    const dry = await tool('evidence_judge', { action: 'assign', soulId, dryRun: true, assignments: [{ shardIds: [b], newThemeName: 'Skips reviews', opposes: [traitId] }] });
    expect(dry.data.applied).toBe(false);
    expect(dry.data.themes.find((t: { name: string }) => t.name === 'Skips reviews')).toMatchObject({ opposes: [traitId], memberCount: 1 });
    expect(JSON.stringify(await listThemes(db, soulId))).toBe(themes);
    const done = await tool('evidence_judge', { action: 'assign', soulId, assignments: [{ shardIds: [b], newThemeName: 'Skips reviews', opposes: [traitId] }] });
    expect(done.data.themes[0]).toMatchObject({ name: 'Skips reviews', memberCount: 1, opposes: [traitId] });
    expect(shardIds).toHaveLength(4);
  });
});

describe('GraphQL evidence since a revision', { timeout: 30_000 }, () => {
  const start = serverPerTest(afterEach);
  it('returns a revision, answers only what changed since it (one line when nothing did), and lists the unjudged shards with their suggestions', async () => {
    const server = await start({ start: T0 });
    const db = server.app.db;
    const soul = await createSoul(db, { name: 'Ines', essence: 'A release engineer.' });
    const { shardIds } = await dropShards(db, DOCS.map((content, i) => ({ content, source: ['chat', 'journal'][i], soulIds: [soul.id], createdAt: T0 - (3 - i) * DAY_MS })));
    const read = (since: string | null) =>
      server.data(
        `query($id: ID!, $since: String) { soul(id: $id) { evidence(since: $since) { revision sinceKnown markdown changes { since newShards { id } goneShards { id } readinessChanged }
          unjudged { shard { id } suggestedTheme { id } similarity } clusters { suggestedThemeSimilarity } } } }`,
        { id: String(soul.id), since },
      );
    const first = (await read(null)).soul.evidence;
    expect(first).toMatchObject({ revision: expect.stringMatching(/^\d+-[0-9a-f]{12}$/), sinceKnown: null, changes: null });
    expect(first.unjudged).toEqual(shardIds.map((id) => ({ shard: { id: String(id) }, suggestedTheme: null, similarity: null })));
    const same = (await read(first.revision)).soul.evidence;
    expect(same).toMatchObject({ revision: first.revision, sinceKnown: true, markdown: `# Evidence: Ines (soul #${soul.id}): unchanged since revision ${first.revision}\n` });
    const [fresh] = (await dropShards(db, [{ content: 'Wrote a runbook for rotating the cache keys', source: 'review', soulIds: [soul.id] }])).shardIds;
    const since = (await read(first.revision)).soul.evidence;
    expect(since.changes).toEqual({ since: first.revision, newShards: [{ id: String(fresh) }], goneShards: [], readinessChanged: expect.any(Boolean) });
    expect(since.markdown).toContain(`- #${fresh} · review · `);
    expect((await read('1-ffffffffffff')).soul.evidence).toMatchObject({ sinceKnown: false, changes: null });
  });
});
