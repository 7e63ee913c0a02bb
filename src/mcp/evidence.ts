// The evidence tool: the readiness verdict with its unmet conditions, and the report that pre-digests a soul's shards.
import { z } from 'zod';
import { evidenceSince, formatEvidence, getShards, getThemes, listThemes, UNJUDGED_TEXT, type EvidenceReport } from '../engine/index.ts';
import { annotations, defineTool } from './context.ts';
import { clip, decodeCursor, encodeCursor, fitText, fitToBudget, ok, okWithText, toolError, ToolRefusal } from './results.ts';
import { soulNamed, verdictOf } from './souls.ts';
import { cursor, evidenceUri, id, idList, limit, verdict } from './schemas.ts';

const cluster = z.object({
  representativeId: z.number().int(),
  representative: z.string(),
  memberIds: idList,
  memberCount: z.number().int(),
  sources: z.array(z.string()),
  weight: z.number(),
  alignment: z.object({ kind: z.enum(['REINFORCING', 'NOVEL', 'CONTRADICTING']), traitId: z.number().int().nullable() }),
  sharedWith: z.array(z.object({ soulId: z.number().int(), sharedCount: z.number().int() })),
  themeId: z.number().int().nullable(),
  suggestedTheme: z.object({ id: z.number().int(), name: z.string(), similarity: z.number() }).nullable(),
  opposes: idList,
});

/** Unjudged shards a "json" answer lists on its first page (their text clipped as the markdown's); the markdown lists MARKDOWN_UNJUDGED. */
const LISTED_UNJUDGED = 25;
const unjudged = z.object({ id: z.number().int(), source: z.string(), date: z.string(), text: z.string(), themeId: z.number().int().nullable(), similarity: z.number().nullable(), opposes: idList });

/** Themes listed in the answer, oldest first; soul_evidence with format "json" pages the clusters that are them. */
const LISTED_THEMES = 40;

const pair = z.object({ a: z.number().int(), b: z.number().int(), similarity: z.number() });

/** The markdown cut at a line within `room` characters, ending with where the whole report is. */
export function clipMarkdown(markdown: string, room: number, resource: string): { text: string; clipped: boolean } {
  if (markdown.length <= room) return { text: markdown, clipped: false };
  const note = (omitted: number) => `… ${omitted} more lines: the whole report is the resource ${resource}; or narrow with tags or query, or page clusters with format "json"\n`;
  const end = markdown.lastIndexOf('\n', room - note(markdown.split('\n').length).length) + 1;
  const omitted = markdown.slice(end).split('\n').length - 1;
  return { text: `${markdown.slice(0, end)}${note(omitted)}`, clipped: true };
}

export const soulEvidence = defineTool({
  name: 'soul_evidence',
  title: 'Evidence report and readiness',
  description:
    'Read before changing a soul. Line 2: what to do next and why; then actions, unjudged shards with text by the theme each ' +
    'resembles, traits, counter-evidence, clusters. since (a revision it returned): only what changed. "json" pages clusters.',
  scope: 'read',
  annotations: annotations('read'),
  input: z.strictObject({
    soulId: id('soul'),
    format: z.enum(['markdown', 'json']).default('markdown'),
    tags: z.array(z.string().max(64)).max(32).optional(),
    query: z.string().max(1000).optional(),
    since: z.string().max(64).optional(),
    cursor: cursor.describe('json only'),
    limit: limit(30, 10).describe('json: clusters per page'),
  }),
  output: z.object({
    soul: z.object({ id: z.number().int(), name: z.string(), level: z.number().int() }),
    verdict,
    suggestedActions: z.array(z.object({ kind: z.string(), message: z.string(), traitIds: idList })),
    reportUri: z.string(),
    revision: z.string(),
    sinceKnown: z.boolean().optional(),
    changes: z.object({ newShardIds: idList, goneShardIds: idList, changedThemeIds: idList, changedClusterIds: idList, readinessChanged: z.boolean(), newActions: z.array(z.string()) }).optional(),
    markdownClipped: z.boolean().optional(),
    unjudgedCount: z.number().int(),
    similarity: z.object({ mode: z.string(), vectorsPending: z.number().int(), vectors: z.string() }),
    themes: z.array(z.object({ id: z.number().int(), name: z.string(), memberCount: z.number().int(), opposes: idList })),
    report: z
      .object({
        shardCount: z.number().int(),
        clusterCount: z.number().int(),
        clusters: z.array(cluster),
        traits: z.array(z.object({ traitId: z.number().int(), citationCount: z.number().int(), stale: z.boolean(), tenure: z.number(), essenceRedundancy: z.number() })),
        consolidationCandidates: z.array(pair),
        tensions: z.array(pair),
        promotionCandidates: z.array(z.object({ traitId: z.number().int(), score: z.number() })),
        trend: z.object({ recentCount: z.number().int(), previousCount: z.number().int(), velocity: z.number().int(), newSources: z.array(z.string()) }),
        unjudged: z.array(unjudged).optional(),
      })
      .optional(),
    nextCursor: z.string().nullable().optional(),
  }),
  async run(args, ctx) {
    try {
      const soul = await soulNamed(ctx, args.soulId);
      if (args.format === 'markdown' && args.cursor !== undefined) throw new ToolRefusal('cursor', 'pages clusters of format "json" only', 'Ask with format "json" to page clusters');
      const report = await formatEvidence(ctx.db, soul.id, { tags: args.tags, query: args.query });
      const read = evidenceSince(ctx.db, report, args.since ?? null, soul.name);
      const incremental = read.changes !== null;
      const head = {
        soul: { id: soul.id, name: soul.name, level: soul.level },
        verdict: verdictOf(report.crystallization, soul, ctx.db.settings),
        // Since a known revision, only the actions that are new or changed.
        suggestedActions: report.suggestedActions
          .filter((a) => !incremental || read.changes!.newActions.includes(`${a.kind}: ${a.message}`))
          .map((a) => ({ kind: a.kind, message: a.message, traitIds: a.traitIds })),
        reportUri: evidenceUri(soul.id),
        revision: read.revision,
        ...(read.since === null ? {} : { sinceKnown: read.since.known }),
        ...(read.changes === null ? {} : { changes: read.changes }),
        unjudgedCount: report.unjudgedCount,
        similarity: { mode: report.similarity.mode, vectorsPending: report.similarity.vectors.pending, vectors: report.similarity.vectors.message },
        // Since a known revision the markdown says which themes changed; the whole list is for a first read.
        themes: incremental
          ? []
          : (await listThemes(ctx.db, soul.id)).slice(0, LISTED_THEMES).map((t) => ({ id: t.id, name: t.name, memberCount: t.memberIds.length, opposes: t.opposes })),
      };
      if (args.format === 'markdown') {
        // The markdown is sent once, as text a model reads as is; the structured content says whether it was cut.
        const answer = (room: number) => {
          const markdown = clipMarkdown(read.markdown, room, head.reportUri);
          return okWithText(markdown.text, { ...head, markdownClipped: markdown.clipped });
        };
        return fitText(answer, read.markdown.length, { size: (result) => JSON.stringify(result).length });
      }
      const listed = args.cursor === undefined ? report.unjudged.slice(0, LISTED_UNJUDGED).map((u) => ({
        id: u.shardId,
        source: u.source,
        date: new Date(u.createdAt).toISOString().slice(0, 10),
        text: clip(u.content, UNJUDGED_TEXT).text,
        themeId: u.suggestion?.themeId ?? null,
        similarity: u.suggestion === null ? null : Number(u.suggestion.similarity.toFixed(3)),
        opposes: u.suggestion?.opposes ?? [],
      })) : [];
      return ok(await jsonPage(ctx.db, head, report, args.cursor, args.limit, listed));
    } catch (error) {
      return toolError(error);
    }
  },
});

async function jsonPage(db: Parameters<typeof getShards>[0], head: Record<string, unknown>, report: EvidenceReport, cursorValue: string | undefined, pageSize: number, unjudged: readonly unknown[]) {
  const { o: offset } = decodeCursor(cursorValue);
  const page = report.clusters.slice(offset, offset + pageSize);
  const contents = await getShards(db, page.map((c) => c.representativeId));
  const suggested = await getThemes(db, page.flatMap((c) => (c.suggestedThemeId === null ? [] : [c.suggestedThemeId])));
  const clusters = page.map((c) => ({
    representativeId: c.representativeId,
    representative: clip(contents.get(c.representativeId)?.content ?? '', 240).text,
    memberIds: c.memberIds.slice(0, 12),
    memberCount: c.memberCount,
    sources: c.sources.slice(0, 12),
    weight: Number(c.weight.toFixed(3)),
    alignment: { kind: c.alignment.kind, traitId: c.alignment.traitId },
    sharedWith: c.sharedWith.slice(0, 8).map((s) => ({ soulId: s.soulId, sharedCount: s.sharedCount })),
    themeId: c.themeId,
    suggestedTheme: c.suggestedThemeId === null ? null : { id: c.suggestedThemeId, name: suggested.get(c.suggestedThemeId)?.name ?? '', similarity: Number((c.suggestedThemeSimilarity ?? 0).toFixed(3)) },
    opposes: c.opposes,
  }));
  const round = (n: number) => Number(n.toFixed(3));
  const rest = {
    shardCount: report.shardCount,
    clusterCount: report.clusters.length,
    traits: report.traits.map((t) => ({ traitId: t.traitId, citationCount: t.citationCount, stale: t.stale, tenure: round(t.tenure), essenceRedundancy: round(t.essenceRedundancy) })),
    consolidationCandidates: report.consolidationCandidates.slice(0, 20).map((p) => ({ ...p, similarity: round(p.similarity) })),
    tensions: report.tensions.slice(0, 20).map((p) => ({ ...p, similarity: round(p.similarity) })),
    promotionCandidates: report.promotionCandidates.slice(0, 20).map((p) => ({ traitId: p.traitId, score: round(p.score) })),
    trend: { recentCount: report.trend.recentCount, previousCount: report.trend.previousCount, velocity: report.trend.velocity, newSources: report.trend.newSources.slice(0, 20) },
  };
  const frame = (kept: typeof clusters, listed: readonly unknown[] = []) => {
    const end = offset + kept.length;
    return { ...head, report: { ...rest, clusters: kept, ...(listed.length > 0 ? { unjudged: listed } : {}) }, nextCursor: end < report.clusters.length ? encodeCursor({ o: end }) : null };
  };
  // The unjudged lines fit beside one cluster at least; the clusters fill what they leave.
  const listed = unjudged.length === 0 ? [] : unjudged.slice(0, fitToBudget(unjudged, (kept) => frame(clusters.slice(0, 1), kept)));
  return frame(clusters.slice(0, fitToBudget(clusters, (kept) => frame(kept, listed))), listed);
}
