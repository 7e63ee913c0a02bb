// An operation that arrives outside Yoga's HTTP handler (a graphql-ws message, an operation of a graphql-sse stream)
// runs through Yoga's envelop all the same: the same parser and its limits, validation, context (with the caller
// the transport authenticated), cost and subscription plugins. What it answers carries no Yoga internals: over HTTP
// Yoga drops `extensions.http` when it serializes, these transports send errors as they are.
import { getOperationAST, GraphQLError, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { SoulsYoga } from './yoga.ts';

export type OperationParams = { query: string; operationName?: string | null; variables?: Record<string, unknown> | null; extensions?: Record<string, unknown> | null };

/** What graphql-ws and graphql-sse execute: `rootValue` carries the envelop's execute and subscribe (see `runPrepared`). */
export type PreparedOperation = {
  args: {
    schema: GraphQLSchema;
    operationName: string | null | undefined;
    document: DocumentNode;
    variableValues: Record<string, unknown> | null | undefined;
    contextValue: unknown;
    rootValue: { execute: (args: never) => unknown; subscribe: (args: never) => unknown };
  };
  operation: OperationDefinitionNode | null;
};

/** Refused before it ran (a syntax error, a limit, a validation error): the errors, ready for the client, and the operation when it parsed. */
export type RefusedOperation = { errors: readonly GraphQLError[]; operation: OperationDefinitionNode | null };

/** The envelop's own execute or subscribe, carried in `rootValue` by `prepareOperation`. */
export const runPrepared = {
  execute: (args: any) => args.rootValue.execute(args),
  subscribe: (args: any) => args.rootValue.subscribe(args),
};

/**
 * Parses and validates an operation through the envelop, and builds its context; `initial` is the context the
 * transport knows (its request, socket, caller). Limits and syntax errors refuse the operation, never the connection.
 */
export async function prepareOperation(yoga: SoulsYoga, initial: Record<string, unknown>, params: OperationParams): Promise<PreparedOperation | RefusedOperation> {
  const enveloped = yoga.getEnveloped({ ...initial, params });
  let document: DocumentNode;
  let operation: OperationDefinitionNode | null = null;
  try {
    document = enveloped.parse(params.query);
    operation = getOperationAST(document, params.operationName) ?? null;
    // graphql-armor's limits throw from inside validation rather than report an error.
    const errors = enveloped.validate(enveloped.schema, document);
    if (errors.length > 0) return { errors: clientErrors(errors), operation };
  } catch (error) {
    if (error instanceof GraphQLError) return { errors: clientErrors([error]), operation };
    throw error;
  }
  return {
    args: {
      schema: enveloped.schema,
      operationName: params.operationName,
      document,
      variableValues: params.variables,
      contextValue: await enveloped.contextFactory(),
      rootValue: { execute: enveloped.execute, subscribe: enveloped.subscribe },
    },
    operation,
  };
}

export const isRefused = (prepared: PreparedOperation | RefusedOperation): prepared is RefusedOperation => 'errors' in prepared;

/** The errors without Yoga's internal extensions (`http`: the status and headers an HTTP answer would take). */
export function clientErrors(errors: readonly GraphQLError[]): GraphQLError[] {
  return errors.map((error) => {
    const extensions = error.extensions as Record<string, unknown> | undefined;
    if (!extensions || !('http' in extensions)) return error;
    const { http: _http, ...rest } = extensions;
    return new GraphQLError(error.message, { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path, originalError: error.originalError, extensions: rest });
  });
}

/** An execution result as the client gets it: its errors without Yoga's internal extensions. */
export function clientResult<T extends ExecutionResult>(result: T): T {
  return result.errors?.length ? { ...result, errors: clientErrors(result.errors) } : result;
}
