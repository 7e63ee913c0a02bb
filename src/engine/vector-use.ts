/**
 * What a report's clusters were compared with (issue 32): how many of its clustered shards have a vector of the
 * model the similarity mode compares, how many wait for theirs, and what the rest were compared with, so a report
 * never clusters shards without vectors silently.
 */
import type { SimilarityMode } from './settings.ts';
import { PROVIDED_MODEL } from '../store/store.ts';

export type VectorUse = {
  /** The model whose vectors the mode compares (the embedder's in semantic, callers' in provided); null in trigram and lexical. */
  model: string | null;
  /** Clustered shards with a stored vector of that model. */
  withVectors: number;
  /** Clustered shards whose vector this process is computing (semantic): compared lexically until it lands. */
  pending: number;
  /** The other clustered shards: compared lexically, and in semantic mode without a vector until `souls reindex`. */
  without: number;
  /** `souls reindex` would give vectors to shards that will get none otherwise (semantic mode only). */
  reindexNeeded: boolean;
  /** All of it in words, as the markdown says it. */
  message: string;
};


/**
 * `vectors`: for each clustered shard, whether it has a stored vector; `waiting`: whether its vector is being computed.
 * `model` is the model the mode compares (null in trigram and lexical).
 */
export function vectorUse(mode: SimilarityMode, model: string | null, hasVector: readonly boolean[], waiting: (index: number) => boolean): VectorUse {
  if (mode === 'trigram' || mode === 'lexical' || model === null) {
    const how = mode === 'trigram' ? 'their character trigrams' : 'their words';
    return { model: null, withVectors: 0, pending: 0, without: hasVector.length, reindexNeeded: false, message: `no vectors: shards are compared by ${how} (similarity ${mode})` };
  }
  let withVectors = 0;
  let pending = 0;
  hasVector.forEach((has, i) => {
    if (has) withVectors++;
    else if (waiting(i)) pending++;
  });
  const without = hasVector.length - withVectors - pending;
  const whose = model === PROVIDED_MODEL ? "callers' vectors" : `vectors of ${model}`;
  const total = hasVector.length;
  const parts = [`${withVectors} of the ${total} clustered ${total === 1 ? 'shard' : 'shards'} ${withVectors === 1 ? 'has' : 'have'} ${whose}`];
  if (pending > 0) parts.push(`${pending} ${pending === 1 ? 'waits for its vector' : 'wait for theirs'} (compared lexically until it lands)`);
  if (without > 0) {
    const are = without === 1 ? 'is' : 'are';
    parts.push(
      mode === 'semantic'
        ? `${without} ${are} compared lexically and will get none until \`souls reindex\` (written before vectors were configured, or their embedding failed)`
        : `${without} came without one and ${are} compared lexically`,
    );
  }
  return { model, withVectors, pending, without, reindexNeeded: mode === 'semantic' && without > 0, message: parts.join('; ') };
}
