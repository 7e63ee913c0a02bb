// souls reindex: compute the semantic vector of every shard that has none, with the configured model.
import type { Command } from './command.ts';
import { parseArguments } from './arguments.ts';
import { commandHelp } from './help.ts';
import { progress } from './terminal.ts';
import { closeSoulsDb, defaultSettings, EMBED_BATCH, openSoulsDbAsync, reindexEmbeddings, SoulsError, stopSentenceEncoder } from '../engine/index.ts';
import { databaseExists, embedderOf } from './database.ts';

const help = commandHelp({
  usage: ['reindex [--batch N] [--json] [options]'],
  description:
    'Computes the vector (similarity semantic) of every shard that has none, with the built-in sentence encoder or the\n' +
    'model of --embedder-url/--embedder-model, so a database that used another mode, or whose server stopped before its\n' +
    'vectors landed, clusters semantically. A database whose vectors come from another model (another --embedder-model,\n' +
    'the built-in encoder, or callers\' vectors under similarity provided) is first bound to the new model and its old\n' +
    'vectors forgotten, so every shard is embedded again: two models\' vectors are never compared. Each batch of N shards\n' +
    `(default ${EMBED_BATCH * 4}) is committed on its own: interrupted, it loses at most the batch in flight, and running it again\n` +
    'continues with the shards still missing. Identical texts are embedded once. Progress goes to stderr. The database\n' +
    'must exist; --similarity, when given, must be semantic.',
  options: [
    ['--batch N', 'shards per committed batch (1 to 10000)'],
    ['--json', 'a JSON summary on stdout'],
  ],
  groups: ['database', 'settings'],
  examples: [
    'souls reindex --db ./data/souls.db',
    'souls reindex --db ./data/souls.db --json --batch 256',
    'souls reindex --db ./data/souls.db --embedder-url http://127.0.0.1:11434/v1 --embedder-model nomic-embed-text',
  ],
});

export const reindexCommand: Command = {
  name: 'reindex',
  summary: 'compute semantic vectors for shards that have none, or re-embed with a new model (resumable)',
  help,
  async run(argv, io) {
    const { values, config } = parseArguments('reindex', argv, { options: { batch: { type: 'string' }, json: { type: 'boolean' } }, groups: ['database', 'settings'] }, io.env);
    const json = values.json === true;
    const batchRaw = values.batch as string | undefined;
    const batchSize = batchRaw === undefined ? EMBED_BATCH * 4 : Number(batchRaw);
    if (!/^[0-9]+$/.test(batchRaw ?? '1') || !Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) throw new SoulsError(`--batch must be a whole number from 1 to 10000, got ${JSON.stringify(batchRaw)}`);
    const explicit = argv.some((a) => a === '--similarity' || a.startsWith('--similarity=')) || Boolean(io.env.SOULS_SIMILARITY);
    if (config!.settings.similarity !== 'semantic' && (explicit || config!.settings.similarity !== defaultSettings.similarity)) {
      throw new SoulsError(`reindex computes semantic vectors: --similarity must be semantic, got ${config!.settings.similarity}`);
    }
    if (!databaseExists(config!)) {
      throw new SoulsError(`no database at ${config!.db} (${config!.dbFrom}): reindex fills in an existing database file; \`souls serve\` or \`souls seed-demo\` creates one`);
    }
    const say = (line: string) => io.stderr.write(`${line}\n`);
    const db = await openSoulsDbAsync({
      path: config!.db,
      settings: { ...config!.settings, similarity: 'semantic', clusteringThreshold: undefined },
      embedder: embedderOf(config!),
      // Reindexing is how a database moves to another model: it may open one bound to the old.
      checkEmbeddingModel: false,
      observer: {
        embedCircuit: ({ state, from, reason }) => {
          if (state === 'open' && from === 'closed') say(`The embeddings endpoint is failing (${reason}): waiting for it, then going on (Ctrl-C stops; a new run continues).`);
          else if (state === 'closed') say('The embeddings endpoint answers again.');
        },
      },
    });
    try {
      const model = db.semantic!.embedder.model;
      const bound = await db.store.embeddingModel();
      if (bound !== null && bound !== model) say(`The database's vectors come from "${bound}": binding it to "${model}" and embedding every shard again.`);
      let bar: ReturnType<typeof progress> | null = null;
      const result = await reindexEmbeddings(db, {
        batchSize,
        onProgress: ({ done, total }) => {
          bar ??= progress(io.stderr, 'Embedding shards', total);
          bar.update(done);
        },
      });
      (bar as ReturnType<typeof progress> | null)?.finish();
      const summary = { database: config!.db, model: result.model, replaced: result.replaced, shardsWithoutVector: result.total, stored: result.stored, skipped: result.skipped, dimension: result.dimension };
      if (json) io.stdout.write(`${JSON.stringify(summary)}\n`);
      else io.stdout.write(`Stored ${result.stored} vectors of ${result.model}${result.dimension === null ? '' : ` (${result.dimension} dimensions)`} in ${config!.db}; every shard now has a vector.\n`);
      return 0;
    } finally {
      await closeSoulsDb(db);
      await stopSentenceEncoder();
    }
  },
};
