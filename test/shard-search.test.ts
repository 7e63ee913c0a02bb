// Shards through the engine: what a write answers, and search (spellings and match). test/engine-on-postgres.test.ts
// runs it again on PostgreSQL.
import { describe, expect, it } from 'vitest';
import { ValidationError, createSoul, dropShard, dropShards, formatEvidence, getShards, searchShards, type SearchMatch, type SoulsDb } from '../src/engine/index.ts';
import { freshDb, rejection } from './support/engine.ts';

const T0 = Date.UTC(2026, 2, 1);

const texts = [
  'I apologise for the late delivery',
  'Kept apologising to the innkeeper all evening',
  'Sorry, I apologize for the mess',
  'Said sorry twice before leaving',
  'Painted the gate a bright colour',
  'Chose the color of the banner',
  'Her behaviour at the market was well organised',
  'Waited for the bell before the hour struck',
];

async function library(): Promise<{ db: SoulsDb; soulId: number; ids: number[] }> {
  const { db } = freshDb(T0);
  const soul = await createSoul(db, { name: 'Wren', essence: 'Says sorry a lot.' });
  const { shardIds } = await dropShards(
    db,
    texts.map((content, i) => ({ content, source: `source-${i % 3}`, soulIds: [soul.id], createdAt: T0 - (i + 1) * 86_400_000 })),
  );
  return { db, soulId: soul.id, ids: shardIds };
}

async function found(db: SoulsDb, query: string, match?: SearchMatch): Promise<string[]> {
  return (await searchShards(db, query, { match })).map((hit) => hit.shard.content);
}

describe('a shard write', () => {
  it('answers each shard as the store then reads it: text the database rewrites, tags in byte order, souls ascending', async () => {
    const { db } = freshDb(T0);
    const [ada, bram] = [await createSoul(db, { name: 'Ada', essence: 'e' }), await createSoul(db, { name: 'Bram', essence: 'e' })];
    // A lone surrogate is stored as U+FFFD (two tags become one); "ａ" (U+FF41) sorts before "😀" by bytes, after it in UTF-16.
    const one = await dropShard(db, 'Kept the \uD800 ledger', 'chat\uDC00', [bram.id, ada.id], { tags: ['😀', 'Ａ', 'x\uD800', 'x\uDC00'], sealed: true, createdAt: T0 - 86_400_000 });
    const many = await dropShards(db, [
      { content: 'Counted the sacks', source: 'review', soulIds: [ada.id], tags: ['b', 'a'] },
      { content: 'Counted the sacks', source: 'review', soulIds: [bram.id, ada.id, bram.id] },
    ]);
    const written = [one.shard, ...many.shards];
    const stored = await getShards(db, written.map((shard) => shard.id));
    expect(written).toEqual(written.map((shard) => stored.get(shard.id)));
    expect(one.shard).toMatchObject({ content: 'Kept the \uFFFD ledger', source: 'chat\uFFFD', tags: ['x\uFFFD', 'ａ', '😀'], soulIds: [ada.id, bram.id] });
  });
});

describe('shard search', () => {
  it('finds a word in its British and American spellings, in every form the stemmer folds', async () => {
    const { db } = await library();
    const apologies = [texts[0], texts[1], texts[2]];
    for (const query of ['apologize', 'apologise', 'apologising', 'apologizing', 'apologised']) expect((await found(db, query)).sort(), query).toEqual([...apologies].sort());
    for (const query of ['color', 'colour', 'COLOURS']) expect((await found(db, query)).sort(), query).toEqual([texts[4], texts[5]].sort());
    expect(await found(db, 'behavior organized')).toEqual([texts[6]]);
    expect(await found(db, 'apologize,')).toHaveLength(3);
  });

  it('leaves alone words that only look like one spelling of another: four is not for, hours not hors', async () => {
    const { db } = await library();
    expect(await found(db, 'four')).toEqual([]);
    expect(await found(db, 'hours')).toEqual([texts[7]]);
  });

  it('needs every word by default (ALL), and any of them with match any, those holding more words first', async () => {
    const { db } = await library();
    expect(await found(db, 'apologize sorry')).toEqual([texts[2]]);
    expect(await found(db, 'apologize sorry', 'all')).toEqual([texts[2]]);
    expect(await found(db, 'apologize cats')).toEqual([]);
    const any = await found(db, 'apologize sorry', 'any');
    expect(any[0]).toBe(texts[2]);
    expect([...any].sort()).toEqual([texts[0], texts[1], texts[2], texts[3]].sort());
    expect(await found(db, 'apologize cats', 'any')).toHaveLength(3);
    expect(await found(db, '"(* OR', 'any')).toEqual([]);
  });

  it('refuses a match other than all or any, naming the field', async () => {
    const { db } = await library();
    const error = await rejection(searchShards(db, 'sorry', { match: 'some' as SearchMatch }), ValidationError);
    expect(error.field).toBe('match');
    expect(error.message).toContain('all, any');
  });

  it('scopes evidence reports by the same spellings', async () => {
    const { db, soulId } = await library();
    expect((await formatEvidence(db, soulId, { query: 'apologize' })).shardCount).toBe(3);
    expect((await formatEvidence(db, soulId, { query: 'colour' })).shardCount).toBe(2);
  });
});
