// Input and output pieces the tools share. Inputs have no unions: one shape per field, enums for choices.
import { z } from 'zod';

export const id = (what: string) => z.number().int().positive().describe(`${what} id (a whole number)`);
export const ids = (what: string, max: number) => z.array(id(what)).max(max);
export const cursor = z.string().max(512).optional().describe('nextCursor from the previous page; leave out for the first page');
export const limit = (max: number, fallback: number) => z.number().int().min(1).max(max).default(fallback).describe(`items per page (1 to ${max}, default ${fallback}); pages are also cut to stay under the token budget`);

/** Paging fields every list answer carries. */
export const paging = {
  totalCount: z.number().int().describe('items in the whole list'),
  nextCursor: z.string().nullable().describe('pass as cursor to get the next page; null on the last page'),
};

export const soulSummary = z.object({
  id: z.number().int(),
  name: z.string(),
  level: z.number().int(),
  dormant: z.boolean(),
});

export const verdict = z.object({
  ready: z.boolean().describe('enough diverse, new evidence to be worth refining'),
  priority: z.number(),
  unmet: z.array(z.string()).describe('gate conditions not met: MIN_SHARDS, MIN_CLUSTERS, SOURCE_DIVERSITY, AGE_SPREAD, RECENCY, DORMANT'),
  pendingCount: z.number().int(),
  distinctSources: z.number().int(),
  ageSpreadDays: z.number(),
  clusterCount: z.number().int().nullable(),
});

export const shardView = z.object({
  id: z.number().int(),
  content: z.string(),
  clipped: z.boolean().describe('true when content was cut; shard_search with ids returns it whole'),
  source: z.string(),
  tags: z.array(z.string()),
  soulIds: z.array(z.number().int()),
  status: z.string(),
  sealed: z.boolean(),
  createdAt: z.string(),
});

export const readySouls = z.array(z.object({ id: z.number().int(), name: z.string() })).describe('souls this write made ready for refinement');

export const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
