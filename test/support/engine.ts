import { expect } from 'vitest';
import { manualClock, openSoulsDb } from '../../src/engine/index.ts';
import type { SoulsStore } from '../../src/store/store.ts';

let storeFactory: (() => SoulsStore) | null = null;

/** Engine suites run again on another store (test/engine-on-postgres.test.ts): every freshDb then opens one of these. */
export function useStore(factory: () => SoulsStore): void {
  storeFactory = factory;
}

/** An empty database (in memory, unless useStore chose another store) whose clock starts at `start` and moves only when told to. */
export function freshDb(start: number, settings: Record<string, unknown> = {}) {
  const clock = manualClock(start);
  // Another store is emptied for the test: no calibration or embedding model to read first.
  const db = openSoulsDb({ clock, settings, ...(storeFactory ? { store: storeFactory(), calibratedThreshold: null, checkEmbeddingModel: false } : {}) });
  return { clock, db };
}

/** Awaits a promise that must reject with `type`, and returns the error for further checks. */
export async function rejection<E extends Error>(promise: Promise<unknown>, type: abstract new (...args: never[]) => E): Promise<E> {
  const error = await promise.then(
    () => {
      throw new Error(`expected a ${type.name}, but the call succeeded`);
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as E;
}
