// A minimal typed GraphQL client for services: one function over fetch, no client library.
// Every operation lives in typed-client.graphql; `npm run codegen` turns it into TypedDocumentNodes whose
// result and variable types flow through `request`, so result unions narrow on __typename at compile time.
//
//   node examples/typed-client.ts [url] [--name Courier] [--token T]
//
// url defaults to SOULS_URL, then http://127.0.0.1:4000/graphql; the token (for a server with --tokens-file) to SOULS_TOKEN.
import { parseArgs } from 'node:util';
import { print } from 'graphql';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import {
  TypedClientCreateSoulDocument,
  TypedClientDropShardsDocument,
  TypedClientSoulByNameDocument,
  TypedClientSoulCardDocument,
} from './gql/graphql.ts';

export const DEFAULT_URL = 'http://127.0.0.1:4000/graphql';

/** The API URL: the first positional argument, else SOULS_URL, else the local default. */
export function apiUrl(positionals: readonly string[], env: NodeJS.ProcessEnv = process.env): string {
  return positionals[0] ?? env.SOULS_URL ?? DEFAULT_URL;
}

/** The option every API example takes: `--token <token>` (SOULS_TOKEN keeps it out of the process list). */
export const tokenOption = { token: { type: 'string' } } as const;

/** The bearer token for a server started with --tokens-file: `--token`, else SOULS_TOKEN, else none. */
export function apiToken(values: { token?: string }, env: NodeJS.ProcessEnv = process.env): string | null {
  return values.token || env.SOULS_TOKEN || null;
}

/** What a refused client is told, after the server's own reason. */
export const TOKEN_HINT = 'give the token with --token or SOULS_TOKEN';

/** A GraphQL-level failure: the errors array of the response (masked server errors included), or a bad HTTP answer. */
export class RequestError extends Error {
  readonly errors: readonly { message: string; path?: readonly (string | number)[]; extensions?: Record<string, unknown> }[];
  constructor(message: string, errors: RequestError['errors'] = []) {
    super(message);
    this.name = 'RequestError';
    this.errors = errors;
  }
}

/** Operations without required variables may omit them. */
type VariablesArgument<TVars> = {} extends TVars ? [variables?: TVars] : [variables: TVars];

export type Request = <TResult, TVars>(document: TypedDocumentNode<TResult, TVars>, ...variables: VariablesArgument<TVars>) => Promise<TResult>;

/**
 * Binds `request` to one endpoint, sending `Authorization: Bearer <token>` when given a token.
 * Domain errors come back as data (result unions); anything in `errors` throws.
 */
export function typedClient(url: string, token: string | null = null): Request {
  return async function request<TResult, TVars>(document: TypedDocumentNode<TResult, TVars>, ...[variables]: VariablesArgument<TVars>): Promise<TResult> {
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json, application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify({ query: print(document), variables: variables ?? {} }),
      });
    } catch (error) {
      throw new RequestError(`cannot reach ${url}: ${(error as Error).cause ?? (error as Error).message}`);
    }
    const text = await response.text();
    let body: { data?: TResult | null; errors?: RequestError['errors'] };
    try {
      body = JSON.parse(text);
    } catch {
      throw new RequestError(`${url} answered HTTP ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
    if (body.errors?.length) {
      const lines = body.errors.map((e) => `${e.message}${e.extensions?.code ? ` [${e.extensions.code}]` : ''}${e.path ? ` at ${e.path.join('.')}` : ''}`);
      const hint = response.status === 401 ? `; ${token ? 'the server does not accept this token' : TOKEN_HINT}` : '';
      throw new RequestError(lines.join('; ') + hint, body.errors);
    }
    if (!response.ok || body.data == null) throw new RequestError(`${url} answered HTTP ${response.status} without data`);
    return body.data;
  };
}

/** A domain error's text: "field: message" when it names a field (the message itself never repeats the path). */
export function describeError(error: { message: string; field?: string }): string {
  return error.field ? `${error.field}: ${error.message}` : error.message;
}

/** Prints the error and sets a failing exit code; for every example's top level. */
export function failWith(error: unknown): void {
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}

function assertNever(value: never): never {
  throw new Error(`unexpected result ${JSON.stringify(value)}`);
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { ...tokenOption, name: { type: 'string', default: 'Courier' } } });
  const url = apiUrl(positionals);
  const request = typedClient(url, apiToken(values));
  console.log(`Souls API: ${url}`);

  // 1. Create a soul. The result is a union; checking __typename narrows it, so `.soul` exists only on SoulPayload.
  const created = await request(TypedClientCreateSoulDocument, {
    input: {
      name: values.name,
      description: 'Carries messages between the keeps',
      essence: `${values.name} runs letters through the passes in any weather and never opens a sealed one.`,
    },
  });
  let soul: { id: string; name: string; level: number };
  const result = created.createSoul;
  switch (result.__typename) {
    case 'SoulPayload':
      soul = result.soul; // narrowed: result is { __typename: 'SoulPayload', soul: {…} }
      console.log(`created ${soul.name} (id ${soul.id}, level ${soul.level})`);
      break;
    case 'ConflictError': {
      // narrowed: `field` exists here, `soul` does not
      console.log(`conflict on ${result.field}: ${result.message}; using the existing soul`);
      const existing = await request(TypedClientSoulByNameDocument, { name: values.name });
      if (!existing.soulByName) throw new Error(`no soul named ${values.name} after a name conflict`);
      soul = existing.soulByName;
      break;
    }
    case 'ValidationError':
      throw new Error(describeError(result));
    case 'NotFoundError':
    case 'InvalidStateError':
      throw new Error(result.message);
    default:
      return assertNever(result);
  }

  // 2. A batch with a bad item is refused whole, and the error names the item: inputs[1].content.
  const refused = await request(TypedClientDropShardsDocument, {
    inputs: [
      { content: 'Delivered the grain report a day early.', source: 'quest_turnin', soulIds: [soul.id] },
      { content: '   ', source: 'dialogue', soulIds: [soul.id] },
    ],
  });
  const rejection = refused.dropShards;
  if (rejection.__typename !== 'ValidationError') throw new Error(`expected a ValidationError, got ${rejection.__typename}`);
  console.log(`rejected as expected (field ${rejection.field}): ${rejection.message}; nothing was written`);

  // 3. The same channel, done right: several sources in one transaction.
  const dropped = await request(TypedClientDropShardsDocument, {
    inputs: [
      { content: 'Delivered the grain report a day early.', source: 'quest_turnin', soulIds: [soul.id], tags: ['delivery'] },
      { content: 'Refused to hand a sealed letter to anyone but its addressee.', source: 'dialogue', soulIds: [soul.id], tags: ['letters'] },
      { content: 'Took the long pass to avoid the bandit camp.', source: 'session_observation', soulIds: [soul.id] },
    ],
  });
  const drop = dropped.dropShards;
  switch (drop.__typename) {
    case 'DropShardsPayload':
      console.log(`dropped ${drop.shards.length} shards:`);
      for (const shard of drop.shards) console.log(`  #${shard.id} [${shard.source}] ${shard.content}${shard.tags.length ? ` (${shard.tags.join(', ')})` : ''}`);
      console.log(`souls made ready by this write: ${drop.readySouls.map((s) => s.name).join(', ') || 'none'}`);
      break;
    case 'NotFoundError':
      throw new Error(`${drop.entity} ${drop.id} not found`);
    case 'ValidationError':
      throw new Error(describeError(drop));
    default:
      return assertNever(drop);
  }

  // 4. Read it back.
  const card = await request(TypedClientSoulCardDocument, { id: soul.id });
  if (!card.soul) throw new Error(`soul ${soul.id} vanished`);
  const { crystallization } = card.soul;
  console.log(`${card.soul.name}: ${card.soul.pendingShardCount} pending shards, ${crystallization.ready ? 'ready for refinement' : `not ready (${crystallization.unmet.join(', ')})`}`);
  console.log('');
  console.log(card.soul.rendered);
}

if (import.meta.main) await main().catch(failWith);
