// npm run bench [-- --only TEXT] [-- --json FILE] [-- --store postgres]: engine benchmarks, printed as a table with the machine noted.
//   --store postgres: also the engine on PostgreSQL (SOULS_BENCH_PG_URL), the API over three replicas (bench/replicas.ts)
//   and replicas with the database across a network (bench/latency.ts; SOULS_BENCH_CLI measures another checkout's server).
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { benchAgentCycle } from './agent-cycle.ts';
import { benchApi } from './api.ts';
import { benchClustering } from './clustering.ts';
import { benchColdStart } from './cold-start.ts';
import { benchEngine, type BenchRow } from './engine.ts';
import { benchEnginePostgres } from './engine-postgres.ts';
import { benchGrowth } from './growth.ts';
import { benchJudge } from './judge.ts';
import { benchLatency } from './latency.ts';
import { benchLexicalVariants } from './lexical-variants.ts';
import { benchParaphrase } from './paraphrase.ts';
import { benchDashboard, benchPriceList } from './price-list.ts';
import { benchProvided } from './provided.ts';
import { benchReplicas } from './replicas.ts';
import { benchSemantic } from './semantic.ts';
import { benchServerMemory } from './server-memory.ts';
import { benchSimilarityModes } from './similarity.ts';
import { benchSoulMdPlan } from './soulmd-plan.ts';
import { describeMachine, figureOf, loadAverageNow, machineNow, selectSections, type BenchReport } from './report.ts';

const sections: Array<[string, () => Promise<BenchRow[]>]> = [
  ['Cold start: the first calls on a new database', benchColdStart],
  ['Engine', benchEngine],
  ['Clustering', benchClustering],
  ['Paraphrase corpus: similarity modes', benchParaphrase],
  ['Paraphrase corpus: lexical weighting variants (threshold by the rule)', benchLexicalVariants],
  ['Paraphrase corpus: provided mode on SYNTHETIC vectors', benchProvided],
  ['Similarity modes at their defaults', benchSimilarityModes],
  ['Paraphrase corpus and costs: semantic mode (sentence encoder)', benchSemantic],
  ['The simulated judge: themes assigned through GraphQL, the report scored against the labels', benchJudge],
  ['API', benchApi],
  ['An agent refines a soul over MCP: the scripted cycle of bench/agent-cycle.ts, before and after (issue 34)', benchAgentCycle],
  ['Price list: each priced thing measured in units of one plain field (measured / priced)', benchPriceList],
  ['Dashboard: examples/dashboard.graphql over HTTP at 100 and 1,000 souls, default limits', benchDashboard],
  ['SOUL.md import plans of pathological documents (importSoulMd, apply: false)', benchSoulMdPlan],
  ['A real server: souls serve in its own process, memory from the operating system', benchServerMemory],
  ['Growth curves', benchGrowth],
];

const usage = 'usage: npm run bench [-- --only TEXT ...] [-- --json FILE] [-- --store sqlite|postgres]';
function options(): { only: string[]; json: string | null; store: 'sqlite' | 'postgres' } {
  try {
    const { values } = parseArgs({
      options: { only: { type: 'string', multiple: true }, json: { type: 'string' }, store: { type: 'string', default: 'sqlite' } },
      strict: true,
      allowPositionals: false,
    });
    if (values.store !== 'sqlite' && values.store !== 'postgres') throw new Error(`--store must be sqlite or postgres, got ${values.store}`);
    return { only: values.only ?? [], json: values.json ?? null, store: values.store };
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}\n${usage}`);
    process.exit(2);
  }
}

const { only, json, store } = options();
if (store === 'postgres') {
  sections.splice(2, 0, ['Engine on PostgreSQL (SOULS_BENCH_PG_URL)', benchEnginePostgres]);
  sections.push(['API over three replicas (events through Redis): SQLite beside PostgreSQL', benchReplicas]);
  sections.push(['Latency: replicas with PostgreSQL on loopback and 2 ms away (a relay, 1 ms each way)', benchLatency]);
}
const chosen = selectSections(sections.map(([title, run]) => ({ title, run })), only);
if (chosen.length === 0) {
  console.error(`bench: no section's title contains ${only.map((o) => JSON.stringify(o)).join(' or ')}; the sections are:\n${sections.map(([title]) => `  ${title}`).join('\n')}`);
  process.exit(2);
}

const machine = machineNow();
const report: BenchReport = { date: new Date().toISOString(), machine, loadAverage: { start: loadAverageNow(), end: [] }, sections: [] };
console.log(`Souls benchmarks — ${describeMachine(machine)}\n`);
for (const { title, run } of chosen) {
  const started = performance.now();
  const rows = await run();
  report.sections.push({ title, seconds: Math.round(performance.now() - started) / 1000, rows: rows.map(figureOf) });
  const width = Math.max(...rows.map((r) => r.name.length));
  console.log(`## ${title}`);
  for (const row of rows) console.log(`${row.name.padEnd(width)}  ${row.value}`);
  console.log();
}
report.loadAverage.end = loadAverageNow();
if (json !== null) {
  writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`Figures written to ${json} (load average ${report.loadAverage.start.join(' ')} at the start, ${report.loadAverage.end.join(' ')} at the end).`);
}
