/**
 * Who may take a connection of a replica's pool, and who waits. Writes hold at most the pool's size less a share kept
 * for reads (a quarter of it, at least one connection): writers stuck on one soul's locked row fill the writes' share
 * and wait there, while reads of every other soul still get a connection. A unit that finds no connection it may take
 * waits in line, in memory, for as long as its call may last (`--db-timeout`): a busy pool is a wait, never an
 * outage by itself. Reads go first when a write cannot run yet.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ConnectionPool, PooledConnection } from './postgres.ts';

export type Purpose = 'read' | 'write';

/**
 * One store call, as the gate sees it: how many of its units wait for a connection, the signal that ends their wait,
 * and how to drop the connections it holds (a call past its time on a server that answers fails alone).
 */
export type CallState = { waiting: number; signal: AbortSignal; held: Set<() => void> };

/** The store call running in this async context (set by PostgresStore.call around its work). */
export const currentCall = new AsyncLocalStorage<CallState>();

/** The connections kept for reads in a pool of `size`: a quarter, at least one when there are two or more. */
export const readShare = (size: number) => (size >= 2 ? Math.max(1, Math.floor(size / 4)) : 0);

type Waiter = { purpose: Purpose; call: CallState | undefined; grant: () => void; refuse: (error: unknown) => void };

export class PoolGate {
  readonly size: number;
  /** Connections writes may hold at once. */
  readonly writeLimit: number;
  private held = 0;
  private writes = 0;
  private readonly line: Waiter[] = [];
  /** Told how long each unit waited for its connection, in milliseconds (for metrics). */
  waited: ((purpose: Purpose, ms: number) => void) | null = null;

  constructor(size: number) {
    this.size = Math.max(1, size);
    this.writeLimit = this.size - readShare(this.size);
  }

  /** Units waiting for a connection, and connections held by writes. */
  stats(): { waiting: number; writing: number } {
    return { waiting: this.line.length, writing: this.writes };
  }

  /** Whether a unit of this purpose would get a connection now. */
  free(purpose: Purpose): boolean {
    return this.held < this.size && (purpose === 'read' || this.writes < this.writeLimit);
  }

  /** Resolves once the unit may take a connection; rejects when its call's signal ends the wait first. */
  acquire(purpose: Purpose): Promise<void> {
    const started = performance.now();
    const taken = () => {
      this.take(purpose);
      this.waited?.(purpose, performance.now() - started);
    };
    // No one in line may run now (each release admits whoever may), so a unit that may run goes ahead of them.
    if (this.free(purpose)) {
      taken();
      return Promise.resolve();
    }
    const call = currentCall.getStore();
    return new Promise<void>((resolve, reject) => {
      const stop = () => this.leave(waiter, call?.signal.reason);
      const done = () => {
        call?.signal.removeEventListener('abort', stop);
        if (call) call.waiting--;
      };
      const waiter: Waiter = {
        purpose,
        call,
        grant: () => {
          done();
          taken();
          resolve();
        },
        refuse: (error) => {
          done();
          reject(error);
        },
      };
      if (call?.signal.aborted) return reject(call.signal.reason);
      if (call) call.waiting++;
      call?.signal.addEventListener('abort', stop, { once: true });
      this.line.push(waiter);
    });
  }

  release(purpose: Purpose): void {
    this.held--;
    if (purpose === 'write') this.writes--;
    this.admit();
  }

  /** Every unit waiting is refused with `error` (the database stopped answering: calls fail at once). */
  refuseAll(error: unknown): void {
    for (const waiter of this.line.splice(0)) waiter.refuse(error);
  }

  private take(purpose: Purpose): void {
    this.held++;
    if (purpose === 'write') this.writes++;
  }

  /** In arrival order, each waiter that may run now; a write that may not yet does not hold up the reads behind it. */
  private admit(): void {
    for (let i = 0; i < this.line.length && this.held < this.size; ) {
      const waiter = this.line[i];
      if (!this.free(waiter.purpose)) {
        i++;
        continue;
      }
      this.line.splice(i, 1);
      waiter.grant();
    }
  }

  private leave(waiter: Waiter, reason: unknown): void {
    const at = this.line.indexOf(waiter);
    if (at === -1) return;
    this.line.splice(at, 1);
    waiter.refuse(reason);
  }
}

/** `pool` behind `gate`: a connection is asked of the pool only once the gate lets its unit take one. */
export function gatedPool(pool: ConnectionPool, gate: PoolGate): ConnectionPool {
  return {
    async connect(purpose: Purpose = 'read'): Promise<PooledConnection> {
      await gate.acquire(purpose);
      let conn: PooledConnection;
      try {
        conn = await pool.connect();
      } catch (error) {
        gate.release(purpose);
        throw error;
      }
      const call = currentCall.getStore();
      const abandon = () => conn.abandon?.();
      call?.held.add(abandon);
      let released = false;
      return {
        query: conn.query,
        release: (broken) => {
          if (released) return;
          released = true;
          call?.held.delete(abandon);
          conn.release(broken);
          gate.release(purpose);
        },
      };
    },
    end: () => pool.end(),
  };
}
