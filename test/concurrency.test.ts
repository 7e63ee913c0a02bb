import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../src/server/app.ts';
import { closeSoulsDb, DAY_MS, openSoulsDb } from '../src/engine/index.ts';
import { migrations } from '../src/store/schema.ts';
import type { SqliteStore } from '../src/store/sqlite.ts';
import { createRng, integrityProblems, type Rng } from './support/fuzz.ts';

const CLI = fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
const STORE = pathToFileURL(fileURLToPath(new URL('../src/store/sqlite.ts', import.meta.url))).href;
const WRITES_PER_CLIENT = 500;
const IN_FLIGHT_PER_CLIENT = 4;
const TRAIT_LIMIT = 10;
/** Bounds on waiting for a child server: they only fail the test when something hangs. */
const START_MS = 60_000;
const STOP_MS = 60_000;

let dir: string;
let file: string;
const apps: App[] = [];
const children: ChildProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'souls-concurrency-'));
  file = join(dir, 'souls.db');
});

afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------
// What the clients were told succeeded

type Ledger = {
  writes: number;
  /** anything but HTTP 200 with a payload: must stay empty */
  failures: string[];
  statuses: Record<number, number>;
  kinds: Record<string, number>;
  souls: Map<number, { name: string; essence: string; attunements: number }>;
  traits: Map<number, { soulId: number; principle: string }>;
  shards: Map<number, { soulIds: number[]; tags: string[] }>;
  citations: Set<string>;
};

const newLedger = (): Ledger => ({ writes: 0, failures: [], statuses: {}, kinds: {}, souls: new Map(), traits: new Map(), shards: new Map(), citations: new Set() });

const DROP_SHARD = `mutation($input: DropShardInput!) { dropShard(input: $input) { __typename ... on DropShardPayload { shard { id souls { id } tags } } ... on Error { message } } }`;
const DROP_SHARDS = `mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { shards { id souls { id } tags } } ... on Error { message } } }`;
const CREATE_SOUL = `mutation($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id name essence } } ... on Error { message } } }`;
const UPDATE_SOUL = `mutation($id: ID!, $input: UpdateSoulInput!) { updateSoul(id: $id, input: $input) { __typename ... on SoulPayload { soul { id essence } } ... on Error { message } } }`;
const ADD_TRAIT = `mutation($soulId: ID!, $input: AddTraitInput!) { addTrait(soulId: $soulId, input: $input) { __typename ... on TraitPayload { trait { id principle } } ... on Error { message } } }`;
const REVISE_TRAIT = `mutation($id: ID!, $input: ReviseTraitInput!) { reviseTrait(id: $id, input: $input) { __typename ... on TraitPayload { trait { id principle } } ... on Error { message } } }`;
const CITE_SHARD = `mutation($shardId: ID!, $traitId: ID!) { citeShard(shardId: $shardId, traitId: $traitId) { __typename ... on CiteShardPayload { shard { id } trait { id } } ... on Error { message } } }`;
const STAMP = `mutation($soulId: ID!) { stampAttuned(soulId: $soulId) { __typename ... on SoulPayload { soul { id lastAttunedAt } } ... on Error { message } } }`;

const words = ['tests', 'commits', 'review', 'patience', 'pairing', 'latency', 'naming', 'docs', 'rollback', 'queues', 'caching', 'budgets', 'mentoring'];
const sentence = (rng: Rng, n: number) => Array.from({ length: n }, () => rng.pick(words)).join(' ');

/**
 * One client: WRITES_PER_CLIENT mixed writes, IN_FLIGHT_PER_CLIENT at a time,
 * only on its own souls, traits and shards. A soul is never updated, nor a
 * trait revised, twice at once, so the last answer is the final state.
 */
async function runClient(url: string, label: string, seed: number, ledger: Ledger): Promise<void> {
  const rng = createRng(seed);
  const souls: number[] = [];
  const traitsOf = new Map<number, number>(); // active + reserved per soul
  const traits: number[] = [];
  const shards: number[] = [];
  const updating = new Set<number>();
  const revising = new Set<number>();
  let created = 0;
  let issued = 0;

  async function send(kind: string, query: string, variables: Record<string, unknown>): Promise<any> {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
      body: JSON.stringify({ query, variables }),
    });
    const text = await response.text();
    ledger.statuses[response.status] = (ledger.statuses[response.status] ?? 0) + 1;
    let result: any = null;
    try {
      const body = JSON.parse(text);
      result = body.data ? Object.values(body.data)[0] : null;
      if (response.status !== 200 || body.errors || !result || !String(result.__typename).endsWith('Payload')) result = null;
    } catch {
      result = null;
    }
    if (result === null) {
      ledger.failures.push(`${label} ${kind}: HTTP ${response.status} ${text.slice(0, 400)}`);
      return null;
    }
    ledger.writes++;
    ledger.kinds[kind] = (ledger.kinds[kind] ?? 0) + 1;
    return result;
  }

  const shardInput = () => {
    const own = [rng.pick(souls), ...(souls.length > 1 && rng.chance(0.3) ? [rng.pick(souls)] : [])];
    const input: Record<string, unknown> = {
      content: `${label} ${sentence(rng, rng.between(3, 9))} ${rng.int(1e9)}`,
      source: rng.pick(['chat', 'review', 'commit', 'standup']),
      soulIds: own.map(String),
      tags: [...new Set(Array.from({ length: rng.between(0, 3) }, () => rng.pick(words)))],
    };
    // Some historical imports, so the crystallization gate passes and clusters.
    if (rng.chance(0.3)) input.createdAt = new Date(Date.now() - rng.between(1, 30) * DAY_MS).toISOString();
    return input;
  };
  const recordShards = (list: { id: string; souls: { id: string }[]; tags: string[] }[]) => {
    for (const s of list) {
      ledger.shards.set(Number(s.id), { soulIds: s.souls.map((x) => Number(x.id)), tags: s.tags });
      shards.push(Number(s.id));
    }
  };

  async function createSoul() {
    const name = `${label} soul ${created++}`;
    const essence = `${label}: ${sentence(rng, 6)}`;
    const result = await send('createSoul', CREATE_SOUL, { input: { name, essence } });
    if (!result) return;
    const id = Number(result.soul.id);
    ledger.souls.set(id, { name, essence, attunements: 0 });
    souls.push(id);
    traitsOf.set(id, 0);
  }

  async function oneWrite() {
    if (souls.length === 0) return createSoul();
    const roll = rng.next();
    if (roll < 0.2) {
      const result = await send('dropShard', DROP_SHARD, { input: shardInput() });
      if (result) recordShards([result.shard]);
    } else if (roll < 0.35) {
      const result = await send('dropShards', DROP_SHARDS, { inputs: Array.from({ length: rng.between(2, 5) }, shardInput) });
      if (result) recordShards(result.shards);
    } else if (roll < 0.45) {
      await createSoul();
    } else if (roll < 0.6) {
      const roomy = souls.filter((id) => (traitsOf.get(id) ?? 0) < TRAIT_LIMIT);
      if (roomy.length === 0) return createSoul();
      const soulId = rng.pick(roomy);
      traitsOf.set(soulId, traitsOf.get(soulId)! + 1); // reserved before the answer: never over the limit
      const principle = `${label} ${sentence(rng, 5)}`;
      const result = await send('addTrait', ADD_TRAIT, { soulId: String(soulId), input: { principle, provenance: sentence(rng, 8) } });
      if (!result) return void traitsOf.set(soulId, traitsOf.get(soulId)! - 1);
      ledger.traits.set(Number(result.trait.id), { soulId, principle });
      traits.push(Number(result.trait.id));
    } else if (roll < 0.7) {
      const free = traits.filter((id) => !revising.has(id));
      if (free.length === 0) return createSoul();
      const id = rng.pick(free);
      revising.add(id);
      const principle = `${label} revised ${sentence(rng, 5)} ${rng.int(1e9)}`;
      const result = await send('reviseTrait', REVISE_TRAIT, { id: String(id), input: { principle } });
      revising.delete(id);
      if (result) ledger.traits.get(id)!.principle = principle;
    } else if (roll < 0.8) {
      if (traits.length === 0 || shards.length === 0) return createSoul();
      // A trait cites only its own soul's shards (SPEC §12).
      const traitId = rng.pick(traits);
      const soulId = ledger.traits.get(traitId)!.soulId;
      const own = shards.filter((id) => ledger.shards.get(id)!.soulIds.includes(soulId));
      if (own.length === 0) return createSoul();
      const shardId = rng.pick(own);
      const key = `${shardId}:${traitId}`;
      if (ledger.citations.has(key)) return createSoul();
      ledger.citations.add(key); // reserved: the same pair is never cited twice
      const result = await send('citeShard', CITE_SHARD, { shardId: String(shardId), traitId: String(traitId) });
      if (!result) ledger.citations.delete(key);
    } else if (roll < 0.9) {
      const soulId = rng.pick(souls);
      const result = await send('stampAttuned', STAMP, { soulId: String(soulId) });
      if (result) ledger.souls.get(soulId)!.attunements++;
    } else {
      const free = souls.filter((id) => !updating.has(id));
      if (free.length === 0) return createSoul();
      const id = rng.pick(free);
      updating.add(id);
      const essence = `${label} updated ${sentence(rng, 6)} ${rng.int(1e9)}`;
      const result = await send('updateSoul', UPDATE_SOUL, { id: String(id), input: { essence } });
      updating.delete(id);
      if (result) ledger.souls.get(id)!.essence = essence;
    }
  }

  await Promise.all(
    Array.from({ length: IN_FLIGHT_PER_CLIENT }, async () => {
      while (issued < WRITES_PER_CLIENT) {
        issued++;
        await oneWrite();
      }
    }),
  );
}

// ---------------------------------------------------------------------------
// Checks

/** Every soul, its traits and pending shard count, as a server shows them. */
async function apiView(url: string): Promise<Map<number, { essence: string; pendingShardCount: number; lastAttunedAt: string | null; traits: Map<number, string> }>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ souls(orderBy: NAME) { id essence pendingShardCount lastAttunedAt traits { id principle } } }' }),
  });
  const body = await response.json();
  expect(response.status).toBe(200);
  expect(body.errors).toBeUndefined();
  return new Map(
    body.data.souls.map((s: any) => [Number(s.id), { essence: s.essence, pendingShardCount: s.pendingShardCount, lastAttunedAt: s.lastAttunedAt, traits: new Map(s.traits.map((t: any) => [Number(t.id), t.principle])) }]),
  );
}

/** The server shows every write a client was told succeeded, exactly. */
async function expectApiShowsLedger(url: string, ledger: Ledger): Promise<void> {
  const view = await apiView(url);
  expect(view.size).toBe(ledger.souls.size);
  const pending = new Map<number, number>();
  for (const shard of ledger.shards.values()) for (const soulId of shard.soulIds) pending.set(soulId, (pending.get(soulId) ?? 0) + 1);
  for (const [id, soul] of ledger.souls) {
    const seen = view.get(id);
    expect(seen, `soul ${id} (${soul.name})`).toBeDefined();
    expect(seen!.essence, `essence of soul ${id}`).toBe(soul.essence);
    expect(seen!.pendingShardCount, `pending shards of soul ${id}`).toBe(pending.get(id) ?? 0);
    expect(seen!.lastAttunedAt === null, `lastAttunedAt of soul ${id}`).toBe(soul.attunements === 0);
    const traits = [...ledger.traits].filter(([, t]) => t.soulId === id);
    expect(seen!.traits.size, `traits of soul ${id}`).toBe(traits.length);
    for (const [traitId, trait] of traits) expect(seen!.traits.get(traitId), `trait ${traitId}`).toBe(trait.principle);
  }
}

/** Row counts in the file equal the successful writes, and every returned id is there. */
function expectFileHoldsLedger(ledger: Ledger): void {
  const db = openSoulsDb({ path: file });
  try {
    const sql = (db.store as SqliteStore).db;
    expect(integrityProblems(sql)).toEqual([]);
    const count = (table: string) => Number((sql.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n);
    const ids = (table: string) => (sql.prepare(`SELECT id FROM ${table} ORDER BY id`).all() as { id: number }[]).map((r) => Number(r.id));
    const sorted = (values: Iterable<number>) => [...values].sort((a, b) => a - b);
    expect(ids('souls')).toEqual(sorted(ledger.souls.keys()));
    expect(ids('soul_traits')).toEqual(sorted(ledger.traits.keys()));
    expect(ids('soul_shards')).toEqual(sorted(ledger.shards.keys()));
    expect(count('shard_souls')).toBe([...ledger.shards.values()].reduce((n, s) => n + s.soulIds.length, 0));
    expect(count('shard_tags')).toBe([...ledger.shards.values()].reduce((n, s) => n + s.tags.length, 0));
    expect(count('shard_citations')).toBe(ledger.citations.size);
    expect(count('soul_attunements')).toBe([...ledger.souls.values()].reduce((n, s) => n + s.attunements, 0));
    for (const key of ledger.citations) {
      const [shardId, traitId] = key.split(':').map(Number);
      expect(sql.prepare('SELECT 1 AS ok FROM shard_citations WHERE shard_id = ? AND trait_id = ?').get(shardId, traitId), `citation ${key}`).toBeDefined();
    }
  } finally {
    closeSoulsDb(db);
  }
}

function expectNoClientSawAnError(ledger: Ledger, clients: number): void {
  expect(ledger.failures).toEqual([]);
  expect(ledger.failures.filter((f) => /SQLITE_BUSY|locked|INTERNAL_SERVER_ERROR/i.test(f))).toEqual([]);
  expect(Object.keys(ledger.statuses)).toEqual(['200']);
  expect(ledger.writes).toBe(clients * WRITES_PER_CLIENT);
}

const summary = (title: string, ledger: Ledger, ms: number) =>
  `${title}: ${ledger.writes} successful writes checked in ${ms.toFixed(0)} ms (${Object.entries(ledger.kinds)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')}); souls ${ledger.souls.size}, traits ${ledger.traits.size}, shards ${ledger.shards.size}, citations ${ledger.citations.size}, failures ${ledger.failures.length}`;

// ---------------------------------------------------------------------------
// Servers

async function inProcessServer(): Promise<string> {
  const app = buildApp({ db: openSoulsDb({ path: file, settings: { traitLimit: TRAIT_LIMIT } }) });
  apps.push(app);
  return (await app.start(0, '127.0.0.1')).url;
}

async function childServer(): Promise<{ url: string; stop: () => Promise<{ code: number | null; stderr: string }> }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('SOULS_') && key !== 'NODE_OPTIONS') env[key] = value;
  const child = spawn(process.execPath, [CLI, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', file, '--trait-limit', String(TRAIT_LIMIT)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not listen within ${START_MS} ms: ${stdout}${stderr}`)), START_MS);
    const check = () => {
      const match = /Souls API on (http:\/\/\S+)/.exec(stdout);
      if (match) return clearTimeout(timer), resolve(match[1]);
      if (child.exitCode !== null) return clearTimeout(timer), reject(new Error(`the server exited: ${stdout}${stderr}`));
      setTimeout(check, 20);
    };
    check();
  });
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_MS);
      const code = await exited;
      clearTimeout(timer);
      return { code, stderr };
    },
  };
}

/** Opens `target` with the SQLite store at the moment `at` (epoch ms), in a process of its own; resolves with what it found, or its error. */
function openInChild(target: string, at: number): Promise<string> {
  const code = `
    import { openSqliteStore } from ${JSON.stringify(STORE)};
    const [file, at] = process.argv.slice(1);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.max(0, Number(at) - Date.now()));
    try {
      const store = openSqliteStore({ path: file });
      const one = (sql) => Object.values(store.db.prepare(sql).get())[0];
      console.log(one('PRAGMA journal_mode') + ' ' + one('PRAGMA user_version'));
      store.close();
    } catch (error) {
      console.log('error: ' + error.message);
    }`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', code, target, String(at)], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    const timer = setTimeout(() => reject(new Error(`an opener did not finish within ${START_MS} ms: ${out}`)), START_MS);
    child.once('exit', () => (clearTimeout(timer), resolve(out.trim())));
  });
}

describe('concurrent writers on a file database (WAL)', () => {
  // Two bugs this found: the WAL switch of a new file deadlocked between processes and SQLite answered
  // SQLITE_BUSY at once ("database is locked"), and the second process re-ran the migration ("table souls already exists").
  it('lets several processes open one new database file at the same moment', async () => {
    const rounds = 8;
    const perRound = 6;
    for (let round = 0; round < rounds; round++) {
      const target = join(dir, `fresh-${round}.db`);
      const at = Date.now() + 400;
      const results = await Promise.all(Array.from({ length: perRound }, () => openInChild(target, at)));
      expect(results, `round ${round}`).toEqual(Array(perRound).fill(`wal ${migrations.length}`));
    }
  }, 600_000);

  it(`loses no write: 8 clients × ${WRITES_PER_CLIENT} mixed writes, ${IN_FLIGHT_PER_CLIENT} in flight each, one server`, async () => {
    const url = await inProcessServer();
    const ledger = newLedger();
    const started = performance.now();
    await Promise.all(Array.from({ length: 8 }, (_, c) => runClient(url, `one-server client ${c}`, 100 + c, ledger)));
    console.log(summary('concurrency, one server', ledger, performance.now() - started));
    expectNoClientSawAnError(ledger, 8);
    await expectApiShowsLedger(url, ledger);
    await apps.pop()!.stop();
    expectFileHoldsLedger(ledger);
  }, 600_000);

  it(`loses no write across processes: two servers on the same file, 4 clients × ${WRITES_PER_CLIENT} writes each`, async () => {
    const [a, b] = await Promise.all([childServer(), childServer()]);
    const ledger = newLedger();
    const started = performance.now();
    await Promise.all([
      ...Array.from({ length: 4 }, (_, c) => runClient(a.url, `server-A client ${c}`, 200 + c, ledger)),
      ...Array.from({ length: 4 }, (_, c) => runClient(b.url, `server-B client ${c}`, 300 + c, ledger)),
    ]);
    console.log(summary('concurrency, two server processes', ledger, performance.now() - started));
    expectNoClientSawAnError(ledger, 8);
    // Each process shows the other's writes too.
    await expectApiShowsLedger(a.url, ledger);
    await expectApiShowsLedger(b.url, ledger);
    const stops = await Promise.all([a.stop(), b.stop()]);
    for (const { code, stderr } of stops) {
      expect(stderr).toBe('');
      expect(code).toBe(0);
    }
    expectFileHoldsLedger(ledger);
  }, 600_000);
});
