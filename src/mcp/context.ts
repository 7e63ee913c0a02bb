// What every tool call runs with: the engine handle, who is calling, where to announce changes, and the refiner it acts as.
import type { z } from 'zod';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/server';
import { getCrystallization, getSouls, type SoulsDb } from '../engine/index.ts';
import type { Caller, Scope } from '../server/auth.ts';
import type { SoulChangeKind, SoulsPubSub } from '../server/pubsub.ts';

export type ToolContext = {
  db: SoulsDb;
  caller: Caller;
  pubsub: SoulsPubSub;
  /** The refiner soul this session acts as: its changes deposit refinement_outcome shards on it. */
  refinerId: number | null;
};

export type ToolDefinition<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> = {
  name: string;
  title: string;
  /** For a model: what it does, when to use it, what to call next. */
  description: string;
  /** The scope a token needs for the tool to be listed and callable. */
  scope: Scope;
  annotations: ToolAnnotations;
  input: I;
  output: O;
  run(args: z.infer<I>, ctx: ToolContext): Promise<CallToolResult>;
};

/** Keeps the argument types of `run` inferred from the input schema. */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(tool: ToolDefinition<I, O>): ToolDefinition<I, O> {
  return tool;
}

/** Tool annotations: every Souls tool works on this database only (openWorldHint false). */
export function annotations(kind: 'read' | 'additive' | 'idempotent-write' | 'destructive'): ToolAnnotations {
  switch (kind) {
    case 'read':
      return { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
    case 'additive':
      return { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };
    case 'idempotent-write':
      return { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false };
    case 'destructive':
      return { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false };
  }
}

/** Announces a change as the GraphQL mutations do, so subscribers (GraphQL and MCP resources) hear of it. */
export function soulChanged(ctx: ToolContext, soulId: number, kind: SoulChangeKind): void {
  ctx.pubsub.publish('soulChanged', { soulId, kind, at: ctx.db.clock.now() });
}

export function levelChanged(ctx: ToolContext, soulId: number, eventId: number, kind: 'LEVEL_UP' | 'REVERT'): void {
  ctx.pubsub.publish('levelChanged', { soulId, eventId, kind, at: ctx.db.clock.now() });
}

/** Publishes crystallizationReady for the souls a write made ready; returns their names for the answer. */
export async function announceReady(ctx: ToolContext, readySoulIds: readonly number[]): Promise<{ id: number; name: string }[]> {
  if (readySoulIds.length === 0) return [];
  const at = ctx.db.clock.now();
  const verdicts = await getCrystallization(ctx.db, readySoulIds);
  ctx.pubsub.publishAll('crystallizationReady', readySoulIds.map((soulId) => ({ soulId, priority: verdicts.get(soulId)?.priority ?? 0, at })));
  const souls = await getSouls(ctx.db, readySoulIds);
  return readySoulIds.map((id) => ({ id, name: souls.get(id)?.name ?? `soul ${id}` }));
}
