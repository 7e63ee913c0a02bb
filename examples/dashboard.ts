// A roster dashboard from ONE request: every soul with its traits, readiness, health, heaviest evidence clusters and
// suggested actions. The request is priced within the server's default cost limit for up to 1,000 souls (the most
// `souls` returns; soulsConnection pages through more): see docs/api.md, "What a request costs".
//
//   node examples/dashboard.ts [url] [--token T]
//
// url defaults to SOULS_URL, then http://127.0.0.1:4000/graphql; the token (for a server with --tokens-file) to SOULS_TOKEN.
import { parseArgs } from 'node:util';
import { DashboardDocument, type DashboardQuery } from './gql/graphql.ts';
import { apiToken, apiUrl, failWith, tokenOption, typedClient } from './typed-client.ts';

type DashboardSoul = DashboardQuery['souls'][number];

const TOP_CLUSTERS = 3;

function clip(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

function topCluster(soul: DashboardSoul): string {
  const [top] = soul.evidence.clusters;
  return top ? `${top.memberCount}× ${top.alignment.kind.toLowerCase()}: ${top.representative.content}` : '—';
}

/** Columns as [header, cell]; widths follow the widest cell. */
const columns: [string, (soul: DashboardSoul) => string][] = [
  ['name', (s) => s.name],
  ['level', (s) => String(s.level)],
  ['traits', (s) => `${s.activeTraitCount}/${s.traitLimit}`],
  ['pending', (s) => String(s.pendingShardCount)],
  ['ready', (s) => (s.crystallization.ready ? `yes (${s.crystallization.priority.toFixed(1)})` : 'no')],
  ['health', (s) => s.health.toFixed(2)],
  ['top cluster', (s) => clip(topCluster(s), 60)],
];

function table(souls: readonly DashboardSoul[]): string {
  const rows = [columns.map(([header]) => header), ...souls.map((soul) => columns.map(([, cell]) => cell(soul)))];
  const widths = columns.map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  const line = (row: string[]) => row.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd();
  return [line(rows[0]), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

function details(soul: DashboardSoul): string[] {
  const lines = [`${soul.name}`];
  if (!soul.crystallization.ready) lines.push(`  waiting for: ${soul.crystallization.unmet.join(', ')}`);
  for (const trait of soul.traits) {
    const { citationCount, stale } = trait.signals;
    lines.push(`  trait  ${trait.principle}  [${citationCount} citation${citationCount === 1 ? '' : 's'}${stale ? ', stale' : ''}]`);
  }
  for (const cluster of soul.evidence.clusters.slice(0, TOP_CLUSTERS)) {
    lines.push(`  evidence  w=${cluster.weight.toFixed(2)}  ${cluster.memberCount}× ${cluster.alignment.kind}  ${cluster.representative.content}`);
  }
  if (soul.evidence.clusterCount > TOP_CLUSTERS) lines.push(`  evidence  … ${soul.evidence.clusterCount - TOP_CLUSTERS} more clusters`);
  for (const action of soul.evidence.suggestedActions) lines.push(`  next  ${action.kind.toLowerCase()}: ${action.message}`);
  return lines;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: tokenOption });
  const request = typedClient(apiUrl(positionals), apiToken(values));
  const { souls } = await request(DashboardDocument);
  if (souls.length === 0) {
    console.log('No souls yet. Seed some: node examples/seed.ts');
    return;
  }
  const ready = souls.filter((s) => s.crystallization.ready).length;
  console.log(`${souls.length} soul${souls.length === 1 ? '' : 's'}, ${ready} ready for refinement\n`);
  console.log(table(souls));
  console.log('');
  console.log(souls.flatMap(details).join('\n'));
}

if (import.meta.main) await main().catch(failWith);
