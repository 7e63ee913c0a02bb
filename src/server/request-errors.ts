// Request errors as the GraphQL-over-HTTP spec has them: what is wrong with the request itself (a document nested too
// deep to parse, malformed JSON parameters, variables that do not coerce) is answered 200 under application/json and
// 400 under application/graphql-response+json, with no `data`, and never masked as an internal error.
import { createGraphQLError, type Plugin } from 'graphql-yoga';
import type { GraphQLError } from 'graphql';
import { nestingDepth } from './limits.ts';

const badRequest = (message: string) => createGraphQLError(message, { extensions: { code: 'BAD_REQUEST', http: { spec: true, status: 400 } } });

/** Refuses a document nested deeper than the limit before the recursive parser can overflow the stack. */
export function boundedNesting(maxNesting: number): Plugin {
  return {
    onParse: ({ params }) => {
      const source = typeof params.source === 'string' ? params.source : params.source.body;
      if (nestingDepth(source, maxNesting) > maxNesting) throw badRequest(`the document nests brackets, braces or parentheses more than ${maxNesting} deep`);
    },
  };
}

/** Flags request errors (status 400) as the GraphQL-over-HTTP spec's: answered 200 under application/json. */
function markRequestErrors(errors: readonly GraphQLError[] | undefined): void {
  for (const error of errors ?? []) {
    const http = error.extensions?.http as { status?: number; spec?: boolean } | undefined;
    if (http?.status === 400) http.spec = true;
  }
}

/** Variable coercion failures (execute's early errors, no data) are request errors like validation errors. */
export function coercionFailuresAsRequestErrors(): Plugin {
  return {
    onExecute: () => ({
      onExecuteDone: ({ result }) => {
        if ('errors' in result && !('data' in result)) markRequestErrors(result.errors);
      },
    }),
  };
}

/**
 * Yoga reads GET (and form-encoded) `variables` and `extensions` with a bare JSON.parse, and its SyntaxError was
 * masked as an internal error: malformed JSON is the client's error, as for POST bodies.
 */
export function malformedParamsAsRequestErrors(): Plugin {
  return {
    onRequestParse: ({ requestParser, setRequestParser }) => {
      if (!requestParser) return;
      setRequestParser(async (request) => {
        try {
          return await requestParser(request);
        } catch (error) {
          if (!(error instanceof SyntaxError)) throw error;
          throw badRequest('the "variables" and "extensions" parameters must be valid JSON');
        }
      });
    },
  };
}
