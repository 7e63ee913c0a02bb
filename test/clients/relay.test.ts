// Relay: examples/relay-project, copied to a folder of its own with schema/schema.graphql and the dashboard of
// examples/dashboard.graphql, compiled by relay-compiler (which must accept @connection on `shards` and
// `soulsConnection`), type-checked by tsc, then run through relay-runtime with its environment against a live server.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  commitLocalUpdate,
  commitMutation,
  ConnectionHandler,
  fetchQuery,
  requestSubscription,
  type ConcreteRequest,
  type Environment,
  type GraphQLTaggedNode,
  type MutationParameters,
} from 'relay-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, DASHBOARD, expectDashboard, INVALID_SHARDS_ERROR, invalidShards, readinessHeard, serverPerFile, TOKEN, type ReadinessClient } from './support.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

type Run = { code: number; output: string };

const server = serverPerFile();
const tokened = serverPerFile({ tokens: true });
let project: string;
let compiled: Run;
let environmentOf: (url: string, token?: string) => Environment;

/** A command of the project's packages, run on this Node in the project folder. */
function run(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve) =>
    execFile(process.execPath, [command, ...args], { cwd: project }, (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, output: stdout + stderr })),
  );
}

/** The artifact relay-compiler wrote for an operation, as the Babel plugin would import it. */
async function artifact(name: string): Promise<ConcreteRequest> {
  return (await import(join(project, 'src/__generated__', `${name}.graphql.ts`))).default;
}

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), 'souls-relay-project-'));
  cpSync(join(ROOT, 'examples/relay-project'), project, { recursive: true, filter: (source) => !source.includes('__generated__') });
  cpSync(join(ROOT, 'schema/schema.graphql'), join(project, 'schema.graphql'));
  symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir');
  // The dashboard as written for every client, under the name Relay asks of an operation in src/dashboard.ts.
  const dashboard = DASHBOARD.replace(/^query Dashboard\b/m, 'query dashboardQuery');
  writeFileSync(join(project, 'src/dashboard.ts'), `import { graphql } from 'relay-runtime';\n\nexport default graphql\`\n${dashboard}\`;\n`);
  compiled = await run(join(ROOT, 'node_modules/relay-compiler/cli.js'), []);
  if (compiled.code === 0) environmentOf = (await import(join(project, 'src/environment.ts'))).soulsRelayEnvironment;
}, 60_000);

afterAll(() => rmSync(project, { recursive: true, force: true }));

function mutate(environment: Environment, mutation: GraphQLTaggedNode, variables: MutationParameters['variables']): Promise<MutationParameters['response']> {
  return new Promise((resolve, reject) => commitMutation(environment, { mutation, variables, onCompleted: (response) => resolve(response), onError: reject }));
}

describe('relay-compiler', () => {
  it('compiles the operations against schema/schema.graphql, @connection on shards and soulsConnection included', () => {
    expect(compiled.code, compiled.output).toBe(0);
    expect(readdirSync(join(project, 'src/__generated__')).sort()).toEqual([
      'dashboardQuery.graphql.ts',
      'soulsObserveMutation.graphql.ts',
      'soulsReadySubscription.graphql.ts',
      'soulsRosterQuery.graphql.ts',
      'soulsShardsQuery.graphql.ts',
    ]);
    for (const [name, key] of [['soulsRosterQuery', 'souls_soulsConnection'], ['soulsShardsQuery', 'souls_shards']]) {
      const text = readFileSync(join(project, 'src/__generated__', `${name}.graphql.ts`), 'utf8');
      expect(text).toContain('"handle": "connection"');
      expect(text).toContain(`"key": "${key}"`);
    }
  });

  it('writes artifacts that tsc accepts with the project’s environment', async () => {
    expect(compiled.code, compiled.output).toBe(0);
    const checked = await run(join(ROOT, 'node_modules/typescript/bin/tsc'), ['--noEmit', '-p', 'tsconfig.json']);
    expect(checked.code, checked.output).toBe(0);
  });
});

describe('relay-runtime with the Souls environment', () => {
  it('reads the dashboard of examples/dashboard.graphql, as the server answers it', async () => {
    await expectDashboard(server(), await fetchQuery(environmentOf(server().url), await artifact('dashboardQuery'), {}).toPromise());
  });

  it('pages the roster into one @connection record', async () => {
    const environment = environmentOf(server().url);
    const roster = await artifact('soulsRosterQuery');
    const names = () => {
      let read: unknown[] = [];
      commitLocalUpdate(environment, (store) => {
        const connection = ConnectionHandler.getConnection(store.getRoot(), 'souls_soulsConnection', { orderBy: 'NAME' });
        read = (connection?.getLinkedRecords('edges') ?? []).map((edge) => edge?.getLinkedRecord('node')?.getValue('name'));
      });
      return read;
    };
    const first = (await fetchQuery(environment, roster, { first: 1 }).toPromise()) as { soulsConnection: { totalCount: number } };
    expect(names()).toHaveLength(1);
    const page = await server().data('{ soulsConnection(first: 1, orderBy: NAME) { pageInfo { endCursor } } souls(orderBy: NAME) { name } }');
    await fetchQuery(environment, roster, { first: 50, after: page.soulsConnection.pageInfo.endCursor }).toPromise();
    expect(page.souls.length).toBeGreaterThan(1);
    expect(names()).toEqual(page.souls.map((soul: { name: string }) => soul.name));
    expect(first.soulsConnection.totalCount).toBe(page.souls.length);
  });

  it('keeps soul 1 and shard 1 apart (getDataID), the soul’s shards in their @connection', async () => {
    const environment = environmentOf(server().url);
    const data = (await fetchQuery(environment, await artifact('soulsShardsQuery'), { soulId: '1', first: 50 }).toPromise()) as {
      soul: { id: string; name: string; shards: { totalCount: number; edges: { node: { id: string } }[] } };
    };
    expect(data.soul.shards.edges.map((edge) => edge.node.id)).toContain('1');
    const store = environment.getStore().getSource();
    expect(store.get('Soul:1')).toMatchObject({ __typename: 'Soul', name: data.soul.name });
    expect(store.get('Shard:1')).toMatchObject({ __typename: 'Shard' });
  });

  it('hears crystallizationReady when its own mutation makes a soul ready', async () => {
    await readinessHeard(server(), 'websocket', 'Tamsin', readiness(environmentOf(server().url)));
  });

  it('reads a ValidationError whole through `... on Error`', async () => {
    const response = await mutate(environmentOf(server().url), await artifact('soulsObserveMutation'), { inputs: invalidShards('1') });
    expect(response).toEqual({ dropShards: INVALID_SHARDS_ERROR });
  });
});

describe('relay-runtime on a server with tokens', () => {
  it('sends the token as a Bearer header and as connectionParams', async () => {
    const environment = environmentOf(tokened().url, TOKEN);
    await expectDashboard(tokened(), await fetchQuery(environment, await artifact('dashboardQuery'), {}).toPromise(), bearer(TOKEN));
    await readinessHeard(tokened(), 'websocket', 'Hale', readiness(environment), bearer(TOKEN));
  });

  it('fails the operation with the server’s reason without one', async () => {
    await expect(fetchQuery(environmentOf(tokened().url), await artifact('dashboardQuery'), {}).toPromise()).rejects.toThrow('a valid bearer token is required');
  });
});

/** The environment as the readiness check drives it: requestSubscription over graphql-ws, commitMutation over HTTP. */
function readiness(environment: Environment): ReadinessClient {
  return {
    subscribe(soulId) {
      let subscription = { dispose: () => {} };
      const event = artifact('soulsReadySubscription').then(
        (ready) => new Promise((resolve, reject) => (subscription = requestSubscription(environment, { subscription: ready, variables: { soulIds: [soulId] }, onNext: resolve, onError: reject }))),
      );
      return { event, stop: () => subscription.dispose() };
    },
    dropShards: async (inputs) => mutate(environment, await artifact('soulsObserveMutation'), { inputs }),
  };
}
