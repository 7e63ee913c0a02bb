/**
 * The simulated judge: the paraphrase corpus plus its contradictions (test/fixtures/judge-contradictions.json) is
 * dropped into a soul through GraphQL on a real server; a judge assigns the true themes of the oldest share of the
 * shards (assignThemes) and proposes a trait from each judged theme (addTrait citing its members). Before and after,
 * the report (Soul.evidence) is scored against the labels: ARI over all shards, unjudged shards whose cluster's
 * suggestedTheme is their true theme, judged themes split or mixed, hard-negative theme pairs sharing a cluster, and
 * contradictions listed as possible counter-evidence of the trait of the theme they contradict. Again after a restart
 * (the file database reopened) and on PostgreSQL (SOULS_BENCH_PG_URL, or PGlite when no server answers).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSoulsDb } from '../src/engine/index.ts';
import type { SimilarityMode } from '../src/engine/settings.ts';
import { buildApp } from '../src/server/app.ts';
import { makeRng } from './corpus.ts';
import type { BenchRow } from './engine.ts';
import { adjustedRandIndex, loadParaphraseCorpus, type CorpusRecord, type ParaphraseCorpus } from './paraphrase.ts';

export type JudgeRecord = CorpusRecord & { contradicts?: string };
export type JudgeCorpus = Omit<ParaphraseCorpus, 'records'> & { records: JudgeRecord[] };

export const CONTRADICTIONS_URL = new URL('../test/fixtures/judge-contradictions.json', import.meta.url);

/** The paraphrase corpus with its contradictions: each its own theme, and a hard negative of the theme it contradicts. */
export function loadJudgeCorpus(): JudgeCorpus {
  const corpus = loadParaphraseCorpus();
  const extra = JSON.parse(readFileSync(CONTRADICTIONS_URL, 'utf8')) as { records: JudgeRecord[] };
  return {
    ...corpus,
    themes: [...corpus.themes, ...extra.records.map((r) => ({ id: r.theme!, summary: r.text, principles: [] }))],
    hardNegatives: [...corpus.hardNegatives, ...extra.records.map((r): [string, string] => [r.contradicts!, r.theme!])],
    records: [...corpus.records, ...extra.records],
  };
}

async function gql(url: string, query: string, variables: Record<string, unknown> = {}): Promise<any> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ query, variables }) });
  const body = (await response.json()) as { data?: any; errors?: Array<{ message: string }> };
  if (body.errors?.length) throw new Error(`GraphQL: ${body.errors.map((e) => e.message).join('; ')}`);
  return body.data;
}

function payload<T>(result: { __typename: string; message?: string } & T): T {
  if (result.message !== undefined) throw new Error(`${result.__typename}: ${result.message}`);
  return result;
}

/** Shard ids by record index, oldest first in `order` (indices into corpus.records). */
export type Dropped = { soulId: string; shardIds: string[]; order: number[] };

/**
 * A soul holding the corpus, each record dropped with a createdAt: records in a seeded shuffled order, one minute
 * apart, so "the oldest share" mixes every theme.
 */
export async function dropCorpus(url: string, corpus: JudgeCorpus, now: number, seed = 26): Promise<Dropped> {
  const soul = payload((await gql(url, 'mutation($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } ... on Error { message } } }', { input: { name: 'Judged', essence: 'An agent under review.' } })).createSoul).soul;
  const rng = makeRng(seed);
  const order = corpus.records.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  // Contradictions are the newest: evidence arriving after the judge read the rest.
  order.sort((a, b) => Number(corpus.records[a].contradicts !== undefined) - Number(corpus.records[b].contradicts !== undefined));
  const createdAt = new Map(order.map((index, k) => [index, new Date(now - (order.length - k) * 60_000).toISOString()]));
  const inputs = corpus.records.map((r, i) => ({ content: r.text, source: r.source, soulIds: [soul.id], createdAt: createdAt.get(i) }));
  const shards = payload((await gql(url, 'mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { shards { id } } ... on Error { message } } }', { inputs })).dropShards).shards;
  return { soulId: soul.id, shardIds: shards.map((s: { id: string }) => s.id), order };
}

/** The judge: the true themes of the oldest `share` of the shards (singletons stay unjudged), then a trait per judged theme citing its judged members. */
export async function judge(url: string, corpus: JudgeCorpus, dropped: Dropped, share: number): Promise<{ judged: Set<number> }> {
  const judged = new Set(dropped.order.slice(0, Math.floor(dropped.order.length * share)).filter((i) => corpus.records[i].theme !== null));
  const byTheme = Map.groupBy([...judged].sort((a, b) => a - b), (i) => corpus.records[i].theme!);
  if (byTheme.size === 0) return { judged };
  const assignments = [...byTheme].map(([theme, indices]) => ({ newThemeName: corpus.themes.find((t) => t.id === theme)!.summary, shardIds: indices.map((i) => dropped.shardIds[i]) }));
  payload((await gql(url, 'mutation($soulId: ID!, $assignments: [ThemeAssignmentInput!]!) { assignThemes(soulId: $soulId, assignments: $assignments) { __typename ... on Error { message } } }', { soulId: dropped.soulId, assignments })).assignThemes);
  for (const [theme, indices] of byTheme) {
    const principle = corpus.themes.find((t) => t.id === theme)!.principles[0];
    if (principle === undefined) continue;
    const input = { principle, provenance: `judged theme ${theme}`, citeShardIds: indices.map((i) => dropped.shardIds[i]) };
    payload((await gql(url, 'mutation($soulId: ID!, $input: AddTraitInput!) { addTrait(soulId: $soulId, input: $input) { __typename ... on Error { message } } }', { soulId: dropped.soulId, input })).addTrait);
  }
  return { judged };
}

export type JudgeFigures = {
  ari: number;
  unjudged: number;
  /** Unjudged shards whose true theme was judged, and how many of them sit in a cluster suggesting that theme. */
  suggested: { right: number; wrong: number; of: number; rightRecords: string[] };
  /** Judged themes not exactly one cluster of their members. */
  judgedSplitOrMixed: number;
  hardNegativesMixed: number;
  hardNegativesMixedWithJudged: number;
  /** Contradictions listed as possible counter-evidence of a trait drawn from the theme they contradict. */
  contradictionsFlagged: { found: number; of: number; viaTheme: number };
};

// Every cluster and every member: the lists' default pages are smaller than the corpus.
const REPORT = `query($id: ID!) { soul(id: $id) { evidence { unjudgedCount
  clusters(first: 500) { members(first: 500) { id } theme { name } suggestedTheme { name } }
  possibleCounterEvidence(first: 500) { shard { id } trait { provenance } reason } } } }`;

/** Scores the soul's report against the labels; `judged`: record indices the judge assigned. */
export async function scoreReport(url: string, corpus: JudgeCorpus, dropped: Dropped, judged: ReadonlySet<number>): Promise<JudgeFigures> {
  const report = (await gql(url, REPORT, { id: dropped.soulId })).soul.evidence;
  const indexOf = new Map(dropped.shardIds.map((id, i) => [id, i]));
  const themeName = new Map(corpus.themes.map((t) => [t.summary, t.id]));
  const clusterOf = new Array<number>(corpus.records.length).fill(-1);
  report.clusters.forEach((c: any, k: number) => c.members.forEach((m: { id: string }) => (clusterOf[indexOf.get(m.id)!] = k)));
  const truth = corpus.records.map((r) => r.theme ?? `single:${r.id}`);
  const predicted = clusterOf.map((c, i) => (c >= 0 ? `c${c}` : `alone${i}`));
  const judgedThemes = new Set([...judged].map((i) => corpus.records[i].theme!));
  const suggested = { right: 0, wrong: 0, of: 0, rightRecords: [] as string[] };
  corpus.records.forEach((r, i) => {
    if (judged.has(i) || r.theme === null || !judgedThemes.has(r.theme)) return;
    suggested.of++;
    const name = report.clusters[clusterOf[i]]?.suggestedTheme?.name;
    if (name === undefined) return;
    if (themeName.get(name) === r.theme) {
      suggested.right++;
      suggested.rightRecords.push(r.id);
    } else suggested.wrong++;
  });
  let judgedSplitOrMixed = 0;
  for (const theme of judgedThemes) {
    const members = [...judged].filter((i) => corpus.records[i].theme === theme);
    const cluster = report.clusters[clusterOf[members[0]]];
    const exact = cluster?.theme && themeName.get(cluster.theme.name) === theme && cluster.members.length === members.length && members.every((i) => clusterOf[i] === clusterOf[members[0]]);
    if (!exact) judgedSplitOrMixed++;
  }
  let hardNegativesMixed = 0;
  let hardNegativesMixedWithJudged = 0;
  for (const [x, y] of corpus.hardNegatives) {
    const clustersOf = (theme: string) => new Set(corpus.records.flatMap((r, i) => (r.theme === theme && clusterOf[i] >= 0 ? [clusterOf[i]] : [])));
    const ys = clustersOf(y);
    const shared = [...clustersOf(x)].filter((c) => ys.has(c));
    if (shared.length > 0) hardNegativesMixed++;
    if (shared.some((c) => report.clusters[c].theme)) hardNegativesMixedWithJudged++;
  }
  const flagged = new Map<string, string>(report.possibleCounterEvidence.map((h: any) => [`${h.shard.id} ${h.trait.provenance}`, h.reason]));
  const contradictions = corpus.records.flatMap((r, i) => (r.contradicts !== undefined && judgedThemes.has(r.contradicts) ? [i] : []));
  const reasons = contradictions.map((i) => flagged.get(`${dropped.shardIds[i]} judged theme ${corpus.records[i].contradicts}`));
  return {
    ari: adjustedRandIndex(truth, predicted),
    unjudged: report.unjudgedCount,
    suggested,
    judgedSplitOrMixed,
    hardNegativesMixed,
    hardNegativesMixedWithJudged,
    contradictionsFlagged: {
      found: reasons.filter((r) => r !== undefined).length,
      of: contradictions.length,
      viaTheme: reasons.filter((r) => r?.startsWith('against theme')).length,
    },
  };
}

function figureRows(label: string, f: JudgeFigures): BenchRow[] {
  return [
    { name: `${label}: ARI over all shards / unjudged`, value: `${f.ari.toFixed(3)} / ${f.unjudged}` },
    { name: `${label}: unjudged shards with the right suggestedTheme (wrong)`, value: `${f.suggested.right} of ${f.suggested.of} (${f.suggested.wrong})` },
    { name: `${label}: judged themes split or mixed / hard-negative pairs mixed (with a judged theme)`, value: `${f.judgedSplitOrMixed} / ${f.hardNegativesMixed} (${f.hardNegativesMixedWithJudged})` },
    { name: `${label}: contradictions flagged as possible counter-evidence (through the theme only)`, value: `${f.contradictionsFlagged.found} of ${f.contradictionsFlagged.of} (${f.contradictionsFlagged.viaTheme})` },
  ];
}

const SHARE = 0.6;

async function onServer<T>(path: string, mode: SimilarityMode, run: (url: string) => Promise<T>): Promise<T> {
  const app = buildApp({ db: openSoulsDb({ path, settings: { similarity: mode, traitLimit: 100 } }), graphiql: false });
  try {
    const { url } = await app.start(0, '127.0.0.1');
    return await run(url);
  } finally {
    await app.stop();
  }
}

/** Judges on `path` (a file or a PostgreSQL URL) and scores before, after, and after reopening the database. */
export async function judgeRun(path: string, mode: SimilarityMode, corpus: JudgeCorpus, label: string, restart: boolean): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const state = await onServer(path, mode, async (url) => {
    const dropped = await dropCorpus(url, corpus, Date.now());
    rows.push(...figureRows(`${label}, 0 % judged`, await scoreReport(url, corpus, dropped, new Set())));
    const { judged } = await judge(url, corpus, dropped, SHARE);
    rows.push(...figureRows(`${label}, ${SHARE * 100} % judged`, await scoreReport(url, corpus, dropped, judged)));
    return { dropped, judged };
  });
  if (restart) rows.push(...figureRows(`${label}, after a restart`, await onServer(path, mode, (url) => scoreReport(url, corpus, state.dropped, state.judged))));
  return rows;
}

async function postgresUrl(): Promise<{ url: string; drop: () => Promise<void> }> {
  const server = process.env.SOULS_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const name = `souls_judge_${randomBytes(5).toString('hex')}`;
  // Imported here: the tests import this module, and pg does not load under vitest.
  const { default: pg } = await import('pg');
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: server, connectionTimeoutMillis: 2000 });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  try {
    await admin(`CREATE DATABASE ${name}`);
  } catch {
    return { url: 'pglite:memory', drop: async () => {} };
  }
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

export async function benchJudge(): Promise<BenchRow[]> {
  const corpus = loadJudgeCorpus();
  const rows: BenchRow[] = [
    { name: 'corpus: shards / themes / hard-negative pairs (contradictions)', value: `${corpus.records.length} / ${corpus.themes.length} / ${corpus.hardNegatives.length} (${corpus.records.filter((r) => r.contradicts).length})` },
  ];
  const dir = mkdtempSync(join(tmpdir(), 'souls-bench-judge-'));
  try {
    for (const mode of ['trigram', 'lexical'] as const) rows.push(...(await judgeRun(join(dir, `${mode}.db`), mode, corpus, `${mode}, SQLite`, true)));
    const pgDb = await postgresUrl();
    try {
      rows.push(...(await judgeRun(pgDb.url, 'lexical', corpus, `lexical, ${pgDb.url.startsWith('pglite:') ? 'PGlite' : 'PostgreSQL'}`, !pgDb.url.startsWith('pglite:memory'))));
    } finally {
      await pgDb.drop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}
