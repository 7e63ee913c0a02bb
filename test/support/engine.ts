import { expect } from 'vitest';
import { manualClock, openSoulsDb } from '../../src/engine/index.ts';

/** An in-memory database whose clock starts at `start` and moves only when told to. */
export function freshDb(start: number, settings: Record<string, unknown> = {}) {
  const clock = manualClock(start);
  const db = openSoulsDb({ clock, settings });
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
