// Events through Redis, what can be checked without a Redis server: the settings, the channel names, and a replica
// whose Redis does not answer (it starts, serves, says so in its log and on /ready). `npm run test:cluster` checks the
// fan-out between replicas against a real Redis.
import { createServer } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/server/config.ts';
import { eventChannelPrefix } from '../src/server/redis-events.ts';
import { createLogger } from '../src/server/log.ts';
import { manualClock, ValidationError } from '../src/engine/index.ts';
import { serverPerTest } from './support/server.ts';
import { cliRunner, expectNoStack } from './support/cli.ts';

const start = serverPerTest(afterEach);
const { cli, exited, printed, killAll } = cliRunner();
const clients: Client[] = [];
afterEach(async () => {
  killAll();
  await Promise.all(clients.splice(0).map((client) => client.dispose()));
});

/** A loopback port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function configError(argv: string[], env: NodeJS.ProcessEnv = {}): ValidationError {
  try {
    loadConfig(argv, env);
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error(`no error for ${argv.join(' ')}`);
}

async function until(done: () => boolean | Promise<boolean>, what: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`waited 10 s for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('--redis and --redis-prefix', () => {
  it('are off by default: events stay in memory', () => {
    expect(loadConfig([], {}).redis).toBeNull();
  });

  it('come from the flag, the environment or the config file, flag first; the prefix defaults to souls:', () => {
    expect(loadConfig(['--redis', 'redis://10.0.0.5:6380/2'], {}).redis).toEqual({ url: 'redis://10.0.0.5:6380/2', prefix: 'souls:' });
    expect(loadConfig([], { SOULS_REDIS_URL: 'rediss://cache.internal:6379', SOULS_REDIS_PREFIX: 'staging:' }).redis).toEqual({ url: 'rediss://cache.internal:6379', prefix: 'staging:' });
    expect(loadConfig(['--redis', 'redis://a:1', '--redis-prefix', 'flag:'], { SOULS_REDIS_URL: 'redis://b:2', SOULS_REDIS_PREFIX: 'env:' }).redis).toEqual({ url: 'redis://a:1', prefix: 'flag:' });
    const file = join(mkdtempSync(join(tmpdir(), 'souls-redis-')), 'config.json');
    writeFileSync(file, JSON.stringify({ redis: 'redis://from-file:6379', redisPrefix: 'file:' }));
    expect(loadConfig(['--config', file], {}).redis).toEqual({ url: 'redis://from-file:6379', prefix: 'file:' });
  });

  it('refuse what is not a Redis URL or a plain prefix, naming where it came from', () => {
    expect(configError(['--redis', 'http://127.0.0.1:6379']).field).toBe('--redis');
    expect(configError(['--redis', 'localhost:6379']).message).toMatch(/redis:\/\/ or rediss:\/\/ URL/);
    expect(configError([], { SOULS_REDIS_URL: 'redis://' }).field).toBe('SOULS_REDIS_URL');
    expect(configError(['--redis', 'redis://127.0.0.1', '--redis-prefix', 'has space']).field).toBe('--redis-prefix');
    expect(configError(['--redis', 'redis://127.0.0.1'], { SOULS_REDIS_PREFIX: 'x'.repeat(65) }).field).toBe('SOULS_REDIS_PREFIX');
  });
});

describe('channel names', () => {
  it('are the prefix, then the database: replicas of one database share them, other databases and prefixes do not', () => {
    const pg = eventChannelPrefix('souls:', 'postgres://app:secret@db.internal:5432/souls');
    expect(pg).toBe('souls:postgres://db.internal:5432/souls:');
    expect(pg).not.toContain('secret');
    // The same database whoever connects, whatever the credentials or options.
    expect(eventChannelPrefix('souls:', 'postgresql://other@db.internal/souls?sslmode=require')).toBe(pg);
    expect(eventChannelPrefix('souls:', 'postgres://app@db.internal:5432/other')).not.toBe(pg);
    expect(eventChannelPrefix('run-7f3a:', 'postgres://app@db.internal:5432/souls')).not.toBe(pg);
    // A SQLite file by its absolute path.
    expect(eventChannelPrefix('souls:', './data/souls.db')).toBe(eventChannelPrefix('souls:', join(process.cwd(), 'data', 'souls.db')));
    expect(eventChannelPrefix('souls:', '/srv/a.db')).not.toBe(eventChannelPrefix('souls:', '/srv/b.db'));
    // Two in-memory databases are never the same one.
    expect(eventChannelPrefix('souls:', ':memory:')).not.toBe(eventChannelPrefix('souls:', ':memory:'));
  });
});

describe('a replica whose Redis does not answer', () => {
  it('serves queries, mutations and its own subscribers, says so in its log, counts it, and /ready answers 503', async () => {
    const lines: string[] = [];
    const logger = createLogger({ clock: manualClock(Date.UTC(2026, 0, 1)), destination: { write: (line: string) => lines.push(line) } });
    const port = await closedPort();
    const server = await start({ app: { logger, redis: { url: `redis://127.0.0.1:${port}`, channelPrefix: 'test:' } } });
    const base = server.url.replace(/graphql$/, '');

    await until(() => lines.some((line) => line.includes('redis unreachable')), () => `a log line saying Redis is unreachable in ${lines.join('')}`);
    const logged = lines.map((line) => JSON.parse(line)).filter((record) => record.redis);
    expect(logged.find((record) => record.redis === 'publish')).toMatchObject({ level: 'warn', msg: 'redis unreachable; retrying (queries and mutations go on)', reason: expect.stringMatching(/ECONNREFUSED/) });
    // One line per connection, not one per retry.
    expect(logged.filter((record) => record.redis === 'publish')).toHaveLength(1);

    const ready = await fetch(`${base}ready`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'unavailable', reason: 'Redis does not answer (events cannot reach the other replicas)' });
    expect((await fetch(`${base}health`)).status).toBe(200);

    const events: unknown[] = [];
    const client = createClient({ url: server.wsUrl, webSocketImpl: WebSocket, lazy: false, retryAttempts: 0 });
    clients.push(client);
    client.subscribe({ query: 'subscription { soulChanged { kind soul { name } } }' }, { next: (value) => events.push(value.data), error: () => {}, complete: () => {} });
    const metrics = async () => (await fetch(`${base}metrics`)).text();
    // The subscription is listening once the server counts it.
    await until(async () => /^souls_subscriptions_active\{transport="websocket"\} 1$/m.test(await metrics()), () => 'the subscription to start');

    const created = await server.request('mutation { createSoul(input: { name: "Ilse", description: "Lock keeper", essence: "Ilse keeps the lock and the log of every boat." }) { __typename ... on SoulPayload { soul { id } } } }');
    expect(created.body.data.createSoul.__typename).toBe('SoulPayload');
    expect((await server.request('{ souls { name } }')).body.data.souls).toEqual([{ name: 'Ilse' }]);
    await until(() => events.length === 1, () => 'the event on this replica');
    expect(events).toEqual([{ soulChanged: { kind: 'CREATED', soul: { name: 'Ilse' } } }]);

    const counted = await metrics();
    expect(counted).toMatch(/^souls_redis_publish_failures_total 1$/m);
    expect(counted).toMatch(/^souls_redis_reconnects_total 0$/m);
  });

  it('through the command line: starts, prints where events go, and serves', async () => {
    const port = await closedPort();
    const child = cli(['serve', '--port', '0', '--db', ':memory:', '--redis', `redis://127.0.0.1:${port}`, '--redis-prefix', 'cli-test:', '--log-format', 'json']);
    await printed(child, /Events through Redis .*\n/);
    expect(child.output().stdout).toMatch(new RegExp(`Events through Redis redis://127\\.0\\.0\\.1:${port}, channels cli-test:memory:[0-9a-f-]+:\\*`));
    const url = /Souls API on (\S+)/.exec(child.output().stdout)![1];
    const answer = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ souls { id } }' }) });
    expect(await answer.json()).toEqual({ data: { souls: [] } });
    expect((await fetch(url.replace(/graphql$/, 'ready'))).status).toBe(503);
    await until(() => child.output().stdout.includes('redis unreachable'), () => `the log line in ${child.output().stdout}`);
    child.process.kill('SIGTERM');
    const exit = await exited(child);
    expect(exit.code).toBe(0);
    expect(exit.stderr).toBe('');
  });

  it('a bad --redis stops the command with one line naming the flag', async () => {
    const exit = await exited(cli(['serve', '--port', '0', '--db', ':memory:', '--redis', 'http://127.0.0.1:6379']));
    expect(exit.code).not.toBe(0);
    expect(exit.stderr).toMatch(/--redis.*redis:\/\/ or rediss:\/\/ URL/);
    expectNoStack(exit.stderr);
  });
});
