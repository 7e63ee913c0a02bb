// Every example client runs as a child process against a live server; the test checks its output and,
// over GraphQL, what it changed.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { draftPrinciple, imperative } from '../examples/refine.ts';
import { seedSouls } from '../examples/seed.ts';
import { startServer, type LiveServer } from './support/server.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const START = Date.UTC(2026, 5, 1, 9, 30);
/** A bound for a hang, not a speed check: five examples started at once took over 15 s to exit at load 15. */
const RUN_TIMEOUT_MS = 60_000;

type Run = { code: number | null; stdout: string; stderr: string };

let server: LiveServer;
const children = new Set<ChildProcess>();

beforeEach(async () => {
  server = await startServer({ start: START });
});

afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  vi.restoreAllMocks();
  await server.stop();
});

function launch(example: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [`examples/${example}.ts`, ...args], {
    cwd: ROOT,
    env: { ...process.env, SOULS_URL: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const output = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output.stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk));
  const exited = new Promise<Run>((resolve) => {
    child.once('close', (code) => {
      children.delete(child);
      resolve({ code, ...output });
    });
  });
  /** Resolves when the process exits; fails with what it printed so far when it takes too long. */
  const done = (timeoutMs = RUN_TIMEOUT_MS) =>
    bounded(exited, timeoutMs, () => `examples/${example}.ts did not exit within ${timeoutMs} ms.\nstdout:\n${output.stdout}\nstderr:\n${output.stderr}`);
  /** Resolves once stdout matches; fails early if the process exits first. */
  const printed = (pattern: RegExp, timeoutMs = RUN_TIMEOUT_MS) =>
    bounded(
      new Promise<void>((resolve, reject) => {
        const check = () => pattern.test(output.stdout) && resolve();
        child.stdout.on('data', check);
        check();
        void exited.then((run) => reject(new Error(`examples/${example}.ts exited (${run.code}) before printing ${pattern}.\n${run.stdout}\n${run.stderr}`)));
      }),
      timeoutMs,
      () => `examples/${example}.ts did not print ${pattern} within ${timeoutMs} ms.\nstdout:\n${output.stdout}\nstderr:\n${output.stderr}`,
    );
  return { child, done, printed, output };
}

function bounded<T>(promise: Promise<T>, timeoutMs: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message())), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Runs an example to completion against the live server. */
async function run(example: string, ...args: string[]): Promise<Run> {
  return launch(example, [server.url, ...args]).done();
}

function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  return server.data(query, variables);
}

const serverNow = () => new Date(server.clock.now()).toISOString();

async function seed(): Promise<Run> {
  const result = await run('seed', '--now', serverNow());
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return result;
}

const daysAgo = (days: number) => new Date(server.clock.now() - days * 86_400_000).toISOString();

/** Three shards from two sources over two days: enough to make a fresh soul ready. */
function readyingShards(soulId: string, topic: string) {
  return [
    { content: `Guarded the ${topic} through the night without complaint.`, source: 'session_observation', soulIds: [soulId], createdAt: daysAgo(3) },
    { content: `Haggled hard over the price of ${topic} with a travelling merchant.`, source: 'dialogue', soulIds: [soulId], createdAt: daysAgo(2) },
    { content: `Sang an old marching song while mending ${topic}.`, source: 'dialogue', soulIds: [soulId], createdAt: daysAgo(1) },
  ];
}

async function createSoul(name: string): Promise<string> {
  const data = await gql(`mutation($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } } }`, {
    input: { name, essence: `${name} keeps watch over the village.` },
  });
  expect(data.createSoul.__typename).toBe('SoulPayload');
  return data.createSoul.soul.id;
}

async function dropShards(inputs: unknown[]): Promise<string[]> {
  const data = await gql(`mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { readySouls { id } } ... on Error { message } } }`, {
    inputs,
  });
  expect(data.dropShards.__typename, data.dropShards.message).toBe('DropShardsPayload');
  return data.dropShards.readySouls.map((s: { id: string }) => s.id);
}

describe('examples/seed.ts and examples/dashboard.ts', () => {
  it('seeds a roster with ready souls, and the dashboard shows every seeded soul in one table', async () => {
    const seeded = await seed();
    for (const soul of seedSouls) expect(seeded.stdout).toContain(`${soul.name}: created`);

    const { souls, crystallizationReadiness } = await gql(
      `{ souls(orderBy: NAME) { name level activeTraitCount traitLimit pendingShardCount } crystallizationReadiness { soul { name } } }`,
    );
    expect(souls.map((s: { name: string }) => s.name).sort()).toEqual(seedSouls.map((s) => s.name).sort());
    expect(crystallizationReadiness.length).toBeGreaterThan(0);

    // SOULS_URL instead of a positional URL
    const dashboard = await launch('dashboard', [], { SOULS_URL: server.url }).done();
    expect(dashboard.stderr).toBe('');
    expect(dashboard.code).toBe(0);
    expect(dashboard.stdout).toContain(`${souls.length} souls, ${crystallizationReadiness.length} ready for refinement`);
    const rows = dashboard.stdout.split('\n');
    expect(rows.some((row) => /^name\s+level\s+traits\s+pending\s+ready\s+health\s+top cluster$/.test(row))).toBe(true);
    for (const soul of souls) {
      const row = rows.find((r) => r.startsWith(`${soul.name} `));
      expect(row, `a table row for ${soul.name}`).toBeDefined();
      const cells = row!.split(/\s{2,}/);
      expect(cells.slice(0, 4)).toEqual([soul.name, String(soul.level), `${soul.activeTraitCount}/${soul.traitLimit}`, String(soul.pendingShardCount)]);
      const ready = crystallizationReadiness.some((r: { soul: { name: string } }) => r.soul.name === soul.name);
      expect(cells[4].startsWith(ready ? 'yes (' : 'no')).toBe(true);
    }
    // the readiest soul's heaviest cluster, as the dashboard summarises it
    expect(dashboard.stdout).toMatch(/3× novel: Split the migration into three smaller tasks/);
    // and what each soul's report suggests doing next
    expect(dashboard.stdout).toMatch(/^ {2}next {2}ready_for_refinement: /m);
  });

  it('leaves an already seeded server alone on a second run', async () => {
    await seed();
    const before = await gql(`{ souls { id activeTraitCount pendingShardCount } }`);
    const again = await seed();
    expect(again.stdout).toContain('Nothing to seed');
    expect(await gql(`{ souls { id activeTraitCount pendingShardCount } }`)).toEqual(before);
  });

  it('exits non-zero with a readable message when the API cannot answer', async () => {
    const result = await launch('dashboard', [server.url.replace(/\/graphql$/, '/nowhere')]).done();
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: .*HTTP 404/);
  });
});

describe('examples/refine.ts', () => {
  /** The hint the character sheet gives under "Principle", which the example's output teaches too. */
  const principleHint = /label="Principle" hint="([^"]+)"/.exec(readFileSync(new URL('../web/src/refine.tsx', import.meta.url), 'utf8'))![1];

  it('drafts an imperative principle from the top ready soul’s heaviest novel cluster, cites the cluster and attunes the soul', async () => {
    await seed();
    const { crystallizationReadiness } = await gql(`{ crystallizationReadiness { soul { id name } } }`);
    const top = crystallizationReadiness[0].soul;
    const before = (
      await gql(
        `query($id: ID!) { soul(id: $id) { activeTraitCount lastAttunedAt rendered
          evidence { clusters { memberCount representative { content } members { id content } alignment { kind } } } } }`,
        { id: top.id },
      )
    ).soul;
    expect(before.lastAttunedAt).toBeNull();
    const novel = before.evidence.clusters.find((c: { alignment: { kind: string }; memberCount: number }) => c.alignment.kind === 'NOVEL' && c.memberCount > 1);
    expect(novel.members.map((m: { content: string }) => m.content).sort()).toEqual([
      'Split the failing test suite into smaller tasks before delegating the fixes.',
      'Split the migration into three smaller tasks before delegating it.',
      'Split the refactor into four smaller tasks before delegating it.',
    ]);
    const principle = 'Split the migration, the refactor or the failing test suite into smaller tasks before delegating it.';

    const result = await run('refine');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`refining ${top.name} (id ${top.id}`);
    expect(result.stdout).toContain(`Before (${before.activeTraitCount}/10 traits):`);
    expect(result.stdout).toContain('chosen: NOVEL cluster of 3 shards:');
    expect(result.stdout).toContain(`principle: ${principle}\n`);
    expect(result.stdout.toLowerCase()).toContain(principleHint.toLowerCase());
    expect(result.stdout).toContain('no provenance, no trait');
    expect(result.stdout).toContain('citing 3 shards;');
    expect(result.stdout.split('After:')[1]).toContain(`- ${principle}`);

    const after = (
      await gql(`query($id: ID!) { soul(id: $id) { activeTraitCount lastAttunedAt crystallization { ready } traits { principle provenance citations { id } } } }`, {
        id: top.id,
      })
    ).soul;
    expect(after.activeTraitCount).toBe(before.activeTraitCount + 1);
    expect(after.lastAttunedAt).toBe(serverNow());
    expect(after.crystallization.ready).toBe(false);
    const added = after.traits.find((t: { principle: string }) => t.principle === principle);
    expect(added, 'the new trait').toBeDefined();
    for (const member of novel.members) expect(added.principle).not.toBe(member.content);
    expect(added.provenance).toContain(`Evidence cluster of 3 shards`);
    expect(added.citations.map((s: { id: string }) => s.id).sort()).toEqual(novel.members.map((s: { id: string }) => s.id).sort());
  });

  it('from a single shard: the verb in the imperative, "citing 1 shard"', async () => {
    const id = await createSoul('Oswin');
    expect(await dropShards(readyingShards(id, 'gate'))).toEqual([id]);
    const drafts: Record<string, string> = {
      'Guarded the gate through the night without complaint.': 'Guard the gate through the night without complaint.',
      'Haggled hard over the price of gate with a travelling merchant.': 'Haggle hard over the price of gate with a travelling merchant.',
      'Sang an old marching song while mending gate.': 'Sing an old marching song while mending gate.',
    };
    const { soul } = await gql(`query($id: ID!) { soul(id: $id) { evidence { clusters { memberCount representative { content } } } } }`, { id });
    expect(soul.evidence.clusters.map((c: { memberCount: number }) => c.memberCount)).toEqual([1, 1, 1]);
    const heaviest = soul.evidence.clusters[0].representative.content;

    const result = await run('refine');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('chosen: NOVEL cluster of 1 shard:');
    expect(result.stdout).toContain(`principle: ${drafts[heaviest]}\n`);
    expect(result.stdout).toContain('citing 1 shard;');
    const { soul: after } = await gql(`query($id: ID!) { soul(id: $id) { traits { principle citations { content } } } }`, { id });
    expect(after.traits).toEqual([{ principle: drafts[heaviest], citations: [{ content: heaviest }] }]);
  });

  it('drafts deterministically: names what the shards differ on, drops the counts, speaks to the soul as "you"', () => {
    const cluster = (...contents: string[]) => ({ representative: { id: '1', content: contents[0] }, members: contents.map((content, i) => ({ id: String(i + 1), content })) });
    expect(draftPrinciple(cluster('Refused to sell a sword before the quench had fully cooled.', 'Refused to sell an axe before the quench had fully cooled.'))).toBe(
      'Refuse to sell a sword or an axe before the quench had fully cooled.',
    );
    expect(draftPrinciple(cluster('Ignored a rumour of wolves until she found the tracks herself.'))).toBe('Ignore a rumour of wolves until you found the tracks yourself.');
    expect(draftPrinciple(cluster('Readers found the weekly status notes too long to act on.'))).toBe('Remember that readers found the weekly status notes too long to act on.');
    expect(draftPrinciple(cluster('Re-ran the benchmark itself instead of trusting the summary.', 'Re-ran the load test itself instead of trusting the summary.'))).toBe(
      'Re-run the benchmark or the load test yourself instead of trusting the summary.',
    );
    expect(['Checked', 'Haggled', 'Ignored', 'Stopped', 'Carried', 'Told', 'Updated', 'Mapped'].map(imperative)).toEqual(['Check', 'Haggle', 'Ignore', 'Stop', 'Carry', 'Tell', 'Update', 'Map']);
  });

  it('says so and exits 0 when nothing is ready', async () => {
    const result = await run('refine');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Nothing is ready for refinement');
  });

  it('recommends a level-up instead of attuning when the soul is at capacity', async () => {
    await server.stop();
    server = await startServer({ start: START, settings: { traitLimit: 1 } });
    const id = await createSoul('Oswin');
    await gql(`mutation($id: ID!) { addTrait(soulId: $id, input: { principle: "Keep the gate shut after dusk.", provenance: "Design brief." }) { __typename } }`, { id });
    expect(await dropShards(readyingShards(id, 'gate'))).toEqual([id]);

    const result = await run('refine');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Oswin is at capacity (1/1 traits): a level-up is recommended');
    const { soul } = await gql(`query($id: ID!) { soul(id: $id) { activeTraitCount lastAttunedAt crystallization { ready } } }`, { id });
    expect(soul).toEqual({ activeTraitCount: 1, lastAttunedAt: null, crystallization: { ready: true } });
  });
});

describe('examples/npc-subscriber.ts', () => {
  it('prints the filtered soul’s crystallizationReady and levelChanged events as they happen, then exits after --count', async () => {
    const watched = await createSoul('Hale');
    const other = await createSoul('Wren');
    const subscribe = vi.spyOn(server.app.pubsub, 'subscribe');
    const subscriber = launch('npc-subscriber', [server.url, '--soul', watched, '--count', '2']);
    await subscriber.printed(/^listening on ws:\/\/.* \(souls \d+\)/m);
    // Both subscriptions are registered on the server's event bus before anything is published.
    await bounded(
      (async () => {
        const topics = () => new Set(subscribe.mock.calls.map((call) => call[0]));
        while (!(topics().has('crystallizationReady') && topics().has('levelChanged'))) await new Promise((resolve) => setTimeout(resolve, 10));
        await new Promise((resolve) => setImmediate(resolve));
      })(),
      5_000,
      () => `the subscriber never subscribed; server saw ${JSON.stringify(subscribe.mock.calls.map((c) => c[0]))}\n${subscriber.output.stdout}${subscriber.output.stderr}`,
    );

    expect(await dropShards(readyingShards(other, 'bridge'))).toEqual([other]); // filtered out by --soul
    expect(await dropShards(readyingShards(watched, 'well'))).toEqual([watched]);
    const { soul } = await gql(`query($id: ID!) { soul(id: $id) { traits { id } } }`, { id: watched });
    const levelUp = await gql(`mutation($id: ID!, $plan: LevelUpPlanInput!) { levelUp(soulId: $id, plan: $plan) { __typename } }`, {
      id: watched,
      plan: { newEssence: 'Hale guards the village well.', consolidations: [], promotedTraitIds: [], carriedTraitIds: soul.traits.map((t: { id: string }) => t.id) },
    });
    expect(levelUp.levelUp.__typename).toBe('LevelUpPayload');

    const result = await subscriber.done();
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const events = result.stdout.split('\n').filter((line) => /^\d{4}-\d\d-\d\dT/.test(line));
    expect(events).toHaveLength(2);
    expect(events[0]).toMatch(new RegExp(`^${serverNow().replace(/\./g, '\\.')}  READY +Hale \\(id ${watched}\\)  priority [\\d.]+: 3 shards from 2 sources over 2\\.0 days$`));
    expect(events[1]).toMatch(new RegExp(`LEVEL_UP +Hale \\(id ${watched}\\)  reached level 1; essence now: Hale guards the village well\\.$`));
    expect(result.stdout).not.toContain('Wren');
  });
});

describe('examples/typed-client.ts', () => {
  it('creates a soul, shows a batch refused by item, drops shards and reads the soul back', async () => {
    const first = await run('typed-client');
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const { soulByName } = await gql(`{ soulByName(name: "Courier") { id pendingShardCount } }`);
    expect(first.stdout).toContain(`created Courier (id ${soulByName.id}, level 0)`);
    expect(first.stdout).toContain('rejected as expected (field inputs[1].content)');
    expect(first.stdout).toMatch(/dropped 3 shards:\n {2}#\d+ \[quest_turnin\] Delivered the grain report a day early\. \(delivery\)\n/);
    expect(first.stdout).toContain('Courier: 3 pending shards, not ready (AGE_SPREAD)');
    expect(first.stdout).toContain('# Courier\n\n*Carries messages between the keeps*');
    expect(soulByName.pendingShardCount).toBe(3);

    // a second run meets the name conflict as data and carries on with the existing soul
    const second = await run('typed-client');
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('conflict on input.name');
    expect(second.stdout).toContain('Courier: 6 pending shards');
  });
});

describe('every API example on a server that requires a token', () => {
  const token = 'tok-examples-5c7e9a1b3d5f7a9c';
  const bearer = { authorization: `Bearer ${token}` };

  beforeEach(async () => {
    await server.stop();
    server = await startServer({ start: START, app: { tokens: [{ name: 'examples', token, scopes: ['read', 'observe', 'refine', 'admin'] }] } });
  });

  it('without a token each one stops with the server’s reason and says how to give one', async () => {
    const runs = await Promise.all(['seed', 'dashboard', 'refine', 'typed-client', 'npc-subscriber'].map((example) => launch(example, [server.url]).done()));
    for (const result of runs) {
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(/^error: .*(a valid bearer token is required|4403 Forbidden)/);
      expect(result.stderr).toContain('give the token with --token or SOULS_TOKEN');
    }
    expect((await server.request(`{ souls { id } }`, {}, bearer)).body.data.souls).toEqual([]);
  });

  it('seed, dashboard, refine and typed-client send --token or SOULS_TOKEN as a bearer token', async () => {
    const seeded = await launch('seed', [server.url, '--now', serverNow(), '--token', token]).done();
    expect(seeded.stderr).toBe('');
    expect(seeded.code).toBe(0);
    const dashboard = await launch('dashboard', [server.url], { SOULS_TOKEN: token }).done();
    expect(dashboard.stderr).toBe('');
    expect(dashboard.stdout).toContain(`${seedSouls.length} souls`);
    const refine = await launch('refine', [server.url, `--token=${token}`]).done();
    expect(refine.stderr).toBe('');
    expect(refine.stdout).toContain('attuned at');
    const typed = await launch('typed-client', [server.url, '--name', 'Tamsin'], { SOULS_TOKEN: token }).done();
    expect(typed.stderr).toBe('');
    expect(typed.stdout).toContain('created Tamsin');
    const { body } = await server.request(`{ souls(orderBy: NAME) { name } }`, {}, bearer);
    expect(body.data.souls.map((s: { name: string }) => s.name)).toEqual([...seedSouls.map((s) => s.name), 'Tamsin'].sort());
  });

  it('npc-subscriber sends the token in connectionParams and receives events', async () => {
    const subscribe = vi.spyOn(server.app.pubsub, 'subscribe');
    const subscriber = launch('npc-subscriber', [server.url, '--count', '1'], { SOULS_TOKEN: token });
    await subscriber.printed(/^listening on ws:\/\//m);
    await bounded(
      (async () => {
        while (!subscribe.mock.calls.some((call) => call[0] === 'crystallizationReady')) await new Promise((resolve) => setTimeout(resolve, 10));
      })(),
      5_000,
      () => `the subscriber never subscribed\n${subscriber.output.stdout}${subscriber.output.stderr}`,
    );
    const created = await server.request(`mutation { createSoul(input: { name: "Hale", essence: "Hale keeps the well." }) { ... on SoulPayload { soul { id } } } }`, {}, bearer);
    const id = created.body.data.createSoul.soul.id;
    const dropped = await server.request(`mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename } }`, { inputs: readyingShards(id, 'well') }, bearer);
    expect(dropped.body.data.dropShards.__typename).toBe('DropShardsPayload');
    const result = await subscriber.done();
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/READY +Hale/);
  });
});

describe('npm run example', () => {
  function npm(args: string[]): Promise<Run> {
    const child = spawn('npm', ['run', '--silent', 'example', '--', ...args], { cwd: ROOT, env: { ...process.env, SOULS_URL: server.url }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    const output = { stdout: '', stderr: '' };
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output.stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk));
    return bounded(
      new Promise<Run>((resolve) => child.once('close', (code) => resolve({ code, ...output }))),
      RUN_TIMEOUT_MS,
      () => `npm run example did not exit: ${output.stdout}${output.stderr}`,
    );
  }

  it('runs an example by name on the project’s Node, passing its arguments', async () => {
    await createSoul('Tamsin');
    const result = await npm(['dashboard', server.url]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('1 soul, 0 ready for refinement');
    expect(result.stdout).toMatch(/^Tamsin +0 +0\/10/m);
  });

  it('lists the examples when the name is unknown', async () => {
    const result = await npm(['nonesuch']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('No example "nonesuch". Usage: npm run example -- <name> [args…]');
    expect(result.stderr).toContain('Examples: dashboard, library, npc-subscriber, refine, refiner-agent, seed, typed-client');
  });
});
