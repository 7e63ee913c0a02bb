import { GraphQLError, type DocumentNode, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Caller } from './auth.ts';
import type { Limits } from './limits.ts';
import { isSubscriberTooSlow, subscriberTooSlow } from './pubsub.ts';

type Stream = AsyncIterable<ExecutionResult>;
type SubscribeArgs = { document: DocumentNode; operationName?: string | null; variableValues?: Record<string, unknown> | null; contextValue?: unknown };
type Subscribe = (args: any) => unknown;

const isStream = (value: unknown): value is Stream => typeof value === 'object' && value !== null && Symbol.asyncIterator in value;

function tooMany(message: string, limit: number, setting: string): ExecutionResult {
  return { errors: [new GraphQLError(message, { extensions: { code: 'TOO_MANY_SUBSCRIPTIONS', limit, setting } })] };
}

/**
 * How far a subscriber may fall behind the fastest one sharing its upstream before it is closed with
 * SUBSCRIBER_TOO_SLOW: one full dropShards batch. Results are resolved and kept, so this bound is tighter than the
 * pubsub's.
 */
const MAX_SHARED_LAG = 10_000;

/**
 * One upstream subscription feeding any number of subscribers: each event is resolved once, and every subscriber
 * gets the same result. The upstream is read only while a subscriber waits for its next event, so a stream nobody
 * reads stops at the pubsub, where a write's events wait by reference. A subscriber MAX_SHARED_LAG results behind
 * the others gets SUBSCRIBER_TOO_SLOW and leaves; so do all of them when the pubsub gives up on the upstream.
 * The upstream ends when its last subscriber leaves.
 */
function fanOut(upstream: Stream, onIdle: () => void, onTooSlow: () => void) {
  type Consumer = { queue: ExecutionResult[]; wake: (() => void) | null; done: boolean; last: boolean };
  const consumers = new Set<Consumer>();
  const iterator = upstream[Symbol.asyncIterator]();
  let failure: { error: unknown } | null = null;
  let ended = false;
  let pulling = false;

  const finish = () => {
    if (!ended) {
      ended = true;
      onIdle();
    }
    for (const consumer of consumers) consumer.wake?.();
  };
  // The final word a subscriber gets, after what it was owed: then nothing.
  const closeWith = (consumer: Consumer, result: ExecutionResult) => {
    consumer.queue.push(result);
    consumer.last = true;
    consumers.delete(consumer);
    consumer.wake?.();
  };
  const waitedFor = () => {
    for (const consumer of consumers) if (consumer.wake && consumer.queue.length === 0) return true;
    return false;
  };
  const stopUpstream = async () => {
    if (ended) return;
    finish();
    await iterator.return?.();
  };
  const pull = async () => {
    if (pulling || ended) return;
    pulling = true;
    let over = false;
    try {
      while (!ended && waitedFor()) {
        const step = await iterator.next();
        if (step.done) {
          over = true;
          break;
        }
        for (const consumer of consumers) {
          if (consumer.queue.length >= MAX_SHARED_LAG) {
            onTooSlow();
            closeWith(consumer, { errors: [subscriberTooSlow(MAX_SHARED_LAG)] });
          }
          else {
            consumer.queue.push(step.value);
            consumer.wake?.();
          }
        }
        if (consumers.size === 0) await stopUpstream();
      }
    } catch (error) {
      over = true;
      if (isSubscriberTooSlow(error)) for (const consumer of [...consumers]) closeWith(consumer, { errors: [error] });
      else failure = { error };
    } finally {
      pulling = false;
    }
    if (over) finish();
  };

  return function join(): AsyncIterableIterator<ExecutionResult> {
    const consumer: Consumer = { queue: [], wake: null, done: false, last: false };
    consumers.add(consumer);
    const leave = async () => {
      if (consumer.done) return;
      consumer.done = true;
      consumers.delete(consumer);
      consumer.wake?.();
      if (consumers.size === 0) await stopUpstream();
    };
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      async next(): Promise<IteratorResult<ExecutionResult>> {
        while (consumer.queue.length === 0 && !consumer.done && !consumer.last && !ended) {
          const waited = new Promise<void>((resolve) => (consumer.wake = resolve));
          void pull();
          await waited;
        }
        consumer.wake = null;
        if (consumer.queue.length > 0) return { value: consumer.queue.shift()!, done: false };
        consumer.done = true;
        if (failure && !consumer.last) throw failure.error;
        return { value: undefined, done: true };
      },
      async return(): Promise<IteratorResult<ExecutionResult>> {
        await leave();
        return { value: undefined, done: true };
      },
      async throw(error: unknown): Promise<IteratorResult<ExecutionResult>> {
        await leave();
        throw error;
      },
    };
  };
}

/**
 * Subscriptions are capped per connection (a graphql-ws socket; an SSE
 * stream is one request) and per server, and subscribers asking the same
 * operation with the same variables under the same token share one upstream:
 * an event is resolved once for all of them, however many they are.
 */
export function sharingSubscriptions(limits: Pick<Limits, 'maxSubscriptions' | 'maxSubscriptionsPerConnection'>, tooSlow?: { inc(): void }): Plugin {
  let total = 0;
  const perConnection = new WeakMap<object, number>();
  const shared = new Map<string, () => AsyncIterableIterator<ExecutionResult>>();
  const documentIds = new WeakMap<DocumentNode, number>();
  let nextDocumentId = 0;

  const keyOf = (args: SubscribeArgs): string => {
    let id = documentIds.get(args.document);
    if (id === undefined) documentIds.set(args.document, (id = nextDocumentId++));
    const caller = (args.contextValue as { caller?: Caller } | undefined)?.caller;
    const scopes = caller ? [...caller.scopes].sort().join(',') : '';
    return JSON.stringify([id, args.operationName ?? null, args.variableValues ?? {}, caller?.name ?? null, scopes]);
  };

  const sharedSubscribe = (subscribe: Subscribe) => async (args: SubscribeArgs) => {
    const key = keyOf(args);
    const existing = shared.get(key);
    if (existing) return existing();
    const result = await subscribe(args);
    if (!isStream(result)) return result;
    // Another subscriber may have opened the same stream while this one was subscribing.
    const raced = shared.get(key);
    if (raced) {
      void result[Symbol.asyncIterator]().return?.();
      return raced();
    }
    const join = fanOut(
      result,
      () => {
        if (shared.get(key) === join) shared.delete(key);
      },
      () => tooSlow?.inc(),
    );
    shared.set(key, join);
    return join();
  };

  return {
    onSubscribe({ context, subscribeFn, setSubscribeFn, setResultAndStopExecution }) {
      const connection = ((context as { socket?: object }).socket ?? (context as { request?: object }).request ?? context) as object;
      const onConnection = perConnection.get(connection) ?? 0;
      if (onConnection >= limits.maxSubscriptionsPerConnection) {
        setResultAndStopExecution(tooMany(`this connection has ${limits.maxSubscriptionsPerConnection} live subscriptions, the most allowed (maxSubscriptionsPerConnection); complete one first`, limits.maxSubscriptionsPerConnection, 'maxSubscriptionsPerConnection'));
        return;
      }
      if (total >= limits.maxSubscriptions) {
        setResultAndStopExecution(tooMany(`the server has ${limits.maxSubscriptions} live subscriptions, the most allowed (maxSubscriptions); try again later`, limits.maxSubscriptions, 'maxSubscriptions'));
        return;
      }
      total++;
      perConnection.set(connection, onConnection + 1);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        total--;
        perConnection.set(connection, (perConnection.get(connection) ?? 1) - 1);
      };
      setSubscribeFn(sharedSubscribe(subscribeFn) as typeof subscribeFn);
      return {
        onSubscribeResult: ({ result }) => {
          if (!isStream(result)) {
            release();
            return;
          }
          return { onEnd: release };
        },
        onSubscribeError: release,
      };
    },
  };
}
