// npm run bench:compare a.json b.json: every figure present in both runs, a beside b, with b ÷ a and whether that is better.
import { readFileSync } from 'node:fs';
import { describeMachine, type BenchReport, type Figure } from './report.ts';

type Comparison = { key: string; a: number; b: number; unit: string | null; verdict: string };

function load(path: string): BenchReport {
  let report: BenchReport;
  try {
    report = JSON.parse(readFileSync(path, 'utf8')) as BenchReport;
  } catch (error) {
    throw new Error(`${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!report || !Array.isArray(report.sections) || !report.machine) throw new Error(`${path}: not a report written by npm run bench -- --json`);
  return report;
}

/** Each number of each row, keyed by section and row name (and its place when a row has several). */
function figures(report: BenchReport): Map<string, { value: number; figure: Figure }> {
  const found = new Map<string, { value: number; figure: Figure }>();
  for (const section of report.sections) {
    for (const figure of section.rows) {
      for (const [i, value] of figure.numbers.entries()) {
        const place = figure.numbers.length > 1 ? ` [${i + 1} of ${figure.numbers.length}]` : '';
        found.set(`${section.title} › ${figure.name}${place}`, { value, figure });
      }
    }
  }
  return found;
}

const ratio = (a: number, b: number): string => (a === 0 ? (b === 0 ? '1.00' : '—') : (b / a).toFixed(2));

/** "same" when b ÷ a prints as 1.00; else "better" or "worse" when the row says which way it improves; else blank. */
function verdict(a: number, b: number, better: Figure['better']): string {
  if (a === b || ratio(a, b) === '1.00') return 'same';
  if (better === null) return '';
  return (b > a) === (better === 'higher') ? 'better' : 'worse';
}

function compareReports(a: BenchReport, b: BenchReport): { both: Comparison[]; onlyA: string[]; onlyB: string[] } {
  const fa = figures(a);
  const fb = figures(b);
  const both: Comparison[] = [];
  for (const [key, x] of fa) {
    const y = fb.get(key);
    if (y) both.push({ key, a: x.value, b: y.value, unit: x.figure.unit, verdict: verdict(x.value, y.value, x.figure.better) });
  }
  return { both, onlyA: [...fa.keys()].filter((k) => !fb.has(k)), onlyB: [...fb.keys()].filter((k) => !fa.has(k)) };
}


function print(pathA: string, a: BenchReport, pathB: string, b: BenchReport): void {
  const { both, onlyA, onlyB } = compareReports(a, b);
  for (const [label, path, r] of [['a', pathA, a], ['b', pathB, b]] as const) {
    console.log(`${label}: ${path} — ${r.date}, ${describeMachine(r.machine)}, load average ${r.loadAverage.start.join(' ')} → ${r.loadAverage.end.join(' ')}`);
  }
  console.log();
  const header = ['figure', 'unit', 'a', 'b', 'b ÷ a', ''];
  const lines = both.map((c) => [c.key, c.unit ?? '', String(c.a), String(c.b), ratio(c.a, c.b), c.verdict]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const row = (cells: string[]) => cells.map((c, i) => (i >= 2 && i <= 4 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  console.log(row(header));
  for (const line of lines) console.log(row(line));
  const better = both.filter((c) => c.verdict === 'better').length;
  const worse = both.filter((c) => c.verdict === 'worse').length;
  console.log(`\n${both.length} figures in both: ${better} better, ${worse} worse, ${both.length - better - worse} same or without a direction.`);
  if (onlyA.length > 0) console.log(`\nOnly in a (${onlyA.length}):\n${onlyA.map((k) => `  ${k}`).join('\n')}`);
  if (onlyB.length > 0) console.log(`\nOnly in b (${onlyB.length}):\n${onlyB.map((k) => `  ${k}`).join('\n')}`);
}

const paths = process.argv.slice(2);
if (paths.length !== 2 || paths.some((p) => p.startsWith('-'))) {
  console.error('usage: npm run bench:compare a.json b.json  (reports written by npm run bench -- --json FILE)');
  process.exit(2);
}
try {
  print(paths[0], load(paths[0]), paths[1], load(paths[1]));
} catch (error) {
  console.error(`bench:compare: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
