// `souls calibrate` end to end: the real binary sweeps a labelled file or the database's themes, stores its choice,
// and a server started on the database afterwards clusters at it (unless --clustering-threshold says otherwise).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { assignThemes, closeSoulsDb, createSoul, defaultClusteringThresholds, dropShards, openSoulsDb } from '../src/engine/index.ts';
import { KNOWN_BEST_THRESHOLD, labelledJsonl, labelledVectors } from './support/calibration.ts';
import { cliRunner, expectNoStack } from './support/cli.ts';

const { cli, exited, printed, killAll } = cliRunner({ startMs: 30_000, exitMs: 30_000 });
afterEach(() => killAll());

const dir = mkdtempSync(join(tmpdir(), 'souls-calibrate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const labelsFile = join(dir, 'labelled.jsonl');
writeFileSync(labelsFile, labelledJsonl());

/** A database file holding the labelled words as one soul's shards with their vectors; `themed`: assigned to themes by label. */
async function providedDatabase(name: string, themed = false): Promise<string> {
  const path = join(dir, name);
  const db = openSoulsDb({ path, settings: { similarity: 'provided' } });
  const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
  const items = labelledVectors();
  const { shardIds } = await dropShards(db, items.map((item) => ({ content: item.text, source: 'chat', soulIds: [soul.id], embedding: item.embedding })));
  if (themed) await assignThemes(db, soul.id, [0, 1, 2].map((label) => ({ shardIds: shardIds.slice(label * 4, label * 4 + 4), newThemeName: `theme ${label}` })));
  closeSoulsDb(db);
  return path;
}

/** The threshold a database opens with, and where it came from. */
function opened(path: string, settings: Record<string, unknown> = { similarity: 'provided' }) {
  const db = openSoulsDb({ path, settings, mode: 'read-only' });
  try {
    return [db.settings.clusteringThreshold, db.clusteringThresholdSource];
  } finally {
    closeSoulsDb(db);
  }
}

async function settingsOfServer(args: string[]): Promise<{ banner: string; settings: unknown }> {
  const server = cli(['serve', '--port', '0', ...args]);
  const url = (await printed(server, /Souls API on (http:\/\/\S+).*\nSimilarity .*\n/s))[1];
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ settings { similarity clusteringThreshold clusteringThresholdSource } }' }) });
  const { data } = (await response.json()) as { data: { settings: unknown } };
  server.process.kill('SIGTERM');
  await exited(server);
  return { banner: /Similarity .*/.exec(server.output().stdout)![0], settings: data.settings };
}

describe('souls calibrate', () => {
  it('from a labelled file: --dry-run prints the sweep and stores nothing; then it stores the choice, a server uses it, and --clustering-threshold still wins', async () => {
    const path = await providedDatabase('labels.db');
    const dry = await exited(cli(['calibrate', '--db', path, '--similarity', 'provided', '--labels', labelsFile, '--dry-run', '--json']));
    expect(dry.code).toBe(0);
    const report = JSON.parse(dry.stdout);
    expect(report).toMatchObject({ mode: 'provided', key: 'provided:provided:22d', from: 'labels', texts: 12, labels: 3, largestLabel: 4, stored: false });
    expect(report.chosen).toEqual({ threshold: KNOWN_BEST_THRESHOLD, ari: 1, clusters: 3, largestCluster: 4 });
    expect(report.sweep.find((r: { threshold: number }) => r.threshold === 0.35)).toEqual({ threshold: 0.35, ari: 0, clusters: 1, largestCluster: 12 });
    expect(opened(path)).toEqual([defaultClusteringThresholds.provided, 'default']);

    const stored = await exited(cli(['calibrate', '--db', path, '--similarity', 'provided', '--labels', labelsFile]));
    expect(stored.code).toBe(0);
    expect(stored.stdout).toMatch(/^Similarity provided: 12 labelled texts, 12 with a vector, 3 labels of two or more \(the largest 4\), from the labelled file\.$/m);
    expect(stored.stdout).toMatch(/^threshold {2}ARI {4}clusters {2}largest$/m);
    expect(stored.stdout).toMatch(/^0\.375 {6}1\.000 {2}3 {9}4$/m);
    expect(stored.stdout).toMatch(/^Chosen: 0\.375 \(ARI 1\.000, 3 clusters, the largest 4 ≤ 4\)\.$/m);
    expect(stored.stdout).toContain(`Default for provided: 0.25; in force before: 0.25 (default).`);
    expect(stored.stdout).toContain(`Stored in ${path} for provided:provided:22d`);
    expect(opened(path)).toEqual([KNOWN_BEST_THRESHOLD, 'calibrated']);
    expect(opened(path, { similarity: 'lexical' })).toEqual([defaultClusteringThresholds.lexical, 'default']);

    const served = await settingsOfServer(['--db', path, '--similarity', 'provided']);
    expect(served.settings).toEqual({ similarity: 'PROVIDED', clusteringThreshold: KNOWN_BEST_THRESHOLD, clusteringThresholdSource: 'CALIBRATED' });
    expect(served.banner).toBe('Similarity provided, clustering threshold 0.375 (calibrated for this database by `souls calibrate`)');
    const overridden = await settingsOfServer(['--db', path, '--similarity', 'provided', '--clustering-threshold', '0.3']);
    expect(overridden.settings).toEqual({ similarity: 'PROVIDED', clusteringThreshold: 0.3, clusteringThresholdSource: 'SETTING' });
    expect(overridden.banner).toBe('Similarity provided, clustering threshold 0.3 (set)');
  });

  it('from the themes refiners assigned (the default source)', async () => {
    const path = await providedDatabase('themes.db', true);
    const run = await exited(cli(['calibrate', '--db', path, '--json'], { SOULS_SIMILARITY: 'provided' }));
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ from: 'themes', texts: 12, labels: 3, chosen: { threshold: KNOWN_BEST_THRESHOLD }, stored: true });
    expect(opened(path)).toEqual([KNOWN_BEST_THRESHOLD, 'calibrated']);
  });

  it('refuses too few labels, a malformed line (naming it), a missing database and both sources, storing nothing', async () => {
    const path = await providedDatabase('refusals.db');
    const noThemes = await exited(cli(['calibrate', '--db', path, '--similarity', 'provided']));
    expect(noThemes.code).toBe(1);
    expect(noThemes.stderr).toMatch(/^souls: calibration needs at least 10 shards assigned to themes in at least 2 themes of two or more; found 0 in 0/);

    const few = join(dir, 'few.jsonl');
    writeFileSync(few, labelledJsonl(labelledVectors().slice(0, 6)));
    const tooFew = await exited(cli(['calibrate', '--db', path, '--similarity', 'provided', '--labels', few]));
    expect(tooFew.code).toBe(1);
    expect(tooFew.stderr).toContain('calibration needs at least 10 labelled lines in at least 2 labels of two or more; found 6 in 2');

    const broken = join(dir, 'broken.jsonl');
    const lines = labelledJsonl().split('\n');
    lines[6] = '{"text": "lemon", "label": "label 1", "embedding": [1, 2,}';
    writeFileSync(broken, lines.join('\n'));
    const malformed = await exited(cli(['calibrate', '--db', path, '--similarity', 'provided', '--labels', broken]));
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(/^souls: line 7: is not JSON/);
    expectNoStack(malformed.stderr);

    const missing = await exited(cli(['calibrate', '--db', join(dir, 'absent.db')]));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no database at');
    const both = await exited(cli(['calibrate', '--db', path, '--from-themes', '--labels', labelsFile]));
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --from-themes or --labels, not both');
    expect(opened(path)).toEqual([defaultClusteringThresholds.provided, 'default']);
  });

  it('documents itself', async () => {
    const help = await exited(cli(['calibrate', '--help']));
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: souls calibrate \[--from-themes \| --labels FILE\.jsonl\] \[--dry-run\] \[--json\]/);
    expect(help.stdout).toContain('docs/calibrate.md');
    expect((await exited(cli(['--help']))).stdout).toMatch(/^ {2}calibrate {2,}choose the clustering threshold/m);
  });
});
