// souls reindex: backfill semantic vectors for the shards that have none.
import { statSync } from 'node:fs';
import { loadConfig } from '../server/config.ts';
import type { Command } from './command.ts';
import { progress } from './terminal.ts';
import { closeSoulsDb, EMBED_BATCH, openSoulsDb, reindexEmbeddings, SoulsError, stopSentenceEncoder } from '../engine/index.ts';

const help = `Usage: souls reindex [--db FILE] [--similarity semantic] [--batch N] [--json]

Computes the sentence-encoder vector (similarity semantic) of every shard that has none, so a database
that used another mode, or whose server stopped before its vectors landed, clusters semantically.
Each batch of N shards (default ${EMBED_BATCH * 4}) is committed on its own: interrupted, it loses at most the
batch in flight, and running it again continues with the shards still missing. Vectors already stored,
including ones callers provided, are never overwritten.

  --db FILE        the database (default ./data/souls.db, or SOULS_DB); it must exist
  --similarity     only semantic computes vectors (the default here)
  --batch N        shards per committed batch
  --json           print a JSON summary on stdout (progress goes to stderr)`;

function takeOption(argv: string[], name: string): { rest: string[]; value: string | undefined } {
  const rest: string[] = [];
  let value: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === name) value = argv[++i] ?? '';
    else if (argv[i].startsWith(`${name}=`)) value = argv[i].slice(name.length + 1);
    else rest.push(argv[i]);
  }
  return { rest, value };
}

export const reindexCommand: Command = {
  name: 'reindex',
  summary: 'compute semantic vectors for shards that have none (resumable)',
  help,
  async run(argv, io) {
    if (argv.includes('--help') || argv.includes('-h')) {
      io.stdout.write(`${help}\n`);
      return 0;
    }
    const json = argv.includes('--json');
    const { rest, value: batchRaw } = takeOption(
      argv.filter((a) => a !== '--json'),
      '--batch',
    );
    const batchSize = batchRaw === undefined ? EMBED_BATCH * 4 : Number(batchRaw);
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) throw new SoulsError(`--batch must be a whole number from 1 to 10000, got ${JSON.stringify(batchRaw)}`);
    const config = loadConfig(rest, io.env);
    const explicit = rest.some((a) => a === '--similarity' || a.startsWith('--similarity=')) || Boolean(io.env.SOULS_SIMILARITY);
    if (config.settings.similarity !== 'semantic' && (explicit || config.settings.similarity !== 'trigram')) {
      throw new SoulsError(`reindex computes semantic vectors: --similarity must be semantic, got ${config.settings.similarity}`);
    }
    if (config.db === ':memory:' || !statSync(config.db, { throwIfNoEntry: false })?.isFile()) {
      throw new SoulsError(`no database at ${config.db} (${config.dbFrom}): reindex fills in an existing one`);
    }
    const db = openSoulsDb({ path: config.db, settings: { ...config.settings, similarity: 'semantic', clusteringThreshold: undefined } });
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
      const summary = { database: config.db, shardsWithoutVector: result.total, stored: result.stored, skipped: result.skipped, dimension: result.dimension };
      if (json) io.stdout.write(`${JSON.stringify(summary)}\n`);
      else io.stdout.write(`Stored ${result.stored} semantic vectors (${result.dimension} dimensions) in ${config.db}; every shard now has a vector.\n`);
      return 0;
    } finally {
      closeSoulsDb(db);
      await stopSentenceEncoder();
    }
  },
};
