// Issue 26: themes are topics too. An unjudged shard against a theme a trait draws on is possible counter-evidence
// for that trait, and a new principle citing shards of such a theme is a near-duplicate of that trait.
import { describe, expect, it } from 'vitest';
import { DAY_MS, ValidationError, addTrait, assignThemes, createSoul, dropShard, formatEvidence, opposeTrait, previewTraitChanges, type SoulsDb } from '../src/engine/index.ts';
import { freshDb, rejection } from './support/engine.ts';

const T0 = Date.UTC(2026, 2, 1);
const EYES = 'Keep screens easy on the eyes at night';

async function judgedSoul(db: SoulsDb) {
  const soul = await createSoul(db, { name: 'Ada', essence: 'A careful engineer.' });
  const drop = async (text: string, days: number) => (await dropShard(db, text, 'chat', [soul.id], { createdAt: T0 - days * DAY_MS })).shardId;
  const dark = [await drop('Prefers dark mode in the editor', 9), await drop('Switched the terminal to a dark colour scheme', 8)];
  const commits = [await drop('Squashed the fixup commits before review', 7), await drop('Rebased the branch onto main before review', 6)];
  const against = await drop('Never use dark mode in the editor, it hides the cursor', 1);
  const [darkTheme, commitTheme] = (await assignThemes(db, soul.id, [{ shardIds: dark, newThemeName: 'Dark mode' }, { shardIds: commits, newThemeName: 'Tidy history' }])).themes;
  return { soul, dark, commits, against, darkTheme, commitTheme };
}

describe('a theme a trait draws on is a topic for possible counter-evidence', () => {
  it('names the theme in the reason when an unjudged shard reads against it', async () => {
    const { db } = freshDb(T0);
    const { soul, dark, against, darkTheme } = await judgedSoul(db);
    const eyes = await addTrait(db, soul.id, { principle: EYES, provenance: 'judged', citeShardIds: [dark[0]] });
    const report = await formatEvidence(db, soul.id);
    const hint = report.possibleCounterEvidence.find((h) => h.shardId === against);
    expect(hint).toMatchObject({ traitId: eyes.id, shardId: against });
    expect(hint!.reason).toContain(`theme "Dark mode" (#${darkTheme.id}), which trait ${eyes.id} draws on`);
    expect(hint!.reason).toContain('negation "never"');
    expect(report.markdown).toContain(`#${against} vs trait #${eyes.id}`);
  });

  it('says nothing for a theme the trait does not cite; a theme it cites cannot oppose it (SPEC §13)', async () => {
    const { db } = freshDb(T0);
    const { soul, commits, against } = await judgedSoul(db);
    await addTrait(db, soul.id, { principle: 'Keep a tidy history', provenance: 'judged', citeShardIds: [commits[0]] });
    expect((await formatEvidence(db, soul.id)).possibleCounterEvidence.filter((h) => h.shardId === against)).toEqual([]);
    const { db: db2 } = freshDb(T0);
    const second = await judgedSoul(db2);
    const eyes = await addTrait(db2, second.soul.id, { principle: EYES, provenance: 'judged', citeShardIds: [second.dark[0]] });
    expect((await rejection(opposeTrait(db2, second.darkTheme.id, eyes.id), ValidationError)).field).toBe('traitId');
  });
});

describe('a principle citing a theme another trait draws on is a near-duplicate', () => {
  it('warns in the add dry run naming the trait, the theme and the score', async () => {
    const { db } = freshDb(T0);
    const { soul, dark, commits, darkTheme } = await judgedSoul(db);
    const eyes = await addTrait(db, soul.id, { principle: EYES, provenance: 'judged', citeShardIds: [dark[0]] });
    const preview = await previewTraitChanges(db, soul.id, { add: [{ principle: 'Choose low-glare colours', provenance: 'p', citeShardIds: [dark[1]] }] });
    expect(preview.warnings).toHaveLength(1);
    expect(preview.warnings[0]).toMatchObject({ kind: 'NEAR_DUPLICATE', traitIds: [eyes.id] });
    expect(preview.warnings[0].message).toMatch(new RegExp(`^add\\[0\\] cites shards of theme "Dark mode" \\(#${darkTheme.id}\\), which trait ${eyes.id} already draws on \\(trigram Jaccard 0\\.\\d\\d\\)`));
    const elsewhere = await previewTraitChanges(db, soul.id, { add: [{ principle: 'Choose low-glare colours', provenance: 'p', citeShardIds: [commits[0]] }] });
    expect(elsewhere.warnings).toEqual([]);
  });

  it('warns in the revise dry run when the revised trait’s citations lie in that theme', async () => {
    const { db } = freshDb(T0);
    const { soul, dark, darkTheme } = await judgedSoul(db);
    const eyes = await addTrait(db, soul.id, { principle: EYES, provenance: 'judged', citeShardIds: [dark[0]] });
    const glare = await addTrait(db, soul.id, { principle: 'Choose low-glare colours', provenance: 'p', citeShardIds: [dark[1]] });
    const revise = { revise: [{ traitId: glare.id, principle: 'Pick calm, low-glare palettes' }] };
    expect((await previewTraitChanges(db, soul.id, revise)).warnings.map((w) => [w.kind, w.traitIds])).toEqual([['NEAR_DUPLICATE', [eyes.id]]]);
    // The theme cannot oppose the trait drawing on it, so it stays a near-duplicate's theme (SPEC §13).
    await rejection(opposeTrait(db, darkTheme.id, eyes.id), ValidationError);
  });
});
