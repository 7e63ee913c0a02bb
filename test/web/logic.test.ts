// The character sheet's pure helpers, run under Node: the essence word diff, the evidence chart's weekly bins and
// the roster's search, order and address. The browser tests (screens.test.ts) show them on screen.
import { describe, expect, it } from 'vitest';
import { diffWords } from '../../web/src/diff.ts';
import { binEvidence } from '../../web/src/chart-bins.ts';
import { matchesSoul, readRosterParams, rosterHash } from '../../web/src/roster-params.ts';
import { needsText } from '../../web/src/format.ts';
import { traitNames } from '../../web/src/fields.ts';

const sides = (before: string, after: string) => {
  const parts = diffWords(before, after);
  return {
    parts,
    before: parts.filter((p) => p.kind !== 'added').map((p) => p.text).join(''),
    after: parts.filter((p) => p.kind !== 'removed').map((p) => p.text).join(''),
  };
};

describe('diffWords', () => {
  it('marks whole words and keeps punctuation apart', () => {
    expect(diffWords('She trusts ledgers over rumours.', 'She trusts ledgers over rumours and checks twice.')).toEqual([
      { kind: 'same', text: 'She trusts ledgers over rumours' },
      { kind: 'added', text: ' and checks twice' },
      { kind: 'same', text: '.' },
    ]);
  });

  it('reads a changed stretch as one removal and one addition, not fragments around a kept space', () => {
    expect(diffWords('a X Y b', 'a P Q b')).toEqual([
      { kind: 'same', text: 'a ' },
      { kind: 'removed', text: 'X Y' },
      { kind: 'added', text: 'P Q' },
      { kind: 'same', text: ' b' },
    ]);
  });

  it('rebuilds both texts exactly and is deterministic, on random edits', () => {
    const vocabulary = ['the', 'ledger', 'Mira', 'counts', 'twice,', 'never', 'once.', 'stores', 'rumour', '—', 'café', 'don’t'];
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const text = (n: number) => Array.from({ length: n }, () => vocabulary[Math.floor(random() * vocabulary.length)]).join(random() < 0.2 ? '  ' : ' ');
    for (let i = 0; i < 300; i++) {
      const before = text(Math.floor(random() * 30));
      const after = random() < 0.5 ? text(Math.floor(random() * 30)) : before.replace(/ledger/g, 'book').concat(' Added at the end.');
      const result = sides(before, after);
      expect(result.before).toBe(before);
      expect(result.after).toBe(after);
      expect(diffWords(before, after)).toEqual(result.parts);
      // Runs of one kind are joined: no two neighbours share a kind.
      for (let k = 1; k < result.parts.length; k++) expect(result.parts[k].kind).not.toBe(result.parts[k - 1].kind);
    }
  });

  it('falls back to one removal and one addition for essences too long to compare word by word', () => {
    const before = Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' ');
    const after = Array.from({ length: 3000 }, (_, i) => `v${i}`).join(' ');
    const result = sides(`Start ${before} end`, `Start ${after} end`);
    expect(result.before).toBe(`Start ${before} end`);
    expect(result.after).toBe(`Start ${after} end`);
    expect(result.parts.map((p) => p.kind)).toEqual(['same', 'removed', 'added', 'same']);
  });
});

describe('binEvidence', () => {
  const DAY = 86_400_000;
  const now = Date.UTC(2026, 10, 23, 12);
  const at = (daysAgo: number) => new Date(now - daysAgo * DAY).toISOString();

  it('puts each shard in its week, newest week last, and sums the sources beyond the fifth as other sources', () => {
    const points = [
      ...['a', 'a', 'a', 'b', 'b', 'c', 'd', 'e', 'f'].map((source, i) => ({ source, createdAt: at(i) })),
      { source: 'a', createdAt: at(13) },
      { source: 'a', createdAt: at(83) },
      { source: 'a', createdAt: at(85) }, // outside the 12 weeks
    ];
    const chart = binEvidence(points, now);
    expect(chart.series).toEqual(['a', 'b', 'c', 'd', 'other sources']);
    expect(chart.weeks).toHaveLength(12);
    expect(chart.weeks[11].total).toBe(7);
    // e (7 days ago) and f (8 days ago) fall in the week before
    expect(chart.weeks[11].counts.has('other sources')).toBe(false);
    expect(chart.weeks[10].counts.get('other sources')).toBe(2);
    expect(chart.weeks[10].counts.get('a')).toBe(1);
    expect(chart.weeks[0].counts.get('a')).toBe(1);
    expect(chart.total).toBe(11);
    expect(chart.totals.get('a')).toBe(5);
    expect(chart.max).toBe(7);
  });
});

describe('the roster helpers', () => {
  it('finds souls by every word of the query, case and accents folded', () => {
    const soul = { name: 'Brannoc', description: 'Blacksmith of Harrow’s Ford, maker of café tables' };
    expect(matchesSoul(soul, 'SMITH')).toBe(true);
    expect(matchesSoul(soul, 'cafe ford')).toBe(true);
    expect(matchesSoul(soul, 'smith mira')).toBe(false);
    expect(matchesSoul(soul, '   ')).toBe(true);
  });

  it('keeps the search, order and page in the hash, and reads back what it wrote', () => {
    expect(readRosterParams('#/')).toEqual({ q: '', sort: 'READINESS', page: 1 });
    expect(rosterHash({ q: '', sort: 'READINESS', page: 1 })).toBe('#/');
    const params = { q: 'the keep', sort: 'UPDATED' as const, page: 3 };
    expect(rosterHash(params)).toBe('#/?q=the+keep&sort=updated&page=3');
    expect(readRosterParams(rosterHash(params))).toEqual(params);
    expect(readRosterParams('#/?sort=nonsense&page=-2')).toEqual({ q: '', sort: 'READINESS', page: 1 });
  });

  it('reads the server’s fixed-precision spans as people do, and names traits by principle', () => {
    expect(needsText([{ message: 'shards observed more than a day apart (the oldest and newest are 0.00 days apart)' }, { message: '2 more shards (1 of the 3 needed)' }])).toBe(
      'shards observed more than a day apart (the oldest and newest are 0 days apart); 2 more shards (1 of the 3 needed)',
    );
    expect(needsText([{ message: 'apart by 0.50 days' }])).toBe('apart by 0.5 days');
    const traits = [{ id: '24', principle: 'Keep the forge lit.' }];
    expect(traitNames('trait 24 is promoted; trait 240 is not', traits)).toBe('trait “Keep the forge lit.” is promoted; trait 240 is not');
  });
});
