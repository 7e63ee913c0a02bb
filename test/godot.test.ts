// examples/godot run by a headless Godot 3 (scripts/godot.ts finds one, or installs Debian's godot3-server as root):
// its SoulsClient node against a live server (events as signals, the rendered block over HTTP, a restart, a refused
// token), and against a scripted graphql-transport-ws peer for what a real server does not do on demand (a ping, a
// subscription cut off as too slow, a peer that stops answering). main.gd prints one `SOULS <signal> <json>` line
// per signal; the tests read those lines, and the server's event bus, until the expected state arrives.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { ensureGodot } from '../scripts/godot.ts';
import type { TokenEntry } from '../src/server/auth.ts';
import type { SoulsPubSub, Topic } from '../src/server/pubsub.ts';
import { cleanEnv } from './support/cli.ts';
import { startServer, type LiveServer } from './support/server.ts';

const PROJECT = fileURLToPath(new URL('../examples/godot', import.meta.url));
const START = Date.UTC(2026, 5, 1, 9, 30);
const TOKEN = 'tok-godot-4f1c9e2a7b3d5e8f';
const BEARER = { authorization: `Bearer ${TOKEN}` };
const TOKENS: TokenEntry[] = [{ name: 'game', token: TOKEN, scopes: ['read', 'observe', 'refine', 'admin'] }];
/** A bound on each wait, for a failure with what was seen instead of a hung test; never a measure of speed. */
const WAIT_MS = 25_000;

const godot = await ensureGodot((line) => console.log(line));

function bounded<T>(promise: Promise<T>, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what()} (waited ${WAIT_MS} ms)`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

type Printed = { signal: string; value: any };
type GodotRun = {
  /** The value of the next `signal` line (after those already taken) that `match` accepts. */
  next(signal: string, match?: (value: any) => boolean): Promise<any>;
  printed(): Printed[];
  exited(): Promise<{ code: number | null; stdout: string; stderr: string }>;
};

const running = new Set<() => void>();
const cleanups: (() => Promise<void> | void)[] = [];
/** What each Godot of the test wrote to stderr: a GDScript error there fails the test, even one Godot survived. */
let errorOutputs: (() => string)[] = [];
afterEach(async () => {
  for (const kill of running) kill();
  running.clear();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  const scriptErrors = errorOutputs.map((stderr) => stderr()).filter((stderr) => /SCRIPT ERROR|Parse Error/.test(stderr));
  errorOutputs = [];
  expect(scriptErrors).toEqual([]);
});

/** The example scene, headless, with `args` after `--`; its own HOME (Godot writes its user folder there). */
function runGodot(args: string[], env: Record<string, string> = {}): GodotRun {
  if (!('path' in godot)) throw new Error(godot.missing);
  const home = mkdtempSync(join(tmpdir(), 'souls-godot-'));
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  const child = spawn(godot.path, ['--path', PROJECT, '--', ...args], { env: cleanEnv({ HOME: home, LANG: 'en_US.UTF-8', ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  const kill = () => child.kill('SIGKILL');
  running.add(kill);
  let stdout = '';
  let stderr = '';
  const printed: Printed[] = [];
  let taken = 0;
  const listeners = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    printed.length = 0;
    for (const match of stdout.matchAll(/^SOULS (\w+) (.*)$/gm)) printed.push({ signal: match[1], value: JSON.parse(match[2]) });
    for (const listener of listeners) listener();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  errorOutputs.push(() => stderr);
  const closed = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.once('close', (code) => {
      running.delete(kill);
      resolve({ code, stdout, stderr });
      for (const listener of listeners) listener();
    });
  });
  const output = () => `Godot printed:\n${stdout}\nstderr:\n${stderr}`;
  return {
    printed: () => [...printed],
    exited: () => bounded(closed, () => `Godot did not exit. ${output()}`),
    next(signal, match = () => true) {
      return bounded(
        new Promise((resolve, reject) => {
          const check = () => {
            const index = printed.findIndex((line, i) => i >= taken && line.signal === signal && match(line.value));
            if (index >= 0) {
              listeners.delete(check);
              taken = index + 1;
              resolve(printed[index].value);
            } else if (child.exitCode !== null || child.signalCode !== null) {
              listeners.delete(check);
              reject(new Error(`Godot exited (${child.exitCode ?? child.signalCode}) before printing ${signal}. ${output()}`));
            }
          };
          listeners.add(check);
          check();
        }),
        () => `Godot did not print ${signal}. ${output()}`,
      );
    },
  };
}

/**
 * Counts the readers attached to a server's event bus, by topic. A subscription's stream attaches on its first read,
 * synchronously: once a topic has its reader, an event published from then on reaches the subscriber.
 */
function busReaders(pubsub: SoulsPubSub) {
  const attached = new Map<Topic, number>();
  const listeners = new Set<() => void>();
  const subscribe = pubsub.subscribe.bind(pubsub);
  pubsub.subscribe = ((topic: Topic) => {
    const stream = subscribe(topic);
    const next = stream.next.bind(stream);
    let first = true;
    stream.next = () => {
      const step = next();
      if (first) {
        first = false;
        attached.set(topic, (attached.get(topic) ?? 0) + 1);
        for (const listener of listeners) listener();
      }
      return step;
    };
    return stream;
  }) as SoulsPubSub['subscribe'];
  return {
    reading: (topics: Topic[]) =>
      bounded(
        new Promise<void>((resolve) => {
          const check = () => topics.every((topic) => attached.has(topic)) && (listeners.delete(check), resolve());
          listeners.add(check);
          check();
        }),
        () => `the server's event bus never had readers of ${topics.join(' and ')}: ${JSON.stringify([...attached])}`,
      ),
  };
}

async function tokenServer(options: { path?: string; port?: number } = {}): Promise<LiveServer> {
  const server = await startServer({ start: START, ...options, app: { tokens: TOKENS } });
  cleanups.push(() => server.stop());
  return server;
}

async function createSoul(server: LiveServer, name: string): Promise<string> {
  const data = await server.data(`mutation($input: CreateSoulInput!) { createSoul(input: $input) { ... on SoulPayload { soul { id } } } }`, { input: { name, essence: `${name} keeps the village well.` } }, BEARER);
  return data.createSoul.soul.id;
}

/** Three shards from two sources over two days: enough to make a fresh soul ready; answers the souls made ready. */
async function makeReady(server: LiveServer, soulId: string, topic: string): Promise<string[]> {
  const daysAgo = (days: number) => new Date(server.clock.now() - days * 86_400_000).toISOString();
  const inputs = [
    { content: `Guarded the ${topic} through the night without complaint.`, source: 'session_observation', soulIds: [soulId], createdAt: daysAgo(3) },
    { content: `Haggled hard over the price of ${topic} with a travelling merchant.`, source: 'dialogue', soulIds: [soulId], createdAt: daysAgo(2) },
    { content: `Sang an old marching song while mending ${topic}.`, source: 'dialogue', soulIds: [soulId], createdAt: daysAgo(1) },
  ];
  const data = await server.data(`mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { ... on DropShardsPayload { readySouls { id } } } }`, { inputs }, BEARER);
  return data.dropShards.readySouls.map((soul: { id: string }) => soul.id);
}

async function levelUp(server: LiveServer, soulId: string, newEssence: string): Promise<void> {
  const plan = { newEssence, consolidations: [], promotedTraitIds: [], carriedTraitIds: [] };
  const data = await server.data(`mutation($id: ID!, $plan: LevelUpPlanInput!) { levelUp(soulId: $id, plan: $plan) { __typename } }`, { id: soulId, plan }, BEARER);
  expect(data.levelUp.__typename).toBe('LevelUpPayload');
}

if ('missing' in godot) {
  console.warn(godot.missing);
  it('runs examples/godot headless (skipped: no Godot 3 on this machine)', (context) => context.skip(godot.missing));
} else {
  describe(`examples/godot on Godot ${godot.version}, against a live server`, { timeout: 90_000 }, () => {
    it('authenticates, hears its NPC’s readiness and level-up as signals, and reads the rendered block over HTTP', async () => {
      const server = await tokenServer();
      const watched = await createSoul(server, 'Hale');
      const other = await createSoul(server, 'Wren');
      const bus = busReaders(server.app.pubsub);
      const game = runGodot([`--url=${server.url}`, `--soul=${watched}`], { SOULS_TOKEN: TOKEN });

      expect(await game.next('connected')).toEqual({ url: server.wsUrl, soul_id: watched });
      expect(await game.next('rendered')).toEqual({ soul_id: watched, rendered: '# Hale\n\nHale keeps the village well.\n' });
      await bus.reading(['crystallizationReady', 'levelChanged']);

      expect(await makeReady(server, other, 'bridge')).toEqual([other]);
      expect(await makeReady(server, watched, 'well')).toEqual([watched]);
      const ready = await game.next('ready');
      expect(ready).toMatchObject({ at: new Date(server.clock.now()).toISOString(), soul: { id: watched, name: 'Hale', crystallization: { pendingCount: 3, distinctSources: 2, ageSpreadDays: 2 } } });
      expect(ready.priority).toBeGreaterThan(0);

      await levelUp(server, watched, 'Hale guards the village well.');
      expect(await game.next('level')).toMatchObject({ kind: 'LEVEL_UP', soul: { id: watched, level: 1 }, event: { level: 1, essenceBefore: 'Hale keeps the village well.', essenceAfter: 'Hale guards the village well.' } });
      expect(await game.next('rendered')).toEqual({ soul_id: watched, rendered: '# Hale\n\nHale guards the village well.\n' });
      // Events arrive in order: Wren's readiness, published before Hale's, would be among them had the filter let it through.
      expect(game.printed().filter((line) => line.signal === 'ready' || line.signal === 'level').map((line) => line.value.soul.id)).toEqual([watched, watched]);
    });

    it('reconnects with growing, jittered delays while the server is down, subscribes again, and hears later events', async () => {
      const folder = mkdtempSync(join(tmpdir(), 'souls-godot-db-'));
      cleanups.push(() => rmSync(folder, { recursive: true, force: true }));
      const path = join(folder, 'souls.db');
      const first = await tokenServer({ path });
      const port = Number(new URL(first.url).port);
      const soul = await createSoul(first, 'Hale');
      const bus = busReaders(first.app.pubsub);
      const game = runGodot([`--url=${first.url}`, `--soul=${soul}`, `--token=${TOKEN}`, '--reconnect-initial=0.2', '--reconnect-max=1.6']);
      await game.next('connected');
      await bus.reading(['crystallizationReady', 'levelChanged']);

      await first.stop();
      const goingAway = await game.next('disconnected');
      expect(goingAway).toMatchObject({ code: 1001 });
      // Attempt n waits between base/2 and base, base = min(1.6, 0.2 × 2^n): the delays grow until the cap.
      const refused = [await game.next('disconnected'), await game.next('disconnected'), await game.next('disconnected')];
      const delays = [goingAway, ...refused].map((line) => line.retry_in);
      [0.2, 0.4, 0.8, 1.6].forEach((base, n) => {
        expect(delays[n]).toBeGreaterThanOrEqual(base / 2);
        expect(delays[n]).toBeLessThanOrEqual(base);
      });
      for (const line of refused) expect(line.reason).toBe(`cannot connect to ${first.wsUrl}`);

      const second = await tokenServer({ path, port });
      const busAgain = busReaders(second.app.pubsub);
      await game.next('connected');
      await busAgain.reading(['crystallizationReady', 'levelChanged']);
      expect(await makeReady(second, soul, 'well')).toEqual([soul]);
      expect(await game.next('ready')).toMatchObject({ soul: { id: soul, name: 'Hale' } });
      await levelUp(second, soul, 'Hale guards the village well.');
      expect(await game.next('level')).toMatchObject({ kind: 'LEVEL_UP', soul: { id: soul, level: 1 } });
    });

    it('stops at a refused token and says why, without trying again', async () => {
      const server = await tokenServer();
      const soul = await createSoul(server, 'Hale');
      let upgrades = 0;
      server.app.server.on('upgrade', () => upgrades++);

      const wrong = await runGodot([`--url=${server.url}`, `--soul=${soul}`, '--token=not-a-token', '--reconnect-initial=0.05']).exited();
      expect(wrong.code).toBe(1);
      expect(wrong.stdout).toContain('SOULS stopped {"reason":"the server refused the connection (4403 Forbidden): it does not accept this token"}');
      expect(wrong.stderr).toContain('souls: the server refused the connection (4403 Forbidden): it does not accept this token');
      expect(wrong.stdout).not.toContain('SOULS disconnected');

      const none = await runGodot([`--url=${server.url}`, `--soul=${soul}`, '--reconnect-initial=0.05']).exited();
      expect(none.code).toBe(1);
      expect(none.stderr).toContain('souls: the server refused the connection (4403 Forbidden): it requires one (set token)');
      expect(upgrades).toBe(2);
    });

    it('exits 2 with its usage when no soul is named', async () => {
      const run = await runGodot(['--url=http://127.0.0.1:9/graphql']).exited();
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('usage: godot3-server --path examples/godot -- --soul=ID');
    });
  });

  describe('examples/godot against a scripted graphql-transport-ws peer', { timeout: 90_000 }, () => {
    it('answers ping with pong, and subscribes again after SUBSCRIBER_TOO_SLOW', async () => {
      const peer = await scriptedPeer({ answerPings: true });
      const game = runGodot([`--url=${peer.url}`, '--soul=7', '--token=tok-7', '--keepalive=0']);

      const socket = await peer.connection(0);
      expect(socket.protocol).toBe('graphql-transport-ws');
      expect(await socket.next('connection_init')).toEqual({ type: 'connection_init', payload: { authorization: 'Bearer tok-7' } });
      socket.send({ type: 'connection_ack' });
      const subscriptions = [await socket.next('subscribe'), await socket.next('subscribe')];
      expect(subscriptions.map((s) => [s.id, s.payload.operationName, s.payload.variables])).toEqual([
        ['ready', 'NpcReady', { soulIds: ['7'] }],
        ['level', 'NpcLevel', { soulId: '7' }],
      ]);
      expect(await game.next('rendered')).toEqual({ soul_id: '7', rendered: '# Wren\n' });
      expect(peer.requests[0].headers.authorization).toBe('Bearer tok-7');
      expect(JSON.parse(peer.requests[0].body)).toMatchObject({ operationName: 'NpcRendered', variables: { soulId: '7' } });

      socket.send({ type: 'ping' });
      expect(await socket.next('pong')).toEqual({ type: 'pong' });

      const tooSlow = { message: 'this subscriber fell 100000 events behind and was closed', extensions: { code: 'SUBSCRIBER_TOO_SLOW' } };
      socket.send({ id: 'ready', type: 'next', payload: { errors: [tooSlow] } });
      socket.send({ id: 'ready', type: 'complete' });
      expect(await game.next('failed')).toEqual({ what: 'ready', message: tooSlow.message });
      expect(await socket.next('subscribe')).toMatchObject({ id: 'ready', payload: { operationName: 'NpcReady' } });
      const event = { at: '2026-06-01T09:30:00.000Z', priority: 12, soul: { id: '7', name: 'Wren', crystallization: { pendingCount: 3, distinctSources: 2, ageSpreadDays: 2 } } };
      socket.send({ id: 'ready', type: 'next', payload: { data: { crystallizationReady: event } } });
      expect(await game.next('ready')).toEqual(event);
      expect(socket.binaryFrames).toBe(0);
    });

    // The peer never answers a ping, so how soon a pong would have come does not matter.
    it('pings on its own, and reopens a connection whose pong does not come back', async () => {
      const peer = await scriptedPeer({ answerPings: false });
      const game = runGodot([`--url=${peer.url}`, '--soul=7', '--keepalive=0.3', '--reconnect-initial=0.1']);
      const socket = await peer.connection(0);
      expect(await socket.next('connection_init')).toEqual({ type: 'connection_init', payload: {} });
      socket.send({ type: 'connection_ack' });
      await game.next('connected');
      expect(await socket.next('ping')).toEqual({ type: 'ping' });
      expect(await socket.closed).toEqual({ code: 4408, reason: 'no pong within 0.3 s' });
      expect(await game.next('disconnected')).toMatchObject({ code: 4408, reason: 'no pong within 0.3 s' });

      const again = await peer.connection(1);
      await again.next('connection_init');
      again.send({ type: 'connection_ack' });
      expect([(await again.next('subscribe')).id, (await again.next('subscribe')).id]).toEqual(['ready', 'level']);
      await game.next('connected');
    });
  });
}

type PeerSocket = {
  protocol: string;
  /** The next message of this type the client sent (after those already taken of that type). */
  next(type: string): Promise<any>;
  send(message: object): void;
  /** Binary frames the client sent (the protocol's messages are text). */
  binaryFrames: number;
  closed: Promise<{ code: number; reason: string }>;
};

/** A graphql-transport-ws server that does what the test says (answering pings, or not), and answers POST /graphql with one soul. */
async function scriptedPeer(options: { answerPings: boolean }) {
  const requests: { headers: IncomingHttpHeaders; body: string }[] = [];
  const http = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      requests.push({ headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: { soul: { id: '7', name: 'Wren', level: 0, rendered: '# Wren\n' } } }));
    });
  });
  const wss = new WebSocketServer({ server: http, path: '/graphql', handleProtocols: (protocols) => (protocols.has('graphql-transport-ws') ? 'graphql-transport-ws' : false) });
  const sockets: PeerSocket[] = [];
  const listeners = new Set<() => void>();
  wss.on('connection', (ws: WebSocket) => {
    sockets.push(peerSocket(ws, options.answerPings));
    for (const listener of listeners) listener();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const client of wss.clients) client.terminate();
    await new Promise((resolve) => wss.close(resolve));
    await new Promise((resolve) => http.close(resolve));
  });
  const address = http.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}/graphql`,
    requests,
    connection: (index: number) =>
      bounded(
        new Promise<PeerSocket>((resolve) => {
          const check = () => sockets[index] && (listeners.delete(check), resolve(sockets[index]));
          listeners.add(check);
          check();
        }),
        () => `the client never opened connection ${index + 1}`,
      ),
  };
}

function peerSocket(ws: WebSocket, answerPings: boolean): PeerSocket {
  const received: any[] = [];
  const taken = new Map<string, number>();
  const listeners = new Set<() => void>();
  const socket: PeerSocket = {
    protocol: ws.protocol,
    binaryFrames: 0,
    send: (message) => ws.send(JSON.stringify(message)),
    // Godot 3.2 sends a close reason with its C string's NUL at the end.
    closed: new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString().replace(/\0$/, '') }))),
    next: (type) =>
      bounded(
        new Promise((resolve) => {
          const check = () => {
            const seen = received.filter((message) => message.type === type);
            const index = taken.get(type) ?? 0;
            if (seen.length <= index) return;
            taken.set(type, index + 1);
            listeners.delete(check);
            resolve(seen[index]);
          };
          listeners.add(check);
          check();
        }),
        () => `the client never sent ${type}; it sent ${JSON.stringify(received)}`,
      ),
  };
  ws.on('message', (data, isBinary) => {
    if (isBinary) socket.binaryFrames++;
    const message = JSON.parse(data.toString());
    received.push(message);
    if (message.type === 'ping' && answerPings) socket.send({ type: 'pong' });
    for (const listener of [...listeners]) listener();
  });
  return socket;
}
