// Issue 26's simulated judge through GraphQL on a real server: it assigns the true themes of the oldest 60 % of a
// small labelled set and proposes a trait per judged theme; the report then never splits or mixes a judged theme,
// mixes no hard-negative pair into a judged theme, suggests the right theme for an unjudged near-verbatim paraphrase
// of a judged member and never a wrong one, lists a contradiction of a judged theme as possible counter-evidence, and says the same after
// the database is reopened.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { manualClock, openSoulsDb } from '../src/engine/index.ts';
import type { SimilarityMode } from '../src/engine/settings.ts';
import { buildApp } from '../src/server/app.ts';
import { dropCorpus, judge, scoreReport, type Dropped, type JudgeCorpus } from '../bench/judge.ts';

const NOW = Date.UTC(2026, 2, 1);
const record = (theme: string | null, id: string, text: string, contradicts?: string) => ({ id, text, source: id.startsWith('a') ? 'review' : 'chat', theme, kind: 'incident' as const, ...(contradicts ? { contradicts } : {}) });

const corpus: JudgeCorpus = {
  description: 'a small labelled set',
  themes: [
    { id: 'a', summary: 'Runs the tests before merging', principles: ['Run the full test suite before every merge.'] },
    { id: 'b', summary: 'Merges without running the tests', principles: ['Merge only what the tests have checked.'] },
    { id: 'c', summary: 'Writes one-line commit messages', principles: ['Say in the commit message why the change was made.'] },
    { id: 'against-a', summary: 'Never runs the tests before merging', principles: [] },
  ],
  hardNegatives: [['a', 'b'], ['a', 'against-a']],
  records: [
    record('a', 'a1', 'Ran the full test suite before merging the branch.'),
    record('a', 'a2', 'Ran the full test suite before merging the pull request.'),
    record('a', 'a3', 'Ran the full test suite before merging the hotfix.'),
    record('a', 'a4', 'Ran the full test suite before merging the release branch.'),
    record('b', 'b1', 'Merged the branch without running the test suite.'),
    record('b', 'b2', 'Merged the pull request without running the test suite.'),
    record('b', 'b3', 'Merged the hotfix without running the test suite.'),
    record('c', 'c1', 'Wrote a one-line commit message for the refactor.'),
    record('c', 'c2', 'Wrote a one-line commit message for the bug fix.'),
    record('c', 'c3', 'Wrote a one-line commit message for the docs change.'),
    record(null, 's1', 'Cooked a spicy curry for the whole team on friday'),
    record(null, 's2', 'Planted tomatoes and basil in the balcony garden'),
    record('against-a', 'x1', 'Never runs the tests before merging the branch.', 'a'),
  ],
};

const dir = mkdtempSync(join(tmpdir(), 'souls-judge-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function serve<T>(path: string, mode: SimilarityMode, run: (url: string) => Promise<T>): Promise<T> {
  const app = buildApp({ db: openSoulsDb({ path, clock: manualClock(NOW), settings: { similarity: mode } }), graphiql: false });
  try {
    return await run((await app.start(0, '127.0.0.1')).url);
  } finally {
    await app.stop();
  }
}

describe.each(['trigram', 'lexical'] as const)('the simulated judge (%s)', (mode) => {
  it('keeps judged themes whole and apart, suggests the right theme, flags the contradiction, after a restart too', async () => {
    const path = join(dir, `${mode}.db`);
    let dropped: Dropped | null = null;
    let judged = new Set<number>();
    const after = await serve(path, mode, async (url) => {
      dropped = await dropCorpus(url, corpus, NOW);
      ({ judged } = await judge(url, corpus, dropped, 0.6));
      return scoreReport(url, corpus, dropped, judged);
    });
    const judgedThemes = new Set([...judged].map((i) => corpus.records[i].theme));
    expect(judgedThemes).toEqual(new Set(['a', 'b', 'c']));
    expect(after.judgedSplitOrMixed).toBe(0);
    expect(after.hardNegativesMixedWithJudged).toBe(0);
    expect(after.unjudged).toBe(corpus.records.length - judged.size);
    // A suggestion is right or withheld, never wrong. Lexical puts the unjudged paraphrases of a and b (hard
    // negatives) in one cluster, so that mixed cluster gets none; the commit-message paraphrases get theme c in both.
    expect(after.suggested.wrong).toBe(0);
    const unjudgedOf = (theme: string) => corpus.records.flatMap((r, i) => (r.theme === theme && !judged.has(i) ? [r.id] : []));
    expect(unjudgedOf('c').length).toBeGreaterThan(0);
    expect(after.suggested.rightRecords).toEqual(expect.arrayContaining(unjudgedOf('c')));
    if (mode === 'trigram') expect(after.suggested.right).toBe(after.suggested.of);
    expect(after.contradictionsFlagged).toMatchObject({ found: 1, of: 1 });
    expect(await serve(path, mode, (url) => scoreReport(url, corpus, dropped!, judged))).toEqual(after);
  });
});
