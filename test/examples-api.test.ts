// Every example client runs as a child process against a live server; the test checks its output and,
// over GraphQL, what it changed.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { seedSouls } from '../examples/seed.ts';
import { startServer, type LiveServer } from './support/server.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const START = Date.UTC(2026, 5, 1, 9, 30);
const RUN_TIMEOUT_MS = 15_000;

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

async function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  const { status, body } = await server.request(query, variables);
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  expect(status).toBe(200);
  return body.data;
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
  it('turns the top ready soul’s heaviest novel cluster into a cited trait and attunes the soul', async () => {
    await seed();
    const { crystallizationReadiness } = await gql(`{ crystallizationReadiness { soul { id name } } }`);
    const top = crystallizationReadiness[0].soul;
    const before = (
      await gql(
        `query($id: ID!) { soul(id: $id) { activeTraitCount lastAttunedAt rendered
          evidence { clusters { representative { content } members { id } alignment { kind } } } } }`,
        { id: top.id },
      )
    ).soul;
    expect(before.lastAttunedAt).toBeNull();
    const novel = before.evidence.clusters.find((c: { alignment: { kind: string } }) => c.alignment.kind === 'NOVEL');
    expect(novel).toBeDefined();

    const result = await run('refine');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`refining ${top.name} (id ${top.id}`);
    expect(result.stdout).toContain(`Before (${before.activeTraitCount}/10 traits):`);
    expect(result.stdout).toContain(`After:`);
    expect(result.stdout.split('After:')[1]).toContain(`- ${novel.representative.content}`);

    const after = (
      await gql(`query($id: ID!) { soul(id: $id) { activeTraitCount lastAttunedAt crystallization { ready } traits { principle provenance citations { id } } } }`, {
        id: top.id,
      })
    ).soul;
    expect(after.activeTraitCount).toBe(before.activeTraitCount + 1);
    expect(after.lastAttunedAt).toBe(serverNow());
    expect(after.crystallization.ready).toBe(false);
    const added = after.traits.find((t: { principle: string }) => t.principle === novel.representative.content);
    expect(added, 'the new trait').toBeDefined();
    expect(added.provenance).toContain(`Evidence cluster of ${novel.members.length} shards`);
    expect(added.citations.map((s: { id: string }) => s.id).sort()).toEqual(novel.members.map((s: { id: string }) => s.id).sort());
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
