/**
 * Long computations are written as step generators (`yield` between steps, the
 * result as the return value), so the same code runs either at once or in
 * slices that hand the event loop back: the result never depends on which.
 */
export type Steps<T> = Generator<void, T, void>;

/** The same steps, adding up the time each computes (not the turns between them): `report` gets the total at the end. */
export function* timedSteps<T>(steps: Steps<T>, report: (ms: number) => void): Steps<T> {
  let total = 0;
  for (;;) {
    const start = performance.now();
    const step = steps.next();
    total += performance.now() - start;
    if (step.done) {
      report(total);
      return step.value;
    }
    yield;
  }
}

/** Runs the steps to their end, synchronously. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * How long sliced work may hold the event loop per turn, all of it together: a request
 * needs a few turns, so it waits a few slices at most, however many reports are being built.
 */
export const SLICE_MS = 4;

type Task = { steps: Steps<unknown>; resolve: (value: unknown) => void; reject: (error: unknown) => void };

/** Sliced work, oldest first: finishing one report before starting the next keeps each one's wait short. */
const queue: Task[] = [];
let turnScheduled = false;

function runTurn(): void {
  turnScheduled = false;
  const start = performance.now();
  while (queue.length > 0 && performance.now() - start < SLICE_MS) {
    const task = queue[0];
    try {
      const step = task.steps.next();
      if (step.done) {
        queue.shift();
        task.resolve(step.value);
      }
    } catch (error) {
      queue.shift();
      task.reject(error);
    }
  }
  if (queue.length > 0) scheduleTurn();
}

function scheduleTurn(): void {
  if (turnScheduled) return;
  turnScheduled = true;
  setImmediate(runTurn);
}

/** Runs the steps to their end in turns of at most SLICE_MS shared with all other sliced work, letting requests and timers run between. */
export function runStepsSliced<T>(steps: Steps<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    queue.push({ steps, resolve: resolve as (value: unknown) => void, reject });
    scheduleTurn();
  });
}

let pendingYields = 0;

export function yieldToEventLoop(): Promise<void> {
  pendingYields++;
  return new Promise((resolve) =>
    setImmediate(() => {
      pendingYields--;
      resolve();
    }),
  );
}

/**
 * Resolves once no sliced work is queued or paused, so a database is not closed under a
 * report still being built (one a request no longer waits for, e.g. beside a refused sibling).
 */
export async function settleSlicedWork(timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while ((queue.length > 0 || pendingYields > 0) && performance.now() < deadline) {
    await new Promise((resolve) => setImmediate(resolve));
  }
}
