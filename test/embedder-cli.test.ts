import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { awaitEmbeddings, closeSoulsDb, createSoul, dropShards, openSoulsDb, ValidationError } from '../src/engine/index.ts';
import { sentenceEncoder } from '../src/engine/semantic.ts';
import { createEndpointEmbedder } from '../src/embedder/endpoint.ts';
import { configFromFlags, loadConfig, optionsHelp } from '../src/server/config.ts';
import { cliRunner, expectNoStack } from './support/cli.ts';
import { startEmbeddingServer, type EmbeddingServer } from './support/embedding-server.ts';

// Bounds, not speed checks: a test runs up to eight CLI processes, each slow to start on a loaded machine.
vi.setConfig({ testTimeout: 180_000 });

const KEY = 'sk-cli-SECRET-77d1e0';
const { cli, exited, killAll } = cliRunner({ startMs: 30_000, exitMs: 60_000 });
afterEach(() => killAll());

const dir = mkdtempSync(join(tmpdir(), 'souls-embedder-cli-'));
const keyFile = join(dir, 'key.txt');
writeFileSync(keyFile, `${KEY}\n`, { mode: 0o600 });
let server: EmbeddingServer;
beforeAll(async () => {
  server = await startEmbeddingServer({ key: KEY });
  await sentenceEncoder.embed(['warm']);
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  server.failAll(null);
  server.embedded.clear();
});

const TEXTS = ['Ran the migration without a dry run', 'Skipped the tests before merging', 'Asked before deleting the branch', 'Wrote the changelog first', 'Ran the migration without a dry run'];

function meta(path: string, key: string): string | null {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return (db.prepare('SELECT value FROM souls_meta WHERE key = ?').get(key) as { value: string } | undefined)?.value ?? null;
  } finally {
    db.close();
  }
}

describe('souls with an embeddings endpoint', () => {
  it('refuses another model, naming the flag, until `souls reindex` re-embeds every shard with it; the key never printed', async () => {
    const path = join(dir, 'models.db');
    const db = openSoulsDb({ path, settings: { similarity: 'semantic' }, embedder: createEndpointEmbedder({ url: server.url, model: 'use-lite', key: KEY }) });
    const soul = await createSoul(db, { name: 'Sable', essence: 'A coding agent.' });
    await dropShards(db, TEXTS.map((content) => ({ content, source: 'chat', soulIds: [soul.id] })));
    await awaitEmbeddings(db);
    closeSoulsDb(db);
    expect(meta(path, 'embedding_model')).toBe('use-lite');
    const endpoint = ['--embedder-url', server.url];
    const env = { SOULS_EMBEDDER_KEY: KEY };

    const refused = await exited(cli(['list', '--db', path, ...endpoint, '--embedder-model', 'use-lite-reversed'], env));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('come from the model "use-lite"');
    expect(refused.stderr).toContain('Give --embedder-model use-lite');
    expect(refused.stderr).toContain('souls reindex');
    expectNoStack(refused.stderr);
    const builtin = await exited(cli(['list', '--db', path, '--similarity', 'semantic']));
    expect(builtin.code).toBe(1);
    expect(builtin.stderr).toContain('"use-lite-512"');
    expect((await exited(cli(['list', '--db', path, ...endpoint, '--embedder-model', 'use-lite'], env))).code).toBe(0);
    const serve = await exited(cli(['serve', '--port', '0', '--db', path, ...endpoint, '--embedder-model', 'use-lite-reversed'], env));
    expect(serve.code).toBe(1);
    expect(serve.stderr).toContain('Give --embedder-model use-lite');

    const reindex = await exited(cli(['reindex', '--db', path, ...endpoint, '--embedder-model', 'use-lite-reversed', '--embedder-key-file', keyFile, '--json']));
    expect(reindex.code).toBe(0);
    expect(JSON.parse(reindex.stdout)).toEqual({ database: path, model: 'use-lite-reversed', replaced: 5, shardsWithoutVector: 5, stored: 5, skipped: 0, dimension: 512 });
    expect(reindex.stderr).toContain('binding it to "use-lite-reversed"');
    expect(meta(path, 'embedding_model')).toBe('use-lite-reversed');
    // Four distinct texts, each embedded once by each model.
    expect([...server.embedded.values()]).toEqual([2, 2, 2, 2]);

    const after = await exited(cli(['list', '--db', path, ...endpoint, '--embedder-model', 'use-lite-reversed'], env));
    expect(after.code).toBe(0);
    expect((await exited(cli(['list', '--db', path, ...endpoint, '--embedder-model', 'use-lite'], env))).code).toBe(1);
    for (const run of [refused, builtin, reindex, after]) expect(run.stdout + run.stderr).not.toContain(KEY);
  });

  it('import embeds the new shards through the endpoint and says how many landed; an endpoint that is down fails nothing', async () => {
    const workspace = new URL('./fixtures/soulmd/openclaw', import.meta.url).pathname;
    const endpoint = ['--embedder-url', server.url, '--embedder-model', 'use-lite', '--embedder-key-file', keyFile];
    const up = await exited(cli(['import', workspace, '--apply', '--json', '--db', join(dir, 'import-up.db'), ...endpoint]));
    expect(up.code).toBe(0);
    const { result } = JSON.parse(up.stdout);
    expect(result.shardsAdded).toBeGreaterThan(0);
    expect(result.vectors).toEqual({ model: 'use-lite', shards: result.shardsAdded, stored: result.shardsAdded });

    server.failAll({ kind: 'status', status: 503 });
    const down = await exited(cli(['import', workspace, '--apply', '--db', join(dir, 'import-down.db'), ...endpoint, '--embed-wait', '1']));
    expect(down.code).toBe(0);
    expect(down.stdout).toMatch(new RegExp(`Vectors \\(use-lite\\): 0 of ${result.shardsAdded} new shard\\(s\\) have theirs; the others compare lexically until \`souls reindex\``));
    for (const run of [up, down]) expect(run.stdout + run.stderr).not.toContain(KEY);
  });
});

describe('the embedder settings', () => {
  it('come from flags, then SOULS_EMBEDDER_*, then the config file; imply similarity semantic; keep the key out of the printed config', () => {
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ embedderUrl: 'http://file.example/v1', embedderModel: 'file-model', embedderBatch: 8 }));
    const fromFile = loadConfig(['--config', file], {});
    expect(fromFile.embedder).toMatchObject({ url: 'http://file.example/v1/embeddings', model: 'file-model', batchSize: 8, concurrency: 2, timeoutMs: 30_000, maxAnswerBytes: null });
    expect(fromFile.settings.similarity).toBe('semantic');
    expect(fromFile.embedder!.key()).toBeNull();
    const fromEnv = loadConfig(['--config', file], { SOULS_EMBEDDER_MODEL: 'env-model', SOULS_EMBEDDER_KEY: KEY, SOULS_EMBEDDER_CONCURRENCY: '4', SOULS_EMBEDDER_MAX_ANSWER_BYTES: '2097152' });
    expect(fromEnv.embedder).toMatchObject({ model: 'env-model', concurrency: 4, maxAnswerBytes: 2_097_152 });
    expect(loadConfig(['--config', file, '--embedder-max-answer-bytes', '65536'], {}).embedder!.maxAnswerBytes).toBe(65_536);
    expect(fromEnv.embedder!.key()).toBe(KEY);
    expect(JSON.stringify(fromEnv)).not.toContain(KEY);
    const fromFlags = loadConfig(['--config', file, '--embedder-url', 'https://api.openai.com/v1/embeddings', '--embedder-model', 'text-embedding-3-small', '--embedder-key-file', keyFile], { SOULS_EMBEDDER_KEY: 'other' });
    expect(fromFlags.embedder).toMatchObject({ url: 'https://api.openai.com/v1/embeddings', model: 'text-embedding-3-small' });
    expect(fromFlags.embedder!.key()).toBe(KEY);
    expect(configFromFlags({}, {}).embedder).toBeNull();
  });

  it('refuses half a configuration, another similarity, a bad URL or number, and an unreadable key file, naming where', () => {
    const refusal = (argv: string[], env: Record<string, string> = {}) => {
      try {
        loadConfig(argv, env);
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        return `${(error as ValidationError).field}: ${(error as Error).message}`;
      }
      throw new Error('accepted');
    };
    expect(refusal(['--embedder-url', 'http://h/v1'])).toMatch(/^--embedder-url: needs the model/);
    expect(refusal([], { SOULS_EMBEDDER_MODEL: 'm' })).toMatch(/^SOULS_EMBEDDER_MODEL: names the model of an embeddings endpoint: give its URL too/);
    expect(refusal(['--embedder-url', 'http://h/v1', '--embedder-model', 'm', '--similarity', 'lexical'])).toMatch(/^--embedder-url: .*but --similarity is lexical/);
    expect(refusal(['--embedder-url', 'ftp://h/v1', '--embedder-model', 'm'])).toMatch(/^--embedder-url: must be an http/);
    expect(refusal(['--embedder-url', 'http://h/v1', '--embedder-model', 'm', '--embedder-batch', '0'])).toMatch(/^--embedder-batch: must be a whole number from 1 to 2048/);
    expect(refusal(['--embedder-url', 'http://h/v1', '--embedder-model', 'm', '--embedder-max-answer-bytes', '100'])).toMatch(/^--embedder-max-answer-bytes: must be a whole number of bytes from 1024 to 268435456, got "100"/);
    expect(refusal(['--embedder-url', 'http://h/v1', '--embedder-model', 'm', '--embedder-key-file', join(dir, 'missing')])).toMatch(/^--embedder-key-file: cannot read .*missing: ENOENT/);
  });

  it('are listed in the help of every command that opens a database', () => {
    const help = optionsHelp(['settings']);
    for (const flag of ['--embedder-url URL', '--embedder-model NAME', '--embedder-key-file FILE', '--embedder-batch N', '--embedder-concurrency N', '--embedder-timeout MS', '--embedder-max-answer-bytes N']) expect(help).toContain(flag);
    expect(help).toContain('SOULS_EMBEDDER_KEY');
  });
});
