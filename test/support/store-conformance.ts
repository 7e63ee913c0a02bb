// The store conformance suite: every SoulsStore method, atomicity and concurrency, run against each store.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { CapacityError, ConflictError, InvalidStateError, NotFoundError, ValidationError } from '../../src/engine/errors.ts';
import { openStoreAsync } from '../../src/store/open.ts';
import { PROVIDED_MODEL, type Awaitable, type NewShard, type SoulsStore, type TextQuery } from '../../src/store/store.ts';
import type { WriterResult } from './store-writer.ts';

export type StoreBackend = {
  name: string;
  /** An empty store for one test (a fresh database, or a shared one emptied). */
  fresh(): Awaitable<SoulsStore>;
  /** Releases what `fresh` opened, when the test is over. */
  release(store: SoulsStore): Awaitable<unknown>;
  /** A database several threads can open at once (`open` target for store-writer.ts), or null where none exists (PGlite in memory). */
  shared: (() => Awaitable<{ target: string; store: SoulsStore }>) | null;
};

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 2, 1);

function shard(soulIds: number[], content: string, extra: Partial<NewShard> = {}): NewShard {
  return { content, source: 'chat', soulIds, tags: [], sealed: false, createdAt: NOW - DAY, embedding: null, ...extra };
}

/** L2-normalized little-endian Float32 bytes. */
function vector(values: number[]): Uint8Array {
  const norm = Math.hypot(...values);
  return new Uint8Array(new Float32Array(values.map((v) => v / norm)).buffer);
}

async function counts(store: SoulsStore, soulIds: number[]): Promise<number[]> {
  const map = await store.pendingCounts(soulIds, 0);
  return soulIds.map((id) => map.get(id)!);
}

export function defineStoreConformance(backend: StoreBackend): void {
  const withStore = (body: (store: SoulsStore) => Awaitable<void>) => async () => {
    const store = await backend.fresh();
    try {
      await body(store);
    } finally {
      await await backend.release(store);
    }
  };

  describe(`${backend.name} store: souls`, () => {
    it('creates souls with derived slugs and refuses a name an awake soul holds under its folded key', withStore(async (store) => {
      const ada = await store.insertSoul({ name: 'Ada Lovelace', slug: null, essence: 'curious', description: 'd' }, NOW);
      expect(ada).toMatchObject({ id: 1, name: 'Ada Lovelace', slug: 'ada-lovelace', level: 0, createdAt: NOW, updatedAt: NOW, orderedAt: NOW, deletedAt: null, lastAttunedAt: null });
      const second = await store.insertSoul({ name: 'Ada  Lovelace 2', slug: 'ada-lovelace-x', essence: 'e', description: '' }, NOW);
      expect(second.slug).toBe('ada-lovelace-x');
      const third = await store.insertSoul({ name: 'Ada-Lovelace!', slug: null, essence: 'e', description: '' }, NOW);
      expect(third.slug).toBe('ada-lovelace-2');
      const error = await (async () => {
        try {
          await store.insertSoul({ name: 'ADA LOVELACE', slug: null, essence: 'e', description: '' }, NOW);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ConflictError);
      expect(error).toMatchObject({ field: 'name', message: 'an awake soul is already named "Ada Lovelace"' });
      await expect(async () => await store.insertSoul({ name: 'Other', slug: 'ada-lovelace', essence: 'e', description: '' }, NOW)).rejects.toThrow(ConflictError);
      // Byte order: the double space sorts before the single space's "L".
      expect((await store.listSouls({ dormant: false })).map((s) => s.id)).toEqual([2, 1, 3]);
    }));

    it('updates, retires, awakens and attunes, keeping the render reference time rules', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'Bo', slug: null, essence: 'e', description: '' }, NOW);
      const sameBlock = await store.updateSoul(soul.id, { slug: 'bo-2' }, NOW + 1);
      expect(sameBlock).toMatchObject({ slug: 'bo-2', updatedAt: NOW + 1, orderedAt: NOW });
      const renamed = await store.updateSoul(soul.id, { name: 'Bob' }, NOW + 2);
      expect(renamed).toMatchObject({ name: 'Bob', updatedAt: NOW + 2, orderedAt: NOW + 2 });
      expect((await store.setDormancy(soul.id, { dormantAt: NOW + 3 }, NOW + 3)).deletedAt).toBe(NOW + 3);
      await expect(async () => await store.setDormancy(soul.id, { dormantAt: NOW + 4 }, NOW + 4)).rejects.toThrow(InvalidStateError);
      const usurper = await store.insertSoul({ name: 'Bob', slug: 'bo-2', essence: 'e', description: '' }, NOW + 5);
      await expect(async () => await store.setDormancy(soul.id, { dormantAt: null }, NOW + 6)).rejects.toThrow(ConflictError);
      expect((await store.getSoulByName('BOB'))!.id).toBe(usurper.id);
      const awake = await store.setDormancy(soul.id, { dormantAt: null, rename: 'Bobby' }, NOW + 7);
      expect(awake).toMatchObject({ name: 'Bobby', slug: 'bobby', deletedAt: null, updatedAt: NOW + 7, orderedAt: NOW + 7 });
      await expect(async () => await store.stampAttuned(999, NOW)).rejects.toThrow(NotFoundError);
      expect((await store.stampAttuned(soul.id, NOW + 8)).lastAttunedAt).toBe(NOW + 8);
      await store.stampAttuned(soul.id, NOW + 9);
      expect(await store.attunements([soul.id, usurper.id])).toEqual(new Map([[soul.id, [NOW + 8, NOW + 9]], [usurper.id, []]]));
      expect([...(await store.getSouls([soul.id, usurper.id, 999])).keys()].sort()).toEqual([soul.id, usurper.id]);
    }));

    it('finds a name: the awake soul first, else the most recently retired', withStore(async (store) => {
      const first = await store.insertSoul({ name: 'Cy', slug: null, essence: 'e', description: '' }, NOW);
      await store.setDormancy(first.id, { dormantAt: NOW + 1 }, NOW + 1);
      const second = await store.insertSoul({ name: 'cy', slug: null, essence: 'e', description: '' }, NOW + 2);
      await store.setDormancy(second.id, { dormantAt: NOW + 3 }, NOW + 3);
      expect((await store.getSoulByName('CY'))!.id).toBe(second.id);
      const third = await store.insertSoul({ name: 'Cy', slug: null, essence: 'e', description: '' }, NOW + 4);
      expect((await store.getSoulByName('cy'))!.id).toBe(third.id);
      expect(await store.getSoulByName('nobody')).toBeNull();
      expect((await store.listSouls({ dormant: true })).map((s) => s.id)).toEqual([first.id, second.id].sort((a, b) => a - b));
    }));

    it('lists souls by name in byte order, then id', withStore(async (store) => {
      for (const name of ['beta', 'Zed', 'alpha', 'Émile']) await store.insertSoul({ name, slug: null, essence: 'e', description: '' }, NOW);
      expect((await store.listSouls({ dormant: false })).map((s) => s.name)).toEqual(['Zed', 'alpha', 'beta', 'Émile']);
    }));

    it('keeps an imported document per soul and convention, byte for byte, replaced by the next one, kept while dormant', withStore(async (store) => {
      const mira = await store.insertSoul({ name: 'Mira', slug: null, essence: 'e', description: '' }, NOW);
      const other = await store.insertSoul({ name: 'Other', slug: null, essence: 'e', description: '' }, NOW);
      const text = '# SOUL.md - Who You Are\r\n\r\n_Trailing spaces stay._  \r\n\u200b Émile 🜂\n\n\n';
      expect(await store.getSoulDocument(mira.id, 'openclaw')).toBeNull();
      expect(await store.putSoulDocument(mira.id, { format: 'openclaw', file: 'SOUL.md', text }, NOW + 1)).toEqual({ soulId: mira.id, format: 'openclaw', file: 'SOUL.md', text, storedAt: NOW + 1 });
      await store.putSoulDocument(mira.id, { format: 'soulmd', file: 'mira.md', text: 'other convention' }, NOW + 2);
      expect(await store.getSoulDocument(mira.id, 'openclaw')).toEqual({ soulId: mira.id, format: 'openclaw', file: 'SOUL.md', text, storedAt: NOW + 1 });
      expect(await store.getSoulDocument(other.id, 'openclaw')).toBeNull();
      await store.putSoulDocument(mira.id, { format: 'openclaw', file: 'SOUL.md', text: 'replaced' }, NOW + 3);
      expect(await store.getSoulDocument(mira.id, 'openclaw')).toMatchObject({ text: 'replaced', storedAt: NOW + 3 });
      expect(await store.getSoulDocument(mira.id, 'soulmd')).toMatchObject({ file: 'mira.md', text: 'other convention' });
      await expect(async () => await store.putSoulDocument(999, { format: 'openclaw', file: 'SOUL.md', text }, NOW)).rejects.toThrow(NotFoundError);
      await store.setDormancy(mira.id, { dormantAt: NOW + 4 }, NOW + 4);
      await expect(async () => await store.putSoulDocument(mira.id, { format: 'openclaw', file: 'SOUL.md', text }, NOW + 5)).rejects.toThrow(InvalidStateError);
      expect(await store.getSoulDocument(mira.id, 'openclaw')).toMatchObject({ text: 'replaced' });
    }));
  });

  describe(`${backend.name} store: traits and citations`, () => {
    it('adds, revises, reverts and restores traits within the limit, and cites shards once', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'Dee', slug: null, essence: 'e', description: '' }, NOW);
      const { shardIds } = await store.insertShards([shard([soul.id], 'one'), shard([soul.id], 'two')], NOW, 0);
      const trait = await store.insertTrait(soul.id, { principle: 'p', provenance: 'v', citeShardIds: shardIds }, NOW + 1, 2);
      expect(trait).toMatchObject({ soulId: soul.id, principle: 'p', provenance: 'v', generation: 0, status: 'active', mergedInto: null, createdAt: NOW + 1 });
      expect((await store.getSouls([soul.id])).get(soul.id)).toMatchObject({ updatedAt: NOW + 1, orderedAt: NOW + 1 });
      await expect(async () => await store.insertTrait(soul.id, { principle: 'q', provenance: 'v', citeShardIds: [999] }, NOW, 2)).rejects.toThrow(NotFoundError);
      const other = await store.insertTrait(soul.id, { principle: 'q', provenance: 'v', citeShardIds: [] }, NOW + 2, 2);
      const full = await (async () => {
        try {
          await store.insertTrait(soul.id, { principle: 'r', provenance: 'v', citeShardIds: [] }, NOW, 2);
        } catch (e) {
          return e;
        }
      })();
      expect(full).toBeInstanceOf(CapacityError);
      expect(full).toMatchObject({ limit: 2, activeCount: 2 });
      expect(await store.updateTrait(trait.id, { principle: 'p2' }, NOW + 3)).toMatchObject({ principle: 'p2', provenance: 'v', updatedAt: NOW + 3 });
      expect((await store.setTraitStatus(other.id, 'reverted', NOW + 4, 2)).status).toBe('reverted');
      await expect(async () => await store.updateTrait(other.id, { principle: 'x' }, NOW)).rejects.toThrow(InvalidStateError);
      await expect(async () => await store.citeShards(other.id, [shardIds[0]], NOW)).rejects.toThrow(InvalidStateError);
      expect((await store.setTraitStatus(other.id, 'active', NOW + 5, 2)).status).toBe('active');
      await expect(async () => await store.setTraitStatus(other.id, 'active', NOW, 2)).rejects.toThrow(InvalidStateError);
      expect(await store.citeShards(other.id, [shardIds[0]], NOW + 6)).toEqual([shardIds[0]]);
      expect(await store.citeShards(other.id, [shardIds[0]], NOW + 7)).toEqual([]);
      expect(await store.citationsOfTraits([trait.id, other.id])).toEqual([
        { shardId: shardIds[0], traitId: trait.id, createdAt: NOW + 1 },
        { shardId: shardIds[1], traitId: trait.id, createdAt: NOW + 1 },
        { shardId: shardIds[0], traitId: other.id, createdAt: NOW + 6 },
      ]);
      expect(await store.citationsOfShards([shardIds[1]])).toEqual([{ shardId: shardIds[1], traitId: trait.id, createdAt: NOW + 1 }]);
      expect((await store.listTraits([soul.id])).map((t) => t.id)).toEqual([trait.id, other.id]);
      expect(await store.listTraits([soul.id], { statuses: ['reverted'] })).toEqual([]);
      expect(await store.listTraits([soul.id], { generation: 1 })).toEqual([]);
      expect(await store.countActiveTraits([soul.id, 999])).toEqual(new Map([[soul.id, 2], [999, 0]]));
      expect([...(await store.getTraits([trait.id, 999])).keys()]).toEqual([trait.id]);
      await store.setDormancy(soul.id, { dormantAt: NOW + 8 }, NOW + 8);
      await expect(async () => await store.insertTrait(soul.id, { principle: 'z', provenance: 'v', citeShardIds: [] }, NOW, 5)).rejects.toThrow(InvalidStateError);
    }));
    it('keeps active principles unique, cites only the trait\'s soul\'s shards, and takes citations back (un-fading), all or nothing', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'Fay', slug: null, essence: 'e', description: '' }, NOW);
      const other = await store.insertSoul({ name: 'Gus', slug: null, essence: 'e', description: '' }, NOW);
      const { shardIds: own } = await store.insertShards([shard([soul.id], 'mine one'), shard([soul.id], 'mine two'), shard([soul.id, other.id], 'ours')], NOW, 0);
      const { shardIds: [foreign] } = await store.insertShards([shard([other.id], 'theirs')], NOW, 0);
      const p = await store.insertTrait(soul.id, { principle: 'p', provenance: 'v', citeShardIds: [own[0]] }, NOW + 1, 10);
      const q = await store.insertTrait(soul.id, { principle: 'q', provenance: 'v', citeShardIds: [] }, NOW + 2, 10);
      const refusal = async (work: () => unknown) => {
        try {
          await work();
        } catch (e) {
          return e;
        }
        throw new Error('expected a refusal');
      };
      expect(await refusal(() => store.insertTrait(soul.id, { principle: 'p', provenance: 'w', citeShardIds: [] }, NOW + 3, 10))).toMatchObject({
        constructor: ValidationError,
        field: 'principle',
        message: `active trait ${p.id} already has this principle`,
      });
      expect(await refusal(() => store.updateTrait(q.id, { principle: 'p' }, NOW + 3))).toMatchObject({ constructor: ValidationError, field: 'principle' });
      expect(await refusal(() => store.insertTrait(soul.id, { principle: 'r', provenance: 'v', citeShardIds: [own[1], foreign] }, NOW + 3, 10))).toMatchObject({
        constructor: ValidationError,
        field: 'citeShardIds',
        message: `shard ${foreign} is attributed to soul ${other.id} (Gus), not to soul ${soul.id} (Fay), the soul of the new trait: a trait cites only its own soul's shards`,
      });
      expect(await refusal(() => store.citeShards(q.id, [own[1], foreign], NOW + 3))).toBeInstanceOf(InvalidStateError);
      expect((await store.listTraits([soul.id])).map((t) => t.id)).toEqual([p.id, q.id]);
      expect(await store.citationsOfTraits([p.id, q.id])).toEqual([{ shardId: own[0], traitId: p.id, createdAt: NOW + 1 }]);
      // A reverted trait cannot come back while an active one has its principle.
      await store.setTraitStatus(q.id, 'reverted', NOW + 4, 10);
      const q2 = await store.insertTrait(soul.id, { principle: 'q', provenance: 'v', citeShardIds: [] }, NOW + 5, 10);
      expect(await refusal(() => store.setTraitStatus(q.id, 'active', NOW + 6, 10))).toMatchObject({
        constructor: InvalidStateError,
        message: `trait ${q.id} cannot be reactivated: active trait ${q2.id} already has this principle`,
      });
      expect(await store.citeShards(q2.id, [own[2], own[0], own[2]], NOW + 7)).toEqual([own[2], own[0]]);
      expect(await store.citeShards(q2.id, [own[0]], NOW + 8)).toEqual([]);
      expect(await store.fadeExhaustedShards(2, NOW + 9, 0)).toMatchObject({ fadedCount: 1 });
      expect(await refusal(() => store.unciteShards(q2.id, [own[0], own[1]], NOW + 10, 2, 0))).toMatchObject({
        constructor: InvalidStateError,
        message: `trait ${q2.id} does not cite shard ${own[1]}: nothing to take back`,
      });
      expect((await store.citationsOfTraits([q2.id])).map((c) => c.shardId).sort((a, b) => a - b)).toEqual([own[0], own[2]]);
      const { gate } = await store.unciteShards(q2.id, [own[0]], NOW + 11, 2, 0);
      expect(gate).toEqual([expect.objectContaining({ soulId: soul.id, beforeShardIds: [own[1], own[2]], shardIds: own })]);
      expect((await store.getShards([own[0]])).get(own[0])!.status).toBe('pending');
      expect((await store.citationsOfTraits([q2.id])).map((c) => c.shardId)).toEqual([own[2]]);
      expect((await store.getSouls([soul.id])).get(soul.id)).toMatchObject({ updatedAt: NOW + 11, orderedAt: NOW + 11 });
    }));
  });

  describe(`${backend.name} store: themes`, () => {
    it('assigns, moves and unassigns shards, recording each change; refuses strays with nothing written', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'Ivy', slug: null, essence: 'e', description: '' }, NOW);
      const other = await store.insertSoul({ name: 'Jo', slug: null, essence: 'e', description: '' }, NOW);
      const { shardIds: ids } = await store.insertShards([shard([soul.id], 'one'), shard([soul.id, other.id], 'two'), shard([soul.id], 'three'), shard([other.id], 'four')], NOW, 0);
      const [a, b] = await store.assignThemes(soul.id, [{ shardIds: [ids[0], ids[1]], themeId: null, newThemeName: 'Alpha' }, { shardIds: [ids[2]], themeId: null, newThemeName: 'Beta' }], 'ann', NOW + 1, 100);
      expect(a).toEqual({ id: a.id, soulId: soul.id, name: 'Alpha', createdBy: 'ann', createdAt: NOW + 1, updatedAt: NOW + 1, memberIds: [ids[0], ids[1]], opposes: [] });
      expect(b).toMatchObject({ name: 'Beta', memberIds: [ids[2]] });
      // The same shard may have a theme in each soul it is attributed to.
      const [c] = await store.assignThemes(other.id, [{ shardIds: [ids[1], ids[3]], themeId: null, newThemeName: 'Alpha' }], 'bob', NOW + 2, 100);
      expect(await store.assignThemes(soul.id, [{ shardIds: [ids[1]], themeId: b.id, newThemeName: null }], 'bob', NOW + 3, 100)).toEqual([
        expect.objectContaining({ id: b.id, memberIds: [ids[1], ids[2]], updatedAt: NOW + 3 }),
      ]);
      expect(await store.themesOfShards(soul.id, ids)).toEqual(new Map([[ids[0], a.id], [ids[1], b.id], [ids[2], b.id]]));
      expect(await store.shardThemesOfSouls([other.id, 999])).toEqual(new Map([[other.id, new Map([[ids[1], c.id], [ids[3], c.id]])], [999, new Map()]]));
      expect((await store.unassignShards(soul.id, [ids[0], ids[1]], 'ann', NOW + 4)).map((t) => [t.id, t.memberIds])).toEqual([[a.id, []], [b.id, [ids[2]]]]);
      expect((await store.listThemes([soul.id, other.id])).map((t) => [t.soulId, t.name, t.memberIds])).toEqual([
        [soul.id, 'Alpha', []],
        [soul.id, 'Beta', [ids[2]]],
        [other.id, 'Alpha', [ids[1], ids[3]]],
      ]);
      expect((await store.themeHistory([soul.id])).map((e) => [e.kind, e.shardId, e.fromThemeId, e.toThemeId, e.actor, e.at])).toEqual([
        ['assign', ids[0], null, a.id, 'ann', NOW + 1],
        ['assign', ids[1], null, a.id, 'ann', NOW + 1],
        ['assign', ids[2], null, b.id, 'ann', NOW + 1],
        ['assign', ids[1], a.id, b.id, 'bob', NOW + 3],
        ['unassign', ids[0], a.id, null, 'ann', NOW + 4],
        ['unassign', ids[1], b.id, null, 'ann', NOW + 4],
      ]);

      const history = await store.themeHistory([soul.id, other.id]);
      const refused = async (work: () => unknown) => {
        try {
          await work();
        } catch (error) {
          return error as Error & { field?: string; entity?: string };
        }
        throw new Error('expected a refusal');
      };
      expect(await refused(() => store.assignThemes(soul.id, [{ shardIds: [ids[0]], themeId: null, newThemeName: 'Gamma' }, { shardIds: [ids[3]], themeId: a.id, newThemeName: null }], 'x', NOW + 5, 100))).toMatchObject({
        name: 'ValidationError',
        field: 'assignments[1].shardIds[0]',
      });
      expect(await refused(() => store.assignThemes(soul.id, [{ shardIds: [ids[0]], themeId: c.id, newThemeName: null }], 'x', NOW + 5, 100))).toMatchObject({ field: 'assignments[0].themeId' });
      expect(await refused(() => store.assignThemes(soul.id, [{ shardIds: [ids[0]], themeId: null, newThemeName: 'ALPHA' }], 'x', NOW + 5, 100))).toMatchObject({ field: 'assignments[0].newThemeName' });
      expect(await refused(() => store.assignThemes(soul.id, [{ shardIds: [ids[0]], themeId: 999, newThemeName: null }], 'x', NOW + 5, 100))).toBeInstanceOf(NotFoundError);
      expect(await refused(() => store.assignThemes(soul.id, [{ shardIds: [999], themeId: a.id, newThemeName: null }], 'x', NOW + 5, 100))).toMatchObject({ entity: 'Shard' });
      expect(await refused(() => store.assignThemes(999, [{ shardIds: [ids[0]], themeId: a.id, newThemeName: null }], 'x', NOW + 5, 100))).toMatchObject({ entity: 'Soul' });
      // Two themes held, at most three: the call's second new theme is one too many, and nothing of the call is written.
      expect(await refused(() => store.assignThemes(soul.id, [{ shardIds: [ids[0]], themeId: null, newThemeName: 'Gamma' }, { shardIds: [ids[2]], themeId: null, newThemeName: 'Delta' }], 'x', NOW + 5, 3))).toMatchObject({
        name: 'ValidationError',
        field: 'assignments[1].newThemeName',
        message: expect.stringContaining('maxThemesPerSoul'),
      });
      expect(await refused(() => store.unassignShards(soul.id, [ids[3]], 'x', NOW + 5))).toMatchObject({ field: 'shardIds[0]' });
      expect(await store.themeHistory([soul.id, other.id])).toEqual(history);
      expect((await store.listThemes([soul.id])).map((t) => t.name)).toEqual(['Alpha', 'Beta']);
      await store.setDormancy(other.id, { dormantAt: NOW + 6 }, NOW + 6);
      expect(await refused(() => store.assignThemes(other.id, [{ shardIds: [ids[3]], themeId: c.id, newThemeName: null }], 'x', NOW + 7, 100))).toMatchObject({ field: 'soulId' });
      expect(await refused(() => store.renameTheme(c.id, 'Gamma', 'x', NOW + 7))).toBeInstanceOf(InvalidStateError);
    }));

    it('renames and opposes traits, lists counter-evidence, and carries oppositions through a level-up and its revert', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'Kai', slug: null, essence: 'before', description: '' }, NOW);
      const other = await store.insertSoul({ name: 'Lu', slug: null, essence: 'e', description: '' }, NOW);
      const { shardIds: ids } = await store.insertShards([shard([soul.id], 'one'), shard([soul.id], 'two')], NOW, 0);
      const x = await store.insertTrait(soul.id, { principle: 'x', provenance: 'v', citeShardIds: [] }, NOW, 10);
      const y = await store.insertTrait(soul.id, { principle: 'y', provenance: 'v', citeShardIds: [] }, NOW, 10);
      const foreign = await store.insertTrait(other.id, { principle: 'z', provenance: 'v', citeShardIds: [] }, NOW, 10);
      const [t, u] = await store.assignThemes(soul.id, [{ shardIds: [ids[0]], themeId: null, newThemeName: 'T' }, { shardIds: [ids[1]], themeId: null, newThemeName: 'U' }], 'ann', NOW + 1, 100);
      expect(await store.renameTheme(t.id, 'T prime', 'bob', NOW + 2)).toMatchObject({ name: 'T prime', updatedAt: NOW + 2 });
      await expect(async () => await store.renameTheme(t.id, 'u', 'bob', NOW + 2)).rejects.toThrow(ValidationError);
      await expect(async () => await store.renameTheme(999, 'V', 'bob', NOW + 2)).rejects.toThrow(NotFoundError);
      expect(await store.setThemeOpposition(t.id, x.id, true, 'bob', NOW + 3)).toMatchObject({ opposes: [x.id] });
      await expect(async () => await store.setThemeOpposition(t.id, x.id, true, 'bob', NOW + 4)).rejects.toThrow(InvalidStateError);
      expect((await store.getThemes([t.id])).get(t.id)).toMatchObject({ opposes: [x.id], updatedAt: NOW + 3 });
      await expect(async () => await store.setThemeOpposition(t.id, foreign.id, true, 'bob', NOW + 4)).rejects.toThrow(ValidationError);
      await expect(async () => await store.setThemeOpposition(t.id, 999, true, 'bob', NOW + 4)).rejects.toThrow(NotFoundError);
      await store.setThemeOpposition(u.id, y.id, true, 'bob', NOW + 5);
      expect(await store.counterEvidence([x.id, y.id, foreign.id])).toEqual(new Map([[x.id, [ids[0]]], [y.id, [ids[1]]], [foreign.id, []]]));
      expect(await store.getThemes([t.id, u.id, 999])).toEqual(new Map([[t.id, expect.objectContaining({ name: 'T prime' })], [u.id, expect.objectContaining({ opposes: [y.id] })]]));

      const event = await store.applyLevelUp(soul.id, { activeTraitIds: [x.id, y.id], newEssence: 'after', consolidations: [{ sourceTraitIds: [x.id, y.id], mergedPrinciple: 'xy', mergedProvenance: 'v' }], promotedTraitIds: [], carriedTraitIds: [] }, NOW + 6);
      const merged = event.merged[0];
      expect(await store.counterEvidence([merged])).toEqual(new Map([[merged, [ids[0], ids[1]]]]));
      await store.revertLevelUp(soul.id, NOW + 7, 2, 0);
      expect(await store.getThemes([t.id, u.id])).toEqual(new Map([[t.id, expect.objectContaining({ opposes: [x.id] })], [u.id, expect.objectContaining({ opposes: [y.id] })]]));
      expect(await store.setThemeOpposition(t.id, x.id, false, 'ann', NOW + 8)).toMatchObject({ opposes: [] });
      expect((await store.themeHistory([soul.id])).filter((e) => e.kind !== 'assign').map((e) => [e.kind, e.themeId, e.traitId, e.detail, e.actor, e.at])).toEqual([
        ['rename', t.id, null, 'T', 'bob', NOW + 2],
        ['oppose', t.id, x.id, null, 'bob', NOW + 3],
        ['oppose', u.id, y.id, null, 'bob', NOW + 5],
        ['unoppose', t.id, x.id, null, 'ann', NOW + 8],
      ]);
    }));
  });

  describe(`${backend.name} store: judged counter-evidence and writes that change nothing (SPEC §13)`, () => {
    it('refuses, inside each unit of work, a citation, an opposition, a move or a consolidation that would cite counter-evidence; nothing written', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'Mo', slug: null, essence: 'e', description: '' }, NOW);
      const { shardIds: ids } = await store.insertShards([shard([soul.id], 'one'), shard([soul.id], 'two'), shard([soul.id], 'three')], NOW, 0);
      const x = await store.insertTrait(soul.id, { principle: 'x', provenance: 'v', citeShardIds: [ids[2]] }, NOW, 10);
      const y = await store.insertTrait(soul.id, { principle: 'y', provenance: 'v', citeShardIds: [] }, NOW, 10);
      const [t] = await store.assignThemes(soul.id, [{ shardIds: [ids[0], ids[1]], themeId: null, newThemeName: 'Against x' }], 'ann', NOW + 1, 100);
      await store.setThemeOpposition(t.id, x.id, true, 'ann', NOW + 2);
      const snapshot = async () => ({ citations: await store.citationsOfTraits([x.id, y.id]), themes: await store.listThemes([soul.id]), history: await store.themeHistory([soul.id]), levels: await store.levelHistory([soul.id]) });
      const before = await snapshot();
      const refusal = async (work: () => unknown) => {
        try {
          await work();
        } catch (error) {
          return error as Error & { field?: string; problems?: unknown[] };
        }
        throw new Error('expected a refusal');
      };
      expect(await refusal(() => store.citeShards(x.id, [ids[2], ids[1]], NOW + 3))).toMatchObject({ name: 'ValidationError', field: 'shardIds', message: expect.stringContaining(`shard ${ids[1]} is a member of theme "Against x" (#${t.id}), which opposes trait ${x.id}`) });
      expect(await refusal(() => store.assignThemes(soul.id, [{ shardIds: [ids[2]], themeId: t.id, newThemeName: null }], 'ann', NOW + 3, 100))).toMatchObject({ name: 'ValidationError', field: 'assignments[0].shardIds[0]' });
      await store.citeShards(y.id, [ids[0]], NOW + 3);
      const cited = await snapshot();
      expect(await refusal(() => store.setThemeOpposition(t.id, y.id, true, 'ann', NOW + 4))).toMatchObject({ name: 'ValidationError', field: 'traitId', message: expect.stringContaining(`trait ${y.id} cites shard ${ids[0]} of theme "Against x"`) });
      expect(await store.counterCitations([x.id, y.id], [x.id, y.id])).toEqual([{ themeId: t.id, themeName: 'Against x', opposedTraitId: x.id, citingTraitId: y.id, shardId: ids[0] }]);
      const plan = { activeTraitIds: [x.id, y.id], newEssence: 'after', consolidations: [{ sourceTraitIds: [x.id, y.id], mergedPrinciple: 'xy', mergedProvenance: 'v' }], promotedTraitIds: [], carriedTraitIds: [] };
      expect(await refusal(() => store.applyLevelUp(soul.id, plan, NOW + 5))).toMatchObject({ name: 'LevelUpPlanError', problems: [{ field: 'consolidations[0].sourceTraitIds', message: expect.any(String) }] });
      expect(await snapshot()).toEqual(cited);
      expect(before.citations).toEqual([{ shardId: ids[2], traitId: x.id, createdAt: NOW }]);
    }));

    it('cites for several traits, and assigns then opposes, each in one unit: all or nothing, a dry run rolled back (issue 34)', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'Ida', slug: null, essence: 'e', description: '' }, NOW);
      const { shardIds: ids } = await store.insertShards([shard([soul.id], 'one'), shard([soul.id], 'two'), shard([soul.id], 'three')], NOW, 0);
      const x = await store.insertTrait(soul.id, { principle: 'x', provenance: 'v', citeShardIds: [ids[2]] }, NOW, 10);
      const y = await store.insertTrait(soul.id, { principle: 'y', provenance: 'v', citeShardIds: [] }, NOW, 10);
      const state = async () => ({ citations: await store.citationsOfTraits([x.id, y.id]), themes: await store.listThemes([soul.id]), history: await store.themeHistory([soul.id]) });
      const before = await state();
      // x cites ids[2], so a theme holding it may not oppose x: the refusal undoes the first assignment too.
      await expect(async () => await store.judgeThemes(soul.id, [{ shardIds: [ids[0]], themeId: null, newThemeName: 'A' }, { shardIds: [ids[2]], themeId: null, newThemeName: 'B' }], [[], [x.id]], 'ann', NOW + 1, 100, false)).rejects.toMatchObject({ name: 'ValidationError', field: 'traitId' });
      expect(await state()).toEqual(before);
      const dry = await store.judgeThemes(soul.id, [{ shardIds: [ids[0], ids[1]], themeId: null, newThemeName: 'Against x' }], [[x.id]], 'ann', NOW + 1, 100, true);
      expect(dry).toMatchObject([{ name: 'Against x', memberIds: [ids[0], ids[1]], opposes: [x.id] }]);
      expect(await state()).toEqual(before);
      const [t] = await store.judgeThemes(soul.id, [{ shardIds: [ids[0], ids[1]], themeId: null, newThemeName: 'Against x' }], [[x.id]], 'ann', NOW + 1, 100, false);
      expect(t).toMatchObject({ name: 'Against x', memberIds: [ids[0], ids[1]], opposes: [x.id] });
      const judged = await state();
      // x may not cite a member of the theme opposing it: y's citation in the same call is not written either.
      await expect(async () => await store.citeShardsOfTraits([{ traitId: y.id, shardIds: [ids[0]] }, { traitId: x.id, shardIds: [ids[1]] }], NOW + 2, false)).rejects.toMatchObject({ name: 'ValidationError' });
      expect(await state()).toEqual(judged);
      expect(await store.citeShardsOfTraits([{ traitId: y.id, shardIds: [ids[0], ids[2]] }, { traitId: x.id, shardIds: [ids[2]] }], NOW + 2, true)).toEqual([[ids[0], ids[2]], []]);
      expect(await state()).toEqual(judged);
      expect(await store.citeShardsOfTraits([{ traitId: y.id, shardIds: [ids[0], ids[2]] }, { traitId: x.id, shardIds: [ids[2]] }], NOW + 2, false)).toEqual([[ids[0], ids[2]], []]);
      expect((await store.citationsOfTraits([y.id])).map((c) => c.shardId).sort()).toEqual([ids[0], ids[2]].sort());
    }));

    it('refuses a theme write that would change nothing, recording nothing', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'Ned', slug: null, essence: 'e', description: '' }, NOW);
      const { shardIds: ids } = await store.insertShards([shard([soul.id], 'one'), shard([soul.id], 'two')], NOW, 0);
      const x = await store.insertTrait(soul.id, { principle: 'x', provenance: 'v', citeShardIds: [] }, NOW, 10);
      const [t] = await store.assignThemes(soul.id, [{ shardIds: [ids[0]], themeId: null, newThemeName: 'T' }], 'ann', NOW + 1, 100);
      const history = await store.themeHistory([soul.id]);
      for (const noChange of [
        () => store.assignThemes(soul.id, [{ shardIds: [ids[0]], themeId: t.id, newThemeName: null }], 'bob', NOW + 2, 100),
        () => store.unassignShards(soul.id, [ids[1]], 'bob', NOW + 2),
        () => store.renameTheme(t.id, 'T', 'bob', NOW + 2),
        () => store.setThemeOpposition(t.id, x.id, false, 'bob', NOW + 2),
      ]) {
        await expect(async () => await noChange()).rejects.toThrow(InvalidStateError);
      }
      expect(await store.themeHistory([soul.id])).toEqual(history);
      expect((await store.getThemes([t.id])).get(t.id)).toMatchObject({ name: 'T', memberIds: [ids[0]], opposes: [], updatedAt: NOW + 1 });
      // A call that changes something goes through; a theme it leaves as it was keeps its time.
      const [u, same] = await store.assignThemes(soul.id, [{ shardIds: [ids[1]], themeId: null, newThemeName: 'U' }, { shardIds: [ids[0]], themeId: t.id, newThemeName: null }], 'bob', NOW + 3, 100);
      expect([u.memberIds, same.memberIds, same.updatedAt]).toEqual([[ids[1]], [ids[0]], NOW + 1]);
    }));
  });

  describe(`${backend.name} store: level-ups`, () => {
    it('applies a level-up, refuses a stale plan with nothing written, and reverts it exactly (un-fading shards)', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'Eve', slug: null, essence: 'before', description: '' }, NOW);
      const { shardIds } = await store.insertShards([shard([soul.id], 'cited twice')], NOW, 0);
      const a = await store.insertTrait(soul.id, { principle: 'a', provenance: 'v', citeShardIds: [] }, NOW + 1, 10);
      const b = await store.insertTrait(soul.id, { principle: 'b', provenance: 'v', citeShardIds: [] }, NOW + 2, 10);
      const c = await store.insertTrait(soul.id, { principle: 'c', provenance: 'v', citeShardIds: [] }, NOW + 3, 10);
      const d = await store.insertTrait(soul.id, { principle: 'd', provenance: 'v', citeShardIds: [shardIds[0]] }, NOW + 4, 10);
      const plan = {
        activeTraitIds: [a.id, b.id, c.id, d.id],
        newEssence: 'after',
        consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: 'ab', mergedProvenance: 'v' }],
        promotedTraitIds: [c.id],
        carriedTraitIds: [d.id],
      };
      const stale = { ...plan, activeTraitIds: [a.id, b.id, c.id] };
      const statementsBefore = await store.statementsExecuted();
      await expect(async () => await store.applyLevelUp(soul.id, stale, NOW + 5)).rejects.toThrow(InvalidStateError);
      expect(await store.statementsExecuted()).toBeGreaterThan(statementsBefore);
      expect(await store.levelHistory([soul.id])).toEqual([]);
      const event = await store.applyLevelUp(soul.id, plan, NOW + 10);
      const merged = event.merged[0];
      expect(event).toMatchObject({ soulId: soul.id, level: 1, essenceBefore: 'before', essenceAfter: 'after', consolidated: [a.id, b.id], promoted: [c.id], carried: [{ id: d.id, generation: 0 }], createdAt: NOW + 10, revertedAt: null });
      expect(await store.getTraits([a.id, c.id, d.id, merged])).toEqual(
        new Map([
          [a.id, expect.objectContaining({ status: 'consolidated', mergedInto: merged })],
          [c.id, expect.objectContaining({ status: 'promoted' })],
          [d.id, expect.objectContaining({ generation: 1, updatedAt: NOW + 10 })],
          [merged, expect.objectContaining({ principle: 'ab', generation: 1, status: 'active' })],
        ]),
      );
      expect((await store.getSouls([soul.id])).get(soul.id)).toMatchObject({ essence: 'after', level: 1, orderedAt: NOW + 10 });
      await store.citeShards(merged, [shardIds[0]], NOW + 11);
      expect(await store.fadeExhaustedShards(2, NOW + 12, 0)).toMatchObject({ fadedCount: 1 });
      expect((await store.getShards(shardIds)).get(shardIds[0])!.status).toBe('faded');
      const reverted = await store.revertLevelUp(soul.id, NOW + 20, 2, 0);
      expect(reverted.event).toMatchObject({ id: event.id, revertedAt: NOW + 20 });
      expect(reverted.gate).toEqual([expect.objectContaining({ soulId: soul.id, shardIds, beforeShardIds: [] })]);
      expect((await store.getShards(shardIds)).get(shardIds[0])!.status).toBe('pending');
      expect((await store.getTraits([merged])).size).toBe(0);
      expect(await store.getTraits([a.id, d.id])).toEqual(
        new Map([
          // The level-up's own time on a trait goes back to the time before it.
          [a.id, expect.objectContaining({ status: 'active', mergedInto: null, updatedAt: NOW + 1 })],
          [d.id, expect.objectContaining({ generation: 0, updatedAt: NOW + 4 })],
        ]),
      );
      expect((await store.getSouls([soul.id])).get(soul.id)).toMatchObject({ essence: 'before', level: 0, orderedAt: NOW + 4, updatedAt: NOW + 20 });
      expect((await store.getLevelEvents([event.id])).get(event.id)!.revertedAt).toBe(NOW + 20);
      await expect(async () => await store.revertLevelUp(soul.id, NOW + 21, 2, 0)).rejects.toThrow(InvalidStateError);
      // A sequence never names a deleted trait again.
      expect((await store.insertTrait(soul.id, { principle: 'new', provenance: 'v', citeShardIds: [] }, NOW + 22, 10)).id).toBeGreaterThan(merged);
    }));
    it('gives a merged trait its sources\' citations (not counted again for fading), guards merged principles, and reverts by event id only once', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'Hal', slug: null, essence: 'before', description: '' }, NOW);
      const { shardIds: s } = await store.insertShards([shard([soul.id], 'one'), shard([soul.id], 'two'), shard([soul.id], 'three')], NOW, 0);
      const a = await store.insertTrait(soul.id, { principle: 'a', provenance: 'v', citeShardIds: [s[0], s[1]] }, NOW + 1, 10);
      const b = await store.insertTrait(soul.id, { principle: 'b', provenance: 'v', citeShardIds: [s[1], s[2]] }, NOW + 2, 10);
      const c = await store.insertTrait(soul.id, { principle: 'c', provenance: 'v', citeShardIds: [] }, NOW + 3, 10);
      const plan = (mergedPrinciple: string, newEssence: string, ids: number[]) => ({
        activeTraitIds: [...ids, c.id],
        newEssence,
        consolidations: [{ sourceTraitIds: ids, mergedPrinciple, mergedProvenance: 'v' }],
        promotedTraitIds: [],
        carriedTraitIds: [c.id],
      });
      await expect(async () => await store.applyLevelUp(soul.id, plan('c', 'after', [a.id, b.id]), NOW + 4)).rejects.toThrow(InvalidStateError);
      expect(await store.levelHistory([soul.id])).toEqual([]);
      expect((await store.listTraits([soul.id])).map((t) => t.status)).toEqual(['active', 'active', 'active']);
      const first = await store.applyLevelUp(soul.id, plan('a', 'after', [a.id, b.id]), NOW + 10);
      const merged = first.merged[0];
      expect(await store.citationsOfTraits([merged])).toEqual([
        { shardId: s[0], traitId: merged, createdAt: NOW + 1 },
        { shardId: s[1], traitId: merged, createdAt: NOW + 1 },
        { shardId: s[2], traitId: merged, createdAt: NOW + 2 },
      ]);
      // s1, cited by a and b, is exhausted; the merged trait's carried citations add no use.
      expect(await store.fadeExhaustedShards(2, NOW + 11, 0)).toMatchObject({ fadedCount: 1 });
      const statuses = await store.getShards(s);
      expect(s.map((id) => statuses.get(id)!.status)).toEqual(['pending', 'faded', 'pending']);
      const second = await store.applyLevelUp(soul.id, { activeTraitIds: [merged, c.id], newEssence: 'later', consolidations: [], promotedTraitIds: [c.id], carriedTraitIds: [merged] }, NOW + 12);
      await expect(async () => await store.revertLevelUp(soul.id, NOW + 13, 2, 0, first.id)).rejects.toThrow(`level-up ${first.id} is not the latest of soul ${soul.id}: revert level-up ${second.id} first`);
      await expect(async () => await store.revertLevelUp(soul.id, NOW + 13, 2, 0, 999)).rejects.toThrow(NotFoundError);
      expect((await store.revertLevelUp(soul.id, NOW + 14, 2, 0, second.id)).event).toMatchObject({ id: second.id, revertedAt: NOW + 14 });
      await expect(async () => await store.revertLevelUp(soul.id, NOW + 15, 2, 0, second.id)).rejects.toThrow(`level-up ${second.id} is already reverted`);
      expect((await store.getSouls([soul.id])).get(soul.id)).toMatchObject({ essence: 'after', level: 1 });
      await store.revertLevelUp(soul.id, NOW + 16, 2, 0, first.id);
      expect(await store.citationsOfTraits([merged])).toEqual([]);
      expect((await store.citationsOfTraits([a.id, b.id])).map((x) => [x.shardId, x.traitId])).toEqual([[s[0], a.id], [s[1], a.id], [s[1], b.id], [s[2], b.id]]);
      expect((await store.getSouls([soul.id])).get(soul.id)).toMatchObject({ essence: 'before', level: 0 });
    }));
  });

  describe(`${backend.name} store: shards`, () => {
    it('inserts shards and reports the cheap gate before and after the write', withStore(async (store) => {
      const x = await store.insertSoul({ name: 'X', slug: null, essence: 'e', description: '' }, NOW);
      const y = await store.insertSoul({ name: 'Y', slug: null, essence: 'e', description: '' }, NOW);
      await store.insertShards([shard([x.id], 'old one', { createdAt: NOW - 5 * DAY, source: 'email' })], NOW, 0);
      const write = await store.insertShards(
        [shard([x.id, y.id, x.id], 'both', { tags: ['t1', 't2'] }), shard([y.id], 'sealed', { sealed: true }), shard([y.id], 'expired', { createdAt: NOW - 40 * DAY })],
        NOW + 1,
        NOW - 30 * DAY,
      );
      expect(write.shardIds).toEqual([2, 3, 4]);
      // `themed` is a hint a store may give where it knows it at no cost (SQLite's shard writes): neither soul has a theme.
      expect(write.gate.map((g) => g.themed ?? false)).toEqual([false, false]);
      expect(write.gate.map(({ themed: _, ...g }) => g)).toEqual([
        {
          soulId: x.id,
          dormant: false,
          lastAttunedAt: null,
          shardIds: [1, 2],
          beforeShardIds: [1],
          // Recency counts arrival (SPEC §13): latest is when the newest shard was recorded, not its createdAt.
          after: { count: 2, distinctSources: 2, oldest: NOW - 5 * DAY, newest: NOW - DAY, latest: NOW + 1 },
          before: { count: 1, distinctSources: 1, oldest: NOW - 5 * DAY, newest: NOW - 5 * DAY, latest: NOW },
        },
        {
          soulId: y.id,
          dormant: false,
          lastAttunedAt: null,
          shardIds: [2],
          beforeShardIds: [],
          after: { count: 1, distinctSources: 1, oldest: NOW - DAY, newest: NOW - DAY, latest: NOW + 1 },
          before: { count: 0, distinctSources: 0, oldest: null, newest: null, latest: null },
        },
      ]);
      expect((await store.getShards([2])).get(2)).toEqual({
        id: 2,
        content: 'both',
        source: 'chat',
        status: 'pending',
        sealed: false,
        tags: ['t1', 't2'],
        soulIds: [x.id, y.id],
        createdAt: NOW - DAY,
        updatedAt: NOW + 1,
        recordedAt: NOW + 1,
        revealedAt: null,
      });
      expect(await store.shardContents([1, 3, 99])).toEqual(new Map([[1, 'old one'], [3, 'sealed']]));
      const revealed = await store.revealShards([3, 3, 2], NOW + 2, NOW - 30 * DAY);
      expect(revealed.shardIds).toEqual([3]);
      expect(revealed.gate).toEqual([expect.objectContaining({ soulId: y.id, shardIds: [2, 3], beforeShardIds: [2], after: expect.objectContaining({ count: 2, latest: NOW + 2 }) })]);
      await expect(async () => await store.revealShards([99], NOW, 0)).rejects.toThrow(NotFoundError);
      expect(await store.gateStats('awake', NOW - 30 * DAY)).toEqual(
        new Map([
          [x.id, expect.objectContaining({ shardIds: [1, 2] })],
          [y.id, expect.objectContaining({ shardIds: [2, 3] })],
        ]),
      );
      expect((await store.gateStats([y.id], NOW - 30 * DAY)).get(y.id)!.after.count).toBe(2);
      expect(await store.pendingCounts('awake', NOW - 30 * DAY)).toEqual(new Map([[x.id, 2], [y.id, 2]]));
      expect(await counts(store, [x.id, y.id])).toEqual([2, 3]);
      const empty = await store.insertSoul({ name: 'Empty', slug: null, essence: 'e', description: '' }, NOW);
      const none = { count: 0, distinctSources: 0, oldest: null, newest: null, latest: null };
      expect((await store.gateStats([empty.id], NOW - 30 * DAY)).get(empty.id)).toEqual(expect.objectContaining({ shardIds: [], beforeShardIds: [], before: none, after: none }));
    }));

    it('refuses a write naming a missing soul or a vector of another dimension, writing nothing', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'Z', slug: null, essence: 'e', description: '' }, NOW);
      expect(await store.embeddingDimension()).toBeNull();
      await store.insertShards([shard([soul.id], 'vec', { embedding: vector([1, 2, 3]) })], NOW, 0);
      expect(await store.embeddingDimension()).toBe(3);
      const missing = await (async () => {
        try {
          await store.insertShards([shard([soul.id], 'a'), shard([soul.id, 77], 'b')], NOW, 0);
        } catch (e) {
          return e;
        }
      })();
      expect(missing).toBeInstanceOf(NotFoundError);
      expect(missing).toMatchObject({ entity: 'Soul', id: '77' });
      const wrong = await (async () => {
        try {
          await store.insertShards([shard([soul.id], 'c'), shard([soul.id], 'd', { embedding: vector([1, 2]) })], NOW, 0);
        } catch (e) {
          return e;
        }
      })();
      expect(wrong).toBeInstanceOf(ValidationError);
      expect(wrong).toMatchObject({ field: 'embedding' });
      expect(await counts(store, [soul.id])).toEqual([1]);
      expect((await store.listShards({ status: 'pending', cutoff: null }, { first: 10, after: null })).totalCount).toBe(1);
    }));

    it('keeps one calibration per key in souls_meta, replaced by the next, beside the embedding dimension', withStore(async (store) => {
      expect(await store.getCalibration('lexical')).toBeNull();
      const first = { threshold: 0.08, ari: 0.871, from: 'themes' as const, texts: 40, labels: 5, calibratedAt: NOW };
      await store.putCalibration('lexical', first);
      await store.putCalibration('provided:3d', { ...first, threshold: 0.55, from: 'labels' });
      expect(await store.getCalibration('lexical')).toEqual(first);
      await store.putCalibration('lexical', { ...first, threshold: 0.1, calibratedAt: NOW + 1 });
      expect(await store.getCalibration('lexical')).toEqual({ ...first, threshold: 0.1, calibratedAt: NOW + 1 });
      expect(await store.getCalibration('provided:3d')).toMatchObject({ threshold: 0.55, from: 'labels' });
      expect(await store.getCalibration('provided:4d')).toBeNull();
      expect(await store.embeddingDimension()).toBeNull();
    }));

    it('bounds the shard rows from above, from none to every row written', withStore(async (store) => {
      expect(await store.shardRowBound()).toBe(0);
      const soul = await store.insertSoul({ name: 'B', slug: null, essence: 'e', description: '' }, NOW);
      const { shardIds } = await store.insertShards([shard([soul.id], 'a'), shard([soul.id], 'b')], NOW, 0);
      expect(await store.shardRowBound()).toBeGreaterThanOrEqual(2);
      expect(await store.shardRowBound()).toBe(Math.max(...shardIds));
    }));

    it('stores embeddings once each and lists the shards still without one', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'V', slug: null, essence: 'e', description: '' }, NOW);
      const { shardIds } = await store.insertShards([shard([soul.id], 'a'), shard([soul.id], 'b'), shard([soul.id], 'c')], NOW, 0);
      expect(await store.countShardsWithoutEmbedding()).toBe(3);
      expect(await store.shardsWithoutEmbedding(shardIds[0], 10)).toEqual([{ id: shardIds[1], content: 'b' }, { id: shardIds[2], content: 'c' }]);
      const first = vector([3, 4]);
      expect(await store.embeddingModel()).toBeNull();
      expect(await store.storeEmbeddings([{ id: shardIds[0], embedding: first, contentHash: 'ha' }], 'm1')).toEqual([shardIds[0]]);
      expect(await store.embeddingModel()).toBe('m1');
      expect(await store.storeEmbeddings([{ id: shardIds[0], embedding: vector([4, 3]), contentHash: 'hx' }, { id: shardIds[1], embedding: vector([1, 0]), contentHash: 'hb' }], 'm1')).toEqual([shardIds[1]]);
      await expect(async () => store.storeEmbeddings([{ id: shardIds[2], embedding: vector([1, 2, 3]), contentHash: 'hc' }], 'm1')).rejects.toThrow(ValidationError);
      // Another model's vector is refused, whatever its dimension, and so is a caller's (provided) once a model is bound.
      await expect(async () => store.storeEmbeddings([{ id: shardIds[2], embedding: vector([1, 2]), contentHash: 'hc' }], 'm2')).rejects.toThrow(/model "m1", not "m2"/);
      await expect(async () => store.insertShards([shard([soul.id], 'd', { embedding: vector([1, 2]) })], NOW, 0)).rejects.toThrow(ValidationError);
      // Vectors by the hash of their text: the unused hash of an overwritten attempt is not there.
      const byHash = await store.embeddingsByHash(['ha', 'hb', 'hx', 'none']);
      expect([...byHash.keys()].sort()).toEqual(['ha', 'hb']);
      expect([...byHash.get('ha')!]).toEqual([...first]);
      const stored = await store.shardEmbeddings([shardIds[0], shardIds[2]]);
      expect([...stored.keys()]).toEqual([shardIds[0]]);
      expect([...stored.get(shardIds[0])!]).toEqual([...first]);
      expect(await store.countShardsWithoutEmbedding()).toBe(1);
      // Rebinding forgets every vector, hash and the dimension at once; the new model's vectors then go in.
      expect(await store.rebindEmbeddings('m2')).toBe(2);
      expect(await store.embeddingModel()).toBe('m2');
      expect(await store.embeddingDimension()).toBeNull();
      expect(await store.countShardsWithoutEmbedding()).toBe(3);
      expect((await store.embeddingsByHash(['ha', 'hb'])).size).toBe(0);
      expect(await store.storeEmbeddings([{ id: shardIds[2], embedding: vector([1, 2, 3]), contentHash: 'hc' }], 'm2')).toEqual([shardIds[2]]);
      expect(await store.embeddingDimension()).toBe(3);
    }));

    it('binds callers\' vectors to the provided model, and refuses a computed one beside them', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'P', slug: null, essence: 'e', description: '' }, NOW);
      const { shardIds } = await store.insertShards([shard([soul.id], 'a', { embedding: vector([1, 0]) }), shard([soul.id], 'b')], NOW, 0);
      expect(await store.embeddingModel()).toBe(PROVIDED_MODEL);
      await expect(async () => store.storeEmbeddings([{ id: shardIds[1], embedding: vector([0, 1]), contentHash: 'hb' }], 'm1')).rejects.toThrow(ValidationError);
      expect(await store.countShardsWithoutEmbedding()).toBe(1);
    }));

    it('fades shards cited by enough traits, with the gate before and after', withStore(async (store) => {
      const soul = await store.insertSoul({ name: 'F', slug: null, essence: 'e', description: '' }, NOW);
      const { shardIds } = await store.insertShards([shard([soul.id], 'a'), shard([soul.id], 'b')], NOW, 0);
      await store.insertTrait(soul.id, { principle: 'p', provenance: 'v', citeShardIds: [shardIds[0]] }, NOW, 10);
      expect(await store.fadeExhaustedShards(2, NOW + 1, 0)).toEqual({ fadedCount: 0, gate: [] });
      await store.insertTrait(soul.id, { principle: 'q', provenance: 'v', citeShardIds: [shardIds[0]] }, NOW, 10);
      const faded = await store.fadeExhaustedShards(2, NOW + 1, 0);
      expect(faded.fadedCount).toBe(1);
      expect(faded.gate).toEqual([expect.objectContaining({ soulId: soul.id, shardIds: [shardIds[1]], beforeShardIds: shardIds, before: expect.objectContaining({ count: 2 }), after: expect.objectContaining({ count: 1 }) })]);
      expect((await store.listShards({ status: 'faded', cutoff: null }, { first: 5, after: null })).items.map((s) => [s.id, s.updatedAt])).toEqual([[shardIds[0], NOW + 1]]);
    }));

    it('pages shards newest first with filters and cursors', withStore(async (store) => {
      const a = await store.insertSoul({ name: 'A', slug: null, essence: 'e', description: '' }, NOW);
      const b = await store.insertSoul({ name: 'B', slug: null, essence: 'e', description: '' }, NOW);
      await store.insertShards(
        Array.from({ length: 7 }, (_, i) =>
          shard(i % 2 === 0 ? [a.id] : [a.id, b.id], `s${i}`, { createdAt: NOW - DAY * (i % 3), source: i < 4 ? 'chat' : 'email', tags: i % 3 === 0 ? ['x'] : ['y'], sealed: i === 6 }),
        ),
        NOW,
        0,
      );
      const ids = (page: { items: Array<{ id: number }> }) => page.items.map((s) => s.id);
      const first = await store.listShards({ status: 'pending', soulId: a.id, cutoff: null }, { first: 3, after: null });
      expect(ids(first)).toEqual([7, 4, 1]);
      expect(first).toMatchObject({ totalCount: 7, hasNextPage: true });
      const second = await store.listShards({ status: 'pending', soulId: a.id, cutoff: null }, { first: 3, after: first.endCursor });
      expect(ids(second)).toEqual([5, 2, 6]);
      expect(ids(await store.listShards({ status: 'pending', soulId: a.id, cutoff: null }, { first: 3, after: second.endCursor }))).toEqual([3]);
      expect(ids(await store.listShards({ status: 'pending', source: 'email', sealed: false, tags: ['x'], cutoff: null }, { first: 9, after: null }))).toEqual([]);
      expect(ids(await store.listShards({ status: 'pending', soulId: b.id, tags: ['y'], cutoff: NOW - 3 * DAY }, { first: 9, after: null }))).toEqual([2, 6]);
      await expect(async () => await store.listShards({ status: 'pending', cutoff: null }, { first: 3, after: 'nonsense' })).rejects.toThrow(ValidationError);
    }));

    it('searches words with stemming and without stop words, and scopes considered shards by tags and words', withStore(async (store) => {
      const a = await store.insertSoul({ name: 'A', slug: null, essence: 'e', description: '' }, NOW);
      const b = await store.insertSoul({ name: 'B', slug: null, essence: 'e', description: '' }, NOW);
      await store.insertShards(
        [
          shard([a.id], 'The dogs were running in the park', { tags: ['walk'] }),
          shard([b.id], 'A dog runs', { tags: ['walk', 'pet'] }),
          shard([a.id], 'Cats sleep all day'),
          shard([a.id], 'Running dogs, sealed', { sealed: true }),
          shard([a.id], 'Running dogs long ago', { createdAt: NOW - 90 * DAY }),
        ],
        NOW,
        0,
      );
      const cutoff = NOW - 30 * DAY;
      const all = (...words: string[]): TextQuery => ({ words: words.map((w) => [w]), match: 'all' });
      expect((await store.searchShards(all('run', 'dog'), { cutoff, limit: 10 })).map((r) => r.shardId).sort()).toEqual([1, 2]);
      expect((await store.searchShards(all('run', 'dog'), { cutoff, limit: 10, soulId: b.id })).map((r) => r.shardId)).toEqual([2]);
      expect((await store.searchShards(all('the'), { cutoff, limit: 10 })).map((r) => r.shardId)).toEqual([1]);
      expect(await store.searchShards(all('"quoted', 'or'), { cutoff, limit: 10 })).toEqual([]);
      expect(await store.searchShards(all(), { cutoff, limit: 10 })).toEqual([]);
      const hits = await store.searchShards(all('dog'), { cutoff, limit: 1 });
      expect(hits).toHaveLength(1);
      expect(hits[0].score).toBeGreaterThan(0);
      expect((await store.consideredShardVersions([a.id, b.id], cutoff)).map((v) => v.id)).toEqual([1, 2, 3]);
      expect((await store.consideredShardVersions([a.id, b.id], cutoff, { tags: ['pet'] })).map((v) => v.id)).toEqual([2]);
      expect((await store.consideredShardVersions([a.id, b.id], cutoff, { text: all('sleeping') })).map((v) => v.id)).toEqual([3]);
      expect((await store.consideredShardVersions([a.id], cutoff, { text: all() })).map((v) => v.id)).toEqual([]);
      expect((await store.consideredShards([a.id], cutoff, { tags: ['walk'], text: all('park') })).map((s) => [s.id, s.tags])).toEqual([[1, ['walk']]]);
    }));

    it('matches any spelling of a word, and every word or any word', withStore(async (store) => {
      const a = await store.insertSoul({ name: 'A', slug: null, essence: 'e', description: '' }, NOW);
      await store.insertShards(
        [
          shard([a.id], 'I apologise for the colour of the report'),
          shard([a.id], 'Sorry, apologizing again'),
          shard([a.id], "Don't e-mail the O'Brien file: a\\b"),
          shard([a.id], 'Cats sleep all day'),
        ],
        NOW,
        0,
      );
      const cutoff = NOW - 30 * DAY;
      const search = async (words: string[][], match: 'all' | 'any') => (await store.searchShards({ words, match }, { cutoff, limit: 10 })).map((r) => r.shardId).sort();
      expect(await search([['apologize']], 'all')).toEqual([2]);
      expect(await search([['apologize', 'apologise']], 'all')).toEqual([1, 2]);
      expect(await search([['apologize', 'apologise'], ['sorry']], 'all')).toEqual([2]);
      expect(await search([['apologize', 'apologise'], ['sorry']], 'any')).toEqual([1, 2]);
      expect(await search([['color', 'colour'], ['cats']], 'any')).toEqual([1, 4]);
      expect(await search([['nothing'], ['cats']], 'all')).toEqual([]);
      // Punctuation inside a word reads as a phrase of its parts, quotes and backslashes as separators.
      expect(await search([["don't"], ['e-mail'], ["o'brien"], ['a\\b']], 'all')).toEqual([3]);
      expect(await search([['"quoted'], ["it's"], ['(x) | y & !z']], 'any')).toEqual([]);
      expect((await store.consideredShardVersions([a.id], cutoff, { text: { words: [['apologise', 'apologize'], ['report']], match: 'any' } })).map((v) => v.id)).toEqual([1, 2]);
    }));

    it('counts considered shards by source and by tag', withStore(async (store) => {
      const a = await store.insertSoul({ name: 'A', slug: null, essence: 'e', description: '' }, NOW);
      const b = await store.insertSoul({ name: 'B', slug: null, essence: 'e', description: '' }, NOW);
      await store.insertShards(
        [
          shard([a.id], '1', { source: 'mail', tags: ['b', 'a'] }),
          shard([a.id, b.id], '2', { source: 'chat', tags: ['a'] }),
          shard([a.id], '3', { source: 'chat', tags: ['B'] }),
          shard([a.id], '4', { source: 'chat', tags: ['a'], createdAt: NOW - 90 * DAY }),
        ],
        NOW,
        0,
      );
      const cutoff = NOW - 30 * DAY;
      expect(await store.countsBySource([a.id, b.id, 9], cutoff)).toEqual(
        new Map([
          [a.id, [{ source: 'chat', count: 2 }, { source: 'mail', count: 1 }]],
          [b.id, [{ source: 'chat', count: 1 }]],
          [9, []],
        ]),
      );
      expect(await store.countsByTag(null, cutoff)).toEqual([{ tag: 'a', count: 2 }, { tag: 'B', count: 1 }, { tag: 'b', count: 1 }]);
      expect(await store.countsByTag(b.id, cutoff)).toEqual([{ tag: 'a', count: 1 }]);
      expect(await store.countsByTagPerSoul([a.id, b.id], cutoff)).toEqual(
        new Map([
          [a.id, [{ tag: 'a', count: 2 }, { tag: 'B', count: 1 }, { tag: 'b', count: 1 }]],
          [b.id, [{ tag: 'a', count: 1 }]],
        ]),
      );
    }));
  });

  describe(`${backend.name} store: maintenance`, () => {
    it('counts statements, answers ping, optimizes, explains the hot statements, and refuses calls once closed', async () => {
      const store = await backend.fresh();
      let closed = false;
      try {
        const before = await store.statementsExecuted();
        await store.getSouls([1, 2, 3]);
        await store.listSouls({ dormant: false });
        expect(await store.statementsExecuted() - before).toBe(2);
        await store.ping();
        await store.optimize();
        expect(Object.keys(await store.explainQueryPlans()).sort()).toEqual(['ftsSearch', 'ftsSearchBySoul', 'gate', 'gateRead', 'pendingLoad', 'readiness']);
        expect(await store.close()).toEqual({ checkpointDeferred: null });
        closed = true;
        await expect(async () => await store.ping()).rejects.toThrow();
      } finally {
        if (!closed) await backend.release(store);
      }
    });
  });

  if (backend.shared) {
    const shared = backend.shared;
    describe(`${backend.name} store: concurrency`, () => {
      it('serializes writers on one soul: eight threads inserting at once each see the others that committed first', async () => {
        const { target, store } = await shared();
        try {
          const soul = await store.insertSoul({ name: 'Shared', slug: null, essence: 'e', description: '' }, NOW);
          const start = new SharedArrayBuffer(4);
          const writers = Array.from({ length: 8 }, (_, i) => runWriter(target, soul.id, i, start));
          // Every writer has opened its store and waits on the flag; all are released together.
          await new Promise((resolve) => setTimeout(resolve, 50));
          const flag = new Int32Array(start);
          while (Atomics.load(flag, 0) < 8) await new Promise((resolve) => setTimeout(resolve, 20));
          Atomics.store(flag, 0, -1);
          Atomics.notify(flag, 0);
          const results = await Promise.all(writers);
          // Exactly one writer crossed each count: the before counts are 0..7, each once.
          expect(results.map((r) => r.before).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
          for (const r of results) expect(r.after).toBe(r.before + 1);
          expect(await counts(store, [soul.id])).toEqual([8]);
        } finally {
          await backend.release(store);
        }
      });

      it('lets one of a citation and an opposition racing on one soul through, never both (SPEC §13)', async () => {
        const { target, store } = await shared();
        const other = await openStoreAsync({ path: target });
        try {
          for (let round = 0; round < 4; round++) {
            const soul = await store.insertSoul({ name: `Race ${round}`, slug: null, essence: 'e', description: '' }, NOW);
            const { shardIds: ids } = await store.insertShards([shard([soul.id], 'one'), shard([soul.id], 'two')], NOW, 0);
            const trait = await store.insertTrait(soul.id, { principle: 'p', provenance: 'v', citeShardIds: [] }, NOW, 10);
            const [theme] = await store.assignThemes(soul.id, [{ shardIds: ids, themeId: null, newThemeName: 'T' }], 'ann', NOW, 100);
            // Alternate which starts first; each runs on its own connection.
            const cite = () => Promise.resolve().then(() => store.citeShards(trait.id, [ids[0]], NOW + 1));
            const oppose = () => Promise.resolve().then(() => other.setThemeOpposition(theme.id, trait.id, true, 'bob', NOW + 1));
            const outcomes = await Promise.allSettled(round % 2 === 0 ? [cite(), oppose()] : [oppose(), cite()]);
            expect(outcomes.filter((o) => o.status === 'fulfilled'), `round ${round}`).toHaveLength(1);
            expect((outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason, `round ${round}`).toBeInstanceOf(ValidationError);
            expect(await store.counterCitations([trait.id], [trait.id]), `round ${round}`).toEqual([]);
          }
        } finally {
          await other.close();
          await backend.release(store);
        }
      });

      it('lets one of two judgements racing for the last theme a soul may hold through, never both (maxThemesPerSoul)', async () => {
        const { target, store } = await shared();
        const other = await openStoreAsync({ path: target });
        try {
          for (let round = 0; round < 4; round++) {
            const soul = await store.insertSoul({ name: `Theme race ${round}`, slug: null, essence: 'e', description: '' }, NOW);
            const { shardIds: ids } = await store.insertShards([shard([soul.id], 'one'), shard([soul.id], 'two'), shard([soul.id], 'three')], NOW, 0);
            await store.assignThemes(soul.id, [{ shardIds: [ids[0]], themeId: null, newThemeName: 'First' }], 'ann', NOW, 2);
            const judge = (by: SoulsStore, shardId: number, name: string) => Promise.resolve().then(() => by.assignThemes(soul.id, [{ shardIds: [shardId], themeId: null, newThemeName: name }], 'bob', NOW + 1, 2));
            const outcomes = await Promise.allSettled(round % 2 === 0 ? [judge(store, ids[1], 'Second'), judge(other, ids[2], 'Third')] : [judge(other, ids[2], 'Third'), judge(store, ids[1], 'Second')]);
            expect(outcomes.filter((o) => o.status === 'fulfilled'), `round ${round}`).toHaveLength(1);
            expect((outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason, `round ${round}`).toMatchObject({ name: 'ValidationError', field: 'assignments[0].newThemeName' });
            expect(await store.listThemes([soul.id]), `round ${round}`).toHaveLength(2);
          }
        } finally {
          await other.close();
          await backend.release(store);
        }
      });
    });
  }
}

function runWriter(target: string, soulId: number, index: number, start: SharedArrayBuffer): Promise<WriterResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./store-writer.ts', import.meta.url), { workerData: { target, soulId, index, start } });
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => code !== 0 && reject(new Error(`writer ${index} exited with ${code}`)));
  });
}
