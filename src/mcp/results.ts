// What a tool answers: structured content with a text mirror, inside a token budget, and errors a model can act on.
import type { CallToolResult } from '@modelcontextprotocol/server';
import { CapacityError, ConflictError, InvalidStateError, LevelUpPlanError, NotFoundError, SoulsError, StorageError, ValidationError } from '../engine/index.ts';

/** Every tool result stays under this many tokens, estimated as characters ÷ 4. */
export const MAX_RESPONSE_TOKENS = 4000;
export const CHARS_PER_TOKEN = 4;
/** What a whole result (structured content, its text mirror, the envelope) may take, in characters, with room for what transports add. */
export const RESPONSE_BUDGET_CHARS = MAX_RESPONSE_TOKENS * CHARS_PER_TOKEN - 400;

export function estimateTokens(result: unknown): number {
  return Math.ceil(JSON.stringify(result).length / CHARS_PER_TOKEN);
}

/** The size of the whole result a payload becomes: the text mirror escapes it once more, so it is measured, not guessed. */
export function responseSize(structured: Record<string, unknown>): number {
  return JSON.stringify(ok(structured)).length;
}

/**
 * The payload with the longest text that fits the budget: `build(room)` makes the payload with its long text cut
 * to `room` characters; the largest room in 0..max that fits is found by bisection. `size` measures a payload as
 * the whole result it becomes.
 */
export function fitText<T = Record<string, unknown>>(
  build: (room: number) => T,
  max: number,
  { budget = RESPONSE_BUDGET_CHARS, size = responseSize as unknown as (payload: T) => number }: { budget?: number; size?: (payload: T) => number } = {},
): T {
  if (size(build(max)) <= budget) return build(max);
  let low = 0;
  let high = max;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (size(build(mid)) <= budget) low = mid;
    else high = mid;
  }
  return build(low);
}

/** A successful result: the structured content, and the same as compact JSON text for clients that read text only. */
export function ok(structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}

/** A result led by a text a model reads as it is (markdown, not escaped into JSON), then the structured content and its JSON. */
export function okWithText(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }, { type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}

/**
 * A refusal the model can act on: what is wrong (naming the field), what is allowed, and which tool to
 * call instead. Thrown by tools, turned into an `isError` result by `toolError`.
 */
export class ToolRefusal extends Error {
  override name = 'ToolRefusal';
  readonly field: string | null;
  readonly hint: string | null;
  constructor(field: string | null, message: string, hint: string | null = null) {
    super(message);
    this.field = field;
    this.hint = hint;
  }
}

/** A missing row as a model can fix it: the argument that named it, and where to find one that exists. */
export type NotFoundHint = { field?: string; hint: string };

/** Hints per engine error, by the entity or the state it names; the tool adds its own. */
export type ErrorHints = { notFound?: Partial<Record<string, NotFoundHint>>; invalidState?: string; capacity?: string };

const defaultNotFound: Record<string, NotFoundHint> = {
  Soul: { field: 'soulId', hint: 'Call soul_read without soulId to list the souls and their ids' },
  Trait: { field: 'traitId', hint: 'Call soul_read with soulId and sections ["traits"] to see the trait ids' },
  Shard: { hint: 'Call shard_search to find shard ids' },
};

/** An error no caller should see (a bug, a broken database): logged on stderr, which stdio keeps free of the protocol. */
export function reportUnexpected(error: unknown): void {
  console.error('souls mcp: unexpected error:', error);
}

/** The text of an `isError` result: "field: message. hint". Never a stack trace. */
export function toolError(error: unknown, hints: ErrorHints = {}): CallToolResult {
  const text = describeForModel(error, hints);
  return { content: [{ type: 'text', text }], isError: true };
}

function describeForModel(error: unknown, hints: ErrorHints): string {
  const join = (...parts: (string | null | undefined)[]) => parts.filter((p) => p).join(' ');
  if (error instanceof ToolRefusal) return join(error.field ? `${error.field}: ${error.message}.` : `${error.message}.`, error.hint ? `${error.hint}.` : '');
  if (error instanceof ValidationError || error instanceof ConflictError) return `${error.field}: ${error.message}.`;
  if (error instanceof NotFoundError) {
    const known = hints.notFound?.[error.entity] ?? defaultNotFound[error.entity];
    const what = `there is no ${error.entity.replace(/(?<=[a-z])(?=[A-Z])/g, ' ').toLowerCase()} ${error.id}`;
    return join(known?.field ? `${known.field}: ${what}.` : `${what}.`, known ? `${known.hint}.` : '');
  }
  if (error instanceof CapacityError) return join(`${error.message}.`, hints.capacity ?? 'Revert a trait with trait_change (action "revert") or consolidate with levelup.');
  if (error instanceof LevelUpPlanError) return `${error.message}.`;
  if (error instanceof InvalidStateError) return join(`${error.message}.`, hints.invalidState ? `${hints.invalidState}.` : '');
  if (error instanceof StorageError) return `the database cannot be written (${error.code}); nothing was changed.`;
  if (error instanceof SoulsError) return `${error.message}.`;
  // Unexpected errors stay masked, as on the GraphQL API; the operator's log has them.
  reportUnexpected(error);
  return 'unexpected error: nothing was changed. Try again; if it persists, report it to the operator.';
}

/** Cursors are opaque to the model: an offset (or an engine cursor) in base64url JSON. */
export function encodeCursor(value: { o?: number; a?: string }): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | undefined): { o: number; a: string | null } {
  if (cursor === undefined) return { o: 0, a: null };
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { o?: unknown; a?: unknown };
    const o = parsed.o === undefined ? 0 : parsed.o;
    const a = parsed.a === undefined ? null : parsed.a;
    if (Number.isSafeInteger(o) && (o as number) >= 0 && (a === null || typeof a === 'string')) return { o: o as number, a: a as string | null };
  } catch {
    // Falls through to the refusal below.
  }
  throw new ToolRefusal('cursor', 'is not a cursor this server gave out', 'Pass the nextCursor of the previous page unchanged, or leave cursor out to start from the first page');
}

/**
 * As many of `items` as fit the budget inside `frame` (the rest of the payload). Returns the count kept: at
 * least one when any is given (items are clipped so that one always fits).
 */
export function fitToBudget<T>(items: readonly T[], frame: (kept: T[]) => Record<string, unknown>, budget = RESPONSE_BUDGET_CHARS): number {
  let kept = items.length;
  while (kept > 1 && responseSize(frame(items.slice(0, kept))) > budget) {
    // Shrink in proportion first, then one at a time near the edge.
    const size = responseSize(frame(items.slice(0, kept)));
    kept = Math.max(1, Math.min(kept - 1, Math.floor((kept * budget) / size)));
  }
  while (kept < items.length && responseSize(frame(items.slice(0, kept + 1))) <= budget) kept++;
  return kept;
}

/** A text cut to at most `max` characters, marked when cut. */
export function clip(text: string, max: number): { text: string; clipped: boolean } {
  if (text.length <= max) return { text, clipped: false };
  return { text: `${text.slice(0, Math.max(0, max - 1))}…`, clipped: true };
}
