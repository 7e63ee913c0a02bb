// Who gets a connection of a PostgreSQL pool (src/store/pool-gate.ts), without a server: writes never take the share
// kept for reads, a read goes ahead of writes that may not run yet, a unit waits for as long as its call may and then
// leaves the line, and a database that stops answering refuses everyone waiting. The same over real PostgreSQL, with a
// soul's row locked while 30 writers wait: test/pg/pool-contention.pg.ts (npm run test:pg).
import { describe, expect, it } from 'vitest';
import { currentCall, gatedPool, PoolGate, readShare, type CallState } from '../src/store/pool-gate.ts';
import type { ConnectionPool } from '../src/store/postgres.ts';

/** A pool that hands out connections at once and counts them; what each query answers does not matter here. */
function fakePool() {
  let open = 0;
  const pool: ConnectionPool = {
    connect: async () => {
      open++;
      return { query: async () => ({ rows: [] }), release: () => void open-- };
    },
    end: async () => undefined,
  };
  return { pool, open: () => open };
}

/** Lets every settled promise's callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A promise's state now: what it resolved to, 'waiting', or the error it rejected with. */
function watch<T>(promise: Promise<T>) {
  const state: { value?: T; error?: unknown; done: boolean } = { done: false };
  promise.then(
    (value) => Object.assign(state, { value, done: true }),
    (error: unknown) => Object.assign(state, { error, done: true }),
  );
  return state;
}

describe('the share of the pool kept for reads', () => {
  it('is a quarter of the pool, at least one connection from two on', () => {
    expect([1, 2, 3, 4, 8, 10, 20].map(readShare)).toEqual([0, 1, 1, 1, 2, 2, 5]);
  });

  it('writes hold at most the rest; a read still gets a connection, and goes ahead of the writes waiting', async () => {
    const { pool, open } = fakePool();
    const gate = new PoolGate(4);
    const gated = gatedPool(pool, gate);
    const writes = await Promise.all([gated.connect('write'), gated.connect('write'), gated.connect('write')]);
    const fourthWrite = watch(gated.connect('write'));
    const read = watch(gated.connect('read'));
    await settle();
    expect(fourthWrite.done).toBe(false);
    expect(read.done).toBe(true);
    expect(gate.stats()).toEqual({ waiting: 1, writing: 3 });

    // The pool is full: the next read waits too, behind the write in line, and is let in as soon as it may run.
    const secondRead = watch(gated.connect('read'));
    await settle();
    expect(secondRead.done).toBe(false);
    read.value!.release();
    await settle();
    expect(secondRead.done).toBe(true);
    expect(fourthWrite.done).toBe(false);
    writes[0].release();
    await settle();
    expect(fourthWrite.done).toBe(true);
    expect(open()).toBe(4);
    expect(gate.stats()).toEqual({ waiting: 0, writing: 3 });
  });
});

describe('waiting for a connection', () => {
  it('lasts as long as the call may: when its signal ends the wait, the unit leaves the line with the reason', async () => {
    const { pool } = fakePool();
    const gate = new PoolGate(1);
    const gated = gatedPool(pool, gate);
    const held = await gated.connect('write');
    const abort = new AbortController();
    const call: CallState = { waiting: 0, signal: abort.signal, held: new Set() };
    const waiting = watch(currentCall.run(call, () => gated.connect('read')));
    await settle();
    expect(call.waiting).toBe(1);
    const busy = new Error('no connection came free in time');
    abort.abort(busy);
    await settle();
    expect(waiting.error).toBe(busy);
    expect(call.waiting).toBe(0);
    expect(gate.stats().waiting).toBe(0);
    // The connection that comes free goes to no one who left.
    held.release();
    expect(gate.free('write')).toBe(true);
  });

  it('ends for every unit in line at once when the database stops answering', async () => {
    const { pool } = fakePool();
    const gate = new PoolGate(2);
    const gated = gatedPool(pool, gate);
    await Promise.all([gated.connect('read'), gated.connect('read')]);
    const waiting = [watch(gated.connect('read')), watch(gated.connect('write'))];
    const down = new Error('the database does not answer');
    gate.refuseAll(down);
    await settle();
    expect(waiting.map((w) => w.error)).toEqual([down, down]);
    expect(gate.stats().waiting).toBe(0);
  });

  it('is reported for each unit, by purpose, whether it waited or found a connection free', async () => {
    const { pool } = fakePool();
    const gate = new PoolGate(1);
    const waits: Array<[string, number]> = [];
    gate.waited = (purpose, ms) => void waits.push([purpose, ms]);
    const gated = gatedPool(pool, gate);
    const first = await gated.connect('write');
    const second = gated.connect('read');
    first.release();
    (await second).release();
    expect(waits.map(([purpose]) => purpose)).toEqual(['write', 'read']);
  });
});
