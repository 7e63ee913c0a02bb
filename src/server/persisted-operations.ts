// Persisted operations: a client sends the SHA-256 of a document instead of the document
// (`extensions.persistedQuery: { version: 1, sha256Hash }`, over POST or GET), as Apollo's and urql's persisted query
// links do. Without a file of operations they are automatic (APQ): a hash the server has not seen answers
// PersistedQueryNotFound, the client sends the document with its hash once, and hash-only requests work from then on
// (a bounded store, the least recently used forgotten first). With a file (an allow-list deployment) only the listed
// documents run, sent by hash or in full, on every transport. Either way the document then goes through the same
// parser, limits, validation and price as any other.
import { createHash } from 'node:crypto';
import { GraphQLError, parse } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { ValidationError } from '../engine/index.ts';
import type { KnownOperations } from './operations-file.ts';

/** Documents longer than this run but are not remembered: what is worth persisting is a short document sent often. */
export const MAX_REMEMBERED_BYTES = 32 * 1024;

export type PersistedOperationsOptions = {
  /** How many documents automatic persisted queries remember (maxPersistedQueries). */
  maxPersistedQueries: number;
  /** The only operations this server runs, by id; null: any operation, and automatic persisted queries. */
  known: KnownOperations | null;
};

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The hash a request names instead of (or beside) its document, or null when it names none. */
function persistedHash(extensions: unknown): string | null {
  const persisted = (extensions as { persistedQuery?: { version?: unknown; sha256Hash?: unknown } } | null | undefined)?.persistedQuery;
  return persisted?.version === 1 && typeof persisted.sha256Hash === 'string' ? persisted.sha256Hash : null;
}

const hasDocument = (query: unknown) => typeof query === 'string' && query !== '';

/** Refused before parsing, a request error: 200 under application/json, `status` under application/graphql-response+json. */
const refusal = (message: string, code: string, status: number) => new GraphQLError(message, { extensions: { code, http: { status, spec: true } } });

export function persistedOperations(options: PersistedOperationsOptions): Plugin {
  return options.known ? onlyKnownOperations(options.known) : automaticPersistedQueries(options.maxPersistedQueries);
}

function automaticPersistedQueries(maxPersistedQueries: number): Plugin {
  const remembered = new Map<string, string>();
  /** Documents sent with their hash, remembered once they validate (an invalid one is never stored). */
  const registering = new WeakMap<object, { hash: string; query: string }>();
  return {
    onParams: ({ params, setParams, request }) => {
      const hash = persistedHash(params.extensions);
      if (hash === null) return;
      if (!hasDocument(params.query)) {
        const query = remembered.get(hash);
        // Apollo's and urql's links answer this one by sending the document with its hash.
        if (query === undefined) throw refusal('PersistedQueryNotFound', 'PERSISTED_QUERY_NOT_FOUND', 404);
        remembered.delete(hash);
        remembered.set(hash, query);
        return setParams({ ...params, query });
      }
      const query = params.query!;
      if (sha256(query) !== hash) throw refusal('PersistedQueryMismatch: extensions.persistedQuery.sha256Hash is not the SHA-256 of the query', 'PERSISTED_QUERY_MISMATCH', 400);
      if (Buffer.byteLength(query) <= MAX_REMEMBERED_BYTES) registering.set(request, { hash, query });
    },
    onValidate: ({ context }) => {
      const registration = registering.get((context as { request?: object }).request ?? {});
      if (!registration) return;
      return ({ valid }) => {
        if (!valid) return;
        remembered.delete(registration.hash);
        remembered.set(registration.hash, registration.query);
        if (remembered.size > maxPersistedQueries) remembered.delete(remembered.keys().next().value!);
      };
    },
  };
}

/** Only the listed documents, by id or in full; every document is checked to parse when the server starts. */
function onlyKnownOperations(known: KnownOperations): Plugin {
  for (const [id, document] of known) {
    try {
      parse(document);
    } catch (error) {
      throw new ValidationError(`--persisted-operations[${JSON.stringify(id)}]`, `is not a GraphQL document: ${(error as Error).message}`);
    }
  }
  const documents = new Set(known.values());
  const notListed = 'this server runs only the operations listed in its persisted operations file (--persisted-operations)';
  return {
    onParams: ({ params, setParams }) => {
      const hash = persistedHash(params.extensions);
      if (hash === null || hasDocument(params.query)) return;
      const query = known.get(hash);
      if (query === undefined) throw refusal(`${notListed}: ${JSON.stringify(hash)} is not one of their ids`, 'PERSISTED_QUERY_NOT_IN_LIST', 404);
      setParams({ ...params, query });
    },
    // Every transport parses through here: a document sent in full over HTTP, a WebSocket or an event stream.
    onParse: ({ params }) => {
      const source = typeof params.source === 'string' ? params.source : params.source.body;
      if (!documents.has(source)) throw refusal(`${notListed}: this document is not one of them (send a listed one, by its id or its exact text)`, 'OPERATION_NOT_IN_LIST', 403);
    },
  };
}
