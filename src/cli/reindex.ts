// souls reindex: backfill semantic vectors for the shards that have none.
import type { Command } from './command.ts';
import { parseArguments } from './arguments.ts';
import { commandHelp } from './help.ts';
import { progress } from './terminal.ts';
import { closeSoulsDb, defaultSettings, EMBED_BATCH, openSoulsDb, reindexEmbeddings, SoulsError, stopSentenceEncoder } from '../engine/index.ts';
import { databaseExists } from './database.ts';

const help = commandHelp({
  usage: ['reindex [--batch N] [--json] [options]'],
  description:
    'Computes the sentence-encoder vector (similarity semantic) of every shard that has none, so a database that used\n' +
    'another mode, or whose server stopped before its vectors landed, clusters semantically. Each batch of N shards\n' +
    `(default ${EMBED_BATCH * 4}) is committed on its own: interrupted, it loses at most the batch in flight, and running it again\n` +
    'continues with the shards still missing. Vectors already stored, including ones callers provided, are never\n' +
    'overwritten. The database must exist; --similarity, when given, must be semantic.',
  options: [
    ['--batch N', 'shards per committed batch (1 to 10000)'],
    ['--json', 'a JSON summary on stdout (progress goes to stderr)'],
  ],
  groups: ['database', 'settings'],
  examples: ['souls reindex --db ./data/souls.db', 'souls reindex --db ./data/souls.db --json --batch 256'],
});

export const reindexCommand: Command = {
  name: 'reindex',
  summary: 'compute semantic vectors for shards that have none (resumable)',
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
    const db = openSoulsDb({ path: config!.db, settings: { ...config!.settings, similarity: 'semantic', clusteringThreshold: undefined } });
    try {
      const out = json ? io.stderr : io.stdout;
      let bar: ReturnType<typeof progress> | null = null;
      const result = await reindexEmbeddings(db, {
        batchSize,
        onProgress: ({ done, total }) => {
          bar ??= progress(out, 'Embedding shards', total);
          bar.update(done);
        },
      });
      (bar as ReturnType<typeof progress> | null)?.finish();
      const summary = { database: config!.db, shardsWithoutVector: result.total, stored: result.stored, skipped: result.skipped, dimension: result.dimension };
      if (json) io.stdout.write(`${JSON.stringify(summary)}\n`);
      else io.stdout.write(`Stored ${result.stored} semantic vectors (${result.dimension} dimensions) in ${config!.db}; every shard now has a vector.\n`);
      return 0;
    } finally {
      closeSoulsDb(db);
      await stopSentenceEncoder();
    }
  },
};
