// Incremental evidence (issue 34): a report names its state with a revision; a later read that passes that revision
// answers only what changed since. The revision is a digest of what an agent acts on (shards, clusters, themes, traits,
// readiness, suggestions), so the same state has the same revision; what each revision held is remembered in this
// process only (a bounded number of them), and a revision it does not know is answered with the full report.
import { createHash } from 'node:crypto';
import { newThemeClusters, unjudgedLines, type EvidenceReport, type UnjudgedShard } from './evidence.ts';
import type { SoulsDb } from './souls-db.ts';

/** Revisions remembered per database, the least recently used forgotten first. */
export const REMEMBERED_REVISIONS = 512;

type Snapshot = {
  soulId: number;
  scope: string;
  shardIds: number[];
  /** Cluster keys: "theme:<id>:<members>" or "<members>" for unjudged clusters. */
  clusters: string[];
  themes: Record<number, string>;
  traits: Record<number, string>;
  readiness: string;
  actions: string[];
  /** Unjudged shard id → its suggestion ("theme:similarity", or "" for none). */
  unjudged: Record<number, string>;
  counter: string[];
};

export type EvidenceChanges = {
  newShardIds: number[];
  /** Shards the report no longer holds: faded, expired, sealed or dropped. */
  goneShardIds: number[];
  /** Themes whose name, members or opposed traits changed, new ones, and removed ones. */
  changedThemeIds: number[];
  /** Unjudged clusters that are new or whose members changed, by representative id. */
  changedClusterIds: number[];
  readinessChanged: boolean;
  /** Suggested actions that are new or whose message changed ("KIND: message"). */
  newActions: string[];
};

export type EvidenceSince = {
  revision: string;
  /** The revision asked about; known false when this process does not hold it (the answer is then the full report). */
  since: { revision: string; known: boolean } | null;
  changes: EvidenceChanges | null;
  markdown: string;
};

const remembered = new WeakMap<SoulsDb, Map<string, Snapshot>>();

function snapshotOf(report: EvidenceReport): Snapshot {
  const cr = report.crystallization;
  return {
    soulId: report.soulId,
    scope: JSON.stringify(report.scope),
    shardIds: report.clusters.flatMap((c) => c.memberIds).sort((a, b) => a - b),
    clusters: report.clusters.map(clusterKey).sort(),
    themes: Object.fromEntries(report.themes.map((t) => [t.id, `${t.name}|${t.opposes.join(',')}|${report.clusters.find((c) => c.themeId === t.id)?.memberIds.join(',') ?? ''}`])),
    traits: Object.fromEntries(report.traits.map((t) => [t.traitId, `${t.citationCount}|${t.stale}`])),
    readiness: cr.ready ? 'ready' : `not ready: ${cr.unmet.join(', ')}`,
    actions: report.suggestedActions.map((a) => `${a.kind}: ${a.message}`),
    unjudged: Object.fromEntries(report.unjudged.map((u) => [u.shardId, u.suggestion === null ? '' : `${u.suggestion.themeId}:${u.suggestion.similarity.toFixed(3)}:${u.suggestion.opposes.join(',')}`])),
    counter: report.possibleCounterEvidence.map((h) => `${h.traitId}:${h.shardId}`),
  };
}

const clusterKey = (c: EvidenceReport['clusters'][number]) => `${c.themeId === null ? '' : `theme:${c.themeId}:`}${[...c.memberIds].sort((a, b) => a - b).join(',')}`;

/** The revision naming this report's state: the same state, the same revision, in any process. */
export function evidenceRevision(report: EvidenceReport): string {
  return revisionOf(snapshotOf(report));
}

function revisionOf(snapshot: Snapshot): string {
  return `${snapshot.soulId}-${createHash('sha256').update(JSON.stringify(snapshot)).digest('hex').slice(0, 12)}`;
}

/** Remembers the report's state under its revision, and returns that revision. */
export function rememberEvidence(db: SoulsDb, report: EvidenceReport): string {
  const snapshot = snapshotOf(report);
  const revision = revisionOf(snapshot);
  let held = remembered.get(db);
  if (!held) remembered.set(db, (held = new Map()));
  held.delete(revision);
  held.set(revision, snapshot);
  while (held.size > REMEMBERED_REVISIONS) held.delete(held.keys().next().value!);
  return revision;
}

/**
 * The report as an answer to a read that passed `since`: the full markdown when `since` is null, unknown, or of
 * another soul or scope (saying so); else only what changed, and one line when nothing did.
 */
export function evidenceSince(db: SoulsDb, report: EvidenceReport, since: string | null, soulName: string): EvidenceSince {
  const before = since === null ? undefined : remembered.get(db)?.get(since);
  const now = snapshotOf(report);
  const revision = rememberEvidence(db, report);
  if (since === null) return { revision, since: null, changes: null, markdown: report.markdown };
  if (!before || before.soulId !== now.soulId || before.scope !== now.scope) {
    const [title, ...rest] = report.markdown.split('\n');
    const note = `Revision ${since} is not known here (another scope, a restart, or too old): this is the full report, revision ${revision}.`;
    return { revision, since: { revision: since, known: false }, changes: null, markdown: [title, note, ...rest].join('\n') };
  }
  const title = `# Evidence: ${soulName.replace(/\s+/g, ' ').trim()} (soul #${report.soulId})`;
  if (revision === since) return { revision, since: { revision: since, known: true }, changes: emptyChanges(), markdown: `${title}: unchanged since revision ${since}\n` };
  const changes = diff(before, now, report);
  return { revision, since: { revision: since, known: true }, changes, markdown: renderChanges(title, since, revision, report, before, changes) };
}

function emptyChanges(): EvidenceChanges {
  return { newShardIds: [], goneShardIds: [], changedThemeIds: [], changedClusterIds: [], readinessChanged: false, newActions: [] };
}

function diff(before: Snapshot, now: Snapshot, report: EvidenceReport): EvidenceChanges {
  const had = new Set(before.shardIds);
  const has = new Set(now.shardIds);
  const clustersBefore = new Set(before.clusters);
  const themeIds = new Set([...Object.keys(before.themes), ...Object.keys(now.themes)].map(Number));
  const actionsBefore = new Set(before.actions);
  return {
    newShardIds: now.shardIds.filter((id) => !had.has(id)),
    goneShardIds: before.shardIds.filter((id) => !has.has(id)),
    changedThemeIds: [...themeIds].filter((id) => before.themes[id] !== now.themes[id]).sort((a, b) => a - b),
    changedClusterIds: report.clusters.filter((c) => c.themeId === null && c.memberCount > 1 && !clustersBefore.has(clusterKey(c))).map((c) => c.representativeId),
    readinessChanged: before.readiness !== now.readiness,
    newActions: now.actions.filter((a) => !actionsBefore.has(a)),
  };
}

function renderChanges(title: string, since: string, revision: string, report: EvidenceReport, before: Snapshot, changes: EvidenceChanges): string {
  const ids = (list: readonly number[]) => (list.length === 0 ? 'none' : list.map((id) => `#${id}`).join(', '));
  const full = report.markdown.split('\n');
  const lines = [`${title} since revision ${since} (now ${revision}): only what changed`];
  // The next step and the readiness are always restated: they are what the agent acts on.
  lines.push(...full.filter((l) => l.startsWith('Next: ') || l.startsWith('Readiness: ')));
  lines.push(`Shards: ${report.shardCount} (new: ${ids(changes.newShardIds)}; gone: ${ids(changes.goneShardIds)}); unjudged: ${report.unjudgedCount}`);
  if (changes.newActions.length > 0) lines.push('', '## Suggested actions (new or changed)', ...changes.newActions.map((a) => `- ${a}`));
  const moved = report.unjudged.filter((u) => before.unjudged[u.shardId] !== suggestionKey(u));
  if (moved.length > 0) lines.push(...unjudgedLines(report, moved, moved.length).map((l) => (l.startsWith('## Unjudged shards') ? l.replace('## Unjudged shards', '## Unjudged shards, new or with a new suggestion') : l)));
  // The others were listed in an earlier read, as they still are: named, not repeated.
  const unchanged = report.unjudged.filter((u) => before.unjudged[u.shardId] === suggestionKey(u)).map((u) => u.shardId);
  if (unchanged.length > 0) lines.push('', `Unjudged as before (listed in the earlier read): ${ids(unchanged)}`);
  const counter = report.possibleCounterEvidence.filter((h) => !before.counter.includes(`${h.traitId}:${h.shardId}`));
  if (counter.length > 0) lines.push('', '## Possible counter-evidence (new; hints, not judgements)', ...counter.map((h) => `- #${h.shardId} vs trait #${h.traitId}: ${h.reason}`));
  if (changes.changedThemeIds.length > 0) {
    lines.push('', '## Themes changed');
    for (const id of changes.changedThemeIds) {
      const theme = report.themes.find((t) => t.id === id);
      const cluster = report.clusters.find((c) => c.themeId === id);
      if (!theme || !cluster) {
        lines.push(`- theme #${id}: no longer in the report`);
        continue;
      }
      const was = new Set((before.themes[id] ?? '').split('|')[2]?.split(',').filter(Boolean).map(Number) ?? []);
      const added = cluster.memberIds.filter((m) => !was.has(m));
      const against = theme.opposes.length > 0 ? `; judged against trait${theme.opposes.length === 1 ? '' : 's'} ${ids(theme.opposes)}` : '';
      lines.push(`- theme "${theme.name}" (#${id}): ${cluster.memberCount} members, new ${ids(added)}; ${cluster.alignment.kind.toLowerCase()}${cluster.alignment.traitId === null ? '' : ` trait #${cluster.alignment.traitId}`}${against}`);
    }
  }
  const newThemes = new Set(newThemeClusters(report).map((c) => c.representativeId));
  const clusters = report.clusters.filter((c) => changes.changedClusterIds.includes(c.representativeId));
  if (clusters.length > 0) {
    lines.push('', '## Unjudged clusters, new or changed');
    for (const c of clusters) lines.push(`- #${c.representativeId} + ${ids(c.memberIds.filter((m) => m !== c.representativeId))}; sources ${c.sources.join(', ')}${newThemes.has(c.representativeId) ? '; fits no theme: a new theme?' : ''}`);
  }
  const traitLines = report.traits.filter((t) => before.traits[t.traitId] !== `${t.citationCount}|${t.stale}`);
  if (traitLines.length > 0) lines.push('', '## Traits changed', ...traitLines.map((t) => `- #${t.traitId}: cites ${t.citationCount}${t.stale ? ', stale' : ''}${before.traits[t.traitId] === undefined ? ' (new)' : ''}`));
  return lines.join('\n') + '\n';
}

const suggestionKey = (u: UnjudgedShard) => (u.suggestion === null ? '' : `${u.suggestion.themeId}:${u.suggestion.similarity.toFixed(3)}:${u.suggestion.opposes.join(',')}`);
