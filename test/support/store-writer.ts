// A writer thread of the store concurrency test: opens its own store on the shared database, says it is ready,
// waits for the common start, inserts one shard into the soul and reports the gate counts its write saw.
import { parentPort, workerData } from 'node:worker_threads';
import { openStoreAsync } from '../../src/store/open.ts';

export type WriterResult = { before: number; after: number };

if (parentPort) {
  const { target, soulId, index, start } = workerData as { target: string; soulId: number; index: number; start: SharedArrayBuffer };
  const store = await openStoreAsync({ path: target });
  const flag = new Int32Array(start);
  Atomics.add(flag, 0, 1);
  while (Atomics.load(flag, 0) >= 0) Atomics.wait(flag, 0, Atomics.load(flag, 0), 1000);
  const now = Date.UTC(2026, 2, 1);
  const { gate } = await store.insertShards([{ content: `writer ${index}`, source: `source ${index}`, soulIds: [soulId], tags: [], sealed: false, createdAt: now, embedding: null }], now, 0);
  await store.close();
  const result: WriterResult = { before: gate[0].before.count, after: gate[0].after.count };
  parentPort.postMessage(result);
}
