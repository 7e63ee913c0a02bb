// A service typed by its own codegen (../codegen.ts), with graphql-request over HTTP and graphql-ws for events:
//
//   node src/client.ts roster               the souls, readiest first, as JSON lines
//   node src/client.ts observe < shards.json drops the shards (a JSON array of DropShardInput); a refused batch exits 1
//   node src/client.ts listen <soulId>      prints the soul's next crystallizationReady event, then exits
//
// SOULS_URL names the API (http://127.0.0.1:4000/graphql by default), SOULS_TOKEN the bearer token if it needs one.
import { text } from 'node:stream/consumers';
import { print } from 'graphql';
import { GraphQLClient } from 'graphql-request';
import { createClient } from 'graphql-ws';
import { ObserveDocument, ReadyDocument, RosterDocument, type DropShardInput, type ReadySubscription } from './gql/graphql.ts';

const url = process.env.SOULS_URL ?? 'http://127.0.0.1:4000/graphql';
const authorization = process.env.SOULS_TOKEN ? { authorization: `Bearer ${process.env.SOULS_TOKEN}` } : undefined;
const http = new GraphQLClient(url, { headers: authorization });

async function roster(): Promise<void> {
  const { souls } = await http.request(RosterDocument);
  for (const soul of souls) console.log(JSON.stringify({ name: soul.name, level: soul.level, ready: soul.crystallization.ready }));
}

async function observe(inputs: DropShardInput[]): Promise<void> {
  const { dropShards } = await http.request(ObserveDocument, { inputs });
  if (dropShards.__typename === 'DropShardsPayload') {
    console.log(JSON.stringify({ shards: dropShards.shards.length, nowReady: dropShards.readySouls.map((soul) => soul.name) }));
  } else {
    console.error(`${dropShards.__typename === 'ValidationError' ? `${dropShards.field}: ` : ''}${dropShards.message}`);
    process.exitCode = 1;
  }
}

async function listen(soulId: string): Promise<void> {
  const ws = createClient({ url: url.replace(/^http/, 'ws'), connectionParams: authorization });
  const events = ws.iterate<ReadySubscription>({ query: print(ReadyDocument), variables: { soulIds: [soulId] } });
  console.log(JSON.stringify({ listening: soulId }));
  for await (const { data, errors } of events) {
    if (errors) throw new Error(errors.map((error) => error.message).join('; '));
    console.log(JSON.stringify({ ready: data?.crystallizationReady.soul.name }));
    break;
  }
  await ws.dispose();
}

const [command, argument] = process.argv.slice(2);
if (command === 'roster') await roster();
else if (command === 'observe') await observe(JSON.parse(await text(process.stdin)));
else if (command === 'listen' && argument) await listen(argument);
else {
  console.error('usage: node src/client.ts roster | observe < shards.json | listen <soulId>');
  process.exitCode = 2;
}
