import { GraphQLError, Kind } from 'graphql';
import { builder } from './builder.ts';

const isoUtc = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

function parseDateTime(value: unknown): number {
  const ms = typeof value === 'string' && isoUtc.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw new GraphQLError(`DateTime must be an ISO-8601 date-time such as 2026-01-31T12:00:00Z, got ${JSON.stringify(value)}`);
  return ms;
}

/** ISO-8601 UTC on the wire; epoch milliseconds inside. */
builder.scalarType('DateTime', {
  description: 'An ISO-8601 date-time in UTC, e.g. 2026-01-31T12:00:00.000Z',
  serialize: (value) => new Date(value as number).toISOString(),
  parseValue: parseDateTime,
  parseLiteral: (ast) => parseDateTime(ast.kind === Kind.STRING ? ast.value : undefined),
});
