import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { manualClock } from '../src/engine/index.ts';
import { loadTokens } from '../src/server/auth.ts';
import { createLogger, prettyLine, resolveLogFormat } from '../src/server/log.ts';
import { cliRunner } from './support/cli.ts';
import { serverPerTest } from './support/server.ts';

const start = serverPerTest(afterEach);
const TOKEN = 'tok-ops-5f1c9a7e3b2d4c6a8e0f';
const SECRET = 'a private diary entry no log may hold';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'souls-logs-'));
});
const { cli, exited, printed, killAll } = cliRunner();
afterEach(() => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});

/** A server with tokens whose log lines land in `lines`. */
async function loggedServer() {
  const file = join(dir, 'tokens.json');
  writeFileSync(file, JSON.stringify([{ name: 'ops-bot', token: TOKEN, scopes: ['read', 'observe', 'refine', 'admin'] }]), { mode: 0o600 });
  const lines: string[] = [];
  const logger = createLogger({ clock: manualClock(Date.UTC(2026, 0, 2, 3, 4, 5)), destination: { write: (line: string) => lines.push(line) } });
  const server = await start({ app: { tokens: loadTokens(file), logger } });
  /** The parsed lines so far; every line must be one JSON object. */
  const records = () => lines.map((line) => {
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    return JSON.parse(line) as Record<string, any>;
  });
  const auth = { authorization: `Bearer ${TOKEN}` };
  return { server, lines, records, auth };
}

/** The request line, once the response has been closed on the server side. */
async function lineFor(records: () => Record<string, any>[], requestId: string) {
  for (let i = 0; i < 100; i++) {
    const found = records().find((r) => r.requestId === requestId);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no log line for ${requestId}: ${JSON.stringify(records())}`);
}

describe('request log lines', () => {
  it('one JSON line a request: time, request id, operation, caller, status, duration, error codes; no token, variables or document', async () => {
    const { server, lines, records, auth } = await loggedServer();
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ query: 'mutation MakeMira($essence: String!) { createSoul(input: { name: "Mira", essence: $essence }) { __typename } }', variables: { essence: SECRET } }),
    });
    expect(response.status).toBe(200);
    const id = response.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const line = await lineFor(records, id);
    expect(line).toMatchObject({
      time: '2026-01-02T03:04:05.000Z',
      level: 'info',
      msg: 'request',
      requestId: id,
      method: 'POST',
      path: '/graphql',
      operation: 'MakeMira',
      operationType: 'mutation',
      caller: 'ops-bot',
      status: 200,
      errorCodes: [],
    });
    expect(typeof line.durationMs).toBe('number');
    expect(line.durationMs).toBeGreaterThanOrEqual(0);
    const all = lines.join('');
    expect(all).not.toContain(TOKEN);
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain('createSoul');
  });

  it('honours an incoming x-request-id and replaces one that is not a plain short token', async () => {
    const { server, records, auth } = await loggedServer();
    const given = await fetch(`${server.url}?query=%7B__typename%7D`, { headers: { ...auth, 'x-request-id': 'lb-7f3a.42' } });
    expect(given.headers.get('x-request-id')).toBe('lb-7f3a.42');
    expect((await lineFor(records, 'lb-7f3a.42')).status).toBe(200);
    for (const bad of ['has spaces in it', 'x'.repeat(129), 'quote"d']) {
      const replaced = await fetch(`${server.url}?query=%7B__typename%7D`, { headers: { ...auth, 'x-request-id': bad } });
      const id = replaced.headers.get('x-request-id')!;
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await lineFor(records, id)).toMatchObject({ status: 200, operationType: 'query' });
    }
  });

  it('names the error codes and no caller when the token is wrong, and never the token given', async () => {
    const { server, lines, records } = await loggedServer();
    const wrong = 'tok-wrong-0123456789abcdef';
    const refused = await server.request('query Roster { souls { id } }', undefined, { authorization: `Bearer ${wrong}`, 'x-request-id': 'refused-1' });
    expect(refused.status).toBe(401);
    // Refused from its headers: the body, and the operation's name in it, were never read.
    expect(await lineFor(records, 'refused-1')).toMatchObject({ status: 401, caller: null, operation: null, errorCodes: ['UNAUTHENTICATED'] });
    const invalid = await server.request('query Broken { noSuchField }', undefined, { authorization: `Bearer ${TOKEN}`, 'x-request-id': 'invalid-1' });
    expect(invalid.status).toBe(400);
    expect(await lineFor(records, 'invalid-1')).toMatchObject({ status: 400, caller: 'ops-bot', operation: 'Broken', errorCodes: ['GRAPHQL_VALIDATION_FAILED'] });
    expect(lines.join('')).not.toContain(wrong);
    expect(lines.join('')).not.toContain('noSuchField');
  });

  it('bounds the client-supplied texts it logs: operation names and paths keep their start and their length', async () => {
    const { server, lines, records, auth } = await loggedServer();
    const long = `Q${'n'.repeat(999_999)}`;
    const shown = `Q${'n'.repeat(127)}… (1000000 characters)`;
    const post = (body: object, requestId: string) =>
      fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json', ...auth, 'x-request-id': requestId }, body: JSON.stringify(body) }).then((r) => r.text());
    await post({ query: `query ${long} { __typename }`, operationName: long }, 'long-1');
    expect(await lineFor(records, 'long-1')).toMatchObject({ status: 200, operation: shown });
    await post({ query: '{ __typename }', operationName: long }, 'long-2');
    expect(await lineFor(records, 'long-2')).toMatchObject({ operation: shown });
    await post({ query: `query ${long} { __typename }` }, 'long-3');
    expect(await lineFor(records, 'long-3')).toMatchObject({ operation: shown });
    const path = `/${'p'.repeat(8000)}`;
    await (await fetch(server.url.replace(/\/graphql$/, path), { headers: { ...auth, 'x-request-id': 'long-4' } })).text();
    expect((await lineFor(records, 'long-4')).path).toBe(`/${'p'.repeat(127)}… (8001 characters)`);
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThan(1000);
  });

  it('logs other paths too (the web app), and probes only at debug level', async () => {
    const { server, records } = await loggedServer();
    const base = server.url.replace(/\/graphql$/, '');
    await (await fetch(`${base}/`, { headers: { 'x-request-id': 'page-1' } })).text();
    expect(await lineFor(records, 'page-1')).toMatchObject({ method: 'GET', path: '/', operation: null, caller: null, status: 200 });
    await (await fetch(`${base}/ready`, { headers: { 'x-request-id': 'probe-1' } })).text();
    await (await fetch(`${base}/`, { headers: { 'x-request-id': 'page-2' } })).text();
    await lineFor(records, 'page-2');
    expect(records().some((r) => r.requestId === 'probe-1')).toBe(false);
  });

  it('one line per WebSocket connection when it closes, with the caller; the upgrade answers the request id', async () => {
    const { server, lines, records } = await loggedServer();
    const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws', { headers: { 'x-request-id': 'ws-1' } });
    const upgradeId = new Promise<string | undefined>((resolve) => socket.once('upgrade', (res) => resolve(res.headers['x-request-id'] as string | undefined)));
    await new Promise((resolve) => socket.once('open', resolve));
    expect(await upgradeId).toBe('ws-1');
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${TOKEN}` } }));
    await new Promise((resolve) => socket.once('message', resolve));
    socket.close(1000);
    expect(await lineFor(records, 'ws-1')).toMatchObject({ msg: 'websocket closed', protocol: 'websocket', caller: 'ops-bot', status: 101, closeCode: 1000 });
    expect(lines.join('')).not.toContain(TOKEN);
  });
});

describe('pretty format', () => {
  it('is the default on a terminal only: auto is pretty on a TTY and JSON on a pipe or file; an explicit format wins', () => {
    expect(resolveLogFormat('auto', true)).toBe('pretty');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat(undefined, true)).toBe('pretty');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
  });

  it('prints one human line per record with the same fields', () => {
    const lines: string[] = [];
    const logger = createLogger({ format: 'pretty', clock: manualClock(Date.UTC(2026, 0, 2)), destination: { write: (line: string) => lines.push(line) } });
    logger.info({ requestId: 'r1', path: '/graphql', status: 200, operation: null, errorCodes: ['A B'] }, 'request');
    expect(lines).toEqual(['2026-01-02T00:00:00.000Z INFO  request requestId=r1 path=/graphql status=200 errorCodes=["A B"]\n']);
    expect(prettyLine('not json\n')).toBe('not json\n');
  });
});

describe('souls serve logs', () => {
  it('writes startup, request and shutdown lines as JSON on standard output beside the banner; standard error stays for problems', async () => {
    const child = cli(['serve', '--port', '0', '--db', join(dir, 'souls.db')]);
    const url = (await printed(child, /Souls API on (http:\/\/\S+).*\nDatabase: .*\n/s))[1];
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'cli-1' }, body: JSON.stringify({ query: 'query Count { souls { id } }' }) });
    expect(response.status).toBe(200);
    await response.text();
    child.process.kill('SIGTERM');
    const result = await exited(child);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const lines = result.stdout.trim().split('\n');
    // Every line is either the banner's (human, unchanged) or one JSON object.
    const records = lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, any>);
    expect(lines.filter((line) => !line.startsWith('{')).join('\n')).toMatch(/^Character sheet on .*\nSouls API on .*\nDatabase: .*\n/s);
    expect(records.map((r) => r.msg)).toEqual(['memory released', 'listening', 'request', 'stopping', 'stopped']);
    expect(records[0]).toMatchObject({ level: 'info', after: 'start' });
    expect(records[1]).toMatchObject({ level: 'info', url, database: join(dir, 'souls.db'), tokens: 0 });
    expect(records[2]).toMatchObject({ requestId: 'cli-1', operation: 'Count', caller: 'local', status: 200 });
    expect(records[3]).toMatchObject({ signal: 'SIGTERM' });
    for (const record of records) expect(Date.parse(record.time)).not.toBeNaN();
  });

  it('takes --log-format pretty, SOULS_LOG_LEVEL, and refuses an unknown level naming the flag', async () => {
    const child = cli(['serve', '--port', '0', '--db', join(dir, 'pretty.db'), '--log-format', 'pretty'], { SOULS_LOG_LEVEL: 'warn' });
    await printed(child, /Database: .*\n/);
    child.process.kill('SIGTERM');
    // warn: the info lines are left out.
    const quiet = await exited(child);
    expect(quiet.stdout).toContain('Souls API on');
    expect(quiet.stdout).not.toMatch(/INFO|listening|"level"/);
    const pretty = cli(['serve', '--port', '0', '--db', join(dir, 'pretty.db'), '--log-format', 'pretty']);
    await printed(pretty, /Database: .*\n/);
    pretty.process.kill('SIGTERM');
    expect((await exited(pretty)).stdout).toMatch(/^\S+Z INFO  listening url=http:\/\/127\.0\.0\.1:\d+\/graphql /m);
    const bad = await exited(cli(['serve', '--port', '0', '--db', ':memory:', '--log-level', 'loud']));
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toBe('souls: --log-level: must be one of fatal, error, warn, info, debug, trace, silent, got "loud"\n');
    const badEnv = await exited(cli(['serve', '--port', '0', '--db', ':memory:'], { SOULS_LOG_FORMAT: 'xml' }));
    expect(badEnv.stderr).toBe('souls: SOULS_LOG_FORMAT: must be one of auto, json, pretty, got "xml"\n');
  });
});
