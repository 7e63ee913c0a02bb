// A game-engine style listener: keeps a WebSocket open and reacts as souls become ready for refinement or level up,
// e.g. to queue an LLM refinement job or to reload an NPC's dialogue prompt. One line per event, as it happens.
//
//   node examples/npc-subscriber.ts [url] [--soul <id>]… [--count N] [--token T]
//
// url defaults to SOULS_URL, then http://127.0.0.1:4000/graphql (the WebSocket uses the same path: ws://…/graphql);
// the token (for a server with --tokens-file) to SOULS_TOKEN, sent as connectionParams.authorization.
// --soul (repeatable) listens to those souls only; --count exits after N events; otherwise it runs until Ctrl-C.
import { parseArgs } from 'node:util';
import { print } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import {
  NpcCrystallizationReadyDocument,
  NpcLevelChangedDocument,
  type NpcCrystallizationReadySubscription,
  type NpcLevelChangedSubscription,
} from './gql/graphql.ts';
import { apiToken, apiUrl, failWith, TOKEN_HINT, tokenOption } from './typed-client.ts';

/** Subscribes with a typed document: `onData` receives the operation's own result type. Returns the unsubscribe. */
function subscribe<TResult, TVars extends Record<string, unknown>>(
  client: Client,
  document: TypedDocumentNode<TResult, TVars>,
  variables: TVars,
  onData: (data: TResult) => void,
  onError: (error: unknown) => void,
): () => void {
  return client.subscribe<TResult>(
    { query: print(document), variables },
    {
      next: (result) => {
        if (result.errors?.length) onError(new Error(result.errors.map((e) => e.message).join('; ')));
        else if (result.data) onData(result.data);
      },
      error: onError,
      complete: () => {},
    },
  );
}

/** The close code of a socket whose connection_init the server refused (no token, or one it does not know). */
const FORBIDDEN = 4403;

/** graphql-ws reports an Error, a socket close or error event, or a list of GraphQL errors. */
function describeSinkError(error: unknown, token: string | null): string {
  if (error instanceof Error) return error.message;
  if (Array.isArray(error)) return error.map((e: { message?: string }) => e.message ?? String(e)).join('; ');
  const event = Object(error) as { code?: unknown; reason?: string; message?: unknown };
  if (event.code === FORBIDDEN) return `connection closed (${FORBIDDEN} ${event.reason || 'Forbidden'}): the server requires a valid token; ${token ? 'it does not accept this one' : TOKEN_HINT}`;
  if (typeof event.code === 'number') return `connection closed (${event.code}${event.reason ? ` ${event.reason}` : ''})`;
  if (typeof event.message === 'string') return `connection failed: ${event.message}`; // a socket ErrorEvent
  return String(error);
}

function positiveInt(name: string, value: string | undefined): number | null {
  if (value === undefined) return null;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${value}"`);
  return n;
}

function onReady({ crystallizationReady: e }: NpcCrystallizationReadySubscription): string {
  const c = e.soul.crystallization;
  return `${e.at}  READY     ${e.soul.name} (id ${e.soul.id})  priority ${e.priority.toFixed(1)}: ${c.pendingCount} shards from ${c.distinctSources} sources over ${c.ageSpreadDays.toFixed(1)} days`;
}

function onLevel({ levelChanged: e }: NpcLevelChangedSubscription): string {
  const what =
    e.kind === 'LEVEL_UP'
      ? `reached level ${e.soul.level}; essence now: ${e.event.essenceAfter}`
      : `reverted level-up ${e.event.level}, back to level ${e.soul.level}; essence restored: ${e.event.essenceBefore}`;
  return `${e.at}  ${e.kind.padEnd(8)}  ${e.soul.name} (id ${e.soul.id})  ${what.length > 140 ? `${what.slice(0, 139)}…` : what}`;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { ...tokenOption, soul: { type: 'string', multiple: true }, count: { type: 'string' } },
  });
  const url = apiUrl(positionals).replace(/^http/, 'ws');
  const soulIds = values.soul ?? [];
  const limit = positiveInt('--count', values.count);
  const token = apiToken(values);

  const client = createClient({
    url,
    webSocketImpl: WebSocket,
    retryAttempts: 3,
    // The server checks the token once, at connection_init; a refusal closes the socket with 4403, which no retry mends.
    connectionParams: token ? { authorization: `Bearer ${token}` } : undefined,
    shouldRetry: (event) => (event as { code?: unknown }).code !== FORBIDDEN,
  });
  const unsubscribes: (() => void)[] = [];
  let seen = 0;
  let done = false;
  const finish = async (exitCode: number) => {
    if (done) return;
    done = true;
    process.exitCode = exitCode;
    for (const unsubscribe of unsubscribes) unsubscribe();
    await client.dispose();
  };
  const onError = (error: unknown) => {
    if (done) return;
    failWith(new Error(describeSinkError(error, token)));
    void finish(1);
  };
  const emit = (line: string) => {
    if (done) return;
    console.log(line);
    seen += 1;
    if (limit !== null && seen >= limit) void finish(0);
  };

  client.on('connected', () => {
    const scope = soulIds.length ? `souls ${soulIds.join(', ')}` : 'every soul';
    console.log(`listening on ${url} for crystallizationReady and levelChanged (${scope})${limit ? `; exits after ${limit} events` : '; Ctrl-C to stop'}`);
  });
  process.once('SIGINT', () => {
    console.log(`\n${seen} events; bye`);
    void finish(0);
  });

  unsubscribes.push(subscribe(client, NpcCrystallizationReadyDocument, { soulIds: soulIds.length ? soulIds : null }, (data) => emit(onReady(data)), onError));
  // levelChanged filters on one soul per subscription: one each, or one for all.
  for (const soulId of soulIds.length ? soulIds : [null]) {
    unsubscribes.push(subscribe(client, NpcLevelChangedDocument, { soulId }, (data) => emit(onLevel(data)), onError));
  }
}

if (import.meta.main) await main().catch(failWith);
