import { readFileSync } from 'node:fs';
import { GraphQLError, execute, parse, validate, validateSchema, type ExecutionResult } from 'graphql';
import { describe, expect, it } from 'vitest';
import { printSoulsSchema, schema } from '../schema/index.ts';
import { createContext } from '../src/server/context.ts';
import { DAY_MS, NotFoundError, ValidationError, getSoul, manualClock, openSoulsDb, updateSoul, type SoulsDb } from '../src/engine/index.ts';
import { isExpected, maskError } from '../src/server/errors-graphql.ts';
import { createSoulsPubSub } from '../src/server/pubsub.ts';

const T0 = Date.UTC(2026, 0, 1);

function freshDb(settings: Record<string, unknown> = {}) {
  const clock = manualClock(T0);
  return { clock, db: openSoulsDb({ clock, settings }) };
}

/** One operation straight against the schema, with a fresh context as the server would build it. */
async function run(db: SoulsDb, source: string, variableValues?: Record<string, unknown>): Promise<ExecutionResult<any>> {
  const document = parse(source);
  const validationErrors = validate(schema, document);
  if (validationErrors.length > 0) return { errors: validationErrors };
  return execute({ schema, document, variableValues, contextValue: createContext(db, createSoulsPubSub()) });
}

const createSoulMutation = `mutation Create($input: CreateSoulInput!) {
  createSoul(input: $input) {
    __typename
    ... on SoulPayload { soul { id name slug level createdAt updatedAt deletedAt dormant rendered } }
    ... on ValidationError { field message }
    ... on ConflictError { field message }
  }
}`;

describe('printed SDL', () => {
  it('schema/schema.graphql is exactly what the code prints (run `npm run schema` after changing the schema)', () => {
    const committed = readFileSync(new URL('../schema/schema.graphql', import.meta.url), 'utf8');
    const printed = printSoulsSchema();
    // A line-level hint first, so a drift failure says where.
    const committedLines = committed.split('\n');
    const printedLines = printed.split('\n');
    const firstDifference = printedLines.findIndex((line, i) => line !== committedLines[i]);
    expect(firstDifference, `first differing line ${firstDifference + 1}: ${JSON.stringify(printedLines[firstDifference])}`).toBe(-1);
    expect(printed).toBe(committed);
  });

  it('is sorted, so that diffs show real changes only', () => {
    const typeNames = [...printSoulsSchema().matchAll(/^(?:type|input|enum|union|interface|scalar) (\w+)/gm)].map((m) => m[1]);
    expect(typeNames.length).toBeGreaterThan(40);
    expect(typeNames).toEqual([...typeNames].sort());
  });
});

describe('schema', () => {
  it('validates', () => {
    expect(validateSchema(schema)).toEqual([]);
  });

  it('has the root types and the result unions the contract names', () => {
    expect(schema.getQueryType()?.name).toBe('Query');
    expect(schema.getMutationType()?.name).toBe('Mutation');
    expect(schema.getSubscriptionType()?.name).toBe('Subscription');
    const members = (name: string) =>
      schema
        .getPossibleTypes(schema.getType(name) as never)
        .map((t) => t.name)
        .sort();
    expect(members('SoulResult')).toEqual(['ConflictError', 'InvalidStateError', 'NotFoundError', 'SoulPayload', 'ValidationError']);
    expect(members('DropShardsResult')).toEqual(['DropShardsPayload', 'NotFoundError', 'ValidationError']);
    expect(members('Error')).toEqual(['CapacityError', 'ConflictError', 'InvalidStateError', 'LevelUpPlanError', 'NotFoundError', 'ValidationError']);
  });
});

describe('execute() against the schema with a fresh context', () => {
  it('creates a soul and reads it back: IDs are decimal strings, DateTime is ISO-8601 UTC', async () => {
    const { db } = freshDb();
    const created = await run(db, createSoulMutation, { input: { name: '  Ada  ', essence: 'Calm under pressure.', slug: 'ada' } });
    expect(created.errors).toBeUndefined();
    expect(created.data.createSoul).toEqual({
      __typename: 'SoulPayload',
      soul: {
        id: '1',
        name: 'Ada',
        slug: 'ada',
        level: 0,
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z',
        deletedAt: null,
        dormant: false,
        rendered: '# Ada\n\nCalm under pressure.\n',
      },
    });
    const read = await run(db, '{ soul(id: "1") { id name } soulByName(name: "Ada") { id } missing: soul(id: "2") { id } }');
    expect(read).toEqual({ data: { soul: { id: '1', name: 'Ada' }, soulByName: { id: '1' }, missing: null } });
  });

  it('answers domain errors of result unions as data, with the argument path as field', async () => {
    const { db } = freshDb();
    const empty = await run(db, createSoulMutation, { input: { name: '   ', essence: 'x' } });
    expect(empty.errors).toBeUndefined();
    expect(empty.data.createSoul).toEqual({ __typename: 'ValidationError', field: 'input.name', message: 'must not be empty' });

    await run(db, createSoulMutation, { input: { name: 'Ada', essence: 'x' } });
    const duplicate = await run(db, createSoulMutation, { input: { name: 'Ada', essence: 'y' } });
    expect(duplicate.data.createSoul).toEqual({ __typename: 'ConflictError', field: 'input.name', message: 'an awake soul is already named "Ada"' });
    expect((await run(db, '{ souls { name } }')).data).toEqual({ souls: [{ name: 'Ada' }] });
  });

  it('keeps the field path out of ValidationError.message: the field carries it', async () => {
    const { db } = freshDb();
    const long = await run(db, createSoulMutation, { input: { name: 'x'.repeat(201), essence: 'x' } });
    expect(long.data.createSoul).toEqual({ __typename: 'ValidationError', field: 'input.name', message: 'must be at most 200 characters' });
    await run(db, createSoulMutation, { input: { name: 'Ada', essence: 'x' } });
    const batch = await run(
      db,
      `mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on ValidationError { field message } } }`,
      { inputs: [{ content: 'fine', source: 'chat', soulIds: ['1'] }, { content: ' -- ', source: 'chat', soulIds: ['1'] }] },
    );
    expect(batch.data.dropShards).toEqual({
      __typename: 'ValidationError',
      field: 'inputs[1].content',
      message: 'must not be empty once whitespace and punctuation noise are removed',
    });
  });

  it('round-trips DateTime input (historical import) and refuses a malformed one at coercion', async () => {
    const { db } = freshDb();
    await run(db, createSoulMutation, { input: { name: 'Ada', essence: 'x' } });
    const drop = `mutation Drop($input: DropShardInput!) {
      dropShard(input: $input) { __typename ... on DropShardPayload { shard { id createdAt updatedAt souls { id } } } ... on ValidationError { field } }
    }`;
    const ok = await run(db, drop, { input: { content: 'Ran the tests', source: 'chat', soulIds: ['1'], createdAt: '2025-12-30T06:30:00+02:00' } });
    expect(ok.errors).toBeUndefined();
    expect(ok.data.dropShard).toEqual({
      __typename: 'DropShardPayload',
      shard: { id: '1', createdAt: '2025-12-30T04:30:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', souls: [{ id: '1' }] },
    });
    const future = await run(db, drop, { input: { content: 'Later', source: 'chat', soulIds: ['1'], createdAt: new Date(T0 + DAY_MS).toISOString() } });
    expect(future.data.dropShard).toEqual({ __typename: 'ValidationError', field: 'input.createdAt' });

    const malformed = await run(db, drop, { input: { content: 'x', source: 'chat', soulIds: ['1'], createdAt: 'yesterday' } });
    expect(malformed.data).toBeUndefined();
    expect(malformed.errors?.[0].message).toContain('DateTime must be an ISO-8601 date-time');
    expect((await run(db, '{ shards { totalCount } }')).data).toEqual({ shards: { totalCount: 1 } });
  });

  it('raises a domain error on a non-union field as a GraphQL error that maskError turns into a coded answer', async () => {
    const { db } = freshDb();
    const result = await run(db, '{ previewTraitChanges(soulId: "7") { before } }');
    expect(result.data).toBeNull();
    const [error] = result.errors!;
    expect(error.path).toEqual(['previewTraitChanges']);
    expect(error.originalError).toBeInstanceOf(NotFoundError);
    expect(isExpected(error)).toBe(true);
    const masked = maskError(error, 'Unexpected error.') as GraphQLError;
    expect(masked.message).toBe('Soul 7 not found');
    expect(masked.extensions).toEqual({ code: 'NOT_FOUND' });
    expect(masked.path).toEqual(['previewTraitChanges']);

    const bad = await run(db, '{ previewTraitChanges(soulId: "abc") { before } }');
    const maskedBad = maskError(bad.errors![0], 'Unexpected error.') as GraphQLError;
    expect(bad.errors![0].originalError).toBeInstanceOf(ValidationError);
    expect(maskedBad.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'soulId' });
  });

  it('masks an unexpected error: generic message, INTERNAL_SERVER_ERROR, no stack or original message', () => {
    const internal = new GraphQLError('boom at /work/main/src/store/sqlite.ts:12', { originalError: new TypeError('secret detail'), path: ['souls'] });
    const masked = maskError(internal, 'Unexpected error.') as GraphQLError;
    expect(isExpected(internal)).toBe(false);
    expect(masked.message).toBe('Unexpected error.');
    expect(masked.extensions).toEqual({ code: 'INTERNAL_SERVER_ERROR' });
    expect(masked.path).toEqual(['souls']);
    expect(JSON.stringify(masked.toJSON())).not.toMatch(/secret|sqlite\.ts|stack/);
  });

  it('gives every operation its own loaders: a fresh context sees writes made since the last one', async () => {
    const { db, clock } = freshDb();
    await run(db, createSoulMutation, { input: { name: 'Ada', essence: 'x' } });
    const pubsub = createSoulsPubSub();
    const first = createContext(db, pubsub);
    const second = createContext(db, pubsub);
    expect(first.loaders).not.toBe(second.loaders);
    expect(first.loaders.soul).not.toBe(second.loaders.soul);

    const query = parse('{ soul(id: "1") { name updatedAt } }');
    const before = await execute({ schema, document: query, contextValue: first });
    clock.advance(60_000);
    await updateSoul(db, 1, { name: 'Ada Prime' });
    expect((await getSoul(db, 1))!.name).toBe('Ada Prime');
    // A reused context keeps what its loaders cached; that is why each operation gets a new one.
    expect(await execute({ schema, document: query, contextValue: first })).toEqual(before);
    expect(await execute({ schema, document: query, contextValue: createContext(db, pubsub) })).toEqual({
      data: { soul: { name: 'Ada Prime', updatedAt: '2026-01-01T00:01:00.000Z' } },
    });
  });

  it('publishes soulChanged on the context pubsub for a mutation', async () => {
    const { db } = freshDb();
    const pubsub = createSoulsPubSub();
    const events = pubsub.subscribe('soulChanged');
    const next = events[Symbol.asyncIterator]().next();
    const result = await execute({ schema, document: parse(createSoulMutation), variableValues: { input: { name: 'Ada', essence: 'x' } }, contextValue: createContext(db, pubsub) });
    expect((result.data as any).createSoul.__typename).toBe('SoulPayload');
    expect((await next).value).toEqual({ soulId: 1, kind: 'CREATED', at: T0 });
  });
});
