// `souls calibrate` end to end: the real binary sweeps a labelled file or the database's themes, stores its choice,
// and a server started on the database afterwards clusters at it (unless --clustering-threshold says otherwise).
import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadParaphraseCorpus } from '../bench/paraphrase.ts';
import { assignThemes, closeSoulsDb, createSoul, defaultClusteringThresholds, dropShards, normalizeContent, openSoulsDb } from '../src/engine/index.ts';
import { decodeEmbedding } from '../src/engine/provided.ts';
import { sentenceEncoder } from '../src/engine/semantic.ts';
import { KNOWN_BEST_THRESHOLD, labelledJsonl, labelledVectors } from './support/calibration.ts';
import { cliRunner, expectNoStack } from './support/cli.ts';
import { startEmbeddingServer, type EmbeddingServer } from './support/embedding-server.ts';

// The endpoint's first answer loads the sentence encoder: seconds on a busy machine.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 90_000 });

// Bounds, not speed checks: on a loaded machine a server or command may take tens of seconds to start.
const { cli, exited, printed, killAll } = cliRunner({ startMs: 60_000, exitMs: 60_000 });
afterEach(() => killAll());

const dir = mkdtempSync(join(tmpdir(), 'souls-calibrate-'));
let embeddings: EmbeddingServer;
beforeAll(async () => {
  embeddings = await startEmbeddingServer();
});
afterAll(async () => {
  await embeddings.stop();
  rmSync(dir, { recursive: true, force: true });
});

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

describe('souls calibrate --labels with similarity semantic', () => {
  const items = loadParaphraseCorpus()
    .records.filter((r) => ['no-tests', 'over-tests'].includes(r.theme ?? ''))
    .slice(0, 12)
    .map((r) => ({ text: r.text, label: r.theme! }));

  it("embeds the labels with the database's embeddings endpoint, not the built-in encoder; a line's own embedding wins; the choice is stored under the endpoint's model", async () => {
    const file = join(dir, 'semantic.jsonl');
    const path = join(dir, 'semantic.db');
    const endpoint = ['--embedder-url', embeddings.url, '--embedder-model', 'use-lite', '--embedder-batch', '4'];
    const texts = items.map((item) => normalizeContent(item.text));
    writeFileSync(file, labelledJsonl(items));
    // A dry run with no database yet: every text goes to the endpoint, once, in batches of four.
    const requests = embeddings.requests;
    const dry = await exited(cli(['calibrate', '--db', path, ...endpoint, '--labels', file, '--dry-run', '--json']));
    expect([...embeddings.embedded.keys()].sort()).toEqual([...texts].sort());
    expect([...embeddings.embedded.values()].every((n) => n === 1)).toBe(true);
    expect(embeddings.requests - requests).toBe(3);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ mode: 'semantic', key: 'semantic:use-lite:512d', texts: 12, withVectors: 12, stored: false });

    // The first line brings its own vector (the model's, as its owner computed it): it is not sent again.
    const own = Array.from(decodeEmbedding((await sentenceEncoder.embed([texts[0]]))[0]));
    writeFileSync(file, labelledJsonl([{ ...items[0], embedding: own }, ...items.slice(1)]));
    const run = await exited(cli(['calibrate', '--db', path, ...endpoint, '--labels', file, '--json']));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(embeddings.embedded.get(texts[0])).toBe(1);
    for (const text of texts.slice(1)) expect(embeddings.embedded.get(text)).toBe(2);
    const stored = JSON.parse(run.stdout);
    expect(stored).toMatchObject({ mode: 'semantic', key: 'semantic:use-lite:512d', from: 'labels', texts: 12, withVectors: 12, stored: true });
    expect(stored.sweep).toEqual(JSON.parse(dry.stdout).sweep);
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      expect((db.prepare("SELECT key FROM souls_meta WHERE key LIKE 'calibration:%'").all() as { key: string }[]).map((row) => row.key)).toEqual(['calibration:semantic:use-lite:512d']);
    } finally {
      db.close();
    }

    // A line's vector of another length than the model's is refused, naming the line.
    writeFileSync(file, labelledJsonl([{ ...items[0], embedding: [1, 0, 0] }, ...items.slice(1)]));
    const refused = await exited(cli(['calibrate', '--db', path, ...endpoint, '--labels', file, '--dry-run']));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^souls: line 1\.embedding: must have 512 numbers, the dimension of the model "use-lite", got 3/);
    expectNoStack(refused.stderr);
  });
});

describe('souls calibrate --labels reads the file as a stream', () => {
  /**
   * Writes `line(i)` for i = 0, 1, … into a FIFO as fast as its reader takes them, until the reader closes its end
   * (EPIPE) or `limit` bytes are written (more than any reader stopping in time takes); resolves with the bytes written.
   */
  async function feed(fifo: string, line: (i: number) => string, limit = 64 << 20): Promise<number> {
    const out = createWriteStream(fifo);
    const closed = new Promise<void>((resolve) => out.once('error', () => resolve()));
    let ended = false;
    void closed.then(() => (ended = true));
    let written = 0;
    for (let i = 0; !ended && written < limit; ) {
      let chunk = '';
      while (chunk.length < 16_384) chunk += line(i++);
      written += chunk.length;
      if (!out.write(chunk)) await Promise.race([new Promise<void>((resolve) => out.once('drain', () => resolve())), closed]);
    }
    out.destroy();
    return written;
  }

  it('stops at the labelled text past 2,000 of a FIFO that never ends, having taken a bounded part of it', async () => {
    const fifo = join(dir, 'endless.jsonl');
    execFileSync('mkfifo', [fifo]);
    const run = cli(['calibrate', '--db', join(dir, 'none.db'), '--similarity', 'lexical', '--labels', fifo, '--dry-run']);
    const written = await feed(fifo, (i) => `{"text": "observation number ${i}", "label": "label ${i % 7}"}\n`);
    const result = await exited(run);
    // 2,001 lines are some 110 KB; the rest is the pipe's and the streams' buffers.
    expect(written).toBeLessThan(1 << 20);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^souls: line 2001: one labelled text too many: calibration clusters at most 2000 \(maxClusteredShards\); the file is read no further/);
  });

  it('stops at a line longer than any text and vector need, however long it goes on', async () => {
    const fifo = join(dir, 'one-line.jsonl');
    execFileSync('mkfifo', [fifo]);
    const run = cli(['calibrate', '--db', join(dir, 'none.db'), '--similarity', 'lexical', '--labels', fifo, '--dry-run']);
    const written = await feed(fifo, () => 'x'.repeat(1_000));
    const result = await exited(run);
    expect(written).toBeLessThan(2 << 20);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^souls: line 1: is longer than 328704 characters, more than the longest text and vector need/);
  });
});
