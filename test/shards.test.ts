import { describe, expect, it } from 'vitest';
import {
  addTrait,
  citeShard,
  createSoul,
  DAY_MS,
  dropShard,
  dropShards,
  fadeExhaustedShards,
  formatEvidence,
  getCrystallization,
  getShard,
  listShards,
  NotFoundError,
  pendingShardCount,
  retireSoul,
  revealShards,
  searchShards,
  shardCountsBySource,
  shardCountsByTag,
  shardCountsPerSoul,
  ValidationError,
  type Shard,
  type SoulsDb,
} from '../src/engine/index.ts';
import { freshDb } from './support/engine.ts';

const NOW = Date.UTC(2026, 2, 1);

const fresh = (settings: Record<string, unknown> = {}) => freshDb(NOW, settings);

let soulCounter = 0;
async function soul(db: SoulsDb, name = `Soul ${++soulCounter}`): Promise<number> {
  return (await createSoul(db, { name, essence: `The essence of ${name}.` })).id;
}

/** Every shard row, whatever its status, seal or age. */
async function allShardCount(db: SoulsDb): Promise<number> {
  const pending = await listShards(db, { includeExpired: true });
  const faded = await listShards(db, { status: 'faded' });
  return pending.totalCount + faded.totalCount;
}

/** Asserts `work` rejects with an error of `type` whose listed properties match. */
async function rejects<T extends Error>(work: Promise<unknown>, type: new (...args: never[]) => T, props: Partial<Record<keyof T, unknown>>): Promise<T> {
  const error = await work.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  expect(error).toMatchObject(props);
  return error as T;
}

async function contentOf(db: SoulsDb, shardId: number): Promise<string> {
  return (await getShard(db, shardId))!.content;
}

describe('dropShard normalization', () => {
  it.each([
    ['  hello   world  ', 'hello world'],
    ['  tabs\tand\nnew\r\nlines  ', 'tabs and new lines'],
    ['-- • Skipped the tests!!!', 'Skipped the tests!'],
    ['Did it work???', 'Did it work?'],
    ['*** note ***', 'note'],
    ['— note —', 'note'],
    ['> quoted line.', 'quoted line.'],
    ['!!!Wow', 'Wow'],
    ['//path/thing//', 'path/thing'],
    ['- [x] done', '[x] done'],
    ['Ends with ellipsis...', 'Ends with ellipsis.'],
    ['a -> b', 'a -> b'],
    ['(parens)', '(parens)'],
    ['"quoted"', '"quoted"'],
    ['Null\u0000byte here', 'Nullbyte here'],
  ])('stores %j as %j', async (raw, stored) => {
    const { db } = fresh();
    const id = await soul(db);
    const { shardId } = await dropShard(db, raw, 'chat', [id]);
    expect(await contentOf(db, shardId)).toBe(stored);
  });

  it.each(['', '   ', '\n\t', '...', '!!!', '— • —', '***', '?!?', '\u0000'])('refuses %j: empty once normalized, nothing written', async (raw) => {
    const { db } = fresh();
    const id = await soul(db);
    await rejects(dropShard(db, raw, 'chat', [id]), ValidationError, { field: 'content' });
    expect(await allShardCount(db)).toBe(0);
  });

  it('trims the source and refuses an empty one', async () => {
    const { db } = fresh();
    const id = await soul(db);
    const { shardId } = await dropShard(db, 'A note', '  Slack export  ', [id]);
    expect((await getShard(db, shardId))!.source).toBe('Slack export');
    for (const source of ['', '   ', '\t\n']) await rejects(dropShard(db, 'A note', source, [id]), ValidationError, { field: 'source' });
    expect(await allShardCount(db)).toBe(1);
  });

  it('lowercases, trims and deduplicates tags and drops empty ones', async () => {
    const { db } = fresh();
    const id = await soul(db);
    const { shardId } = await dropShard(db, 'A tagged note', 'chat', [id], { tags: ['  Work ', 'work', 'WORK', '', '   ', 'Home  Life', 'urgent'] });
    expect((await getShard(db, shardId))!.tags.toSorted()).toEqual(['home life', 'urgent', 'work']);
  });

  it('an unknown soul id is NotFoundError(Soul) and nothing is written, even when other ids exist', async () => {
    const { db } = fresh();
    const id = await soul(db);
    await dropShard(db, 'An existing note', 'chat', [id]);
    const error = await rejects(dropShard(db, 'A note', 'chat', [id, 9999]), NotFoundError, { entity: 'Soul', id: '9999' });
    expect(error.message).toContain('9999');
    expect((await listShards(db)).totalCount).toBe(1);
    expect(await allShardCount(db)).toBe(1);
    expect(await pendingShardCount(db, id)).toBe(1);
  });

  it('needs at least one soul, and attributes a repeated id once', async () => {
    const { db } = fresh();
    const id = await soul(db);
    await rejects(dropShard(db, 'A note', 'chat', []), ValidationError, { field: 'soulIds' });
    const { shardId } = await dropShard(db, 'A note', 'chat', [id, id]);
    expect((await getShard(db, shardId))!.soulIds).toEqual([id]);
    expect(await pendingShardCount(db, id)).toBe(1);
  });

  it('dormant souls may receive shards', async () => {
    const { db } = fresh();
    const id = await soul(db);
    await retireSoul(db, id);
    const { shardId, readySoulIds } = await dropShard(db, 'A note for a sleeping soul', 'chat', [id]);
    expect(readySoulIds).toEqual([]);
    expect((await getShard(db, shardId))!.soulIds).toEqual([id]);
    expect(await pendingShardCount(db, id)).toBe(1);
  });

  it('createdAt: a historical import keeps its time; now is accepted; the future is refused', async () => {
    const { db } = fresh();
    const id = await soul(db);
    const past = await dropShard(db, 'An imported note', 'import', [id], { createdAt: NOW - 30 * DAY_MS });
    expect(await getShard(db, past.shardId)).toMatchObject({ createdAt: NOW - 30 * DAY_MS, updatedAt: NOW, status: 'pending', sealed: false });
    const atNow = await dropShard(db, 'A note made now', 'import', [id], { createdAt: NOW });
    expect((await getShard(db, atNow.shardId))!.createdAt).toBe(NOW);
    await rejects(dropShard(db, 'From the future', 'import', [id], { createdAt: NOW + 1 }), ValidationError, { field: 'createdAt' });
    await rejects(dropShard(db, 'Not a time', 'import', [id], { createdAt: 1.5 }), ValidationError, { field: 'createdAt' });
    expect(await allShardCount(db)).toBe(2);
  });

  it('content is bounded by maxShardContentBytes, measured in UTF-8 bytes after normalization', async () => {
    const { db } = fresh({ maxShardContentBytes: 16 });
    const id = await soul(db);
    await dropShard(db, 'a'.repeat(16), 'chat', [id]);
    await dropShard(db, `   ${'b'.repeat(16)}   `, 'chat', [id]);
    await dropShard(db, 'é'.repeat(8), 'chat', [id]);
    // Three and four bytes a character: 15 and 16 bytes pass, 18 and 20 do not.
    await dropShard(db, '€'.repeat(5), 'chat', [id]);
    await dropShard(db, '𝄞'.repeat(4), 'chat', [id]);
    await rejects(dropShard(db, 'c'.repeat(17), 'chat', [id]), ValidationError, { field: 'content' });
    await rejects(dropShard(db, 'é'.repeat(9), 'chat', [id]), ValidationError, { field: 'content' });
    await rejects(dropShard(db, '€'.repeat(6), 'chat', [id]), ValidationError, { field: 'content' });
    await rejects(dropShard(db, '𝄞'.repeat(5), 'chat', [id]), ValidationError, { field: 'content' });
    await rejects(dropShard(db, 'x'.repeat(100_000), 'chat', [id]), ValidationError, { field: 'content' });
    expect(await allShardCount(db)).toBe(5);
  });

  it('source, tags and soul names are bounded in code points, not UTF-16 units', async () => {
    const { db } = fresh({ maxSourceLength: 4, maxTagLength: 3, maxNameLength: 3 });
    const id = (await createSoul(db, { name: '𝄞𝄞𝄞', essence: 'Counted by code point.' })).id;
    await rejects(createSoul(db, { name: '𝄞𝄞𝄞𝄞', essence: 'One too many.' }), ValidationError, { field: 'name' });
    await dropShard(db, 'Four clefs', '𝄞𝄞𝄞𝄞', [id], { tags: ['𝄞𝄞𝄞'] });
    await rejects(dropShard(db, 'Five clefs', '𝄞𝄞𝄞𝄞𝄞', [id]), ValidationError, { field: 'source' });
    await rejects(dropShard(db, 'A long tag', 'chat', [id], { tags: ['𝄞𝄞𝄞𝄞'] }), ValidationError, { field: 'tags[0]' });
    expect(await allShardCount(db)).toBe(1);
  });

  it('a tag is bounded by maxTagLength and a shard by maxTagsPerShard', async () => {
    const { db } = fresh({ maxTagLength: 5, maxTagsPerShard: 3 });
    const id = await soul(db);
    const ok = await dropShard(db, 'Within bounds', 'chat', [id], { tags: [' abcde ', 'A', 'a', 'b', ''] });
    expect((await getShard(db, ok.shardId))!.tags.toSorted()).toEqual(['a', 'abcde', 'b']);
    await rejects(dropShard(db, 'Tag too long', 'chat', [id], { tags: ['ok', 'toolong'] }), ValidationError, { field: 'tags[1]' });
    await rejects(dropShard(db, 'Too many tags', 'chat', [id], { tags: ['a', 'b', 'c', 'd'] }), ValidationError, { field: 'tags' });
    expect(await allShardCount(db)).toBe(1);
  });
});

describe('dropShards', () => {
  it('writes the batch in order and returns the ids in input order', async () => {
    const { db } = fresh();
    const a = await soul(db);
    const b = await soul(db);
    const { shardIds } = await dropShards(db, [
      { content: ' first ', source: 'chat', soulIds: [a] },
      { content: 'second', source: 'email', soulIds: [a, b], tags: ['X'] },
      { content: 'third', source: 'journal', soulIds: [b], sealed: true, createdAt: NOW - DAY_MS },
    ]);
    const shards = await Promise.all(shardIds.map((id) => getShard(db, id)));
    expect(shards.map((s) => [s!.content, s!.source, s!.soulIds, s!.tags, s!.sealed, s!.createdAt])).toEqual([
      ['first', 'chat', [a], [], false, NOW],
      ['second', 'email', [a, b], ['x'], false, NOW],
      ['third', 'journal', [b], [], true, NOW - DAY_MS],
    ]);
  });

  it('validates the whole batch before any write: an invalid item names its index and nothing is written', async () => {
    const { db } = fresh();
    const id = await soul(db);
    const good = { content: 'Fine', source: 'chat', soulIds: [id] };
    await rejects(dropShards(db, [good, good, { ...good, content: ' ... ' }, good]), ValidationError, { field: 'shards[2].content' });
    await rejects(dropShards(db, [good, { ...good, createdAt: NOW + 1 }]), ValidationError, { field: 'shards[1].createdAt' });
    await rejects(dropShards(db, [good, good, good, { ...good, source: ' ' }]), ValidationError, { field: 'shards[3].source' });
    await rejects(dropShards(db, [{ ...good, tags: ['a', 7 as unknown as string] }]), ValidationError, { field: 'shards[0].tags[1]' });
    expect(await allShardCount(db)).toBe(0);
  });

  it('an unknown soul anywhere in the batch writes nothing', async () => {
    const { db } = fresh();
    const id = await soul(db);
    await rejects(
      dropShards(db, [
        { content: 'One', source: 'chat', soulIds: [id] },
        { content: 'Two', source: 'chat', soulIds: [id, 4242] },
      ]),
      NotFoundError,
      { entity: 'Soul', id: '4242' },
    );
    expect(await allShardCount(db)).toBe(0);
  });

  it('a batch over maxBatchSize is refused whole; one at the limit is accepted', async () => {
    const { db } = fresh({ maxBatchSize: 3 });
    const id = await soul(db);
    const item = (i: number) => ({ content: `Note ${i}`, source: 'chat', soulIds: [id] });
    await rejects(dropShards(db, [item(1), item(2), item(3), item(4)]), ValidationError, { field: 'shards' });
    expect(await allShardCount(db)).toBe(0);
    expect((await dropShards(db, [item(1), item(2), item(3)])).shardIds).toHaveLength(3);
    expect(await allShardCount(db)).toBe(3);
  });

  it('an empty batch writes nothing; a non-list is refused', async () => {
    const { db } = fresh();
    expect(await dropShards(db, [])).toEqual({ shardIds: [], shards: [], readySoulIds: [] });
    await rejects(dropShards(db, 'nope' as unknown as []), ValidationError, { field: 'shards' });
  });
});

describe('sealed shards', () => {
  it('are invisible to crystallization, evidence and search until revealed, then pending, unsealed and counted', async () => {
    const { db } = fresh();
    const id = await soul(db);
    await dropShard(db, 'Visible note about the garden shed', 'chat', [id], { createdAt: NOW - 2 * DAY_MS });
    await dropShard(db, 'Another visible note about lunch', 'email', [id]);
    const s1 = await dropShard(db, 'Hidden diary entry about volcanoes', 'diary', [id], { sealed: true });
    const s2 = await dropShard(db, 'Hidden diary entry about glaciers', 'diary', [id], { sealed: true });

    expect((await getCrystallization(db, [id])).get(id)).toMatchObject({ pendingCount: 2, distinctSources: 2 });
    expect(await pendingShardCount(db, id)).toBe(2);
    expect((await formatEvidence(db, id)).shardCount).toBe(2);
    expect(await searchShards(db, 'volcanoes')).toEqual([]);
    expect((await shardCountsBySource(db, [id])).get(id)).toEqual([
      { source: 'chat', count: 1 },
      { source: 'email', count: 1 },
    ]);

    expect((await listShards(db)).totalCount).toBe(4);
    expect((await listShards(db, { sealed: null })).totalCount).toBe(4);
    expect((await listShards(db, { sealed: true })).items.map((s) => s.id).toSorted()).toEqual([s1.shardId, s2.shardId]);
    expect((await listShards(db, { sealed: false })).totalCount).toBe(2);

    // An unknown id refuses the whole reveal.
    await rejects(revealShards(db, [s1.shardId, 777]), NotFoundError, { entity: 'Shard', id: '777' });
    expect((await getShard(db, s1.shardId))!.sealed).toBe(true);

    const revealed = await revealShards(db, [s1.shardId, s2.shardId]);
    expect(revealed.shardIds).toEqual([s1.shardId, s2.shardId]);
    for (const sid of revealed.shardIds) expect(await getShard(db, sid)).toMatchObject({ sealed: false, status: 'pending' });
    expect((await getCrystallization(db, [id])).get(id)).toMatchObject({ pendingCount: 4, distinctSources: 3 });
    expect(await pendingShardCount(db, id)).toBe(4);
    expect((await formatEvidence(db, id)).shardCount).toBe(4);
    expect((await searchShards(db, 'volcanoes')).map((h) => h.shard.id)).toEqual([s1.shardId]);
    expect((await listShards(db, { sealed: true })).totalCount).toBe(0);
    expect((await listShards(db, { sealed: false })).totalCount).toBe(4);
  });
});

describe('expiry is a read-time cutoff', () => {
  it('a shard older than shardExpiryDays drops out of every read, yet the row stays', async () => {
    const { db, clock } = fresh({ shardExpiryDays: 10 });
    const id = await soul(db);
    const old = await dropShard(db, 'Painted the fence bright yellow', 'chat', [id], { tags: ['home'] });
    clock.advance(5 * DAY_MS);
    const recent = await dropShard(db, 'Fixed the leaking kitchen tap', 'email', [id], { tags: ['home'] });

    clock.set(NOW + 10 * DAY_MS - 1);
    expect(await pendingShardCount(db, id)).toBe(2);
    expect((await searchShards(db, 'fence')).map((h) => h.shard.id)).toEqual([old.shardId]);

    clock.set(NOW + 10 * DAY_MS);
    expect(await pendingShardCount(db, id)).toBe(1);
    expect((await getCrystallization(db, [id])).get(id)).toMatchObject({ pendingCount: 1, distinctSources: 1 });
    expect(await shardCountsPerSoul(db)).toEqual([{ soulId: id, pending: 1 }]);
    expect((await shardCountsBySource(db, [id])).get(id)).toEqual([{ source: 'email', count: 1 }]);
    expect(await shardCountsByTag(db, id)).toEqual([{ tag: 'home', count: 1 }]);
    expect(await searchShards(db, 'fence')).toEqual([]);
    expect((await listShards(db)).items.map((s) => s.id)).toEqual([recent.shardId]);
    expect((await formatEvidence(db, id)).shardCount).toBe(1);

    expect(await getShard(db, old.shardId)).toMatchObject({ content: 'Painted the fence bright yellow', status: 'pending' });
    const all = await listShards(db, { includeExpired: true });
    expect(all.items.map((s) => s.id)).toEqual([recent.shardId, old.shardId]);
    expect(all.totalCount).toBe(2);
  });

  it('a historical import older than the cutoff is stored but never considered', async () => {
    const { db } = fresh({ shardExpiryDays: 10 });
    const id = await soul(db);
    const { shardId } = await dropShard(db, 'Ancient history', 'import', [id], { createdAt: NOW - 11 * DAY_MS });
    expect(await pendingShardCount(db, id)).toBe(0);
    expect(await getShard(db, shardId)).not.toBeNull();
    expect((await listShards(db, { includeExpired: true })).totalCount).toBe(1);
  });
});

describe('fadeExhaustedShards', () => {
  async function citedWorld(settings: Record<string, unknown> = {}) {
    const { db } = fresh(settings);
    const a = await soul(db);
    const b = await soul(db);
    const [tA1, tA2] = [
      await addTrait(db, a, { principle: 'Keeps notes tidy', provenance: 'observed' }),
      await addTrait(db, a, { principle: 'Answers email fast', provenance: 'observed' }),
    ];
    const tB1 = await addTrait(db, b, { principle: 'Bakes bread on sundays', provenance: 'observed' });
    const s1 = (await dropShard(db, 'Sorted the notebook by topic', 'chat', [a])).shardId;
    const s2 = (await dropShard(db, 'Replied to every email before noon', 'email', [a])).shardId;
    const s3 = (await dropShard(db, 'Shared sourdough with the neighbours', 'chat', [a, b])).shardId;
    const s4 = (await dropShard(db, 'Labelled the spice jars', 'journal', [a])).shardId;
    await citeShard(db, s1, tA1.id);
    await citeShard(db, s1, tA1.id); // the same trait twice counts once
    await citeShard(db, s2, tA1.id);
    await citeShard(db, s2, tA2.id); // two traits of one soul
    await citeShard(db, s3, tA1.id);
    await citeShard(db, s3, tB1.id); // two traits of different souls
    await citeShard(db, s4, tA2.id);
    return { db, a, b, s1, s2, s3, s4 };
  }

  it('fades shards cited by at least shardFadeCitations distinct traits and returns the count', async () => {
    const { db, a, b, s1, s2, s3, s4 } = await citedWorld();
    expect(await pendingShardCount(db, a)).toBe(4);
    expect(await pendingShardCount(db, b)).toBe(1);

    expect((await fadeExhaustedShards(db)).fadedCount).toBe(2);
    expect((await getShard(db, s1))!.status).toBe('pending');
    expect((await getShard(db, s2))!.status).toBe('faded');
    expect((await getShard(db, s3))!.status).toBe('faded');
    expect((await getShard(db, s4))!.status).toBe('pending');

    expect(await pendingShardCount(db, a)).toBe(2);
    expect(await pendingShardCount(db, b)).toBe(0);
    expect((await getCrystallization(db, [a])).get(a)!.pendingCount).toBe(2);
    expect((await formatEvidence(db, a)).shardCount).toBe(2);
    expect(await searchShards(db, 'email')).toEqual([]);
    expect(await searchShards(db, 'sourdough')).toEqual([]);
    expect((await searchShards(db, 'notebook')).map((h) => h.shard.id)).toEqual([s1]);
    const faded = await listShards(db, { status: 'faded' });
    expect(faded.items.map((s) => s.id)).toEqual([s3, s2]);
    expect(faded.totalCount).toBe(2);
    expect((await listShards(db)).items.map((s) => s.id).toSorted((x, y) => x - y)).toEqual([s1, s4]);

    expect((await fadeExhaustedShards(db)).fadedCount).toBe(0);
  });

  it('follows the shardFadeCitations knob', async () => {
    const { db, a } = await citedWorld({ shardFadeCitations: 3 });
    expect((await fadeExhaustedShards(db)).fadedCount).toBe(0);
    expect(await pendingShardCount(db, a)).toBe(4);
  });
});

describe('searchShards', () => {
  it('ranks by bm25, the better match first, and requires every word', async () => {
    const { db } = fresh();
    const id = await soul(db);
    const weak = await dropShard(db, 'Wrote a long essay about gardening, cooking, travel, music and one deploy', 'chat', [id]);
    const strong = await dropShard(db, 'Deploy script broke the deploy pipeline during deploy', 'chat', [id]);
    await dropShard(db, 'Nothing relevant here at all', 'chat', [id]);
    const hits = await searchShards(db, 'deploy');
    expect(hits.map((h) => h.shard.id)).toEqual([strong.shardId, weak.shardId]);
    expect(hits[0].score).toBeGreaterThan(hits[1].score);
    expect(hits[0].shard.content).toBe('Deploy script broke the deploy pipeline during deploy');
    expect((await searchShards(db, 'deploy pipeline')).map((h) => h.shard.id)).toEqual([strong.shardId]);
    expect((await searchShards(db, 'deploy', { first: 1 })).map((h) => h.shard.id)).toEqual([strong.shardId]);
  });

  it('uses porter stemming', async () => {
    const { db } = fresh();
    const id = await soul(db);
    const log = await dropShard(db, 'Checked the log before lunch', 'chat', [id]);
    const deployed = await dropShard(db, 'The service deployed cleanly', 'chat', [id]);
    expect((await searchShards(db, 'logs')).map((h) => h.shard.id)).toEqual([log.shardId]);
    expect((await searchShards(db, 'deploying')).map((h) => h.shard.id)).toEqual([deployed.shardId]);
  });

  it('respects the soul filter and leaves out faded, sealed and expired shards', async () => {
    const { db, clock } = fresh({ shardExpiryDays: 10 });
    const a = await soul(db);
    const b = await soul(db);
    const expired = await dropShard(db, 'Kiwi tasting notes from the market', 'chat', [a], { createdAt: NOW - 10 * DAY_MS });
    const ofA = await dropShard(db, 'Kiwi smoothie for breakfast', 'chat', [a]);
    const ofB = await dropShard(db, 'Kiwi jam recipe from grandma', 'email', [b]);
    const shared = await dropShard(db, 'Kiwi bird documentary evening', 'email', [a, b]);
    await dropShard(db, 'Kiwi sorbet hidden for later', 'chat', [a], { sealed: true });
    const toFade = await dropShard(db, 'Kiwi orchard visit', 'chat', [a]);
    const t1 = await addTrait(db, a, { principle: 'Loves kiwis', provenance: 'p' });
    const t2 = await addTrait(db, a, { principle: 'Likes fruit', provenance: 'p' });
    await citeShard(db, toFade.shardId, t1.id);
    await citeShard(db, toFade.shardId, t2.id);
    expect((await fadeExhaustedShards(db)).fadedCount).toBe(1);

    const ids = async (soulId?: number) => (await searchShards(db, 'kiwi', { soulId })).map((h) => h.shard.id).toSorted((x, y) => x - y);
    expect(await ids()).toEqual([ofA.shardId, ofB.shardId, shared.shardId]);
    expect(await ids(a)).toEqual([ofA.shardId, shared.shardId]);
    expect(await ids(b)).toEqual([ofB.shardId, shared.shardId]);
    // The expired shard comes back once the clock is moved back inside the window.
    clock.set(NOW - 1);
    expect(await ids(a)).toEqual([expired.shardId, ofA.shardId, shared.shardId]);
  });

  const hostile = [
    '"',
    "'",
    '*',
    'NEAR(',
    'a OR',
    'AND',
    'OR',
    'NOT',
    '-x',
    'col:val',
    'content:deploy',
    '^',
    '(((',
    ')))',
    '"unterminated',
    'deploy*',
    '{a b}',
    'a + b',
    'NEAR(a b, 2)',
    'ünïcödé çà ñ',
    '日本語のテキスト',
    '🚀🔥 deploy',
    '\u0000',
    'deploy\u0000script',
    'x'.repeat(10 * 1024),
    'deploy '.repeat(1500),
    '',
    '   \t\n  ',
    '\\',
    '%_',
    "'; DROP TABLE soul_shards; --",
  ];

  it.each(hostile.map((q) => [q.length > 40 ? `${q.slice(0, 20)}… (${q.length} chars)` : q, q]))('any user string is safe: %j', async (_label, query) => {
    const { db } = fresh();
    const id = await soul(db);
    await dropShard(db, 'Deploy script broke the deploy pipeline', 'chat', [id]);
    await dropShard(db, 'ünïcödé çà ñ and 日本語のテキスト 🚀🔥', 'chat', [id]);
    const hits = await searchShards(db, query);
    expect(Array.isArray(hits)).toBe(true);
    for (const hit of hits) expect(typeof hit.score).toBe('number');
    expect((await listShards(db)).totalCount).toBe(2);
  });

  it('strings with words still find them; strings with none find nothing', async () => {
    const { db } = fresh();
    const id = await soul(db);
    const s = await dropShard(db, 'Deploy script broke the deploy pipeline', 'chat', [id]);
    expect((await searchShards(db, '🚀🔥 deploy')).map((h) => h.shard.id)).toEqual([s.shardId]);
    expect((await searchShards(db, '\u0000deploy (((')).map((h) => h.shard.id)).toEqual([s.shardId]);
    for (const q of ['', '   ', '"', '*', '(((', '^', '\u0000']) expect(await searchShards(db, q)).toEqual([]);
  });

  it('refuses a non-string query and an out-of-range first', async () => {
    const { db } = fresh();
    await rejects(searchShards(db, 42 as unknown as string), ValidationError, { field: 'query' });
    for (const first of [-1, 501, 1.5]) await rejects(searchShards(db, 'x', { first }), ValidationError, { field: 'first' });
  });
});

describe('listShards', () => {
  async function paged(db: SoulsDb, first: number) {
    const pages = [];
    let after: string | null = null;
    for (;;) {
      const page = await listShards(db, { first, after });
      pages.push(page);
      if (!page.hasNextPage) return pages;
      after = page.endCursor;
    }
  }

  it('pages newest first (createdAt desc, id desc) and an after-cursor chain visits every shard exactly once', async () => {
    const { db } = fresh();
    const id = await soul(db);
    const ages = [5, 1, 3, 1, 0, 3, 2];
    const shardIds: number[] = [];
    for (const [i, age] of ages.entries()) shardIds.push((await dropShard(db, `Note number ${i}`, 'chat', [id], { createdAt: NOW - age * DAY_MS })).shardId);
    const expected = shardIds
      .map((sid, i) => ({ sid, createdAt: NOW - ages[i] * DAY_MS }))
      .sort((x, y) => y.createdAt - x.createdAt || y.sid - x.sid)
      .map((x) => x.sid);

    const pages = await paged(db, 3);
    expect(pages.map((p) => p.items.length)).toEqual([3, 3, 1]);
    expect(pages.map((p) => p.hasNextPage)).toEqual([true, true, false]);
    expect(pages.map((p) => p.totalCount)).toEqual([7, 7, 7]);
    const visited = pages.flatMap((p) => p.items.map((s) => s.id));
    expect(visited).toEqual(expected);
    expect(new Set(visited).size).toBe(7);
    for (const p of pages) expect(p.endCursor).toBeTypeOf('string');

    const exact = await paged(db, 7);
    expect(exact).toHaveLength(1);
    expect(exact[0].items.map((s) => s.id)).toEqual(expected);
    const single = await paged(db, 1);
    expect(single.flatMap((p) => p.items.map((s) => s.id))).toEqual(expected);

    const none = await listShards(db, { first: 0 });
    expect(none).toMatchObject({ items: [], totalCount: 7, hasNextPage: true, endCursor: null });
    const beyond = await listShards(db, { first: 3, after: pages[2].endCursor });
    expect(beyond).toMatchObject({ items: [], totalCount: 7, hasNextPage: false, endCursor: null });
  });

  it('filters by soul, source, any of the tags and status', async () => {
    const { db } = fresh();
    const a = await soul(db);
    const b = await soul(db);
    const s1 = (await dropShard(db, 'One', 'chat', [a], { tags: ['work'] })).shardId;
    const s2 = (await dropShard(db, 'Two', 'email', [a, b], { tags: ['home', 'urgent'] })).shardId;
    const s3 = (await dropShard(db, 'Three', 'chat', [b], { tags: ['urgent'] })).shardId;
    const s4 = (await dropShard(db, 'Four', 'journal', [b])).shardId;
    const ids = async (options: Parameters<typeof listShards>[1]) => {
      const page = await listShards(db, options);
      expect(page.totalCount).toBe(page.items.length);
      return page.items.map((s: Shard) => s.id).toSorted((x, y) => x - y);
    };
    expect(await ids({})).toEqual([s1, s2, s3, s4]);
    expect(await ids({ soulId: a })).toEqual([s1, s2]);
    expect(await ids({ soulId: b })).toEqual([s2, s3, s4]);
    expect(await ids({ source: 'chat' })).toEqual([s1, s3]);
    expect(await ids({ source: '  email ' })).toEqual([s2]);
    expect(await ids({ tags: ['URGENT'] })).toEqual([s2, s3]);
    expect(await ids({ tags: ['work', 'home'] })).toEqual([s1, s2]);
    expect(await ids({ tags: ['nothing'] })).toEqual([]);
    expect(await ids({ soulId: b, source: 'chat', tags: ['urgent'] })).toEqual([s3]);
    expect(await ids({ status: 'faded' })).toEqual([]);
    expect(await ids({ status: 'pending' })).toEqual([s1, s2, s3, s4]);
  });

  it('refuses a garbage cursor, an out-of-range first and an unknown status', async () => {
    const { db } = fresh();
    const id = await soul(db);
    await dropShard(db, 'One', 'chat', [id]);
    const forged = Buffer.from('abc:def').toString('base64url');
    for (const after of ['garbage!!', 'not a cursor', forged, 'x'.repeat(1000)]) await rejects(listShards(db, { after }), ValidationError, { field: 'after' });
    for (const first of [-1, 501, 2.5, Number.NaN]) await rejects(listShards(db, { first }), ValidationError, { field: 'first' });
    await rejects(listShards(db, { status: 'deleted' as 'pending' }), ValidationError, { field: 'status' });
  });
});

describe('counts', () => {
  it('pendingShardCount, shardCountsPerSoul, shardCountsBySource and shardCountsByTag', async () => {
    const { db } = fresh();
    const a = await soul(db, 'A');
    const b = await soul(db, 'B');
    const c = await soul(db, 'C');
    const d = await soul(db, 'D');
    await dropShard(db, 'S1', 'chat', [a], { tags: ['work', 'urgent'] });
    await dropShard(db, 'S2', 'chat', [a], { tags: ['work'] });
    await dropShard(db, 'S3', 'email', [a]);
    await dropShard(db, 'S4', 'journal', [a], { tags: ['home'] });
    await dropShard(db, 'S5', 'email', [a, b], { tags: ['work'] });
    await dropShard(db, 'S6', 'chat', [a], { tags: ['secret'], sealed: true });
    await dropShard(db, 'S7', 'chat', [b], { tags: ['work'] });
    await dropShard(db, 'S8', 'chat', [c], { tags: ['home'] });
    await retireSoul(db, c);

    expect(await pendingShardCount(db, a)).toBe(5);
    expect(await pendingShardCount(db, b)).toBe(2);
    expect(await pendingShardCount(db, c)).toBe(1);
    expect(await pendingShardCount(db, d)).toBe(0);
    expect(await pendingShardCount(db, 999)).toBe(0);

    expect(await shardCountsPerSoul(db)).toEqual([
      { soulId: a, pending: 5 },
      { soulId: b, pending: 2 },
      { soulId: d, pending: 0 },
    ]);

    const bySource = await shardCountsBySource(db, [a, b, c, d]);
    expect(bySource.get(a)).toEqual([
      { source: 'chat', count: 2 },
      { source: 'email', count: 2 },
      { source: 'journal', count: 1 },
    ]);
    expect(bySource.get(b)).toEqual([
      { source: 'chat', count: 1 },
      { source: 'email', count: 1 },
    ]);
    expect(bySource.get(c)).toEqual([{ source: 'chat', count: 1 }]);
    expect(bySource.get(d)).toEqual([]);

    expect(await shardCountsByTag(db, a)).toEqual([
      { tag: 'work', count: 3 },
      { tag: 'home', count: 1 },
      { tag: 'urgent', count: 1 },
    ]);
    expect(await shardCountsByTag(db, b)).toEqual([{ tag: 'work', count: 2 }]);
    expect(await shardCountsByTag(db, d)).toEqual([]);
    expect(await shardCountsByTag(db)).toEqual([
      { tag: 'work', count: 4 },
      { tag: 'home', count: 2 },
      { tag: 'urgent', count: 1 },
    ]);
  });
});
