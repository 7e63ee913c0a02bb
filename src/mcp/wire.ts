// The tools as a client sees them: compact JSON Schema (a model reads tools/list at the start of every session) and
// input refusals that name the field, say what is allowed and what to call instead.
import { z } from 'zod';
import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { editDistance } from '../engine/normalize.ts';

/** Schemas whose JSON Schema is written here rather than derived: zod has no compact form for them. */
export const handWritten = z.registry<{ json: Record<string, unknown> }>();

type Json = Record<string, unknown>;
type Problem = { field: string; message: string; hint: string | null };

/** Listed schemas, made once per process: an HTTP server builds its MCP server per request. */
const listed = { input: new WeakMap<z.ZodType, Json>(), output: new WeakMap<z.ZodType, Json>() };

/** A tool's zod schema as the SDK takes it: zod validates, the JSON Schema is compacted, refusals read as below. */
export function wireSchema(schema: z.ZodType, io: 'input' | 'output', toolName: string): StandardSchemaWithJSON {
  const jsonSchema = () => {
    let json = listed[io].get(schema);
    if (!json) listed[io].set(schema, (json = compactJsonSchema(schema, io)));
    return json;
  };
  return {
    '~standard': {
      version: 1,
      vendor: 'souls',
      validate(value: unknown) {
        const parsed = schema.safeParse(value, { reportInput: true });
        if (parsed.success) return { value: parsed.data };
        return { issues: [{ message: io === 'input' ? describeRefusal(schema, parsed.error.issues, toolName) : parsed.error.message }] };
      },
      jsonSchema: { input: jsonSchema, output: jsonSchema },
    },
  };
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/** Output schemas list the top-level fields and the fields of top-level lists of records; other objects are stated as objects (the tool descriptions say what is in them). */
const OUTPUT_DEPTH = 2;

/**
 * The JSON Schema zod derives, without what a client needs no telling: the draft (MCP fixes 2020-12) and the
 * safe-integer bounds every integer carries. An output schema is an outline that keeps tools/list under 4,000
 * tokens: every top-level field and its type (nullable, enums), and the fields of top-level lists of records, which top-level fields are always present,
 * open to fields added later (no `additionalProperties`), no descriptions (the tool's says what comes back).
 * zod still checks each result whole on the server before it is sent.
 */
export function compactJsonSchema(schema: z.ZodType, io: 'input' | 'output', { outlined = true }: { outlined?: boolean } = {}): Json {
  const json = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    override: ({ zodSchema, jsonSchema }) => {
      const own = handWritten.get(zodSchema)?.json;
      if (own) {
        const description = jsonSchema.description;
        for (const key of Object.keys(jsonSchema)) delete (jsonSchema as Json)[key];
        Object.assign(jsonSchema, own, description === undefined ? {} : { description });
      }
      if (jsonSchema.type === 'integer') {
        if (jsonSchema.minimum === -MAX_SAFE) delete jsonSchema.minimum;
        if (jsonSchema.maximum === MAX_SAFE) delete jsonSchema.maximum;
      }
    },
  }) as Json;
  delete json.$schema;
  return io === 'output' && outlined ? outline(json, 0) : json;
}

function outline(node: Json, depth: number, inArray = false): Json {
  const types = [node.type].flat();
  // A lone nested object is stated as an object; a list of records keeps its fields, the shape a client most often walks.
  const lone = depth > 0 && !inArray && types.includes('object');
  if (lone || (depth >= OUTPUT_DEPTH && (types.includes('object') || (types.includes('array') && (node.items as Json | undefined)?.type === 'object')))) {
    return types.includes('array') ? { type: node.type, items: { type: 'object' } } : { type: node.type };
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'additionalProperties' || key === 'description' || (key === 'required' && depth > 0)) continue;
    if (key === 'properties') out.properties = Object.fromEntries(Object.entries(value as Record<string, Json>).map(([name, field]) => [name, outline(field, depth + 1)]));
    else if (key === 'items') out.items = outline(value as Json, depth, true);
    else out[key] = value;
  }
  return out;
}

const MAX_PROBLEMS = 5;

/** The problems with the arguments, field first, then what to do about them. */
export function describeRefusal(schema: z.ZodType, issues: readonly z.core.$ZodIssue[], toolName: string): string {
  const all = issues.flatMap((issue) => describeIssue(schema, issue, toolName));
  // A list of a hundred bad ids makes the point with its first few.
  const problems = all.slice(0, MAX_PROBLEMS);
  const more = all.length > problems.length ? `; and ${all.length - problems.length} more` : '';
  const hints = [...new Set(problems.map((p) => p.hint).filter((h): h is string => h !== null))];
  return [problems.map((p) => `${p.field}: ${p.message}`).join('; ') + more + '.', ...hints.map((h) => `${h}.`)].join(' ');
}

function describeIssue(root: z.ZodType, issue: z.core.$ZodIssue, toolName: string): Problem[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
  const field = fieldName(path);
  if (issue.code === 'unrecognized_keys') {
    const allowed = Object.keys(objectAt(root, path)?.shape ?? {});
    return issue.keys.map((key) => {
      const near = allowed.find((name) => editDistance(name.toLowerCase(), key.toLowerCase()) <= 2);
      const where = path.length === 0 ? `a parameter of ${toolName}` : `a field of ${field}`;
      return {
        field: fieldName([...path, key]),
        message: `is not ${where}${near ? ` (did you mean ${near}?)` : ''}`,
        hint: `${path.length === 0 ? `${toolName} takes` : `${field} takes`} ${allowed.join(', ')}`,
      };
    });
  }
  // A schema that knows what to call instead says so in its custom issue (ids: which tool lists them).
  const hint = issue.code === 'custom' && typeof issue.params?.hint === 'string' ? issue.params.hint : null;
  return [{ field: field || 'arguments', message: messageOf(issue), hint }];
}

function messageOf(issue: z.core.$ZodIssue): string {
  const got = 'input' in issue && issue.input !== undefined ? ` (got ${preview(issue.input)})` : '';
  if ((issue.code === 'invalid_type' || issue.code === 'invalid_union') && issue.input === undefined) return 'is required';
  switch (issue.code) {
    case 'invalid_type':
      // NaN and Infinity are typed number, but zod takes finite numbers only (JSON would print them as null).
      return typeof issue.input === 'number' ? `must be a finite number${got}` : `must be ${article(issue.expected)}${got}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}${got}`;
    case 'too_big':
      return `must be at most ${issue.maximum}${unit(issue.origin)}${issue.origin === 'number' ? got : ''}`;
    case 'too_small':
      return issue.origin === 'array' && issue.minimum === 1 ? 'must not be empty' : `must be at least ${issue.minimum}${unit(issue.origin)}${issue.origin === 'number' ? got : ''}`;
    case 'invalid_format':
      return `${issue.format === 'regex' ? issue.message : `is not ${article(issue.format)}`}${got}`;
    default:
      return issue.message;
  }
}

const unit = (origin: string) => (origin === 'array' || origin === 'set' ? ' items' : origin === 'string' ? ' characters' : '');
const article = (what: string) => (/^[aeiou]/.test(what) ? `an ${what}` : `a ${what}`);

function preview(value: unknown): string {
  const text = typeof value === 'number' && !Number.isFinite(value) ? String(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

/** "shards[1].soulIds": a path as the engine's errors name fields. */
export function fieldName(path: readonly (string | number)[]): string {
  return path.reduce<string>((name, part) => (typeof part === 'number' ? `${name}[${part}]` : name ? `${name}.${part}` : part), '');
}

/** The object schema at a path, through optional, default and transform wrappers: the keys an unknown one is refused against. */
function objectAt(root: z.ZodType, path: readonly (string | number)[]): z.ZodObject | null {
  const unwrap = (schema: z.ZodType): z.ZodType => {
    let node = schema;
    for (;;) {
      if (node instanceof z.ZodOptional || node instanceof z.ZodNullable || node instanceof z.ZodDefault) node = node.unwrap() as z.ZodType;
      else if (node instanceof z.ZodPipe) node = node.in as z.ZodType;
      else return node;
    }
  };
  let node = unwrap(root);
  for (const part of path) {
    const next = typeof part === 'number' ? (node instanceof z.ZodArray ? node.element : undefined) : node instanceof z.ZodObject ? node.shape[part] : undefined;
    if (next === undefined) return null;
    node = unwrap(next as z.ZodType);
  }
  return node instanceof z.ZodObject ? node : null;
}

