// node test/support/crash-child.ts <dbfile> <batchIndex>
//
// The child process of test/crash.test.ts: opens the engine on a database
// file and imports one batch of BATCH_SIZE shards in ONE dropShards call,
// saying "start" just before the call and "done <count>" after it returns;
// then it stays alive with the database open until the parent kills it, so a
// kill can land before the import, inside its transaction, or after the commit.
import { closeSoulsDb, dropShards, getSoulByName, openSoulsDb, type ShardInput } from '../../src/engine/index.ts';

export const BATCH_SIZE = 10_000;
export const CRASH_SOUL = 'Crash test soul';

/** The word only batch k's shards contain: the FTS index must find it for all of them or for none. */
export const marker = (batch: number) => `crashmark${batch}`;
export const batchSource = (batch: number) => `batch-${batch}`;
export const TAGS_PER_SHARD = 2;

const words = ['tests', 'commits', 'review', 'patience', 'naming', 'latency', 'rollback', 'mentoring', 'queues', 'caching'];

/** Batch k, deterministic: content, source and tags all carry k. */
export function crashBatch(batch: number, soulId: number): ShardInput[] {
  return Array.from({ length: BATCH_SIZE }, (_, i) => ({
    content: `Batch ${batch} shard ${i}: ${marker(batch)} the agent weighed ${words[i % words.length]} against ${words[(i * 7 + batch) % words.length]}.`,
    source: batchSource(batch),
    soulIds: [soulId],
    tags: [batchSource(batch), `t${i % 5}`],
  }));
}

if (import.meta.main) {
  const [file, batchArg] = process.argv.slice(2);
  const batch = Number(batchArg);
  if (!file || !Number.isSafeInteger(batch)) {
    console.error('usage: crash-child.ts <dbfile> <batchIndex>');
    process.exit(2);
  }
  const db = openSoulsDb({ path: file });
  const soul = await getSoulByName(db, CRASH_SOUL);
  if (!soul) {
    console.error(`no soul named ${CRASH_SOUL} in ${file}`);
    closeSoulsDb(db);
    process.exit(2);
  }
  const inputs = crashBatch(batch, soul.id);
  process.stdout.write('start\n');
  const { shardIds } = await dropShards(db, inputs);
  process.stdout.write(`done ${shardIds.length}\n`);
  // Wait, database open, for the SIGKILL.
  setInterval(() => {}, 60_000);
}
