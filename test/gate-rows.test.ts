// Issue 15: writes read each soul's cheap gate from one stored row. Whatever happens to the shards,
// the row must answer exactly as the query over all of a soul's shards (gateStats) does.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DAY_MS,
  addTrait,
  assignThemes,
  awakenSoul,
  citeShard,
  unciteShard,
  closeSoulsDb,
  createSoul,
  dropShard,
  dropShards,
  fadeExhaustedShards,
  getCrystallization,
  levelUp,
  listTraits,
  manualClock,
  openSoulsDb,
  retireSoul,
  revealShards,
  revertLevelUp,
  stampAttuned,
  type ShardInput,
  type SoulsDb,
} from '../src/engine/index.ts';
import { expiryCutoff } from '../src/engine/settings.ts';
import { migrations } from '../src/store/schema.ts';
import type { SqliteStore } from '../src/store/sqlite.ts';
import type { GateStats } from '../src/store/store.ts';
import { freshDb } from './support/engine.ts';
import { createRng, type Rng } from './support/fuzz.ts';

const T0 = Date.UTC(2026, 0, 1);
// Each level-up revert gives back the two traits it merged: room for them all.
const SETTINGS = { shardExpiryDays: 6, crystallizationThreshold: 4, shardFadeCitations: 2, traitLimit: 1000 };
const TOPICS = ['ran the tests before merging the branch', 'asked the reviewer about the schema change', 'wrote the release notes for the api', 'fixed the flaky deploy script'];

const cutoffOf = (db: SoulsDb) => expiryCutoff(db, db.clock.now());
const sqlite = (db: SoulsDb) => db.store as SqliteStore;

/** A note on one of a few topics, so souls form a handful of clusters. */
function note(rng: Rng, n: number): string {
  return `${rng.pick(TOPICS)} ${rng.pick(['today', 'again', 'quickly', 'carefully'])} number ${n}`;
}

/** Every soul's gate as a write would read it equals the query over all its shards. */
async function expectRowsMatch(db: SoulsDb, souls: readonly number[], context: string): Promise<void> {
  const reference = await db.store.gateStats(souls, cutoffOf(db));
  const stored = sqlite(db).storedGate(souls, cutoffOf(db));
  for (const id of souls) expect(stored.get(id), `${context}: soul ${id}`).toEqual(reference.get(id)!.after);
}

/** A write's GateStats against the reference read just before and just after it (and, where it says, whether the soul has themes). */
async function expectWriteGate(db: SoulsDb, written: readonly GateStats[], before: Map<number, GateStats>, after: Map<number, GateStats>, context: string): Promise<void> {
  expect(written.map((g) => g.soulId), context).toEqual([...after.keys()].sort((a, b) => a - b));
  const themes = await db.store.shardThemesOfSouls(written.map((g) => g.soulId));
  for (const g of written) {
    const was = before.get(g.soulId)!;
    const now = after.get(g.soulId)!;
    const themed = g.themed === undefined ? {} : { themed: themes.get(g.soulId)!.size > 0 };
    expect(g, `${context}: soul ${g.soulId}`).toEqual({ ...now, before: was.after, beforeShardIds: was.shardIds, ...themed });
  }
}

const isAwake = async (db: SoulsDb, soul: number) => (await db.store.getSouls([soul])).get(soul)!.deletedAt === null;

async function readiness(db: SoulsDb, souls: readonly number[]): Promise<Map<number, boolean>> {
  return new Map([...(await getCrystallization(db, souls))].map(([id, c]) => [id, c.ready]));
}

/** The souls a write made ready, as the verdicts before and after it say (touched souls only). */
async function expectEdges(db: SoulsDb, touched: readonly number[], write: () => Promise<number[]>, context: string): Promise<void> {
  const was = await readiness(db, touched);
  const edges = await write();
  const is = await readiness(db, touched);
  const expected = touched.filter((id) => is.get(id) && !was.get(id)).sort((a, b) => a - b);
  expect([...edges].sort((a, b) => a - b), context).toEqual(expected);
}

async function history(seed: number, steps: number, db: SoulsDb, clock: ReturnType<typeof manualClock>, souls: number[]): Promise<Record<string, number>> {
  const rng = createRng(seed);
  const sealed = new Set<number>();
  const shards: number[] = [];
  const done: Record<string, number> = {};
  const count = (op: string) => (done[op] = (done[op] ?? 0) + 1);
  const input = (n: number): ShardInput => ({
    content: note(rng, n),
    source: `source-${rng.int(3)}`,
    soulIds: rng.chance(0.2) ? [rng.pick(souls), rng.pick(souls)] : [rng.pick(souls)],
    sealed: rng.chance(0.15),
    createdAt: clock.now() - rng.int(8 * DAY_MS),
  });
  const remember = (ids: readonly number[], inputs: readonly ShardInput[]) => {
    shards.push(...ids);
    ids.forEach((id, i) => inputs[i].sealed && sealed.add(id));
  };
  for (let step = 0; step < steps; step++) {
    const context = `seed ${seed}, step ${step}`;
    clock.advance(rng.int(Math.floor(1.5 * DAY_MS)));
    const op = rng.next();
    if (op < 0.3) {
      // Now and then a batch large enough to be written in several multi-row chunks (256 + 32 + …).
      const size = rng.chance(0.05) ? rng.between(257, 300) : rng.chance(0.5) ? 1 : rng.between(2, 9);
      const inputs = Array.from({ length: size }, (_, i) => input(step * 1000 + i));
      const touched = [...new Set(inputs.flatMap((s) => s.soulIds))];
      await expectEdges(db, touched, async () => {
        if (inputs.length > 1) {
          const written = await dropShards(db, inputs);
          remember(written.shardIds, inputs);
          return written.readySoulIds;
        }
        const [one] = inputs;
        const written = await dropShard(db, one.content, one.source, one.soulIds, one);
        remember([written.shardId], inputs);
        return written.readySoulIds;
      }, context);
      count('drop');
    } else if (op < 0.5) {
      // The store itself, asked for every soul's ids: before, after and both id lists checked.
      const inputs = Array.from({ length: rng.between(1, 6) }, (_, i) => input(step * 1000 + i));
      const news = inputs.map((s) => ({ content: s.content, source: s.source, soulIds: s.soulIds, tags: [], sealed: s.sealed === true, createdAt: s.createdAt!, embedding: null }));
      const touched = [...new Set(inputs.flatMap((s) => s.soulIds))];
      const before = await db.store.gateStats(touched, cutoffOf(db));
      const written = await db.store.insertShards(news, clock.now(), cutoffOf(db));
      await expectWriteGate(db, written.gate, before, await db.store.gateStats(touched, cutoffOf(db)), context);
      remember(written.shardIds, inputs);
      count('insert');
    } else if (op < 0.6 && sealed.size > 0) {
      const ids = [...sealed].filter(() => rng.chance(0.5)).concat(shards.length > 0 ? [rng.pick(shards)] : []);
      const unsealing = ids.filter((id) => sealed.has(id));
      const touched = [...new Set([...(await db.store.getShards(unsealing)).values()].flatMap((s) => s.soulIds))];
      if (rng.chance(0.5)) {
        await expectEdges(db, touched, async () => (await revealShards(db, ids)).readySoulIds, context);
      } else {
        const before = await db.store.gateStats(touched, cutoffOf(db));
        const written = await db.store.revealShards(ids, clock.now(), cutoffOf(db));
        expect(written.shardIds, context).toEqual([...new Set(unsealing)].sort((a, b) => a - b));
        await expectWriteGate(db, written.gate, before, await db.store.gateStats(touched, cutoffOf(db)), context);
      }
      for (const id of ids) sealed.delete(id);
      count('reveal');
    } else if (op < 0.7 && shards.length > 0) {
      const soul = rng.pick(souls);
      const traits = (await listTraits(db, soul)).filter((t) => t.status === 'active');
      const owned = [...(await db.store.getShards(shards)).values()].filter((s) => s.soulIds.includes(soul)).map((s) => s.id);
      if ((await isAwake(db, soul)) && traits.length >= 2 && owned.length > 0) {
        const shard = rng.pick(owned);
        await citeShard(db, shard, traits[0].id);
        await citeShard(db, shard, traits[1].id);
        await fadeExhaustedShards(db);
        count('fade');
        // Taking one citation back un-fades the shard, which may make its souls ready again.
        if (rng.chance(0.5)) {
          await expectEdges(db, (await db.store.getShards([shard])).get(shard)!.soulIds, async () => (await unciteShard(db, shard, traits[1].id)).readySoulIds, context);
          count('uncite');
        }
      }
    } else if (op < 0.78) {
      const soul = rng.pick(souls);
      if (!(await isAwake(db, soul))) await awakenSoul(db, soul);
      else await retireSoul(db, soul);
      count('dormancy');
    } else if (op < 0.86) {
      const soul = rng.pick(souls);
      if ((await isAwake(db, soul))) {
        await stampAttuned(db, soul);
        count('attune');
      }
    } else if (op < 0.94 && shards.length > 0) {
      // A level-up whose merged trait cites shards until they fade; the revert takes the citations back and un-fades them.
      const soul = rng.pick(souls);
      if ((await isAwake(db, soul))) {
        const a = await addTrait(db, soul, { principle: `first of step ${step}`, provenance: 'p' });
        const b = await addTrait(db, soul, { principle: `second of step ${step}`, provenance: 'p' });
        const carried = (await listTraits(db, soul)).filter((t) => t.status === 'active' && t.id !== a.id && t.id !== b.id).map((t) => t.id);
        const { event } = await levelUp(db, soul, {
          newEssence: `Level at step ${step}.`,
          consolidations: [{ sourceTraitIds: [a.id, b.id], mergedPrinciple: `merged at step ${step}`, mergedProvenance: 'p' }],
          promotedTraitIds: [],
          carriedTraitIds: carried,
        });
        const other = carried[0];
        const owned = [...(await db.store.getShards(shards)).values()].filter((s) => s.soulIds.includes(soul) && s.status === 'pending').map((s) => s.id);
        for (const shard of owned.filter(() => rng.chance(0.4))) {
          await citeShard(db, shard, event.merged[0]);
          if (other !== undefined) await citeShard(db, shard, other);
        }
        await fadeExhaustedShards(db);
        clock.advance(rng.int(DAY_MS));
        await revertLevelUp(db, soul);
        count('revert');
      }
    }
    await expectRowsMatch(db, souls, context);
  }
  return done;
}

describe('the stored gate rows', () => {
  it('answer as the query over every shard does, through long random histories of drops, batches, reveals, expiry, fading, uncites, dormancy, attunement and level-up reverts', async () => {
    for (let seed = 1; seed <= 8; seed++) {
      const { db, clock } = freshDb(T0, SETTINGS);
      const souls: number[] = [];
      for (let i = 0; i < 4; i++) souls.push((await createSoul(db, { name: `Soul ${i}`, essence: 'e' })).id);
      for (const soul of souls) for (const n of [1, 2]) await addTrait(db, soul, { principle: `standing ${n}`, provenance: 'p' });
      const done = await history(seed, 160, db, clock, souls);
      // Every kind of step happened, so each was compared.
      expect(Object.keys(done).sort(), `seed ${seed}`).toEqual(['attune', 'dormancy', 'drop', 'fade', 'insert', 'reveal', 'revert', 'uncite']);
      closeSoulsDb(db);
    }
  });
});

describe('upgrading a version 3 database', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('builds each soul\'s gate row from its shards when a write first touches it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-gate-'));
    dirs.push(dir);
    const path = join(dir, 'v3.db');
    const v3 = new DatabaseSync(path);
    v3.exec(migrations[0] as string);
    (migrations[1] as (db: DatabaseSync) => void)(v3);
    v3.exec(migrations[2] as string);
    v3.exec('PRAGMA user_version = 3');
    const rng = createRng(5);
    for (const id of [1, 2, 3]) {
      v3.prepare(`INSERT INTO souls (id, name, name_key, slug, essence, created_at, updated_at, ordered_at) VALUES (?, ?, ?, ?, 'e', 0, 0, 0)`).run(id, `S${id}`, `s${id}`, `s${id}`);
    }
    const now = T0 + 30 * DAY_MS;
    for (let i = 1; i <= 60; i++) {
      const createdAt = now - rng.int(10 * DAY_MS);
      v3.prepare(`INSERT INTO soul_shards (id, content, source, status, sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`).run(
        i,
        note(rng, i),
        `source-${rng.int(3)}`,
        rng.chance(0.1) ? 'faded' : 'pending',
        rng.chance(0.1) ? 1 : 0,
        createdAt,
        createdAt,
      );
      v3.prepare('INSERT INTO shard_souls (shard_id, soul_id) VALUES (?, ?)').run(i, 1 + rng.int(3));
    }
    v3.close();

    const db = openSoulsDb({ path, clock: manualClock(now), settings: SETTINGS });
    try {
      const raw = new DatabaseSync(path, { readOnly: true });
      expect(Number((raw.prepare('PRAGMA user_version').get() as { user_version: number }).user_version)).toBe(migrations.length);
      expect(raw.prepare('SELECT COUNT(*) AS n FROM soul_gate').get()).toEqual({ n: 0 });
      await expectRowsMatch(db, [1, 2, 3], 'after the upgrade');
      const before = await db.store.gateStats([1, 2], cutoffOf(db));
      const written = await db.store.insertShards(
        [{ content: 'a new note', source: 'source-9', soulIds: [1, 2], tags: [], sealed: false, createdAt: now, embedding: null }],
        now,
        cutoffOf(db),
      );
      expect(written.shardIds).toEqual([61]);
      await expectWriteGate(db, written.gate, before, await db.store.gateStats([1, 2], cutoffOf(db)), 'first write');
      expect(raw.prepare('SELECT soul_id, count FROM soul_gate ORDER BY soul_id').all().map((r) => ({ ...r }))).toEqual(
        [...(await db.store.gateStats([1, 2], cutoffOf(db))).values()].map((g) => ({ soul_id: g.soulId, count: g.after.count })),
      );
      raw.close();
      await expectRowsMatch(db, [1, 2, 3], 'after the first write');
    } finally {
      closeSoulsDb(db);
    }
  });
});

describe('a write reusing what the last shard write read', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const fileDb = (name: string, clock: ReturnType<typeof manualClock>, settings: Record<string, unknown> = SETTINGS) => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-memo-'));
    dirs.push(dir);
    const path = join(dir, name);
    return { path, db: openSoulsDb({ path, clock, settings }) };
  };
  const shard = (content: string, soulIds: number[], createdAt: number, source = 'source-1') => ({ content, source, soulIds, tags: [], sealed: false, createdAt, embedding: null });

  it.each(['trigram', 'lexical'] as const)('reports the edges a fresh handle sees, through writes alone with no read between them (%s)', async (similarity) => {
    for (let seed = 1; seed <= 6; seed++) {
      const clock = manualClock(T0);
      // Seeds 5 and 6 cluster only each soul's 5 newest shards: every write moves the window.
      const settings = { ...SETTINGS, similarity, ...(seed > 4 ? { maxClusteredShards: 5 } : {}) };
      const { path, db } = fileDb(`alone-${similarity}-${seed}.db`, clock, settings);
      const souls: number[] = [];
      for (let i = 0; i < 3; i++) souls.push((await createSoul(db, { name: `Soul ${i}`, essence: 'e' })).id);
      const rng = createRng(seed);
      // Another connection's verdicts, each counted (opening and closing one per step would write: see close()).
      const reference = openSoulsDb({ path, clock, mode: 'read-only', settings });
      const verdicts = () => readiness(reference, souls);
      let edges = 0;
      for (let step = 0; step < 160; step++) {
        clock.advance(rng.int(DAY_MS / 4));
        const inputs = Array.from({ length: rng.chance(0.7) ? 1 : rng.between(2, 5) }, (_, i) => ({
          content: note(rng, step * 10 + i),
          source: `source-${rng.int(3)}`,
          soulIds: [rng.pick(souls)],
          // Mostly recent, so that rows stay fresh long enough for the writes to keep them in memory.
          createdAt: clock.now() - rng.int(rng.chance(0.9) ? DAY_MS : 8 * DAY_MS),
        }));
        const was = await verdicts();
        const ready = inputs.length === 1 ? (await dropShard(db, inputs[0].content, inputs[0].source, inputs[0].soulIds, inputs[0])).readySoulIds : (await dropShards(db, inputs)).readySoulIds;
        const is = await verdicts();
        const expected = souls.filter((id) => is.get(id) && !was.get(id));
        expect([...ready].sort((a, b) => a - b), `seed ${seed}, step ${step}`).toEqual(expected);
        edges += expected.length;
        // Rows the writes kept in memory are saved now and then; a reader adds up what came after.
        await expectRowsMatch(db, souls, `seed ${seed}, step ${step}`);
      }
      expect(edges, `seed ${seed}`).toBeGreaterThan(0);
      const saved = sqlite(db).db.prepare('SELECT MIN(through) AS oldest FROM soul_gate').get() as { oldest: number };
      expect(saved.oldest, `seed ${seed}: rows saved after the first writes`).toBeGreaterThan(64);
      closeSoulsDb(reference);
      closeSoulsDb(db);
    }
  });

  it("reads a soul's themes on a write only when it has some, and sees those another connection assigned", async () => {
    const clock = manualClock(T0 + 10 * DAY_MS);
    const { path, db } = fileDb('themes.db', clock);
    const now = clock.now();
    const judged = (await createSoul(db, { name: 'Judged', essence: 'e' })).id;
    const plain = (await createSoul(db, { name: 'Plain', essence: 'e' })).id;
    // One cluster each under trigram (the same text), one source: below the cheap gate.
    const note = 'Merged the release branch after the review.';
    const ids: number[] = [];
    for (const soul of [judged, plain]) for (let i = 0; i < 4; i++) ids.push((await dropShard(db, note, 'source-1', [soul], { createdAt: now - i * DAY_MS })).shardId);

    const other = openSoulsDb({ path, clock, settings: SETTINGS });
    await assignThemes(other, judged, [
      { shardIds: [ids[0]], newThemeName: 'releases' },
      { shardIds: [ids[1]], newThemeName: 'reviews' },
    ]);
    closeSoulsDb(other);
    // A second source passes the cheap gate: two themes are two clusters, the plain soul's one text only one.
    expect((await dropShard(db, note, 'source-2', [judged])).readySoulIds).toEqual([judged]);
    expect((await dropShard(db, note, 'source-2', [plain])).readySoulIds).toEqual([]);

    const statements = async (soul: number) => {
      const before = await db.store.statementsExecuted();
      await dropShard(db, note, 'source-3', [soul]);
      return await db.store.statementsExecuted() - before;
    };
    await statements(judged);
    expect(await statements(judged)).toBe((await statements(plain)) + 1);
    closeSoulsDb(db);
  });

  it('upgrades version 4 rows to cover every shard there is', async () => {
    const clock = manualClock(T0 + 10 * DAY_MS);
    const { path, db } = fileDb('v4.db', clock);
    const soul = (await createSoul(db, { name: 'Old', essence: 'e' })).id;
    for (let i = 0; i < 5; i++) await dropShard(db, `note ${i}`, `source-${i % 2}`, [soul], { createdAt: clock.now() - i * DAY_MS });
    const { after } = (await db.store.gateStats([soul], cutoffOf(db))).get(soul)!;
    const floor = cutoffOf(db);
    closeSoulsDb(db);
    // Version 4 saved every soul's row with every write.
    const v4 = new DatabaseSync(path);
    v4.exec('DELETE FROM soul_gate; ALTER TABLE soul_gate DROP COLUMN through; PRAGMA user_version = 4');
    v4.prepare('INSERT INTO soul_gate (soul_id, floor, count, oldest, newest, latest, sources) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
      soul, floor, after.count, after.oldest, after.newest, after.latest, JSON.stringify([['source-0', 3], ['source-1', 2]]),
    );
    v4.close();
    const upgraded = openSoulsDb({ path, clock, settings: SETTINGS });
    expect(sqlite(upgraded).db.prepare('SELECT through FROM soul_gate').all().map((r) => ({ ...r }))).toEqual([{ through: 5 }]);
    await expectRowsMatch(upgraded, [soul], 'after the upgrade');
    closeSoulsDb(upgraded);
  });

  it('upgrades a version 8 file: shards get their recorded time, gate rows count arrival, and a soul a backdated import left waiting is ready', async () => {
    const clock = manualClock(T0 + 10 * DAY_MS);
    const { path, db } = fileDb('v8.db', clock);
    const soul = (await createSoul(db, { name: 'Waiting', essence: 'e' })).id;
    for (let i = 0; i < 3; i++) await dropShard(db, TOPICS[i], `source-${i % 2}`, [soul], { createdAt: clock.now() - (i + 1) * DAY_MS });
    await stampAttuned(db, soul);
    clock.advance(DAY_MS);
    // Recorded a day after the attunement, observed four days before it (within shardExpiryDays).
    const imported = (await dropShard(db, TOPICS[3], 'source-2', [soul], { createdAt: clock.now() - 5 * DAY_MS })).shardId;
    closeSoulsDb(db);
    // Version 8 knew no recorded time: its gate rows' latest was max(created, revealed), which left the soul waiting.
    const v8 = new DatabaseSync(path);
    v8.exec(`ALTER TABLE soul_shards DROP COLUMN recorded_at;
      UPDATE soul_gate SET latest = (SELECT MAX(MAX(s.created_at, COALESCE(s.revealed_at, s.created_at))) FROM shard_souls ss JOIN soul_shards s ON s.id = ss.shard_id
        WHERE ss.soul_id = soul_gate.soul_id AND s.status = 'pending' AND s.sealed = 0 AND s.created_at > soul_gate.floor AND s.id <= soul_gate.through);
      PRAGMA user_version = 8`);
    const updatedAt = Number((v8.prepare('SELECT updated_at FROM soul_shards WHERE id = ?').get(imported) as { updated_at: number }).updated_at);
    v8.close();
    const upgraded = openSoulsDb({ path, clock, settings: SETTINGS });
    expect((await upgraded.store.getShards([imported])).get(imported)!.recordedAt).toBe(updatedAt);
    await expectRowsMatch(upgraded, [soul], 'after the upgrade');
    expect((await getCrystallization(upgraded, [soul])).get(soul)).toMatchObject({ ready: true, unmet: [] });
    closeSoulsDb(upgraded);
  });

  it('reads the gate again after another connection wrote, or this store wrote something else', async () => {
    const clock = manualClock(T0 + 10 * DAY_MS);
    const { path, db } = fileDb('two.db', clock);
    const soul = (await createSoul(db, { name: 'Shared', essence: 'e' })).id;
    const cutoff = () => cutoffOf(db);
    const now = clock.now();
    const write = async (store: SoulsDb['store'], content: string, createdAt: number, source?: string) => (await store.insertShards([shard(content, [soul], createdAt, source)], now, cutoff())).gate[0];
    await write(db.store, 'first note', now - DAY_MS);
    expect((await write(db.store, 'second note', now)).after.count).toBe(2);

    // Another process writes two shards of another source and retires the soul.
    const other = openSoulsDb({ path, clock, settings: SETTINGS });
    write(other.store, 'third note', now - 2 * DAY_MS, 'source-2');
    write(other.store, 'fourth note', now, 'source-2');
    await retireSoul(other, soul);
    closeSoulsDb(other);
    const reference = (await db.store.gateStats([soul], cutoff())).get(soul)!.after;
    const afterOther = await write(db.store, 'fifth note', now);
    expect(afterOther.before).toEqual(reference);
    expect(afterOther).toMatchObject({ dormant: true, after: { count: 5, distinctSources: 2 } });

    // This connection, through another of the store's writes: the soul awake again.
    await awakenSoul(db, soul);
    const afterAwake = await write(db.store, 'sixth note', now);
    expect(afterAwake).toMatchObject({ dormant: false, before: { count: 5 }, after: { count: 6, distinctSources: 2 } });

    // Another connection, in plain SQL: one shard faded and the gate rows gone.
    const plain = new DatabaseSync(path);
    plain.exec(`UPDATE soul_shards SET status = 'faded' WHERE content = 'first note'; DELETE FROM soul_gate`);
    plain.close();
    const afterRaw = await write(db.store, 'seventh note', now);
    expect(afterRaw).toMatchObject({ dormant: false, before: { count: 5 }, after: { count: 6, distinctSources: 2 } });
    expect(afterRaw.shardIds).toEqual((await db.store.gateStats([soul], cutoff())).get(soul)!.shardIds);
    closeSoulsDb(db);
  });
});
