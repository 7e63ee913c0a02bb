// npm run bench: engine benchmarks, printed as a table with the machine noted.
import { cpus, totalmem } from 'node:os';
import { benchApi } from './api.ts';
import { benchClustering } from './clustering.ts';
import { benchEngine, type BenchRow } from './engine.ts';
import { benchGrowth } from './growth.ts';
import { benchLexicalVariants } from './lexical-variants.ts';
import { benchParaphrase } from './paraphrase.ts';
import { benchProvided } from './provided.ts';
import { benchSemantic } from './semantic.ts';
import { benchServerMemory } from './server-memory.ts';
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
  ['A real server: souls serve in its own process, memory from the operating system', benchServerMemory],
  ['Growth curves', benchGrowth],
];

const machine = `${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.versions.node}, SQLite ${process.versions.sqlite}`;
console.log(`Souls benchmarks — ${machine}\n`);
for (const [title, run] of sections) {
  const rows = await run();
  const width = Math.max(...rows.map((r) => r.name.length));
  console.log(`## ${title}`);
  for (const row of rows) console.log(`${row.name.padEnd(width)}  ${row.value}`);
  console.log();
}
