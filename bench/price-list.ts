/**
 * The price list (src/server/price-list.ts) against the work it prices, and the dashboard it must let through.
 *
 * 1. Price list: over the roster fixture (bench/roster.ts, 1,000 souls), each priced thing is timed through GraphQL
 *    as the marginal time per item of adding it to `souls { id }`, and shown in units of the time one plain field
 *    takes per soul in the same run (so the ratios hold on a loaded machine), beside its price. A search and a count
 *    are timed per shard row of the database.
 * 2. Dashboard: examples/dashboard.graphql over HTTP at 100 and 1,000 souls with the default limits: the first
 *    request, the median and p99 of warm ones, the SQL statements one request issues, and its metered price.
 *
 * `npm run bench -- --only "Price list"` or `--only Dashboard`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execute, parse } from 'graphql';
import { schema } from '../schema/index.ts';
import { DAY_MS, closeSoulsDb, manualClock, openSoulsDb, type SoulsDb } from '../src/engine/index.ts';
import { buildApp } from '../src/server/app.ts';
import { createContext } from '../src/server/context.ts';
import { defaultLimits } from '../src/server/limits.ts';
import { EVIDENCE_PRICES, FIELD_EXTRAS, FIELD_PRICE, fromScratch, OBJECT_PRICE, SCAN_ROW_PRICE, WRITE_PRICE } from '../src/server/price-list.ts';
import { listBounds, operationCost } from '../src/server/request-cost.ts';
import { createSoulsPubSub } from '../src/server/pubsub.ts';
import type { BenchRow } from './engine.ts';
import { median, percentile } from './api.ts';
import { seedRoster } from './roster.ts';

const START = Date.UTC(2026, 0, 1) + 400 * DAY_MS;
export const DASHBOARD = readFileSync(new URL('../examples/dashboard.graphql', import.meta.url), 'utf8');

type Post = (query: string, variables?: Record<string, unknown>) => Promise<{ ms: number; body: any }>;

function poster(url: string): Post {
  return async (query, variables) => {
    const start = performance.now();
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ query, variables }) });
    const body = await response.json();
    const ms = performance.now() - start;
    if (body.errors) throw new Error(`${query.slice(0, 80)}: ${JSON.stringify(body.errors).slice(0, 300)}`);
    return { ms, body };
  };
}

/** The median of `runs` warm requests (after one to warm up). */
async function timed(post: Post, query: string, runs = 11): Promise<number> {
  await post(query);
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) samples.push((await post(query)).ms);
  return median(samples);
}

async function withServer<T>(db: SoulsDb, limits: Partial<typeof defaultLimits>, work: (post: Post) => Promise<T>): Promise<T> {
  const app = buildApp({ db, graphiql: false, limits });
  const { url } = await app.start(0, '127.0.0.1');
  try {
    return await work(poster(url));
  } finally {
    await app.stop();
  }
}

const row = (name: string, measured: number, priced: number): BenchRow => ({
  name,
  value: `${measured.toFixed(1)} / ${priced.toFixed(1)}`,
  numbers: [measured, priced],
  unit: 'units',
  better: null,
});

/** Each priced thing, measured in units of one plain field per soul, beside its price. */
async function priceListRows(db: SoulsDb, souls: number, shards: number): Promise<{ unit: number; rows: BenchRow[] }> {
  const lifted = { maxCost: 1e12, maxSubscriptionCost: 1e12, maxAliases: 1000 };
  return withServer(db, lifted, async (post) => {
    const base = await timed(post, '{ souls(orderBy: NAME) { id } }');
    const perSoul = async (selection: string) => ((await timed(post, `{ souls(orderBy: NAME) { id ${selection} } }`)) - base) / souls;
    // The soul's nine plain fields four times over (strings, numbers, times), so that the difference stands well above
    // the noise of a loaded machine.
    const plain = ['name', 'slug', 'essence', 'description', 'level', 'createdAt', 'updatedAt', 'dormant', 'lastAttunedAt'];
    const unit = (await perSoul([0, 1, 2, 3].flatMap((k) => plain.map((f) => `${f}${k}: ${f}`)).join(' '))) / 36;
    const inUnits = async (selection: string, runs?: number) => (runs === undefined ? await perSoul(selection) : ((await timed(post, `{ souls(orderBy: NAME) { id ${selection} } }`, runs)) - base) / souls) / unit;
    const rows: BenchRow[] = [{ name: 'one unit: a plain field of one soul, the mean of its nine (µs)', value: (unit * 1000).toFixed(2), unit: 'µs', better: null }];
    rows.push(row('a loader field per soul (activeTraitCount)', await inUnits('activeTraitCount'), FIELD_PRICE + FIELD_EXTRAS['Soul.activeTraitCount']));
    rows.push(row('Soul.health', await inUnits('health'), FIELD_PRICE + FIELD_EXTRAS['Soul.health']));
    rows.push(row('Soul.rendered', await inUnits('rendered'), FIELD_PRICE + FIELD_EXTRAS['Soul.rendered']));
    const traits = await inUnits('traits { id }');
    rows.push(row('Soul.traits (3 a soul, id only)', traits, FIELD_EXTRAS['Soul.traits'] + 3 * (OBJECT_PRICE + FIELD_PRICE)));
    rows.push(row('Trait.signals, per trait', ((await inUnits('traits { id signals { citationCount } }')) - traits) / 3, OBJECT_PRICE + FIELD_EXTRAS['Trait.signals'] + FIELD_PRICE));
    rows.push(row('a crystallization verdict, warm', await inUnits('crystallization { ready }'), OBJECT_PRICE + EVIDENCE_PRICES.verdict + FIELD_PRICE));
    const perReport = shards / souls;
    const report = 'evidence { shardCount }';
    const readPrice = OBJECT_PRICE + EVIDENCE_PRICES.reportRead + EVIDENCE_PRICES.reportShard * perReport + FIELD_PRICE;
    rows.push(row(`an evidence report served from the cache (its analysis held; ${perReport.toFixed(0)} shards a soul)`, await inUnits(report, 3), readPrice));
    // The same with every analysis forgotten before each request, the partitions held: each report is analysed afresh.
    const afresh: number[] = [];
    for (let i = 0; i < 3; i++) {
      db.evidence.forgetAnalyses();
      afresh.push((await post(`{ souls(orderBy: NAME) { id ${report} } }`)).ms);
    }
    rows.push(row('an evidence report analysed afresh (partition held), the same souls', (median(afresh) - base) / souls / unit, readPrice + EVIDENCE_PRICES.analysisShard * perReport));
    const search = await timed(post, '{ searchShards(query: "the", match: ANY, first: 20) { score } }');
    const count = await timed(post, '{ shards(first: 0) { totalCount } }');
    const bare = await timed(post, '{ caller { name } }');
    rows.push(row(`a search, per shard row of the database (${shards.toLocaleString('en')} rows)`, (search - bare) / shards / unit, SCAN_ROW_PRICE));
    rows.push(row('a count of every shard, per row', (count - bare) / shards / unit, SCAN_ROW_PRICE));
    // Last, as it adds shards: a batch of 1,000 to one soul.
    const inputs = Array.from({ length: 1000 }, (_, i) => ({ content: `Batch shard ${i}: counted the barrels at the east gate`, source: 'bench', soulIds: ['1'] }));
    const write = (await post('mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename } }', { inputs })).ms;
    rows.push(row('a shard written, in a dropShards of 1,000', write / 1000 / unit, WRITE_PRICE));
    return { unit, rows };
  });
}

/** Clustering every soul from scratch (a new handle over the same store remembers no partition), less the same warm: ms. */
async function clusteringFromScratch(db: SoulsDb): Promise<{ ms: number; shards: number; pairs: number }> {
  const query = parse('{ souls(orderBy: NAME) { id crystallization { clusterCount } } }');
  const run = async (target: SoulsDb) => {
    const start = performance.now();
    await execute({ schema, document: query, contextValue: createContext(target, createSoulsPubSub(), undefined, 1e12) });
    return performance.now() - start;
  };
  const firsts: number[] = [];
  const warms: number[] = [];
  for (let i = 0; i < 3; i++) {
    const cold = openSoulsDb({ store: db.store, clock: db.clock });
    firsts.push(await run(cold));
    warms.push(await run(cold));
  }
  const [first, warm] = [median(firsts), median(warms)];
  const gates = [...(await db.store.gateStats('awake', 0)).values()];
  const work = gates.reduce((sum, g) => ({ shards: sum.shards + g.shardIds.length, pairs: sum.pairs + fromScratch(g.shardIds.length).pairs }), { shards: 0, pairs: 0 });
  return { ms: first - warm, ...work };
}

export async function benchPriceList(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'souls-price-'));
  try {
    const db = openSoulsDb({ path: join(dir, 'roster.db'), clock: manualClock(START) });
    const { shardCount } = await seedRoster(db, { souls: 1000 });
    const clustering = await clusteringFromScratch(db);
    // The server closes the database when it stops.
    const { unit, rows } = await priceListRows(db, 1000, shardCount);
    const priced = EVIDENCE_PRICES.clusterShard * clustering.shards + EVIDENCE_PRICES.clusterPair * clustering.pairs;
    rows.push(row(`clustering a soul from scratch (${(clustering.shards / 1000).toFixed(0)} shards, per soul)`, clustering.ms / 1000 / unit, priced / 1000));
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The price the meter charges the dashboard: its estimate without the metered fields, then each report and verdict as it resolves. */
async function meteredPrice(db: SoulsDb): Promise<number> {
  const document = parse(DASHBOARD);
  const context = createContext(db, createSoulsPubSub());
  const inputs = { boundOf: listBounds(defaultLimits, db.settings), settings: db.settings, shardRows: await db.store.shardRowBound() };
  context.cost.begin(operationCost({ schema, document }, { ...inputs, metered: new Set(['Soul.evidence', 'Soul.crystallization', 'Query.crystallizationReadiness']) }), defaultLimits.maxCost, 'maxCost');
  const result = await execute({ schema, document, contextValue: context });
  if (result.errors) throw new Error(JSON.stringify(result.errors).slice(0, 300));
  return context.cost.total();
}

export async function benchDashboard(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const souls of [100, 1000]) {
    const dir = mkdtempSync(join(tmpdir(), 'souls-dashboard-'));
    try {
      const db = openSoulsDb({ path: join(dir, 'roster.db'), clock: manualClock(START) });
      await seedRoster(db, { souls });
      await closeSoulsDb(db);
      // A new handle over the same file: the first request finds nothing remembered, as after a restart.
      const fresh = openSoulsDb({ path: join(dir, 'roster.db'), clock: manualClock(START) });
      await withServer(fresh, {}, async (post) => {
        const first = await post(DASHBOARD);
        if (first.body.data.souls.length !== souls) throw new Error(`the dashboard answered ${first.body.data.souls.length} souls of ${souls}`);
        const samples: number[] = [];
        let statements = 0;
        for (let i = 0; i < 20; i++) {
          const before = await fresh.store.statementsExecuted();
          samples.push((await post(DASHBOARD)).ms);
          statements = (await fresh.store.statementsExecuted()) - before;
        }
        const label = `dashboard (examples/dashboard.graphql), ${souls.toLocaleString('en')} souls`;
        rows.push({ name: `${label}: first after start / warm median / warm p99 (ms)`, value: `${first.ms.toFixed(0)} / ${median(samples).toFixed(0)} / ${percentile(samples, 99).toFixed(0)}`, unit: 'ms', better: 'lower' });
        rows.push({ name: `${label}: SQL statements a warm request issues`, value: String(statements), unit: 'statements', better: 'lower' });
        rows.push({ name: `${label}: metered price (of maxCost ${defaultLimits.maxCost.toLocaleString('en')})`, value: String(await meteredPrice(fresh)), unit: 'units', better: null });
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return rows;
}

if (import.meta.main) {
  for (const bench of [benchPriceList, benchDashboard]) for (const r of await bench()) console.log(`${r.name}  ${r.value}`);
}
