// Input and output pieces the tools share. Inputs have no unions: one shape per field, enums for choices.
import { z } from 'zod';
import { handWritten } from './wire.ts';

const ID_DIGITS = /^[0-9]+$/;

/** Where a model finds the ids of each kind, for the refusal of one that is not an id. */
const findIds: Record<string, (input: unknown) => string> = {
  soul: (input) =>
    typeof input === 'string' && input.trim() !== '' && !ID_DIGITS.test(input.trim())
      ? `To find a soul by its name, call soul_read with name ${JSON.stringify(input.trim())}`
      : 'Call soul_read without soulId to list the souls and their ids',
  trait: () => 'Call soul_read with soulId and sections ["traits"] to see trait ids',
  shard: () => 'Call shard_search to find shard ids',
  theme: () => 'Call soul_evidence with soulId to see theme ids',
  'level event': () => 'Call soul_read with soulId and sections ["levels"] to see level event ids',
};

/**
 * A row id: a whole number, or its digits as a string (GraphQL's ID), so ids copied from either API work.
 * Listed as `type: ["integer", "string"]` with a pattern: no union for clients that cannot read one.
 */
export const id = (what: string) => {
  const schema = z.union([z.number(), z.string()], { error: (issue) => `must be ${article(what)} id, a whole number such as 12${issue.input === undefined ? '' : ` (got ${JSON.stringify(issue.input)})`}` }).transform((value, ctx) => {
    const n = typeof value === 'number' ? value : ID_DIGITS.test(value) && value.length <= 16 ? Number(value) : Number.NaN;
    if (Number.isSafeInteger(n) && n > 0) return n;
    ctx.issues.push({ code: 'custom', input: value, message: `must be ${article(what)} id, a whole number such as 12 or "12" (got ${JSON.stringify(value)})`, params: { hint: findIds[what]?.(value) ?? null } });
    return z.NEVER;
  });
  handWritten.add(schema, { json: { type: ['integer', 'string'], pattern: ID_DIGITS.source } });
  return schema;
};
const article = (what: string) => (/^[aeiou]/.test(what) ? `an ${what}` : `a ${what}`);
export const ids = (what: string, max: number) => z.array(id(what)).max(max);
/** An ISO-8601 date-time, as the GraphQL DateTime scalar takes it. */
export const dateTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/, 'must be an ISO-8601 date-time such as 2026-01-31T12:00:00Z')
  .refine((text) => Number.isFinite(Date.parse(text)), 'must be a real date-time, such as 2026-01-31T12:00:00Z');
handWritten.add(dateTime, { json: { type: 'string', format: 'date-time' } });
export const cursor = z.string().max(512).optional();
export const limit = (max: number, fallback: number) => z.number().int().min(1).max(max).default(fallback);

/** A list of ids in an answer. */
export const idList = z.array(z.number().int());

/** Paging fields every list answer carries. */
export const paging = {
  totalCount: z.number().int(),
  nextCursor: z.string().nullable(),
};

export const verdict = z.object({
  ready: z.boolean(),
  priority: z.number(),
  unmet: z.array(z.string()),
  pendingCount: z.number().int(),
  distinctSources: z.number().int(),
  ageSpreadDays: z.number(),
  clusterCount: z.number().int().nullable(),
});

export const shardView = z.object({
  id: z.number().int(),
  content: z.string(),
  clipped: z.boolean(),
  source: z.string(),
  tags: z.array(z.string()),
  soulIds: idList,
  status: z.string(),
  sealed: z.boolean(),
  createdAt: z.string(),
});

export const readySouls = z.array(z.object({ id: z.number().int(), name: z.string() }));

export const soulUri = (soulId: number) => `souls://${soulId}/soul.md`;
export const evidenceUri = (soulId: number) => `souls://${soulId}/evidence.md`;

export const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
