// npm run bench: engine benchmarks, printed as a table with the machine noted.
//   npm run bench -- --store postgres   # also the engine on PostgreSQL, and the API over three replicas (bench/replicas.ts)
//   npm run bench -- --only replicas    # only the sections whose title contains this (any case)
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { benchApi } from './api.ts';
import { benchClustering } from './clustering.ts';
import { benchEngine, type BenchRow } from './engine.ts';
import { benchEnginePostgres } from './engine-postgres.ts';
import { benchLexicalVariants } from './lexical-variants.ts';
import { benchParaphrase } from './paraphrase.ts';
import { benchProvided } from './provided.ts';
import { benchReplicas } from './replicas.ts';
import { benchSemantic } from './semantic.ts';
import { benchSimilarityModes } from './similarity.ts';

const sections: Array<[string, () => Promise<BenchRow[]>]> = [
  ['Engine', benchEngine],
  ['Clustering', benchClustering],
  ['Paraphrase corpus: similarity modes', benchParaphrase],
  ['Paraphrase corpus: lexical weighting variants (threshold by the rule)', benchLexicalVariants],
  ['Paraphrase corpus: provided mode on SYNTHETIC vectors', benchProvided],
  ['Similarity modes at their defaults', benchSimilarityModes],
  ['Paraphrase corpus and costs: semantic mode (sentence encoder)', benchSemantic],
  ['API', benchApi],
];
// --store postgres: the Engine section again on PostgreSQL (SOULS_BENCH_PG_URL), right after SQLite's, and the API over
// three replicas, SQLite beside PostgreSQL. --only: the sections whose title contains this (any case).
const { values: options } = parseArgs({ options: { store: { type: 'string', default: 'sqlite' }, only: { type: 'string' } } });
if (options.store !== 'sqlite' && options.store !== 'postgres') throw new Error(`--store must be sqlite or postgres, got ${options.store}`);
if (options.store === 'postgres') {
  sections.splice(1, 0, ['Engine on PostgreSQL (SOULS_BENCH_PG_URL)', benchEnginePostgres]);
  sections.push(['API over three replicas (events through Redis): SQLite beside PostgreSQL', benchReplicas]);
}
const chosen = options.only ? sections.filter(([title]) => title.toLowerCase().includes(options.only!.toLowerCase())) : sections;

const machine = `${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.versions.node}, SQLite ${process.versions.sqlite}`;
console.log(`Souls benchmarks — ${machine}\n`);
for (const [title, run] of chosen) {
  const rows = await run();
  const width = Math.max(...rows.map((r) => r.name.length));
  console.log(`## ${title}`);
  for (const row of rows) console.log(`${row.name.padEnd(width)}  ${row.value}`);
  console.log();
}
