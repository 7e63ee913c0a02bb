// The read rule (mayReadSouls) applied to tool results: for a caller without `read`, every object with an id inside a
// result keeps only its id, as a GraphQL payload's Soul or Trait does. One rule, applied to the answer and to the output
// schema the caller is shown, so the two always agree.
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { ok } from './results.ts';

const idsOnlySchemas = new WeakMap<z.ZodObject, z.ZodObject>();

/** The output schema a caller without `read` is shown: nested objects with an `id` become `{ id }`. Made once per tool. */
export function idsOnlySchema(schema: z.ZodObject): z.ZodObject {
  let idsOnly = idsOnlySchemas.get(schema);
  if (!idsOnly) idsOnlySchemas.set(schema, (idsOnly = idsOnlyObject(schema)));
  return idsOnly;
}

function idsOnlyObject(schema: z.ZodObject): z.ZodObject {
  return z.object(Object.fromEntries(Object.entries(schema.shape).map(([key, field]) => [key, idsOnlyField(field as z.ZodType)])));
}

function idsOnlyField(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodOptional) return idsOnlyField(schema.unwrap() as z.ZodType).optional();
  if (schema instanceof z.ZodNullable) return idsOnlyField(schema.unwrap() as z.ZodType).nullable();
  if (schema instanceof z.ZodArray) return z.array(idsOnlyField(schema.element as z.ZodType));
  if (schema instanceof z.ZodObject) {
    const id = schema.shape.id as z.ZodType | undefined;
    return id ? z.object({ id }) : idsOnlyObject(schema);
  }
  return schema;
}

/** The same rule on a value: what a tool answers a caller without `read`. */
function idsOnlyValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(idsOnlyValue);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value);
  if (Object.hasOwn(value, 'id')) return { id: (value as { id: unknown }).id };
  return Object.fromEntries(entries.map(([key, field]) => [key, idsOnlyValue(field)]));
}

export function idsOnlyResult(result: CallToolResult): CallToolResult {
  if (result.isError || !result.structuredContent) return result;
  const top = Object.entries(result.structuredContent).map(([key, field]) => [key, idsOnlyValue(field)]);
  return ok(Object.fromEntries(top));
}
