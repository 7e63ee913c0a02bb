// Issue 34: a scripted refiner following the skills drives a whole refinement cycle through MCP over HTTP
// (bench/agent-cycle.ts). Asserted here: its outcome, on both paths, never its size (the bench prints that).
import { afterEach, describe, expect, it } from 'vitest';
import { formatEvidence, getCitations, getLevelHistory, getSoul, listThemes, listTraits } from '../src/engine/index.ts';
import { runAgentCycle, type CycleResult } from '../bench/agent-cycle.ts';
import { SOUL, THEMES, type Label } from '../bench/agent-corpus.ts';

let running: CycleResult | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

describe('a refinement cycle over MCP', { timeout: 120_000 }, () => {
  it.each(['before', 'after'] as const)('%s: themes honoured, the contradiction opposed, the level-up applied and reverted by id', async (path) => {
    const cycle = (running = await runAgentCycle(path));
    const { db, soulId, startingTraitId } = cycle;
    const labels = Object.keys(THEMES) as Label[];

    // Every labelled shard of both waves sits in its label's theme, and each theme holds exactly those.
    const themes = await listThemes(db, soulId);
    expect(themes.map((t) => t.name).sort()).toEqual(labels.map((l) => THEMES[l].name).sort());
    for (const label of labels) {
      const theme = themes.find((t) => t.id === cycle.themeIds[label])!;
      expect([...theme.memberIds].sort((a, b) => a - b), label).toEqual([...cycle.shardIds[label]].sort((a, b) => a - b));
    }

    // The contradiction opposes the starting trait, which cites none of it; its cluster contradicts that trait.
    const contradiction = themes.find((t) => t.id === cycle.themeIds.X)!;
    expect(contradiction.opposes).toEqual([startingTraitId]);
    const active = await listTraits(db, soulId, { status: 'active' });
    const citations = await getCitations(db, active.map((t) => t.id));
    expect(citations.filter((c) => cycle.shardIds.X.includes(c.shardId))).toEqual([]);
    const report = await formatEvidence(db, soulId);
    expect(report.clusters.find((c) => c.themeId === contradiction.id)!.alignment).toMatchObject({ kind: 'CONTRADICTING', traitId: startingTraitId });

    // A trait per theme that calls for one, citing all of its members; the starting trait cites all of theme A.
    const citedBy = (traitId: number) => citations.filter((c) => c.traitId === traitId).map((c) => c.shardId).sort((a, b) => a - b);
    expect(citedBy(startingTraitId)).toEqual([...cycle.shardIds.A].sort((a, b) => a - b));
    for (const label of labels.filter((l) => THEMES[l].principle !== null)) {
      const trait = active.find((t) => t.id === cycle.traitIds[label]);
      expect(trait?.principle, label).toBe(THEMES[label].principle);
      expect(citedBy(trait!.id), label).toEqual([...cycle.shardIds[label]].sort((a, b) => a - b));
    }

    // The level-up was applied, then reverted by its id: the soul is back at its level and essence, the promoted trait active.
    const history = await getLevelHistory(db, soulId);
    expect(history.map((e) => ({ id: e.id, reverted: e.revertedAt !== null, promoted: e.promoted }))).toEqual([{ id: cycle.levelEventId, reverted: true, promoted: [cycle.traitIds.E] }]);
    const soul = (await getSoul(db, soulId))!;
    expect({ level: soul.level, essence: soul.essence }).toEqual({ level: 0, essence: SOUL.essence });
    expect(active.map((t) => t.id)).toContain(cycle.traitIds.E);
  });
});
