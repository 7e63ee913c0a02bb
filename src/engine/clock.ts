/** Every engine function reads time from a Clock, never from Date.now(), so tests can move time. */
export type Clock = { now(): number };

export const DAY_MS = 86_400_000;

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to: for tests, scripts and deterministic imports. */
export function manualClock(start: number): Clock & { set(ms: number): void; advance(ms: number): void } {
  let current = start;
  return {
    now: () => current,
    set(ms: number) {
      current = ms;
    },
    advance(ms: number) {
      current += ms;
    },
  };
}
