// Planning a SOUL.md import (importSoulMd, apply: false) of documents built to make a parser rescan or backtrack:
// 1 MiB of "## Core Truths" lines, a heading padded with spaces, unclosed comments, an identity card field padded
// before a line break, 32 KiB of frontmatter keys, and 1 MiB of principles into a soul that has ten traits. Each
// is answered by a server in this process over HTTP (a plan or the typed error it earns), the median of a few; then the same shape at a quarter of the
// size, whose ratio to the full size is about 4 when the work is linear (16 when quadratic).
import { addTrait, closeSoulsDb, createSoul, manualClock, openSoulsDb } from '../src/engine/index.ts';
import { buildApp } from '../src/server/app.ts';
import { median, type BenchRow } from './engine.ts';

const MiB = 1024 * 1024;
const RUNS = 5;
const PLAN = `mutation($input: ImportSoulMdInput!) { importSoulMd(input: $input) { __typename
  ... on SoulMdImportPlan { traits { principle } } ... on ValidationError { field message } } }`;

type Shape = { name: string; input: (bytes: number) => Record<string, unknown> };

const upTo = (bytes: number, head: string, unit: string) => head + unit.repeat(Math.max(0, Math.floor((bytes - head.length - 64) / unit.length)));
const spaces = (bytes: number) => ' '.repeat(Math.max(0, bytes - 64));

const shapes: Shape[] = [
  { name: '"## Core Truths" lines (the issue\'s document)', input: (bytes) => ({ text: upTo(bytes, '', '## Core Truths\n'), name: 'Heady' }) },
  { name: 'a heading padded with spaces', input: (bytes) => ({ text: `## Vibe\n\nCalm.\n\n## Core${spaces(bytes)}Truths\n`, name: 'Padded', format: 'OPENCLAW' }) },
  { name: 'unclosed comment openers', input: (bytes) => ({ text: upTo(bytes, '## Vibe\n\nCalm.\n\n## Core Truths\n\n', '<!--'), name: 'Commented' }) },
  { name: 'an IDENTITY.md field padded before a line break', input: (bytes) => ({ text: `- **Name**${spaces(bytes / 2)}:${spaces(bytes / 2)}Mi\rra\n`, fileName: 'IDENTITY.md', format: 'OPENCLAW', name: 'Card' }) },
  {
    name: 'frontmatter keys (at most 32 KiB of frontmatter)',
    input: (bytes) => ({ text: `---\nname: Keys\n${Array.from({ length: Math.floor((bytes / 32 - 64) / 11) }, (_, i) => `k${i}: v\n`).join('')}---\n\n## Who You Are\n\nA smith.\n` }),
  },
  {
    name: 'distinct principles into a soul with ten traits',
    input: (bytes) => ({ text: `## Vibe\n\nCalm.\n\n## Core Truths\n\n${Array.from({ length: Math.floor(bytes / 50) }, (_, i) => `- Check ledger ${i} twice before the ferry.\n`).join('')}`, name: 'Mira' }),
  },
];

async function planTimes(url: string, input: Record<string, unknown>): Promise<{ ms: number; answer: string }> {
  const samples: number[] = [];
  let answer = '';
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: PLAN, variables: { input } }) });
    const body = (await response.json()) as { data?: { importSoulMd: { __typename: string; traits?: unknown[]; field?: string; message?: string } }; errors?: unknown[] };
    samples.push(performance.now() - started);
    const result = body.data?.importSoulMd;
    answer = !result ? JSON.stringify(body.errors) : result.traits ? `a plan of ${result.traits.length} traits` : `${result.__typename} on ${result.field}: ${result.message?.slice(0, 40)}`;
  }
  return { ms: median(samples), answer };
}

export async function benchSoulMdPlan(): Promise<BenchRow[]> {
  const db = openSoulsDb({ clock: manualClock(Date.UTC(2026, 0, 1)) });
  const mira = await createSoul(db, { name: 'Mira', essence: 'Calm and exact.' });
  for (let i = 0; i < 10; i++) await addTrait(db, mira.id, { principle: `Principle ${i}: check the sources twice before answering.`, provenance: 'bench' });
  const app = buildApp({ db, graphiql: false });
  const { url } = await app.start(0, '127.0.0.1');
  const rows: BenchRow[] = [];
  try {
    for (const shape of shapes) {
      const full = await planTimes(url, shape.input(MiB));
      const quarter = await planTimes(url, shape.input(MiB / 4));
      rows.push({ name: `${shape.name}, 1 MiB: median of ${RUNS} (ms)`, value: `${full.ms.toFixed(0)} (${full.answer})`, numbers: [Number(full.ms.toFixed(0))], unit: 'ms', better: 'lower' });
      rows.push({ name: `${shape.name}: 1 MiB over 256 KiB (4 is linear)`, value: (full.ms / quarter.ms).toFixed(1), numbers: [Number((full.ms / quarter.ms).toFixed(1))], unit: null, better: null });
    }
  } finally {
    await app.stop();
    closeSoulsDb(db);
  }
  return rows;
}
