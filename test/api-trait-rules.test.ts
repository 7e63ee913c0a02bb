// SPEC §12 trait and level-up rules over GraphQL on HTTP: duplicate principles, citations of another soul's shards,
// unciteShard, merged traits' citations, revertLevelUp(levelEventId) and the level-up that changes nothing.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serverPerTest, type LiveServer } from './support/server.ts';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

const startServerPerTest = serverPerTest(afterEach);
let server: LiveServer;

beforeEach(async () => {
  server = await startServerPerTest({ start: T0 });
});

function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  return server.data(query, variables);
}

const ERRORS = `fragment Errors on Error {
  __typename
  message
  ... on ValidationError { field }
  ... on NotFoundError { entity id }
  ... on LevelUpPlanError { missing duplicated notActive problems { field message } }
}`;

/** Every trait, citation and level row of every soul: equal before and after a refused write. */
// Pages sized to these tests' few rows: the whole state at the lists' default bounds is priced past maxCost.
const SNAPSHOT = `{ souls(first: 50) { id essence level rendered(includeProvenance: true) traits(status: [], first: 50) { id principle status citations(first: 50) { id } } levelHistory { id revertedAt } } }`;

async function soul(name: string, essence = `${name} keeps steady.`): Promise<string> {
  const data = await gql(`mutation($input: CreateSoulInput!) { createSoul(input: $input) { ... on SoulPayload { soul { id } } } }`, { input: { name, essence } });
  return data.createSoul.soul.id;
}

async function shard(content: string, soulIds: string[]): Promise<string> {
  const data = await gql(`mutation($input: DropShardInput!) { dropShard(input: $input) { ... on DropShardPayload { shard { id } } } }`, { input: { content, source: 'chat', soulIds } });
  return data.dropShard.shard.id;
}

async function addTrait(soulId: string, principle: string, citeShardIds: string[] = []): Promise<any> {
  const data = await gql(
    `mutation($soulId: ID!, $input: AddTraitInput!) { addTrait(soulId: $soulId, input: $input) { __typename ... on TraitPayload { trait { id } } ...Errors } } ${ERRORS}`,
    { soulId, input: { principle, provenance: `seen: ${principle}`, citeShardIds } },
  );
  return data.addTrait;
}

async function trait(soulId: string, principle: string, citeShardIds: string[] = []): Promise<string> {
  const result = await addTrait(soulId, principle, citeShardIds);
  expect(result.__typename).toBe('TraitPayload');
  return result.trait.id;
}

const CITE = `__typename ... on CiteShardPayload { shard { id citedBy { id } } trait { id citations { id } } readySouls { id } } ...Errors`;

async function cite(mutation: 'citeShard' | 'unciteShard', shardId: string, traitId: string): Promise<any> {
  const data = await gql(`mutation($s: ID!, $t: ID!) { ${mutation}(shardId: $s, traitId: $t) { ${CITE} } } ${ERRORS}`, { s: shardId, t: traitId });
  return data[mutation];
}

const PLAN = `__typename ... on LevelUpPayload { event { id merged { id citations { id } } } } ...Errors`;

async function levelUp(soulId: string, plan: Record<string, unknown>): Promise<any> {
  const data = await gql(`mutation($id: ID!, $plan: LevelUpPlanInput!) { levelUp(soulId: $id, plan: $plan) { ${PLAN} } } ${ERRORS}`, { id: soulId, plan });
  return data.levelUp;
}

async function revert(soulId: string, levelEventId?: string): Promise<any> {
  const data = await gql(
    `mutation($id: ID!, $event: ID) { revertLevelUp(soulId: $id, levelEventId: $event) { __typename ... on RevertLevelUpPayload { soul { level essence } event { id revertedAt } } ...Errors } } ${ERRORS}`,
    { id: soulId, event: levelEventId ?? null },
  );
  return data.revertLevelUp;
}

describe('duplicate principles', () => {
  it('addTrait and reviseTrait answer ValidationError naming the active trait that has the principle, writing nothing', async () => {
    const ada = await soul('Ada');
    const first = await trait(ada, 'Runs the tests first');
    const second = await trait(ada, 'Keeps commits small');
    const before = await gql(SNAPSHOT);
    expect(await addTrait(ada, ' Runs the\u200b tests first ')).toEqual({
      __typename: 'ValidationError',
      field: 'input.principle',
      message: `active trait ${first} already has this principle`,
    });
    const revised = await gql(
      `mutation($id: ID!) { reviseTrait(id: $id, input: { principle: "Runs the tests first" }) { __typename ...Errors } } ${ERRORS}`,
      { id: second },
    );
    expect(revised.reviseTrait).toEqual({ __typename: 'ValidationError', field: 'input.principle', message: `active trait ${first} already has this principle` });
    expect(await gql(SNAPSHOT)).toEqual(before);
  });
});

describe('citations', () => {
  it('citeShard refuses a shard of another soul, naming both souls; addTrait refuses it as input.citeShardIds', async () => {
    const ada = await soul('Ada');
    const bo = await soul('Bo');
    const theirs = await shard('Bo explains with diagrams', [bo]);
    const t = await trait(ada, 'Runs the tests first');
    const before = await gql(SNAPSHOT);
    expect(await cite('citeShard', theirs, t)).toEqual({
      __typename: 'InvalidStateError',
      message: `shard ${theirs} is attributed to soul ${bo} (Bo), not to soul ${ada} (Ada), the soul of trait ${t}: a trait cites only its own soul's shards`,
    });
    expect(await addTrait(ada, 'Keeps commits small', [theirs])).toMatchObject({ __typename: 'ValidationError', field: 'input.citeShardIds' });
    expect(await gql(SNAPSHOT)).toEqual(before);
  });

  it('unciteShard takes a citation back, and answers InvalidStateError when the trait does not cite the shard', async () => {
    const ada = await soul('Ada');
    const [one, two] = [await shard('Wrote the tests first', [ada]), await shard('Tests before the fix', [ada])];
    const t = await trait(ada, 'Runs the tests first', [one, two]);
    server.clock.advance(MINUTE);
    expect(await cite('unciteShard', one, t)).toEqual({
      __typename: 'CiteShardPayload',
      shard: { id: one, citedBy: [] },
      trait: { id: t, citations: [{ id: two }] },
      readySouls: [],
    });
    const before = await gql(SNAPSHOT);
    expect(await cite('unciteShard', one, t)).toEqual({ __typename: 'InvalidStateError', message: `trait ${t} does not cite shard ${one}: nothing to take back` });
    expect(await cite('unciteShard', '999', t)).toEqual({ __typename: 'NotFoundError', entity: 'Shard', id: '999', message: 'Shard 999 not found' });
    expect(await gql(SNAPSHOT)).toEqual(before);
  });

  it('a merged trait starts with the union of its sources\' citations', async () => {
    const ada = await soul('Ada');
    const s = [];
    for (const note of ['tests first on monday', 'tests first on tuesday', 'tests first on friday']) s.push(await shard(note, [ada]));
    const a = await trait(ada, 'Runs the tests first', [s[0], s[1]]);
    const b = await trait(ada, 'Writes tests before code', [s[1], s[2]]);
    const result = await levelUp(ada, {
      newEssence: 'Ada tests first.',
      consolidations: [{ sourceTraitIds: [a, b], mergedPrinciple: 'Tests come first', mergedProvenance: 'a and b' }],
      promotedTraitIds: [],
      carriedTraitIds: [],
    });
    expect(result.__typename).toBe('LevelUpPayload');
    expect(result.event.merged[0].citations.map((c: { id: string }) => c.id).sort()).toEqual([...s].sort());
  });
});

describe('revertLevelUp(levelEventId)', () => {
  it('reverts that level-up once; the retry answers InvalidStateError "already reverted" and the level-up before stays', async () => {
    const ada = await soul('Ada');
    const t = await trait(ada, 'Runs the tests first');
    const first = await levelUp(ada, { newEssence: 'Level one.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [t] });
    server.clock.advance(MINUTE);
    const second = await levelUp(ada, { newEssence: 'Level two.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [t] });
    server.clock.advance(MINUTE);
    const done = await revert(ada, second.event.id);
    expect(done).toEqual({
      __typename: 'RevertLevelUpPayload',
      soul: { level: 1, essence: 'Level one.' },
      event: { id: second.event.id, revertedAt: new Date(T0 + 2 * MINUTE).toISOString() },
    });
    const before = await gql(SNAPSHOT);
    expect(await revert(ada, second.event.id)).toEqual({ __typename: 'InvalidStateError', message: `level-up ${second.event.id} is already reverted` });
    expect(await revert(ada, '999')).toEqual({ __typename: 'NotFoundError', entity: 'LevelEvent', id: '999', message: 'LevelEvent 999 not found' });
    expect(await revert(ada, 'x')).toMatchObject({ __typename: 'NotFoundError', entity: 'LevelEvent' });
    expect(await gql(SNAPSHOT)).toEqual(before);
    // Without the id, as before: the latest unreverted one.
    expect((await revert(ada)).event.id).toBe(first.event.id);
  });
});

describe('a level-up that changes nothing', () => {
  it('answers LevelUpPlanError, and previewLevelUp says so with valid false', async () => {
    const ada = await soul('Ada', 'Ada keeps steady.');
    const t = await trait(ada, 'Runs the tests first');
    const plan = { newEssence: 'Ada keeps steady.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [t] };
    const problems = [{ field: 'plan.newEssence', message: 'the plan changes nothing (no consolidation, no promotion, the same essence): consolidate or promote traits, or give a new essence' }];
    const before = await gql(SNAPSHOT);
    expect(await levelUp(ada, plan)).toMatchObject({ __typename: 'LevelUpPlanError', missing: [], duplicated: [], notActive: [], problems });
    const preview = await gql(`query($id: ID!, $plan: LevelUpPlanInput!) { previewLevelUp(soulId: $id, plan: $plan) { valid after error { problems { field message } } } }`, { id: ada, plan });
    expect(preview.previewLevelUp).toEqual({ valid: false, after: null, error: { problems } });
    expect(await gql(SNAPSHOT)).toEqual(before);
  });
});
