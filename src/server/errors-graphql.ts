import { GraphQLError } from 'graphql';
import { CapacityError, ConflictError, InvalidStateError, LevelUpPlanError, NotFoundError, SoulsError, StorageError, ValidationError } from '../engine/index.ts';

/** The extension code a domain error carries when it surfaces as a GraphQL error (fields whose type is not a result union). */
function codeOf(error: SoulsError): string {
  if (error instanceof NotFoundError) return 'NOT_FOUND';
  if (error instanceof ValidationError) return 'BAD_USER_INPUT';
  if (error instanceof ConflictError) return 'CONFLICT';
  if (error instanceof CapacityError) return 'CAPACITY';
  if (error instanceof LevelUpPlanError) return 'INVALID_PLAN';
  if (error instanceof InvalidStateError) return 'INVALID_STATE';
  if (error instanceof StorageError) return error.code;
  return 'BAD_REQUEST';
}

function originalOf(error: unknown): unknown {
  let current = error;
  while (current instanceof GraphQLError && current.originalError && current.originalError !== current) current = current.originalError;
  return current;
}

/**
 * Domain errors keep their message, with a code (and the field, where there is
 * one); anything unexpected is masked: no message, no stack trace.
 */
export function maskError(error: unknown, message: string): Error {
  const original = originalOf(error);
  const graphqlError = error instanceof GraphQLError ? error : null;
  if (original instanceof SoulsError) {
    const extensions: Record<string, unknown> = { code: codeOf(original) };
    if (original instanceof ValidationError || original instanceof ConflictError) extensions.field = original.field;
    return new GraphQLError(original.message, { nodes: graphqlError?.nodes, path: graphqlError?.path, extensions });
  }
  // GraphQL errors all the way down (syntax, validation, FORBIDDEN, variable coercion with its `Variable "$x"…` message
  // and HTTP status) stand as they are; returned unchanged, Yoga does not log them as unexpected.
  if (graphqlError && original instanceof GraphQLError) return graphqlError;
  return new GraphQLError(message, { nodes: graphqlError?.nodes, path: graphqlError?.path, extensions: { code: 'INTERNAL_SERVER_ERROR' } });
}

/** Domain errors are answers, not failures: the server log keeps only what is unexpected. */
export function isExpected(error: unknown): boolean {
  return originalOf(error) instanceof SoulsError;
}

/** The storage error behind a GraphQL error, if that is what it is: the server's log names the file. */
export function storageErrorOf(error: unknown): StorageError | null {
  const original = originalOf(error);
  return original instanceof StorageError ? original : null;
}
