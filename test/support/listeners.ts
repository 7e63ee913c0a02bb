import type { App } from '../../src/server/app.ts';

export type Topic = 'crystallizationReady' | 'levelChanged' | 'soulChanged' | 'shardDropped';

/**
 * Counts, per topic, the pubsub listeners really attached (the pubsub's
 * iterator starts listening on its first next()), so a test writes only once a
 * subscription listens, and can see it stop listening when the client goes.
 */
export function trackListeners(server: { app: App }, waitMs = 3000) {
  const active = new Map<string, number>();
  const pubsub = server.app.pubsub as any;
  const original = pubsub.subscribe.bind(pubsub);
  pubsub.subscribe = (topic: string, ...rest: unknown[]) => {
    const inner = original(topic, ...rest);
    let state: 'idle' | 'listening' | 'ended' = 'idle';
    const end = () => {
      if (state === 'listening') active.set(topic, active.get(topic)! - 1);
      state = 'ended';
    };
    const iterator = {
      next: (...args: unknown[]) => {
        if (state === 'idle') {
          state = 'listening';
          active.set(topic, (active.get(topic) ?? 0) + 1);
        }
        return inner.next(...args);
      },
      return: (value?: unknown) => {
        end();
        return inner.return(value);
      },
      throw: (error?: unknown) => {
        end();
        return inner.throw(error);
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  };
  const count = (topic: Topic) => active.get(topic) ?? 0;
  return {
    count,
    /** Waits, at most `waitMs`, until `topic` has exactly `n` listeners. */
    async until(topic: Topic, n: number, what = 'listeners'): Promise<void> {
      const deadline = performance.now() + waitMs;
      while (count(topic) !== n) {
        if (performance.now() > deadline) throw new Error(`${what}: expected ${n} listener(s) on ${topic} within ${waitMs} ms, found ${count(topic)}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
  };
}
