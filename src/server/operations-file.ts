// The file of known operations for an allow-list deployment (`--persisted-operations`): read and checked when the
// server's settings are, so that a bad file refuses to start, naming the entry. Two formats, as clients' tools write
// them: an object of id → document (graphql-codegen's persisted-documents.json, Relay's persisted queries), or
// Apollo's persisted query manifest ({ "format": "apollo-persisted-query-manifest", "operations": [{ id, body }] }).
import { readFileSync } from 'node:fs';
import { ValidationError } from '../engine/index.ts';

/** The operations a server accepts, by the id clients send (`extensions.persistedQuery.sha256Hash`). */
export type KnownOperations = ReadonlyMap<string, string>;

const APOLLO_MANIFEST = 'apollo-persisted-query-manifest';

function entriesOf(where: string, parsed: unknown): Array<[string, unknown]> {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ValidationError(where, 'must hold a JSON object: { "<id>": "<document>", … } or an Apollo persisted query manifest');
  }
  const object = parsed as Record<string, unknown>;
  if (object.format !== APOLLO_MANIFEST) return Object.entries(object);
  if (!Array.isArray(object.operations)) throw new ValidationError(`${where} operations`, 'must be a list of { "id", "body" }');
  return object.operations.map((operation: unknown, i) => {
    const { id, body } = (typeof operation === 'object' && operation !== null ? operation : {}) as Record<string, unknown>;
    if (typeof id !== 'string') throw new ValidationError(`${where} operations[${i}].id`, 'must be a string');
    return [id, body];
  });
}

/** Reads the file; every id must be a non-empty string naming a document once. Documents are parsed when the server starts. */
export function loadKnownOperations(path: string, where = '--persisted-operations'): KnownOperations {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ValidationError(where, `cannot read ${path}: ${error instanceof SyntaxError ? 'not valid JSON' : (error as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  }
  const known = new Map<string, string>();
  for (const [id, document] of entriesOf(`${where} ${path}`, parsed)) {
    const entry = `${where} ${path}[${JSON.stringify(id)}]`;
    if (id.trim() === '') throw new ValidationError(entry, 'an id must not be empty');
    if (typeof document !== 'string' || document.trim() === '') throw new ValidationError(entry, 'must be the text of a GraphQL document');
    if (known.has(id)) throw new ValidationError(entry, 'names an id a second time');
    known.set(id, document);
  }
  if (known.size === 0) throw new ValidationError(where, `${path} lists no operation: the server would refuse every request`);
  return known;
}
