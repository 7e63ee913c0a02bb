// souls calibrate: choose the clustering threshold that fits this database's similarity mode (and model) from labelled data.
import { createReadStream } from 'node:fs';
import type { Command } from './command.ts';
import { parseArguments, UsageError } from './arguments.ts';
import { json, table } from './format.ts';
import { commandHelp } from './help.ts';
import { colours } from './terminal.ts';
import { databaseExists, embedderOf, openDb, openExistingDb } from './database.ts';
import { describeDb } from '../store/postgres-pool.ts';
import {
  calibrateThreshold,
  CALIBRATION_THRESHOLDS,
  closeSoulsDb,
  MIN_CALIBRATION_LABELS,
  MIN_CALIBRATION_TEXTS,
  openSoulsDb,
  readLabelledJsonl,
  SoulsError,
  stopSentenceEncoder,
  storeCalibration,
  type Calibration,
  type SoulsDb,
} from '../engine/index.ts';

const help = commandHelp({
  usage: ['calibrate [--from-themes | --labels FILE.jsonl] [--dry-run] [--json] [options]'],
  description:
    "Chooses the clustering threshold for the database's similarity mode (and, with vectors, their model) from labelled\n" +
    'data you already have: the themes refiners assigned (--from-themes, the default), or a JSONL file of\n' +
    '{"text": "…", "label": "…"} lines ("label": null for a text that belongs with no other; "embedding": [numbers] for\n' +
    "similarity provided; semantic embeds the texts with the database's model, the --embedder-url endpoint or the\n" +
    'built-in encoder, unless a line brings its "embedding"), read line by line up to maxClusteredShards (2,000) texts.\n' +
    `It clusters the labelled texts as the engine does at each threshold from ${CALIBRATION_THRESHOLDS[0]} to ${CALIBRATION_THRESHOLDS.at(-1)} and keeps the best\n` +
    'adjusted Rand index among the thresholds whose largest cluster is no larger than the largest label (the rule the\n' +
    `bench chose every mode's default by). It needs at least ${MIN_CALIBRATION_TEXTS} labelled texts in at least ${MIN_CALIBRATION_LABELS} labels of two or more.\n` +
    'Unless --dry-run, the choice is stored in the database for the mode (provided and semantic: and the model and vector\n' +
    'dimension); a server or command opened without --clustering-threshold then uses it, and\n' +
    '`settings { clusteringThresholdSource }` says CALIBRATED. Give the --similarity (and --embedder-*) the server runs with.\n' +
    'See docs/calibrate.md.',
  options: [
    ['--from-themes', 'label each shard assigned to a theme with its theme (the default)'],
    ['--labels FILE', 'a labelled JSONL file instead'],
    ['--dry-run', 'print the sweep and the choice; store nothing'],
    ['--json', 'the sweep and the choice as JSON'],
  ],
  groups: ['database', 'settings'],
  examples: [
    'souls calibrate --db ./data/souls.db --similarity lexical --dry-run',
    'souls calibrate --db ./data/souls.db --similarity provided --labels labelled.jsonl',
    'souls calibrate --db postgres://souls@db/souls --similarity semantic --json',
  ],
});

export const calibrateCommand: Command = {
  name: 'calibrate',
  summary: "choose the clustering threshold for the database's similarity from labelled data (themes or a JSONL file)",
  help,
  async run(argv, io) {
    const { values, config } = parseArguments(
      'calibrate',
      argv,
      { options: { 'from-themes': { type: 'boolean' }, labels: { type: 'string' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } }, groups: ['database', 'settings'] },
      io.env,
    );
    const labelsFile = values.labels as string | undefined;
    if (labelsFile !== undefined && values['from-themes'] === true) throw new UsageError('give --from-themes or --labels, not both');
    const dryRun = values['dry-run'] === true;
    const labels = labelsFile === undefined ? undefined : await readLabels(labelsFile, config!.settings);
    let db: SoulsDb;
    if (!databaseExists(config!)) {
      if (labels === undefined) throw new SoulsError(`no database at ${config!.db} (${config!.dbFrom}): calibrating from themes needs the database whose refiners assigned them`);
      // Labels alone need no database to sweep; storing the choice creates one.
      db = dryRun ? openSoulsDb({ settings: config!.settings, embedder: embedderOf(config!) }) : await openDb(config!);
    } else {
      db = dryRun ? await openExistingDb(config!, 'calibrate --dry-run') : await openDb(config!);
    }
    try {
      const calibration = await calibrateThreshold(db, { labels });
      const stored = dryRun ? null : await storeCalibration(db, calibration);
      // Without the password a postgres:// URL may carry.
      const database = describeDb(config!.db);
      if (values.json === true) io.stdout.write(json({ database, ...calibration, stored: stored !== null }));
      else io.stdout.write(report(calibration, database, stored !== null, colours(io.stdout, io.env)));
      return 0;
    } finally {
      await closeSoulsDb(db);
      if (db.settings.similarity === 'semantic') await stopSentenceEncoder();
    }
  },
};

/** The labelled file, read as a stream: it stops at the first bad line or the text past the limit, never holding the file whole. */
async function readLabels(file: string, settings: Parameters<typeof readLabelledJsonl>[1]): Promise<Awaited<ReturnType<typeof readLabelledJsonl>>> {
  try {
    return await readLabelledJsonl(createReadStream(file), settings);
  } catch (error) {
    if (error instanceof SoulsError) throw error;
    throw new SoulsError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

function report(c: Calibration, database: string, stored: boolean, colour: ReturnType<typeof colours>): string {
  const source = c.from === 'themes' ? 'the themes refiners assigned' : 'the labelled file';
  const vectors = c.mode === 'provided' || c.mode === 'semantic' ? `, ${c.withVectors} with a vector` : '';
  const rows = c.sweep.map((r) => [r.threshold.toFixed(3), r.ari.toFixed(3), String(r.clusters), String(r.largestCluster)]);
  const chosenRow = c.sweep.indexOf(c.chosen);
  const lines = [
    `Similarity ${c.mode}: ${c.texts} labelled texts${vectors}, ${c.labels} labels of two or more (the largest ${c.largestLabel}), from ${source}.`,
    '',
    table(['threshold', 'ARI', 'clusters', 'largest'], rows, (cell, _, row) => (row === chosenRow ? colour.bold(cell) : cell)).trimEnd(),
    '',
    `Chosen: ${c.chosen.threshold} (ARI ${c.chosen.ari.toFixed(3)}, ${c.chosen.clusters} clusters, the largest ${c.chosen.largestCluster}${c.chosen.largestCluster <= c.largestLabel ? ` ≤ ${c.largestLabel}` : `; no threshold kept every cluster within ${c.largestLabel}`}).`,
    `Default for ${c.mode}: ${c.defaultThreshold}; in force before: ${c.current.threshold} (${c.current.source}).`,
    stored
      ? `Stored in ${database} for ${c.key}: opened without --clustering-threshold, Souls clusters at ${c.chosen.threshold} (restart running servers).`
      : 'Dry run: nothing stored.',
  ];
  return `${lines.join('\n')}\n`;
}
