import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DAY_MS,
  InvalidStateError,
  LevelUpPlanError,
  NotFoundError,
  ValidationError,
  addTrait,
  assignThemes,
  citeShard,
  citeShards,
  closeSoulsDb,
  createSoul,
  dropShard,
  dropShards,
  fadeExhaustedShards,
  formatEvidence,
  getCounterEvidence,
  getCrystallization,
  getLevelHistory,
  getShardThemes,
  getTheme,
  getThemeHistory,
  levelUp,
  listShards,
  listThemes,
  manualClock,
  openSoulsDb,
  opposeTrait,
  previewLevelUp,
  renameTheme,
  retireSoul,
  revealShards,
  revertLevelUp,
  revertTrait,
  unassignShards,
  unopposeTrait,
  type EvidenceReport,
  type SoulsDb,
} from '../src/engine/index.ts';
import { freshDb, rejection } from './support/engine.ts';

const T0 = Date.UTC(2026, 2, 1);

const docker = [
  'Fixed the Docker build cache for the api image',
  'Fixed the Docker build cache for the web image',
  'Fixed the Docker build cache for the worker image',
];
const unrelated = [
  'Cooked a spicy curry for the whole team on friday',
  'Jogged five kilometres along the river at dawn',
  'Sketched a floor plan for the new community library',
  'Planted tomatoes and basil in the balcony garden',
];

/** A soul with shards from two sources spread over days, so only MIN_CLUSTERS can keep it from being ready. */
async function soulWith(db: SoulsDb, clock: ReturnType<typeof manualClock>, texts: readonly string[], name = 'Ada') {
  const soul = await createSoul(db, { name, essence: 'A careful engineer.' });
  const ids: number[] = [];
  for (const [i, text] of texts.entries()) {
    ids.push((await dropShard(db, text, i % 2 === 0 ? 'chat' : 'journal', [soul.id], { createdAt: clock.now() - (texts.length - i) * DAY_MS })).shardId);
  }
  return { soul, ids };
}

function clusterOf(report: EvidenceReport, shardId: number) {
  return report.clusters.find((c) => c.memberIds.includes(shardId))!;
}

describe('the judge’s verbs', () => {
  it('creates a theme by name, records who and when, and moves a reassigned shard, recording what it replaced', async () => {
    const { db, clock } = freshDb(T0);
    const { soul, ids } = await soulWith(db, clock, [...docker, ...unrelated]);
    const first = await assignThemes(db, soul.id, [{ shardIds: [ids[0], ids[1]], newThemeName: '  Build caching\u200b ' }], { actor: 'refiner-token' });
    expect(first.soul.id).toBe(soul.id);
    expect(first.themes).toEqual([
      { id: expect.any(Number), soulId: soul.id, name: 'Build caching', createdBy: 'refiner-token', createdAt: T0, updatedAt: T0, memberIds: [ids[0], ids[1]], opposes: [] },
    ]);
    const build = first.themes[0].id;

    clock.advance(1000);
    const second = await assignThemes(db, String(soul.id), [
      { shardIds: [ids[2], String(ids[1])], themeId: String(build) },
      { shardIds: [ids[3]], newThemeName: 'Cooking' },
    ]);
    expect(second.themes.map((t) => [t.name, t.memberIds, t.createdBy])).toEqual([
      ['Build caching', [ids[0], ids[1], ids[2]], 'refiner-token'],
      ['Cooking', [ids[3]], 'local'],
    ]);
    const cooking = second.themes[1].id;

    clock.advance(1000);
    await assignThemes(db, soul.id, [{ shardIds: [ids[1]], themeId: cooking }], { actor: 'bob' });
    expect((await getTheme(db, build))!.memberIds).toEqual([ids[0], ids[2]]);
    expect((await getTheme(db, cooking))!.memberIds).toEqual([ids[1], ids[3]]);
    expect(await getShardThemes(db, soul.id, ids)).toEqual(new Map([[ids[0], build], [ids[1], cooking], [ids[2], build], [ids[3], cooking]]));

    clock.advance(1000);
    const left = await unassignShards(db, soul.id, [ids[1], ids[4]], { actor: 'bob' });
    expect(left.themes.map((t) => [t.id, t.memberIds])).toEqual([[cooking, [ids[3]]]]);

    const history = await getThemeHistory(db, [soul.id]);
    expect(history.map((e) => [e.kind, e.shardId, e.fromThemeId, e.toThemeId, e.actor, e.at - T0])).toEqual([
      ['assign', ids[0], null, build, 'refiner-token', 0],
      ['assign', ids[1], null, build, 'refiner-token', 0],
      // ids[1] was already in the theme: nothing moved, nothing recorded.
      ['assign', ids[2], null, build, 'local', 1000],
      ['assign', ids[3], null, cooking, 'local', 1000],
      ['assign', ids[1], build, cooking, 'bob', 2000],
      ['unassign', ids[1], cooking, null, 'bob', 3000],
    ]);
    expect((await listThemes(db, soul.id)).map((t) => t.name)).toEqual(['Build caching', 'Cooking']);
  });

  it('renames, opposes and unopposes, each recorded; repeating a change is refused (InvalidStateError) and records nothing', async () => {
    const { db, clock } = freshDb(T0);
    const { soul, ids } = await soulWith(db, clock, docker);
    const trait = await addTrait(db, soul.id, { principle: 'Never touches the build', provenance: 'said so' });
    const [theme] = (await assignThemes(db, soul.id, [{ shardIds: [ids[0]], newThemeName: 'Builds' }])).themes;
    expect(await renameTheme(db, theme.id, 'Build work', { actor: 'ann' })).toMatchObject({ name: 'Build work' });
    clock.advance(DAY_MS);
    // The same name, after normalization, changes nothing; another case of it is a change (the name is shown as given).
    expect((await rejection(renameTheme(db, theme.id, ' Build\u200b work '), InvalidStateError)).message).toBe(`theme ${theme.id} is already named "Build work": nothing to change`);
    expect(await opposeTrait(db, theme.id, trait.id, { actor: 'ann' })).toMatchObject({ opposes: [trait.id] });
    expect((await rejection(opposeTrait(db, theme.id, trait.id), InvalidStateError)).message).toBe(`theme ${theme.id} already opposes trait ${trait.id}: nothing to change`);
    expect(await getCounterEvidence(db, [trait.id])).toEqual(new Map([[trait.id, [ids[0]]]]));
    expect(await unopposeTrait(db, theme.id, trait.id)).toMatchObject({ opposes: [] });
    expect((await rejection(unopposeTrait(db, theme.id, trait.id), InvalidStateError)).message).toBe(`theme ${theme.id} does not oppose trait ${trait.id}: nothing to take back`);
    expect(await getCounterEvidence(db, [trait.id])).toEqual(new Map([[trait.id, []]]));
    // Assigning shards to the theme they are in, or unassigning shards in none, changes nothing either.
    expect((await rejection(assignThemes(db, soul.id, [{ shardIds: [ids[0]], themeId: theme.id }]), InvalidStateError)).message).toBe(
      `shard ${ids[0]} is in theme ${theme.id} already: nothing to change`,
    );
    expect((await rejection(unassignShards(db, soul.id, [ids[1], ids[2]]), InvalidStateError)).message).toBe(`shards ${ids[1]}, ${ids[2]} have no theme in soul ${soul.id}: nothing to unassign`);
    // One shard already there among others that move is a change: the call is accepted, the others move.
    expect((await assignThemes(db, soul.id, [{ shardIds: [ids[0], ids[1]], themeId: theme.id }])).themes[0].memberIds).toEqual([ids[0], ids[1]]);
    expect((await getTheme(db, theme.id))!.name).toBe('Build work');
    expect(await renameTheme(db, theme.id, 'build work')).toMatchObject({ name: 'build work' });
    const history = (await getThemeHistory(db, [soul.id])).filter((e) => e.kind !== 'assign' || e.shardId === ids[1]);
    expect(history.map((e) => [e.kind, e.themeId, e.traitId, e.detail, e.actor])).toEqual([
      ['rename', theme.id, null, 'Builds', 'ann'],
      ['oppose', theme.id, trait.id, null, 'ann'],
      ['unoppose', theme.id, trait.id, null, 'local'],
      ['assign', theme.id, null, null, 'local'],
      ['rename', theme.id, null, 'Build work', 'local'],
    ]);
  });

  it('refuses bad input with a typed error naming the field, and writes nothing', async () => {
    const { db, clock } = freshDb(T0);
    const { soul, ids } = await soulWith(db, clock, docker);
    const { soul: other, ids: otherIds } = await soulWith(db, clock, unrelated, 'Bo');
    const [theme] = (await assignThemes(db, soul.id, [{ shardIds: [ids[0]], newThemeName: 'Builds' }])).themes;
    const [otherTheme] = (await assignThemes(db, other.id, [{ shardIds: [otherIds[0]], newThemeName: 'Food' }])).themes;
    const before = await getThemeHistory(db, [soul.id, other.id]);

    const field = async (promise: Promise<unknown>) => (await rejection(promise, ValidationError)).field;
    expect(await field(assignThemes(db, soul.id, []))).toBe('assignments');
    expect(await field(assignThemes(db, soul.id, [{ shardIds: [ids[1]], themeId: theme.id, newThemeName: 'X' }]))).toBe('assignments[0]');
    expect(await field(assignThemes(db, soul.id, [{ shardIds: [ids[1]] }]))).toBe('assignments[0]');
    expect(await field(assignThemes(db, soul.id, [{ shardIds: [], newThemeName: 'X' }]))).toBe('assignments[0].shardIds');
    expect(await field(assignThemes(db, soul.id, [{ shardIds: ['x'], newThemeName: 'X' }]))).toBe('assignments[0].shardIds[0]');
    expect(await field(assignThemes(db, soul.id, [{ shardIds: [ids[1]], newThemeName: 'X' }, { shardIds: [ids[2], ids[1]], newThemeName: 'Y' }]))).toBe(
      'assignments[1].shardIds[1]',
    );
    expect(await field(assignThemes(db, soul.id, [{ shardIds: [ids[1]], newThemeName: '   ' }]))).toBe('assignments[0].newThemeName');
    expect(await field(assignThemes(db, soul.id, [{ shardIds: [ids[1]], newThemeName: 'x'.repeat(201) }]))).toBe('assignments[0].newThemeName');
    expect(await field(assignThemes(db, soul.id, [{ shardIds: [ids[1]], newThemeName: 'X' }, { shardIds: [ids[2]], newThemeName: 'x' }]))).toBe(
      'assignments[1].newThemeName',
    );
    // The soul already has it (names fold like soul names).
    expect(await field(assignThemes(db, soul.id, [{ shardIds: [ids[1]], newThemeName: 'BUILDS' }]))).toBe('assignments[0].newThemeName');
    // A shard of another soul; a theme of another soul: the first assignment's new theme is not created either.
    expect(await field(assignThemes(db, soul.id, [{ shardIds: [ids[1]], newThemeName: 'Fresh' }, { shardIds: [ids[2], otherIds[1]], themeId: theme.id }]))).toBe(
      'assignments[1].shardIds[1]',
    );
    expect(await field(assignThemes(db, soul.id, [{ shardIds: [ids[1]], newThemeName: 'Fresh' }, { shardIds: [ids[2]], themeId: otherTheme.id }]))).toBe(
      'assignments[1].themeId',
    );
    expect(await field(unassignShards(db, soul.id, [ids[0], otherIds[0]]))).toBe('shardIds[1]');
    expect(await field(assignThemes(db, 'abc', [{ shardIds: [ids[1]], newThemeName: 'X' }]))).toBe('soulId');

    expect((await rejection(assignThemes(db, 999, [{ shardIds: [ids[1]], newThemeName: 'X' }]), NotFoundError)).entity).toBe('Soul');
    expect((await rejection(assignThemes(db, soul.id, [{ shardIds: [99_999], newThemeName: 'X' }]), NotFoundError)).entity).toBe('Shard');
    expect((await rejection(assignThemes(db, soul.id, [{ shardIds: [ids[1]], themeId: 99_999 }]), NotFoundError)).entity).toBe('Theme');

    await assignThemes(db, soul.id, [{ shardIds: [ids[1]], newThemeName: 'Second' }]);
    expect(await field(renameTheme(db, theme.id, 'second'))).toBe('name');
    expect(await field(renameTheme(db, theme.id, ''))).toBe('name');
    expect((await rejection(renameTheme(db, 99_999, 'X'), NotFoundError)).entity).toBe('Theme');

    const trait = await addTrait(db, soul.id, { principle: 'Ships small', provenance: 'p' });
    const otherTrait = await addTrait(db, other.id, { principle: 'Cooks', provenance: 'p' });
    expect(await field(opposeTrait(db, theme.id, otherTrait.id))).toBe('traitId');
    expect((await rejection(opposeTrait(db, theme.id, 99_999), NotFoundError)).entity).toBe('Trait');
    expect((await rejection(opposeTrait(db, 99_999, trait.id), NotFoundError)).entity).toBe('Theme');
    await revertTrait(db, trait.id);
    await rejection(opposeTrait(db, theme.id, trait.id), InvalidStateError);

    await retireSoul(db, other.id);
    expect(await field(assignThemes(db, other.id, [{ shardIds: [otherIds[1]], themeId: otherTheme.id }]))).toBe('soulId');
    await rejection(renameTheme(db, otherTheme.id, 'Meals'), InvalidStateError);

    const after = await getThemeHistory(db, [soul.id, other.id]);
    expect(after.filter((e) => !before.some((b) => b.id === e.id)).map((e) => e.kind)).toEqual(['assign']);
    expect((await listThemes(db, soul.id)).map((t) => t.name)).toEqual(['Builds', 'Second']);
    expect((await getTheme(db, theme.id))!.memberIds).toEqual([ids[0]]);
  });

  it('keeps themes, assignments, oppositions and their history across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-themes-'));
    try {
      const path = join(dir, 'souls.db');
      const clock = manualClock(T0);
      let db = openSoulsDb({ path, clock });
      const { soul, ids } = await soulWith(db, clock, docker);
      const trait = await addTrait(db, soul.id, { principle: 'Avoids build work', provenance: 'p' });
      const [theme] = (await assignThemes(db, soul.id, [{ shardIds: [ids[0], ids[1]], newThemeName: 'Builds' }], { actor: 'ann' })).themes;
      await opposeTrait(db, theme.id, trait.id);
      const themes = await listThemes(db, soul.id);
      const history = await getThemeHistory(db, [soul.id]);
      closeSoulsDb(db);
      db = openSoulsDb({ path, clock });
      expect(await listThemes(db, soul.id)).toEqual(themes);
      expect(await getThemeHistory(db, [soul.id])).toEqual(history);
      expect(await getCounterEvidence(db, [trait.id])).toEqual(new Map([[trait.id, [ids[0], ids[1]]]]));
      closeSoulsDb(db);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a replica sharing the database sees another’s judgement at once: nothing it remembered goes stale', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-themes-'));
    try {
      const path = join(dir, 'souls.db');
      const clock = manualClock(T0);
      const a = openSoulsDb({ path, clock });
      const b = openSoulsDb({ path, clock });
      const { soul, ids } = await soulWith(a, clock, docker);
      // b clusters the soul's shards and remembers the partition.
      expect((await getCrystallization(b, [soul.id])).get(soul.id)!.clusterCount).toBe(1);
      expect((await formatEvidence(b, soul.id)).clusters).toHaveLength(1);
      const [theme] = (await assignThemes(a, soul.id, [{ shardIds: [ids[0]], newThemeName: 'API' }])).themes;
      expect((await getCrystallization(b, [soul.id])).get(soul.id)).toMatchObject({ ready: true, clusterCount: 2 });
      expect((await formatEvidence(b, soul.id)).clusters.map((c) => [c.themeId, c.memberIds])).toEqual(
        expect.arrayContaining([
          [theme.id, [ids[0]]],
          [null, [ids[1], ids[2]]],
        ]),
      );
      await unassignShards(b, soul.id, [ids[0]]);
      expect((await formatEvidence(a, soul.id)).clusters).toHaveLength(1);
      closeSoulsDb(a);
      closeSoulsDb(b);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the evidence report honours themes', () => {
  it('never merges two themes, never splits one, and suggests the theme an unjudged cluster resembles', async () => {
    const { db, clock } = freshDb(T0);
    const { soul, ids } = await soulWith(db, clock, [...docker, ...unrelated]);
    const plain = await formatEvidence(db, soul.id);
    // By similarity alone the three docker shards are one cluster, every other shard alone.
    expect(clusterOf(plain, ids[0]).memberIds.sort()).toEqual([ids[0], ids[1], ids[2]].sort());
    expect(plain.unjudgedCount).toBe(7);
    expect(plain.clusters.every((c) => c.themeId === null && c.suggestedThemeId === null)).toBe(true);

    // Two docker shards judged apart; two unrelated shards judged together.
    const { themes } = await assignThemes(db, soul.id, [
      { shardIds: [ids[0]], newThemeName: 'API builds' },
      { shardIds: [ids[1]], newThemeName: 'Web builds' },
      { shardIds: [ids[3], ids[4]], newThemeName: 'Outdoors and food' },
    ]);
    const [api, web, mixed] = themes.map((t) => t.id);
    const report = await formatEvidence(db, soul.id);
    expect(report.unjudgedCount).toBe(3);
    const byTheme = new Map(report.clusters.filter((c) => c.themeId !== null).map((c) => [c.themeId, c.memberIds]));
    expect(byTheme).toEqual(new Map([[api, [ids[0]]], [web, [ids[1]]], [mixed, [ids[3], ids[4]]]]));
    // ids[2] ("worker image") resembles "web image" a little more than "api image"; nothing else is similar to a theme.
    const rest = report.clusters.filter((c) => c.themeId === null);
    expect(rest.map((c) => [c.memberIds, c.suggestedThemeId])).toEqual(
      expect.arrayContaining([
        [[ids[2]], web],
        [[ids[5]], null],
        [[ids[6]], null],
      ]),
    );
    expect(rest.flatMap((c) => c.memberIds).sort()).toEqual([ids[2], ids[5], ids[6]].sort());
    expect(report.markdown).toContain('Judged: 4 shards in 3 themes; unjudged: 3\n');
    expect(report.markdown).toContain(`[theme "Outdoors and food" (#${mixed}); `);
    expect(report.markdown).toMatch(/\n3 shards resemble nothing else \(highest weight first\): ids #\d+, #\d+, #\d+\n/);
    expect(report.markdown).toContain(`#${ids[2]} → theme "Web builds" (#${web})`);

    // The gate counts each theme as one cluster: 3 themes + 3 unjudged singletons.
    expect((await getCrystallization(db, [soul.id])).get(soul.id)!.clusterCount).toBe(6);
    // Scoped reports honour themes too.
    const scoped = await formatEvidence(db, soul.id, { query: 'docker' });
    expect(scoped.clusters.map((c) => [c.themeId, c.memberIds])).toEqual(
      expect.arrayContaining([
        [api, [ids[0]]],
        [web, [ids[1]]],
        [null, [ids[2]]],
      ]),
    );
    expect(scoped.clusters).toHaveLength(3);

    await unassignShards(db, soul.id, [ids[0], ids[1], ids[3], ids[4]]);
    const again = await formatEvidence(db, soul.id);
    expect(JSON.stringify(again)).toBe(JSON.stringify(plain));
  });

  it('counts a theme as one cluster for MIN_CLUSTERS, and a theme change can make the soul ready', async () => {
    const { db, clock } = freshDb(T0);
    const { soul, ids } = await soulWith(db, clock, docker);
    expect((await getCrystallization(db, [soul.id])).get(soul.id)).toMatchObject({ ready: false, clusterCount: 1, unmet: ['MIN_CLUSTERS'] });
    // Judging made it ready: an edge, told like a shard write's.
    expect((await assignThemes(db, soul.id, [{ shardIds: [ids[0]], newThemeName: 'API' }])).readySoulIds).toEqual([soul.id]);
    expect((await getCrystallization(db, [soul.id])).get(soul.id)).toMatchObject({ ready: true, clusterCount: 2, unmet: [] });
    expect((await assignThemes(db, soul.id, [{ shardIds: [ids[1], ids[2]], newThemeName: 'Other images' }])).readySoulIds).toEqual([]);
    expect((await getCrystallization(db, [soul.id])).get(soul.id)).toMatchObject({ ready: true, clusterCount: 2 });
    // All three in one theme: one cluster, whatever similarity says.
    const [api] = await listThemes(db, soul.id);
    await assignThemes(db, soul.id, [{ shardIds: [ids[1], ids[2]], themeId: api.id }]);
    expect((await getCrystallization(db, [soul.id])).get(soul.id)).toMatchObject({ ready: false, clusterCount: 1, unmet: ['MIN_CLUSTERS'] });
    // A new shard alike to the theme's is unjudged: a cluster of its own beside the theme, and a readiness edge.
    const { readySoulIds } = await dropShard(db, 'Fixed the Docker build cache for the cron image', 'chat', [soul.id]);
    expect(readySoulIds).toEqual([soul.id]);
    const report = await formatEvidence(db, soul.id);
    expect(report.clusters.map((c) => [c.themeId, c.memberCount, c.suggestedThemeId])).toEqual(
      expect.arrayContaining([
        [api.id, 3, null],
        [null, 1, api.id],
      ]),
    );
  });
});

describe('counter-evidence', () => {
  it('lists the members of a theme opposing a trait under it and as a tension, its cluster CONTRADICTING the trait, never reinforcing it nor novel', async () => {
    const { db, clock } = freshDb(T0);
    const { soul, ids } = await soulWith(db, clock, [...docker, unrelated[0]]);
    // No citation: a theme whose members the trait cites could not oppose it. The principle's likeness aligns the cluster.
    const trait = await addTrait(db, soul.id, { principle: 'Fixed the Docker build cache for every image', provenance: 'p' });
    const before = await formatEvidence(db, soul.id);
    expect(clusterOf(before, ids[0]).alignment).toMatchObject({ kind: 'REINFORCING', traitId: trait.id });

    const [theme] = (await assignThemes(db, soul.id, [{ shardIds: [ids[0], ids[1], ids[2]], newThemeName: 'Gave up on caching' }])).themes;
    await opposeTrait(db, theme.id, trait.id);
    const report = await formatEvidence(db, soul.id);
    const cluster = clusterOf(report, ids[0]);
    expect(cluster).toMatchObject({ themeId: theme.id, opposes: [trait.id], memberIds: [ids[0], ids[1], ids[2]] });
    expect(cluster.alignment).toEqual({ kind: 'CONTRADICTING', traitId: trait.id, similarity: clusterOf(before, ids[0]).alignment.similarity });
    expect(report.clusters.filter((c) => c.alignment.traitId === trait.id)).toEqual([cluster]);
    expect(report.counterEvidence).toEqual([{ traitId: trait.id, themeIds: [theme.id], shardIds: [ids[0], ids[1], ids[2]] }]);
    expect(report.suggestedActions.find((a) => a.kind === 'NOVEL_CLUSTER')).toBeUndefined();
    expect(report.suggestedActions.filter((a) => a.kind === 'TENSION')).toEqual([
      { kind: 'TENSION', count: 1, message: '1 trait is contradicted by judged themes', traitIds: [trait.id] },
    ]);
    expect(report.markdown).toContain(`- #${trait.id} Fixed the Docker build cache for every image — contradicted by theme "Gave up on caching" (#${theme.id}): #${ids[0]}, #${ids[1]}, #${ids[2]}\n`);
    expect(report.markdown).toContain(`## Tensions\n- theme "Gave up on caching" (#${theme.id}) vs #${trait.id}\n`);
    expect(report.markdown).toContain(`sources chat, journal; contradicts trait #${trait.id}] #${cluster.representativeId}`);
    expect(report.markdown).not.toMatch(/novel/);
    expect(await getCounterEvidence(db, [trait.id])).toEqual(new Map([[trait.id, [ids[0], ids[1], ids[2]]]]));

    await unopposeTrait(db, theme.id, trait.id);
    const after = await formatEvidence(db, soul.id);
    expect(after.counterEvidence).toEqual([]);
    expect(clusterOf(after, ids[0]).alignment).toMatchObject({ kind: 'REINFORCING', traitId: trait.id });
  });

  it('a consolidation carries what a theme opposed to the merged trait; its revert takes exactly that back', async () => {
    const { db, clock } = freshDb(T0);
    const { soul, ids } = await soulWith(db, clock, docker);
    const a = await addTrait(db, soul.id, { principle: 'Keeps builds fast', provenance: 'p' });
    const b = await addTrait(db, soul.id, { principle: 'Keeps builds cached', provenance: 'p' });
    const [theme] = (await assignThemes(db, soul.id, [{ shardIds: [ids[0]], newThemeName: 'Slow builds' }])).themes;
    await opposeTrait(db, theme.id, a.id);
    const { event } = await levelUp(db, soul.id, {
      newEssence: 'A careful engineer of builds.',
      consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'Keeps builds fast and cached', mergedProvenance: 'p' }],
      promotedTraitIds: [],
      carriedTraitIds: [],
    });
    const merged = event.merged[0];
    expect((await getTheme(db, theme.id))!.opposes).toEqual([a.id, merged]);
    expect((await formatEvidence(db, soul.id)).counterEvidence).toEqual([{ traitId: merged, themeIds: [theme.id], shardIds: [ids[0]] }]);
    await revertLevelUp(db, soul.id);
    expect((await getTheme(db, theme.id))!.opposes).toEqual([a.id]);
    expect((await formatEvidence(db, soul.id)).counterEvidence).toEqual([{ traitId: a.id, themeIds: [theme.id], shardIds: [ids[0]] }]);
  });
});

describe('judged counter-evidence is never support (SPEC §13)', () => {
  /** A soul whose theme "Skips the tests" (ids[0..1]) opposes trait `tests`; `docs` cites ids[2]. */
  async function opposed() {
    const { db, clock } = freshDb(T0);
    const { soul, ids } = await soulWith(db, clock, [...docker, ...unrelated]);
    const tests = await addTrait(db, soul.id, { principle: 'Runs the tests before merging', provenance: 'p' });
    const docs = await addTrait(db, soul.id, { principle: 'Documents every cache fix', provenance: 'p', citeShardIds: [ids[2]] });
    const [theme] = (await assignThemes(db, soul.id, [{ shardIds: [ids[0], ids[1]], newThemeName: 'Skips the tests' }])).themes;
    await opposeTrait(db, theme.id, tests.id);
    return { db, clock, soul, ids, tests, docs, theme };
  }

  const judgement = async (db: SoulsDb, soulId: number, traitIds: number[]) => ({
    citations: await db.store.citationsOfTraits(traitIds),
    themes: await listThemes(db, soulId),
    history: await getThemeHistory(db, [soulId]),
  });

  it('refuses citing a shard of a theme that opposes the trait, naming the theme; nothing is written', async () => {
    const { db, soul, ids, tests, docs, theme } = await opposed();
    const before = await judgement(db, soul.id, [tests.id, docs.id]);
    const one = await rejection(citeShard(db, ids[1], tests.id), ValidationError);
    expect(one).toMatchObject({
      field: 'shardId',
      message: `shard ${ids[1]} is a member of theme "Skips the tests" (#${theme.id}), which opposes trait ${tests.id}: judged counter-evidence is never support (cite other shards, or unoppose the theme first)`,
    });
    const many = await rejection(citeShards(db, tests.id, [ids[3], ids[0], ids[1]]), ValidationError);
    expect(many.field).toBe('citeShardIds');
    expect(many.message).toContain(`shards ${ids[0]}, ${ids[1]} are members of theme "Skips the tests" (#${theme.id}), which opposes trait ${tests.id}`);
    expect(await judgement(db, soul.id, [tests.id, docs.id])).toEqual(before);
    // A shard of no opposing theme is cited as ever; another trait may cite the theme's members.
    expect((await citeShards(db, tests.id, [ids[3]])).cited).toEqual([ids[3]]);
    expect((await citeShards(db, docs.id, [ids[0]])).cited).toEqual([ids[0]]);
  });

  it('refuses opposing a trait with a theme whose members it cites (a wrong id), naming the citations; nothing is recorded', async () => {
    const { db, soul, ids, tests, docs, theme } = await opposed();
    const [cache] = (await assignThemes(db, soul.id, [{ shardIds: [ids[2], ids[3]], newThemeName: 'Cache fixes' }])).themes;
    await citeShard(db, ids[3], docs.id);
    const before = await judgement(db, soul.id, [tests.id, docs.id]);
    const error = await rejection(opposeTrait(db, cache.id, docs.id), ValidationError);
    expect(error).toMatchObject({
      field: 'traitId',
      message: `trait ${docs.id} cites shards ${ids[2]}, ${ids[3]} of theme "Cache fixes" (#${cache.id}): a theme whose members a trait cites cannot oppose it (check the trait id, or take those citations back first)`,
    });
    expect(await judgement(db, soul.id, [tests.id, docs.id])).toEqual(before);
    // The theme may oppose the trait it was meant for.
    expect((await opposeTrait(db, cache.id, tests.id)).opposes).toEqual([tests.id]);
    expect((await getTheme(db, theme.id))!.opposes).toEqual([tests.id]);
  });

  it('refuses moving a shard a trait cites into a theme that opposes the trait, at that shard; nothing moves', async () => {
    const { db, soul, ids, tests, theme } = await opposed();
    await citeShard(db, ids[4], tests.id);
    const before = await judgement(db, soul.id, [tests.id]);
    const error = await rejection(assignThemes(db, soul.id, [{ shardIds: [ids[3], ids[4]], themeId: theme.id }]), ValidationError);
    expect(error).toMatchObject({
      field: 'assignments[0].shardIds[1]',
      message: `trait ${tests.id} cites shard ${ids[4]}, and theme "Skips the tests" (#${theme.id}) opposes it: judged counter-evidence is never support (take the citation back or unoppose the theme first, or choose another theme)`,
    });
    expect(await judgement(db, soul.id, [tests.id])).toEqual(before);
    expect((await assignThemes(db, soul.id, [{ shardIds: [ids[3]], themeId: theme.id }])).themes[0].memberIds).toEqual([ids[0], ids[1], ids[3]]);
  });

  it('refuses a consolidation whose merged trait would cite what a theme opposing one source holds, in the plan, its preview and the store itself', async () => {
    const { db, soul, ids, tests, docs, theme } = await opposed();
    await citeShard(db, ids[0], docs.id);
    const plan = {
      newEssence: 'A careful engineer who tests.',
      consolidations: [{ sourceTraitIds: [tests.id, docs.id], mergedPrinciple: 'Tests and documents cache fixes', mergedProvenance: 'p' }],
      promotedTraitIds: [],
      carriedTraitIds: [],
    };
    const problem = {
      field: 'consolidations[0].sourceTraitIds',
      message: `theme "Skips the tests" (#${theme.id}) opposes trait ${tests.id}, and trait ${docs.id} cites its member ${ids[0]}: the merged trait would cite judged counter-evidence (consolidate them apart, or take those citations back first)`,
    };
    const before = { ...(await judgement(db, soul.id, [tests.id, docs.id])), levels: await getLevelHistory(db, soul.id) };
    expect((await rejection(levelUp(db, soul.id, plan), LevelUpPlanError)).problems).toEqual([problem]);
    const preview = await previewLevelUp(db, soul.id, plan);
    expect([preview.valid, preview.error?.problems]).toEqual([false, [problem]]);
    // A citation made after the plan was checked is caught where the level-up is written.
    const store = await rejection(Promise.resolve().then(() => db.store.applyLevelUp(soul.id, { ...plan, activeTraitIds: [tests.id, docs.id] }, db.clock.now())), LevelUpPlanError);
    expect(store.problems).toEqual([problem]);
    expect({ ...(await judgement(db, soul.id, [tests.id, docs.id])), levels: await getLevelHistory(db, soul.id) }).toEqual(before);
  });
});

/** A small deterministic generator (mulberry32), so a failure replays. */
function rng(seed: number) {
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { int: (n: number) => Math.floor(next() * n), pick: <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] };
}

const vocabulary = [...docker, ...unrelated, 'Fixed the Docker build cache for the cron image', 'Cooked a mild curry for the whole team on monday', 'Jogged ten kilometres along the river at dusk'];

/** A write the rules may refuse (SPEC §13: counter-evidence cited as support, a change of nothing); the history goes on either way. */
async function refusable(write: Promise<unknown>): Promise<void> {
  await write.catch((error: unknown) => {
    if (!(error instanceof ValidationError || error instanceof InvalidStateError || error instanceof LevelUpPlanError)) throw error;
  });
}

describe('a randomized history never splits, merges or mixes judged themes', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  for (const seed of [1, 2, 3, 4]) {
    it(`seed ${seed}`, async () => {
      const { db, clock } = freshDb(T0, { shardFadeCitations: 2 });
      const random = rng(seed);
      const soul = await createSoul(db, { name: 'Ada', essence: 'A careful engineer.' });
      const other = await createSoul(db, { name: 'Bo', essence: 'A cook.' });
      const sealed: number[] = [];
      const themeNames = ['Builds', 'Food', 'Running', 'Plans', 'Misc'];
      let created = 0;
      let mostThemed = 0;

      const check = async (step: string) => {
        const report = await formatEvidence(db, soul.id);
        const pending = (await listShards(db, { soulId: soul.id, status: 'pending', sealed: false, first: 500 })).items.map((s) => s.id);
        const themeOf = await getShardThemes(db, soul.id, pending);
        const seen = report.clusters.flatMap((c) => c.memberIds);
        expect(seen.sort((x, y) => x - y), step).toEqual([...pending].sort((x, y) => x - y));
        const judged = new Map<number, number[]>();
        for (const id of pending) if (themeOf.has(id)) judged.set(themeOf.get(id)!, [...(judged.get(themeOf.get(id)!) ?? []), id]);
        for (const cluster of report.clusters) {
          const themes = new Set(cluster.memberIds.map((id) => themeOf.get(id) ?? null));
          expect(themes.size, `${step}: a cluster mixes ${[...themes].join(', ')}`).toBe(1);
          const [themeId] = themes;
          expect(cluster.themeId, step).toBe(themeId);
          if (themeId !== null) expect([...cluster.memberIds].sort((x, y) => x - y), step).toEqual(judged.get(themeId)!.sort((x, y) => x - y));
          else if (cluster.suggestedThemeId !== null) expect(judged.has(cluster.suggestedThemeId), step).toBe(true);
        }
        expect(report.clusters.filter((c) => c.themeId !== null)).toHaveLength(judged.size);
        mostThemed = Math.max(mostThemed, judged.size);
        expect(report.unjudgedCount, step).toBe(pending.filter((id) => !themeOf.has(id)).length);
        const verdict = (await getCrystallization(db, [soul.id])).get(soul.id)!;
        if (verdict.clusterCount !== null) expect(verdict.clusterCount, step).toBe(report.clusters.length);
      };

      for (let step = 0; step < 40; step++) {
        clock.advance(random.int(3) * DAY_MS + 1000);
        const pending = (await listShards(db, { soulId: soul.id, status: 'pending', sealed: false, first: 500 })).items.map((s) => s.id);
        const themes = await listThemes(db, soul.id);
        const action = random.int(9);
        let label = '';
        if (action <= 1 || pending.length < 3) {
          const sealedOne = random.int(5) === 0;
          const { shardIds } = await dropShards(db, [{ content: random.pick(vocabulary), source: random.pick(['chat', 'journal', 'email']), soulIds: random.int(3) === 0 ? [soul.id, other.id] : [soul.id], sealed: sealedOne }]);
          if (sealedOne) sealed.push(shardIds[0]);
          label = `drop ${shardIds[0]}`;
        } else if (action === 2 && sealed.length > 0) {
          await revealShards(db, sealed.splice(0));
          label = 'reveal';
        } else if (action === 3) {
          const traits = [await addTrait(db, soul.id, { principle: `${random.pick(vocabulary)} (step ${step})`, provenance: 'p', citeShardIds: [random.pick(pending)] })];
          traits.push(await addTrait(db, soul.id, { principle: `${random.pick(vocabulary)} (step ${step}, again)`, provenance: 'p', citeShardIds: [random.pick(pending), random.pick(pending)] }));
          if (themes.length > 0) await refusable(opposeTrait(db, random.pick(themes).id, traits[0].id));
          await citeShard(db, random.pick(pending), traits[1].id);
          await fadeExhaustedShards(db);
          label = 'cite and fade';
        } else if (action === 4) {
          const active = (await formatEvidence(db, soul.id)).traits.map((t) => t.traitId);
          if (active.length >= 2) {
            await refusable(levelUp(db, soul.id, {
              newEssence: `A careful engineer, step ${step}.`,
              consolidations: [{ sourceTraitIds: active.slice(0, 2), mergedPrinciple: `merged at step ${step}`, mergedProvenance: 'p' }],
              promotedTraitIds: [],
              carriedTraitIds: active.slice(2),
            }));
            label = 'level up';
          }
        } else if (action === 5) {
          await revertLevelUp(db, soul.id).catch((error: unknown) => {
            if (!(error instanceof InvalidStateError)) throw error;
          });
          label = 'revert level-up';
        } else if (action === 6 && themes.length > 0) {
          const chosen = pending.filter(() => random.int(3) === 0);
          if (chosen.length > 0) await refusable(unassignShards(db, soul.id, chosen));
          label = `unassign ${chosen.join(',')}`;
        } else {
          const chosen = [...new Set(pending.filter(() => random.int(2) === 0))];
          if (chosen.length > 0) {
            const toNew = created < themeNames.length && (themes.length < 2 || random.int(3) === 0);
            const assignment = toNew ? { shardIds: chosen, newThemeName: themeNames[created++] } : { shardIds: chosen, themeId: random.pick(themes).id };
            await refusable(assignThemes(db, soul.id, [assignment]));
            label = `assign ${chosen.join(',')} to ${toNew ? assignment.newThemeName : assignment.themeId}`;
          }
        }
        await check(`seed ${seed} step ${step} (${label})`);
      }
      // The history did judge: at some point two themes had pending members side by side.
      expect(mostThemed).toBeGreaterThanOrEqual(2);
    });
  }
});
