/**
 * node bench/subscription-fanout.ts [subscribers] [per connection]
 *
 * 2,000 identical graphql-ws subscriptions (20 sockets × 100, the default
 * caps) to soulChanged with the soul's rendered block and evidence report,
 * then one event: the time until every subscriber has it, and this process's
 * JS heap (after a full GC) before the subscribers, with them, and after the
 * event. Server and clients share the process, as in bench/api.ts.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import WebSocket from 'ws';
import { buildApp } from '../src/server/app.ts';
import { DAY_MS, createSoul, dropShards, manualClock, openSoulsDb } from '../src/engine/index.ts';
import { makeObservationCorpus } from './corpus.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapMiB = () => {
  gc();
  return (process.memoryUsage().heapUsed / 2 ** 20).toFixed(1);
};

const subscribers = Number(process.argv[2] ?? 2000);
const perSocket = Number(process.argv[3] ?? 100);
const T0 = Date.UTC(2026, 0, 1);
const db = openSoulsDb({ clock: manualClock(T0) });
const soul = await createSoul(db, { name: 'Ada', essence: 'Calm, curious and careful.' });
const corpus = makeObservationCorpus(200, 7);
await dropShards(db, corpus.map((content, i) => ({ content, source: ['chat', 'review', 'commit'][i % 3], soulIds: [soul.id], createdAt: T0 - (i % 30) * DAY_MS })));
const app = buildApp({ db, graphiql: false, limits: { maxSubscriptions: Math.max(subscribers, 2000), maxSubscriptionsPerConnection: perSocket } });
const { url } = await app.start(0, '127.0.0.1');
const query = `subscription($id: ID) { soulChanged(soulId: $id) { kind soul { rendered evidence { markdown } } } }`;

const heapBefore = heapMiB();
let received = 0;
let refused = 0;
const sockets: WebSocket[] = [];
for (let s = 0; s * perSocket < subscribers; s++) {
  const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
  sockets.push(socket);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  socket.send(JSON.stringify({ type: 'connection_init' }));
  await new Promise((resolve) => socket.once('message', resolve));
  socket.on('message', (data) => {
    const message = JSON.parse(String(data));
    if (message.type === 'next' && message.payload.data) received++;
    else if (message.type === 'next') refused++;
  });
  for (let i = 0; i < perSocket && s * perSocket + i < subscribers; i++) {
    socket.send(JSON.stringify({ id: String(i), type: 'subscribe', payload: { query, variables: { id: String(soul.id) } } }));
  }
}
await new Promise((resolve) => setTimeout(resolve, 1000));
const heapWith = heapMiB();

const sent = performance.now();
const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: `mutation { stampAttuned(soulId: "${soul.id}") { __typename } }` }) });
const returned = performance.now() - sent;
await response.text();
while (received + refused < subscribers) await new Promise((resolve) => setTimeout(resolve, 2));
const delivered = performance.now() - sent;
const heapAfter = heapMiB();

console.log(`${subscribers} subscribers on ${sockets.length} sockets (${refused} refused)`);
console.log(`stampAttuned returned after ${returned.toFixed(0)} ms; every subscriber had the event after ${delivered.toFixed(0)} ms`);
console.log(`JS heap: ${heapBefore} MiB before the subscribers, ${heapWith} MiB with them, ${heapAfter} MiB after the event`);
for (const socket of sockets) socket.close();
await app.stop();
