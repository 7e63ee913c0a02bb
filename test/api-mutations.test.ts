import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DAY_MS, similarity } from '../src/engine/index.ts';
import { startServer, type LiveServer } from './support/server.ts';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

let server: LiveServer;

beforeEach(async () => {
  server = await startServer({ start: T0, settings: { traitLimit: 3 } });
});

afterEach(async () => {
  await server.stop();
});

/** One operation that must succeed at the GraphQL level (domain errors are data). */
function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  return server.data(query, variables);
}

const tick = () => server.clock.advance(MINUTE);
const now = () => server.clock.now();

const ERRORS = `fragment Errors on Error {
  __typename
  message
  ... on ValidationError { field }
  ... on ConflictError { field }
  ... on NotFoundError { entity id }
  ... on CapacityError { limit activeCount }
  ... on LevelUpPlanError { missing duplicated notActive problems { field message } }
}`;

const SOUL = 'id name slug essence description level createdAt updatedAt deletedAt lastAttunedAt dormant';
const TRAIT = 'id principle provenance generation status mergedInto { id } createdAt updatedAt';

/** Everything a write could touch, read back whole: compared before and after a refused write, it proves nothing was written. */
// Pages sized to these tests' few rows: the whole state at the lists' default bounds is priced past maxCost.
const SNAPSHOT = `{
  souls(first: 50) { ${SOUL} rendered(includeProvenance: true) traits(status: [], first: 50) { ${TRAIT} citations(first: 50) { id } } levelHistory { id revertedAt } }
  dormantSouls(first: 50) { ${SOUL} traits(status: [], first: 50) { ${TRAIT} } }
  shards(sealed: null, includeExpired: true) { totalCount edges { node { id content sealed status tags souls { id } citedBy { id } } } }
  faded: shards(status: FADED) { totalCount }
}`;

async function snapshot(): Promise<unknown> {
  return gql(SNAPSHOT);
}

async function createSoul(input: Record<string, unknown>): Promise<any> {
  const data = await gql(
    `mutation Create($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { ${SOUL} } } ...Errors } } ${ERRORS}`,
    { input },
  );
  return data.createSoul;
}

async function newSoul(name: string, extra: Record<string, unknown> = {}): Promise<string> {
  const result = await createSoul({ name, essence: `${name} keeps steady.`, ...extra });
  expect(result.__typename).toBe('SoulPayload');
  return result.soul.id;
}

async function dropShard(input: Record<string, unknown>): Promise<any> {
  const data = await gql(
    `mutation Drop($input: DropShardInput!) {
      dropShard(input: $input) {
        __typename
        ... on DropShardPayload { shard { id content source status sealed tags createdAt updatedAt souls { id } } readySouls { id name } }
        ...Errors
      }
    } ${ERRORS}`,
    { input },
  );
  return data.dropShard;
}

async function newShard(content: string, source: string, soulIds: string[], extra: Record<string, unknown> = {}): Promise<string> {
  const result = await dropShard({ content, source, soulIds, ...extra });
  expect(result.__typename).toBe('DropShardPayload');
  return result.shard.id;
}

async function addTrait(soulId: string, input: Record<string, unknown>): Promise<any> {
  const data = await gql(
    `mutation Add($soulId: ID!, $input: AddTraitInput!) {
      addTrait(soulId: $soulId, input: $input) {
        __typename
        ... on TraitPayload { trait { ${TRAIT} citations { id } soul { id } } soul { id activeTraitCount updatedAt } }
        ...Errors
      }
    } ${ERRORS}`,
    { soulId, input },
  );
  return data.addTrait;
}

async function newTrait(soulId: string, principle: string, citeShardIds: string[] = []): Promise<string> {
  const result = await addTrait(soulId, { principle, provenance: `Observed: ${principle}`, citeShardIds });
  expect(result.__typename).toBe('TraitPayload');
  return result.trait.id;
}

async function traitMutation(name: 'reviseTrait' | 'revertTrait' | 'reactivateTrait', id: string, input?: Record<string, unknown>): Promise<any> {
  const signature = input ? '($id: ID!, $input: ReviseTraitInput!)' : '($id: ID!)';
  const args = input ? 'id: $id, input: $input' : 'id: $id';
  const data = await gql(
    `mutation Change${signature} {
      ${name}(${args}) {
        __typename
        ... on TraitPayload { trait { ${TRAIT} } soul { id activeTraitCount updatedAt } }
        ...Errors
      }
    } ${ERRORS}`,
    input ? { id, input } : { id },
  );
  return data[name];
}

async function soulMutation(field: 'retireSoul' | 'awakenSoul' | 'stampAttuned', args: Record<string, unknown>): Promise<any> {
  const declared = Object.keys(args)
    .map((k) => `$${k}: ${k === 'name' ? 'String' : 'ID!'}`)
    .join(', ');
  const passed = Object.keys(args)
    .map((k) => `${k}: $${k}`)
    .join(', ');
  const data = await gql(
    `mutation Change(${declared}) { ${field}(${passed}) { __typename ... on SoulPayload { soul { ${SOUL} crystallization { ready unmet } } } ...Errors } } ${ERRORS}`,
    args,
  );
  return data[field];
}

const LEVEL_UP = `mutation LevelUp($soulId: ID!, $plan: LevelUpPlanInput!) {
  levelUp(soulId: $soulId, plan: $plan) {
    __typename
    ... on LevelUpPayload {
      soul { id level essence updatedAt }
      event {
        id level essenceBefore essenceAfter createdAt revertedAt
        consolidated { id status mergedInto { id } }
        promoted { id status }
        carried { id generation }
        merged { id principle provenance generation status }
      }
      warnings { kind message traitIds }
    }
    ...Errors
  }
} ${ERRORS}`;

async function levelUp(soulId: string, plan: Record<string, unknown>): Promise<any> {
  return (await gql(LEVEL_UP, { soulId, plan })).levelUp;
}

/** Three dissimilar observations from two sources over two days: on the third, the soul crosses into readiness. */
const evidence = [
  { content: 'Always runs the full test suite before pushing', source: 'chat', age: 3 },
  { content: 'Prefers green tea to coffee in the morning', source: 'email', age: 2 },
  { content: 'Answers review comments within the hour', source: 'chat', age: 1 },
];

describe('createSoul', () => {
  it('creates a soul with trimmed texts, level 0 and the clock time', async () => {
    const result = await createSoul({ name: '  Ada  ', slug: 'ada', essence: ' Calm under pressure. ', description: 'Careful engineer' });
    expect(result).toEqual({
      __typename: 'SoulPayload',
      soul: {
        id: '1',
        name: 'Ada',
        slug: 'ada',
        essence: 'Calm under pressure.',
        description: 'Careful engineer',
        level: 0,
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z',
        deletedAt: null,
        lastAttunedAt: null,
        dormant: false,
      },
    });
    const plain = await createSoul({ name: 'Bram', essence: 'Curious.' });
    expect(plain.soul).toMatchObject({ id: '2', slug: 'bram', description: '' });
  });

  it('answers ValidationError naming input.<field>, and writes nothing', async () => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ name: '   ', essence: 'x' }, 'input.name', 'must not be empty'],
      [{ name: 'Ada\nLovelace', essence: 'x' }, 'input.name', 'must be one line'],
      [{ name: 'Ada', essence: ' \t ' }, 'input.essence', 'must not be empty'],
      [{ name: 'Ada', essence: 'x', slug: 'Not A Slug' }, 'input.slug', 'must be at most 64 lowercase letters, digits, "-" or "_", starting with a letter or digit'],
    ];
    for (const [input, field, message] of cases) {
      expect(await createSoul(input)).toEqual({ __typename: 'ValidationError', field, message });
    }
    expect(await snapshot()).toEqual({ souls: [], dormantSouls: [], shards: { totalCount: 0, edges: [] }, faded: { totalCount: 0 } });
  });

  it('answers ConflictError for a name or slug taken by an awake soul; a dormant soul frees its name', async () => {
    await newSoul('Ada', { slug: 'ada' });
    const before = await snapshot();
    expect(await createSoul({ name: 'Ada', essence: 'Another.' })).toEqual({
      __typename: 'ConflictError',
      field: 'input.name',
      message: 'an awake soul is already named "Ada"',
    });
    expect(await createSoul({ name: 'Bram', slug: 'ada', essence: 'Another.' })).toEqual({
      __typename: 'ConflictError',
      field: 'input.slug',
      message: 'an awake soul already has the slug "ada"',
    });
    expect(await snapshot()).toEqual(before);

    expect((await soulMutation('retireSoul', { id: '1' })).__typename).toBe('SoulPayload');
    const again = await createSoul({ name: 'Ada', slug: 'ada', essence: 'Second of the name.' });
    expect(again.__typename).toBe('SoulPayload');
    expect(again.soul.id).toBe('2');
  });
});

describe('updateSoul', () => {
  const UPDATE = `mutation Update($id: ID!, $input: UpdateSoulInput!) {
    updateSoul(id: $id, input: $input) { __typename ... on SoulPayload { soul { ${SOUL} rendered } } ...Errors }
  } ${ERRORS}`;
  const update = async (id: string, input: Record<string, unknown>) => (await gql(UPDATE, { id, input })).updateSoul;

  it('overwrites the given fields and bumps updatedAt only', async () => {
    await newSoul('Ada', { slug: 'ada', description: 'Careful' });
    tick();
    const result = await update('1', { name: 'Ada Prime', essence: 'Calmer still.', slug: null });
    expect(result).toEqual({
      __typename: 'SoulPayload',
      soul: {
        id: '1',
        name: 'Ada Prime',
        // null asks for a slug derived from the name again.
        slug: 'ada-prime',
        essence: 'Calmer still.',
        description: 'Careful',
        level: 0,
        createdAt: iso(T0),
        updatedAt: '2026-01-01T00:01:00.000Z',
        deletedAt: null,
        lastAttunedAt: null,
        dormant: false,
        rendered: '# Ada Prime\n\n*Careful*\n\nCalmer still.\n',
      },
    });
  });

  it('answers ValidationError, ConflictError and NotFoundError, changing nothing', async () => {
    await newSoul('Ada');
    await newSoul('Bram');
    tick();
    const before = await snapshot();
    expect(await update('1', { name: 'Ada Prime', essence: '  ' })).toEqual({ __typename: 'ValidationError', field: 'input.essence', message: 'must not be empty' });
    expect(await update('1', { name: 'Bram' })).toEqual({ __typename: 'ConflictError', field: 'input.name', message: 'an awake soul is already named "Bram"' });
    expect(await update('99', { name: 'Zed' })).toEqual({ __typename: 'NotFoundError', entity: 'Soul', id: '99', message: 'Soul 99 not found' });
    expect(await update('abc', { name: 'Zed' })).toEqual({ __typename: 'ValidationError', field: 'id', message: 'must be a positive row id, got "abc"' });
    expect(await snapshot()).toEqual(before);
  });
});

describe('retireSoul and awakenSoul', () => {
  it('retires a soul (dormant, out of the roster) and refuses to retire it twice', async () => {
    await newSoul('Ada');
    tick();
    const retired = await soulMutation('retireSoul', { id: '1' });
    expect(retired.__typename).toBe('SoulPayload');
    expect(retired.soul).toMatchObject({ deletedAt: iso(T0 + MINUTE), dormant: true, updatedAt: iso(T0), crystallization: { ready: false } });
    expect(retired.soul.crystallization.unmet).toContain('DORMANT');
    expect(await gql('{ souls { id } dormantSouls { id } }')).toEqual({ souls: [], dormantSouls: [{ id: '1' }] });

    const before = await snapshot();
    expect(await soulMutation('retireSoul', { id: '1' })).toEqual({ __typename: 'InvalidStateError', message: 'soul 1 is already dormant' });
    expect(await soulMutation('retireSoul', { id: '99' })).toEqual({ __typename: 'NotFoundError', entity: 'Soul', id: '99', message: 'Soul 99 not found' });
    expect(await snapshot()).toEqual(before);
  });

  it('awakens a dormant soul; refuses an awake one, a taken name and an empty rename; accepts a rename', async () => {
    await newSoul('Ada');
    expect(await soulMutation('awakenSoul', { id: '1' })).toEqual({ __typename: 'InvalidStateError', message: 'soul 1 is not dormant' });
    await soulMutation('retireSoul', { id: '1' });
    await newSoul('Ada'); // takes the name while the first sleeps
    tick();
    const before = await snapshot();
    expect(await soulMutation('awakenSoul', { id: '1' })).toEqual({ __typename: 'ConflictError', field: 'name', message: 'an awake soul is already named "Ada"' });
    expect(await soulMutation('awakenSoul', { id: '1', name: '   ' })).toEqual({ __typename: 'ValidationError', field: 'name', message: 'must not be empty' });
    expect(await soulMutation('awakenSoul', { id: '99' })).toEqual({ __typename: 'NotFoundError', entity: 'Soul', id: '99', message: 'Soul 99 not found' });
    expect(await snapshot()).toEqual(before);

    const renamed = await soulMutation('awakenSoul', { id: '1', name: 'Ada the Elder' });
    expect(renamed.__typename).toBe('SoulPayload');
    expect(renamed.soul).toMatchObject({ id: '1', name: 'Ada the Elder', deletedAt: null, dormant: false, updatedAt: iso(T0 + MINUTE) });
    expect(await gql('{ souls(orderBy: NAME) { name } dormantSouls { id } }')).toEqual({ souls: [{ name: 'Ada' }, { name: 'Ada the Elder' }], dormantSouls: [] });
  });

  it('awakens without a rename when the name is free, keeping updatedAt', async () => {
    await newSoul('Ada');
    await soulMutation('retireSoul', { id: '1' });
    tick();
    const awake = await soulMutation('awakenSoul', { id: '1' });
    expect(awake.soul).toMatchObject({ name: 'Ada', dormant: false, deletedAt: null, updatedAt: iso(T0) });
  });
});

describe('addTrait', () => {
  it('adds an active trait at the soul level, citing shards in the same write', async () => {
    const soulId = await newSoul('Ada');
    const shardId = await newShard('Ran the tests before pushing', 'chat', [soulId]);
    tick();
    const result = await addTrait(soulId, { principle: '  Runs the tests first ', provenance: 'Seen twice in review', citeShardIds: [shardId, shardId] });
    expect(result).toEqual({
      __typename: 'TraitPayload',
      trait: {
        id: '1',
        principle: 'Runs the tests first',
        provenance: 'Seen twice in review',
        generation: 0,
        status: 'ACTIVE',
        mergedInto: null,
        createdAt: iso(T0 + MINUTE),
        updatedAt: iso(T0 + MINUTE),
        citations: [{ id: shardId }],
        soul: { id: soulId },
      },
      soul: { id: soulId, activeTraitCount: 1, updatedAt: iso(T0 + MINUTE) },
    });
    expect(await gql(`{ shard(id: "${shardId}") { citedBy { id } } }`)).toEqual({ shard: { citedBy: [{ id: '1' }] } });
  });

  it('answers ValidationError for empty texts ("no provenance, no trait") and bad ids, writing nothing', async () => {
    const soulId = await newSoul('Ada');
    const before = await snapshot();
    expect(await addTrait(soulId, { principle: 'Runs the tests first', provenance: '   ' })).toEqual({
      __typename: 'ValidationError',
      field: 'input.provenance',
      message: 'must not be empty',
    });
    expect(await addTrait(soulId, { principle: '', provenance: 'seen' })).toEqual({ __typename: 'ValidationError', field: 'input.principle', message: 'must not be empty' });
    expect(await addTrait(soulId, { principle: 'p', provenance: 'seen', citeShardIds: ['abc'] })).toEqual({
      __typename: 'ValidationError',
      field: 'input.citeShardIds[0]',
      message: 'must be a positive row id, got "abc"',
    });
    expect(await addTrait('abc', { principle: 'p', provenance: 'seen' })).toEqual({ __typename: 'ValidationError', field: 'soulId', message: 'must be a positive row id, got "abc"' });
    expect(await snapshot()).toEqual(before);
  });

  it('answers CapacityError at the trait limit, with the limit and the active count', async () => {
    const soulId = await newSoul('Ada');
    for (const principle of ['One', 'Two', 'Three']) await newTrait(soulId, principle);
    const before = await snapshot();
    expect(await addTrait(soulId, { principle: 'Four', provenance: 'seen' })).toEqual({
      __typename: 'CapacityError',
      limit: 3,
      activeCount: 3,
      message: 'soul already has 3 active traits (limit 3): revert or level up first',
    });
    expect(await snapshot()).toEqual(before);
  });

  it('answers NotFoundError for a missing cited shard or soul, and InvalidStateError for a dormant soul, writing nothing', async () => {
    const soulId = await newSoul('Ada');
    const shardId = await newShard('Ran the tests', 'chat', [soulId]);
    tick();
    const before = await snapshot();
    expect(await addTrait(soulId, { principle: 'p', provenance: 'seen', citeShardIds: [shardId, '999'] })).toEqual({
      __typename: 'NotFoundError',
      entity: 'Shard',
      id: '999',
      message: 'Shard 999 not found',
    });
    expect(await addTrait('99', { principle: 'p', provenance: 'seen' })).toEqual({ __typename: 'NotFoundError', entity: 'Soul', id: '99', message: 'Soul 99 not found' });
    expect(await snapshot()).toEqual(before);

    await soulMutation('retireSoul', { id: soulId });
    const dormant = await snapshot();
    expect(await addTrait(soulId, { principle: 'p', provenance: 'seen' })).toEqual({ __typename: 'InvalidStateError', message: 'soul 1 is dormant: awaken it first' });
    expect(await snapshot()).toEqual(dormant);
  });
});

describe('reviseTrait, revertTrait, reactivateTrait', () => {
  it('revises the given texts of an active trait, bumping trait and soul', async () => {
    const soulId = await newSoul('Ada');
    const traitId = await newTrait(soulId, 'Runs the tests first');
    tick();
    const result = await traitMutation('reviseTrait', traitId, { principle: 'Runs every test first' });
    expect(result).toEqual({
      __typename: 'TraitPayload',
      trait: {
        id: traitId,
        principle: 'Runs every test first',
        provenance: 'Observed: Runs the tests first',
        generation: 0,
        status: 'ACTIVE',
        mergedInto: null,
        createdAt: iso(T0),
        updatedAt: iso(T0 + MINUTE),
      },
      soul: { id: soulId, activeTraitCount: 1, updatedAt: iso(T0 + MINUTE) },
    });
  });

  it('refuses to revise into emptiness, a reverted trait or a missing one, changing nothing', async () => {
    const soulId = await newSoul('Ada');
    const active = await newTrait(soulId, 'Runs the tests first');
    const reverted = await newTrait(soulId, 'Skips code review');
    await traitMutation('revertTrait', reverted);
    tick();
    const before = await snapshot();
    expect(await traitMutation('reviseTrait', active, { principle: 'Fine', provenance: ' ' })).toEqual({
      __typename: 'ValidationError',
      field: 'input.provenance',
      message: 'must not be empty',
    });
    expect(await traitMutation('reviseTrait', reverted, { principle: 'Reviews code' })).toEqual({
      __typename: 'InvalidStateError',
      message: `trait ${reverted} is reverted: only active traits can be revised`,
    });
    expect(await traitMutation('reviseTrait', '99', { principle: 'x' })).toEqual({ __typename: 'NotFoundError', entity: 'Trait', id: '99', message: 'Trait 99 not found' });
    expect(await traitMutation('reviseTrait', 'abc', { principle: 'x' })).toEqual({ __typename: 'ValidationError', field: 'id', message: 'must be a positive row id, got "abc"' });
    expect(await snapshot()).toEqual(before);
  });

  it('reverts an active trait once; reactivates it once', async () => {
    const soulId = await newSoul('Ada');
    const traitId = await newTrait(soulId, 'Runs the tests first');
    tick();
    const reverted = await traitMutation('revertTrait', traitId);
    expect(reverted.__typename).toBe('TraitPayload');
    expect(reverted.trait).toMatchObject({ status: 'REVERTED', updatedAt: iso(T0 + MINUTE) });
    expect(reverted.soul).toEqual({ id: soulId, activeTraitCount: 0, updatedAt: iso(T0 + MINUTE) });

    let before = await snapshot();
    expect(await traitMutation('revertTrait', traitId)).toEqual({ __typename: 'InvalidStateError', message: `trait ${traitId} is reverted: only active traits can be reverted` });
    expect(await traitMutation('revertTrait', '99')).toEqual({ __typename: 'NotFoundError', entity: 'Trait', id: '99', message: 'Trait 99 not found' });
    expect(await snapshot()).toEqual(before);

    tick();
    const reactivated = await traitMutation('reactivateTrait', traitId);
    expect(reactivated.trait).toMatchObject({ status: 'ACTIVE', mergedInto: null, updatedAt: iso(T0 + 2 * MINUTE) });
    expect(reactivated.soul.activeTraitCount).toBe(1);

    before = await snapshot();
    expect(await traitMutation('reactivateTrait', traitId)).toEqual({ __typename: 'InvalidStateError', message: `trait ${traitId} is already active` });
    expect(await traitMutation('reactivateTrait', '99')).toEqual({ __typename: 'NotFoundError', entity: 'Trait', id: '99', message: 'Trait 99 not found' });
    expect(await snapshot()).toEqual(before);
  });

  it('refuses to reactivate past the trait limit with CapacityError', async () => {
    const soulId = await newSoul('Ada');
    const first = await newTrait(soulId, 'One');
    await traitMutation('revertTrait', first);
    for (const principle of ['Two', 'Three', 'Four']) await newTrait(soulId, principle);
    const before = await snapshot();
    expect(await traitMutation('reactivateTrait', first)).toEqual({
      __typename: 'CapacityError',
      limit: 3,
      activeCount: 3,
      message: 'soul already has 3 active traits (limit 3): revert or level up first',
    });
    expect(await snapshot()).toEqual(before);
  });
});

describe('levelUp', () => {
  const eve = ['Writes terse commit messages', 'Writes short commit messages', 'Mentors new contributors patiently'];

  async function eveAtCapacity(): Promise<{ soulId: string; traits: string[] }> {
    const soulId = await newSoul('Eve', { essence: 'Eve ships small changes.' });
    const traits = [];
    for (const principle of eve) traits.push(await newTrait(soulId, principle));
    return { soulId, traits };
  }

  it('consolidates and carries, raising the level; a sound plan has no warnings', async () => {
    const { soulId, traits } = await eveAtCapacity();
    const [e1, e2, e3] = traits;
    tick();
    const newEssence = 'Eve mentors new contributors patiently and writes concise commits.';
    const result = await levelUp(soulId, {
      newEssence,
      consolidations: [{ sourceTraitIds: [e1, e2], mergedPrinciple: 'Writes concise commit messages', mergedProvenance: 'Merged from two' }],
      promotedTraitIds: [],
      carriedTraitIds: [e3],
    });
    const mergedId = '4';
    expect(result).toEqual({
      __typename: 'LevelUpPayload',
      soul: { id: soulId, level: 1, essence: newEssence, updatedAt: iso(T0 + MINUTE) },
      event: {
        id: '1',
        level: 1,
        essenceBefore: 'Eve ships small changes.',
        essenceAfter: newEssence,
        createdAt: iso(T0 + MINUTE),
        revertedAt: null,
        consolidated: [
          { id: e1, status: 'CONSOLIDATED', mergedInto: { id: mergedId } },
          { id: e2, status: 'CONSOLIDATED', mergedInto: { id: mergedId } },
        ],
        promoted: [],
        carried: [{ id: e3, generation: 1 }],
        merged: [{ id: mergedId, principle: 'Writes concise commit messages', provenance: 'Merged from two', generation: 1, status: 'ACTIVE' }],
      },
      warnings: [],
    });
    // A consolidated trait can come back: reactivation clears mergedInto.
    const back = await traitMutation('reactivateTrait', e1);
    expect(back.trait).toMatchObject({ status: 'ACTIVE', mergedInto: null, generation: 0 });
  });

  it('answers advisory warnings (weak consolidation, premature promotion) and still applies the plan', async () => {
    const { soulId, traits } = await eveAtCapacity();
    const [e1, e2, e3] = traits;
    const newEssence = 'Eve keeps the lights on.';
    const result = await levelUp(soulId, {
      newEssence,
      consolidations: [{ sourceTraitIds: [e1, e3], mergedPrinciple: 'Writes and mentors', mergedProvenance: 'Merged' }],
      promotedTraitIds: [e2],
      carriedTraitIds: [],
    });
    expect(result.__typename).toBe('LevelUpPayload');
    const groupSimilarity = similarity(eve[0], eve[2]);
    const promotedSimilarity = similarity(eve[1], newEssence);
    expect(groupSimilarity).toBeLessThan(0.3);
    expect(promotedSimilarity).toBeLessThan(0.3);
    expect(result.warnings).toEqual([
      { kind: 'WEAK_CONSOLIDATION', message: `consolidation 1 groups traits with mean similarity ${groupSimilarity.toFixed(2)} (trigram Jaccard), below 0.3`, traitIds: [e1, e3] },
      {
        kind: 'PREMATURE_PROMOTION',
        message: `trait ${e2} is promoted but the new essence barely echoes it (similarity ${promotedSimilarity.toFixed(2)}, below 0.3)`,
        traitIds: [e2],
      },
    ]);
    expect(result.soul.level).toBe(1);
  });

  it('answers LevelUpPlanError with missing, duplicated and notActive ids, writing nothing', async () => {
    const soulId = await newSoul('Eve');
    const reverted = await newTrait(soulId, 'Skips code review');
    await traitMutation('revertTrait', reverted);
    const [a, b, c] = [await newTrait(soulId, 'One'), await newTrait(soulId, 'Two'), await newTrait(soulId, 'Three')];
    const other = await newTrait(await newSoul('Bram'), 'Bram trait');
    const before = await snapshot();
    const result = await levelUp(soulId, { newEssence: 'New', consolidations: [], promotedTraitIds: [a], carriedTraitIds: [a, reverted, other, '999'] });
    const notActive = [reverted, other, '999'].sort((x, y) => Number(x) - Number(y));
    expect(result).toEqual({
      __typename: 'LevelUpPlanError',
      message: `invalid level-up plan: missing ${b}, ${c}; duplicated ${a}; not active ${notActive.join(', ')}`,
      missing: [b, c],
      duplicated: [a],
      notActive,
      problems: [],
    });
    expect(await snapshot()).toEqual(before);
  });

  it('reports a non-numeric id as a problem at plan.promotedTraitIds[0], and empty texts and groups by their plan path', async () => {
    const { soulId, traits } = await eveAtCapacity();
    const before = await snapshot();
    expect(await levelUp(soulId, { newEssence: 'New', consolidations: [], promotedTraitIds: ['abc'], carriedTraitIds: traits })).toEqual({
      __typename: 'LevelUpPlanError',
      message: 'invalid level-up plan: plan.promotedTraitIds[0]: "abc" is not a trait id',
      missing: [],
      duplicated: [],
      notActive: [],
      problems: [{ field: 'plan.promotedTraitIds[0]', message: '"abc" is not a trait id' }],
    });
    const empty = await levelUp(soulId, {
      newEssence: '  ',
      consolidations: [{ sourceTraitIds: [], mergedPrinciple: 'Merged', mergedProvenance: ' ' }],
      promotedTraitIds: [],
      carriedTraitIds: traits,
    });
    expect(empty.__typename).toBe('LevelUpPlanError');
    expect(empty.problems).toEqual([
      { field: 'plan.newEssence', message: 'must not be empty' },
      { field: 'plan.consolidations[0].sourceTraitIds', message: 'must list at least one trait' },
      { field: 'plan.consolidations[0].mergedProvenance', message: 'must not be empty' },
    ]);
    expect(await snapshot()).toEqual(before);
  });

  it('answers NotFoundError for an unknown soul and InvalidStateError for a dormant one', async () => {
    const { soulId, traits } = await eveAtCapacity();
    const plan = { newEssence: 'New', consolidations: [], promotedTraitIds: [], carriedTraitIds: traits };
    expect(await levelUp('99', plan)).toEqual({ __typename: 'NotFoundError', entity: 'Soul', id: '99', message: 'Soul 99 not found' });
    expect(await levelUp('abc', plan)).toEqual({ __typename: 'NotFoundError', entity: 'Soul', id: 'abc', message: 'Soul abc not found' });
    await soulMutation('retireSoul', { id: soulId });
    const before = await snapshot();
    expect(await levelUp(soulId, plan)).toEqual({ __typename: 'InvalidStateError', message: `soul ${soulId} is dormant: awaken it first` });
    expect(await snapshot()).toEqual(before);
  });
});

describe('revertLevelUp', () => {
  const REVERT = `mutation Revert($soulId: ID!) {
    revertLevelUp(soulId: $soulId) {
      __typename
      ... on RevertLevelUpPayload {
        soul { id level essence rendered(includeProvenance: true) }
        event { id level revertedAt consolidated { id status mergedInto { id } } promoted { id status } carried { id generation } merged { id } }
      }
      ...Errors
    }
  } ${ERRORS}`;
  const revert = async (soulId: string) => (await gql(REVERT, { soulId })).revertLevelUp;

  it('answers InvalidStateError when there is no level-up to revert, and NotFoundError for an unknown soul', async () => {
    const soulId = await newSoul('Eve');
    await newTrait(soulId, 'One');
    const before = await snapshot();
    expect(await revert(soulId)).toEqual({ __typename: 'InvalidStateError', message: `soul ${soulId} has no level-up to revert` });
    expect(await revert('99')).toEqual({ __typename: 'NotFoundError', entity: 'Soul', id: '99', message: 'Soul 99 not found' });
    expect(await snapshot()).toEqual(before);
  });

  it('undoes the latest level-up exactly, keeping its row with revertedAt; a second revert has nothing left', async () => {
    const soulId = await newSoul('Eve', { essence: 'Eve ships small changes.' });
    const [a, b, c] = [await newTrait(soulId, 'Writes terse commit messages'), await newTrait(soulId, 'Writes short commit messages'), await newTrait(soulId, 'Mentors')];
    const renderedBefore = (await gql(`{ soul(id: "${soulId}") { rendered(includeProvenance: true) } }`)).soul.rendered;
    tick();
    const up = await levelUp(soulId, {
      newEssence: 'Eve mentors.',
      consolidations: [{ sourceTraitIds: [a, b], mergedPrinciple: 'Writes concise commits', mergedProvenance: 'Merged' }],
      promotedTraitIds: [],
      carriedTraitIds: [c],
    });
    const mergedId = up.event.merged[0].id;
    tick();
    const result = await revert(soulId);
    expect(result).toEqual({
      __typename: 'RevertLevelUpPayload',
      soul: { id: soulId, level: 0, essence: 'Eve ships small changes.', rendered: renderedBefore },
      event: {
        id: up.event.id,
        level: 1,
        revertedAt: iso(T0 + 2 * MINUTE),
        consolidated: [
          { id: a, status: 'ACTIVE', mergedInto: null },
          { id: b, status: 'ACTIVE', mergedInto: null },
        ],
        promoted: [],
        carried: [{ id: c, generation: 0 }],
        merged: [],
      },
    });
    expect(await gql(`{ trait(id: "${mergedId}") { id } soul(id: "${soulId}") { levelHistory { id revertedAt } } }`)).toEqual({
      trait: null,
      soul: { levelHistory: [{ id: up.event.id, revertedAt: iso(T0 + 2 * MINUTE) }] },
    });
    expect(await revert(soulId)).toEqual({ __typename: 'InvalidStateError', message: `soul ${soulId} has no level-up to revert` });
  });
});

describe('dropShard', () => {
  it('normalizes content, source and tags, and answers the stored shard', async () => {
    const soulId = await newSoul('Ada');
    const result = await dropShard({ content: '  -- • Skipped   the tests!!!  ', source: ' chat ', soulIds: [soulId, soulId], tags: [' Testing ', 'testing', '', 'CI'] });
    expect(result).toEqual({
      __typename: 'DropShardPayload',
      shard: {
        id: '1',
        content: 'Skipped the tests!',
        source: 'chat',
        status: 'PENDING',
        sealed: false,
        tags: ['ci', 'testing'],
        createdAt: iso(T0),
        updatedAt: iso(T0),
        souls: [{ id: soulId }],
      },
      readySouls: [],
    });
  });

  it('answers the shard as a later read of the store gives it, with text the database rewrites and tags out of UTF-16 order', async () => {
    const ada = await newSoul('Ada');
    const bram = await newSoul('Bram');
    const FIELDS = 'id content source status sealed tags createdAt updatedAt recordedAt revealedAt souls { id }';
    // Lone surrogates are stored as U+FFFD (two tags become one); "ａ" (U+FF41) sorts before "😀" by bytes, after it by UTF-16.
    const inputs = [
      { content: 'Kept the \uD800 ledger', source: 'chat\uDC00', soulIds: [bram, ada, bram], tags: ['😀', 'Ａ', 'x\uD800', 'x\uDC00'], sealed: true, createdAt: iso(T0 - DAY_MS) },
      { content: 'Counted the sacks', source: 'review', soulIds: [ada], tags: ['b', 'a'] },
    ];
    for (const input of inputs) {
      const data = await gql(`mutation Drop($input: DropShardInput!) { dropShard(input: $input) { ... on DropShardPayload { shard { ${FIELDS} } } } }`, { input });
      const { shard } = await gql(`query Read($id: ID!) { shard(id: $id) { ${FIELDS} } }`, { id: data.dropShard.shard.id });
      expect(data.dropShard.shard).toEqual(shard);
    }
    const { shard } = await gql(`{ shard(id: "1") { content source tags souls { id } } }`);
    expect(shard).toEqual({ content: 'Kept the \uFFFD ledger', source: 'chat\uFFFD', tags: ['x\uFFFD', 'ａ', '😀'], souls: [{ id: ada }, { id: bram }] });
  });

  it('lists a soul in readySouls exactly on the write that makes it ready, never again after', async () => {
    const ada = await newSoul('Ada');
    const bram = await newSoul('Bram');
    const ready: unknown[] = [];
    for (const { content, source, age } of evidence) {
      const result = await dropShard({ content, source, soulIds: [ada], createdAt: iso(T0 - age * DAY_MS) });
      ready.push(result.readySouls);
    }
    expect(ready).toEqual([[], [], [{ id: ada, name: 'Ada' }]]);
    const later = await dropShard({ content: 'Draws diagrams on the whiteboard', source: 'review', soulIds: [ada, bram] });
    expect(later.readySouls).toEqual([]);
    expect(await gql('{ crystallizationReadiness { soul { id } } }')).toEqual({ crystallizationReadiness: [{ soul: { id: ada } }] });
  });

  it('answers ValidationError naming input.<field>, writing nothing', async () => {
    const soulId = await newSoul('Ada');
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ content: '  ... !!! ', source: 'chat', soulIds: [soulId] }, 'input.content', 'must not be empty once whitespace and punctuation noise are removed'],
      [{ content: 'Ran tests', source: '   ', soulIds: [soulId] }, 'input.source', 'must not be empty'],
      [{ content: 'Ran tests', source: 'chat', soulIds: [soulId], createdAt: iso(T0 + 1) }, 'input.createdAt', 'may not lie in the future'],
      [{ content: 'Ran tests', source: 'chat', soulIds: ['abc'] }, 'input.soulIds[0]', 'must be a positive row id, got "abc"'],
      [{ content: 'Ran tests', source: 'chat', soulIds: [] }, 'input.soulIds', 'must name at least one soul'],
      [{ content: 'Ran tests', source: 'chat', soulIds: [soulId], tags: ['x'.repeat(65)] }, 'input.tags[0]', 'must be at most 64 characters'],
    ];
    const before = await snapshot();
    for (const [input, field, message] of cases) {
      expect(await dropShard(input), field).toEqual({ __typename: 'ValidationError', field, message });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('answers NotFoundError for an unknown soul, writing nothing (not even for the known one)', async () => {
    const soulId = await newSoul('Ada');
    const before = await snapshot();
    expect(await dropShard({ content: 'Ran tests', source: 'chat', soulIds: [soulId, '99'] })).toEqual({
      __typename: 'NotFoundError',
      entity: 'Soul',
      id: '99',
      message: 'Soul 99 not found',
    });
    expect(await snapshot()).toEqual(before);
    expect(await gql(`{ soul(id: "${soulId}") { pendingShardCount } }`)).toEqual({ soul: { pendingShardCount: 0 } });
  });
});

describe('dropShards', () => {
  const DROP_MANY = `mutation DropMany($inputs: [DropShardInput!]!) {
    dropShards(inputs: $inputs) {
      __typename
      ... on DropShardsPayload { shards { id content source souls { id } } readySouls { id name } }
      ...Errors
    }
  } ${ERRORS}`;
  const dropMany = async (inputs: unknown[]) => (await gql(DROP_MANY, { inputs })).dropShards;

  it('writes the batch in order and lists each soul it makes ready once', async () => {
    const ada = await newSoul('Ada');
    const inputs = evidence.map(({ content, source, age }) => ({ content, source, soulIds: [ada], createdAt: iso(T0 - age * DAY_MS) }));
    expect(await dropMany(inputs)).toEqual({
      __typename: 'DropShardsPayload',
      shards: evidence.map(({ content, source }, i) => ({ id: String(i + 1), content, source, souls: [{ id: ada }] })),
      readySouls: [{ id: ada, name: 'Ada' }],
    });
    expect(await dropMany([])).toEqual({ __typename: 'DropShardsPayload', shards: [], readySouls: [] });
  });

  it('refuses the whole batch when item 2 is bad: ValidationError at inputs[2].content and nothing written', async () => {
    const ada = await newSoul('Ada');
    await newShard('Already here', 'chat', [ada]);
    const before = await snapshot();
    const inputs = [
      { content: 'First, fine', source: 'chat', soulIds: [ada] },
      { content: 'Second, fine', source: 'email', soulIds: [ada] },
      { content: ' -- ', source: 'chat', soulIds: [ada] },
    ];
    expect(await dropMany(inputs)).toEqual({
      __typename: 'ValidationError',
      field: 'inputs[2].content',
      message: 'must not be empty once whitespace and punctuation noise are removed',
    });
    expect(await dropMany([inputs[0], { content: 'x y', source: 'chat', soulIds: ['abc'] }])).toEqual({
      __typename: 'ValidationError',
      field: 'inputs[1].soulIds[0]',
      message: 'must be a positive row id, got "abc"',
    });
    expect(await dropMany([inputs[0], { content: 'x y', source: 'chat', soulIds: ['99'] }])).toEqual({
      __typename: 'NotFoundError',
      entity: 'Soul',
      id: '99',
      message: 'Soul 99 not found',
    });
    expect(await snapshot()).toEqual(before);
    expect(await gql('{ shards { totalCount } }')).toEqual({ shards: { totalCount: 1 } });
  });
});

describe('citeShard', () => {
  const CITE = `mutation Cite($shardId: ID!, $traitId: ID!) {
    citeShard(shardId: $shardId, traitId: $traitId) {
      __typename
      ... on CiteShardPayload { shard { id citedBy { id } } trait { id citations { id } signals { citationCount } soul { updatedAt } } }
      ...Errors
    }
  } ${ERRORS}`;
  const cite = async (shardId: string, traitId: string) => (await gql(CITE, { shardId, traitId })).citeShard;

  it('links a shard to a trait, bumping the soul once; citing the same pair again changes nothing', async () => {
    const soulId = await newSoul('Ada');
    const shardId = await newShard('Ran the tests', 'chat', [soulId]);
    const traitId = await newTrait(soulId, 'Runs the tests first');
    tick();
    const expected = {
      __typename: 'CiteShardPayload',
      shard: { id: shardId, citedBy: [{ id: traitId }] },
      trait: { id: traitId, citations: [{ id: shardId }], signals: { citationCount: 1 }, soul: { updatedAt: iso(T0 + MINUTE) } },
    };
    expect(await cite(shardId, traitId)).toEqual(expected);
    tick();
    expect(await cite(shardId, traitId)).toEqual(expected);
  });

  it('answers NotFoundError for an unknown or non-numeric shard or trait, and InvalidStateError for a reverted trait', async () => {
    const soulId = await newSoul('Ada');
    const shardId = await newShard('Ran the tests', 'chat', [soulId]);
    const traitId = await newTrait(soulId, 'Runs the tests first');
    const reverted = await newTrait(soulId, 'Skips review');
    await traitMutation('revertTrait', reverted);
    const before = await snapshot();
    expect(await cite('abc', traitId)).toEqual({ __typename: 'NotFoundError', entity: 'Shard', id: 'abc', message: 'Shard abc not found' });
    expect(await cite('999', traitId)).toEqual({ __typename: 'NotFoundError', entity: 'Shard', id: '999', message: 'Shard 999 not found' });
    expect(await cite(shardId, '999')).toEqual({ __typename: 'NotFoundError', entity: 'Trait', id: '999', message: 'Trait 999 not found' });
    expect(await cite(shardId, 'abc')).toEqual({ __typename: 'NotFoundError', entity: 'Trait', id: 'abc', message: 'Trait abc not found' });
    expect(await cite(shardId, reverted)).toEqual({ __typename: 'InvalidStateError', message: `trait ${reverted} is reverted: only active traits can cite shards` });
    expect(await snapshot()).toEqual(before);
  });
});

describe('revealShards', () => {
  const REVEAL = `mutation Reveal($ids: [ID!]!) {
    revealShards(ids: $ids) { __typename ... on RevealShardsPayload { shards { id sealed status } readySouls { id } } ...Errors }
  } ${ERRORS}`;
  const reveal = async (ids: string[]) => (await gql(REVEAL, { ids })).revealShards;

  it('unseals shards (still pending) and lists the souls the reveal makes ready', async () => {
    const ada = await newSoul('Ada');
    const ids = [];
    for (const [i, { content, source, age }] of evidence.entries()) {
      ids.push(await newShard(content, source, [ada], { createdAt: iso(T0 - age * DAY_MS), sealed: i === 2 }));
    }
    expect(await gql(`{ soul(id: "${ada}") { pendingShardCount crystallization { ready } } }`)).toEqual({ soul: { pendingShardCount: 2, crystallization: { ready: false } } });
    expect(await reveal([ids[2], ids[0]])).toEqual({
      __typename: 'RevealShardsPayload',
      shards: [
        { id: ids[2], sealed: false, status: 'PENDING' },
        { id: ids[0], sealed: false, status: 'PENDING' },
      ],
      readySouls: [{ id: ada }],
    });
    expect((await reveal([ids[2]])).readySouls).toEqual([]);
  });

  it('answers NotFoundError for an unknown id and reveals nothing', async () => {
    const ada = await newSoul('Ada');
    const sealed = await newShard('Secret note', 'chat', [ada], { sealed: true });
    const before = await snapshot();
    expect(await reveal([sealed, '999'])).toEqual({ __typename: 'NotFoundError', entity: 'Shard', id: '999', message: 'Shard 999 not found' });
    expect(await reveal(['abc'])).toEqual({ __typename: 'NotFoundError', entity: 'Shard', id: 'abc', message: 'Shard abc not found' });
    expect(await snapshot()).toEqual(before);
  });
});

describe('stampAttuned', () => {
  it('stamps lastAttunedAt; the soul then waits for new evidence (RECENCY)', async () => {
    const ada = await newSoul('Ada');
    for (const { content, source, age } of evidence) await newShard(content, source, [ada], { createdAt: iso(T0 - age * DAY_MS) });
    tick();
    const result = await soulMutation('stampAttuned', { soulId: ada });
    expect(result.__typename).toBe('SoulPayload');
    expect(result.soul).toMatchObject({ lastAttunedAt: iso(T0 + MINUTE), updatedAt: iso(T0), crystallization: { ready: false, unmet: ['RECENCY'] } });
  });

  it('counts arrival (SPEC §13): a backdated import recorded after the attunement makes the soul ready, and until then the soul says what it needs', async () => {
    const ada = await newSoul('Ada');
    for (const { content, source, age } of evidence) await newShard(content, source, [ada], { createdAt: iso(T0 - age * DAY_MS) });
    tick();
    await soulMutation('stampAttuned', { soulId: ada });
    const attunedAt = iso(now());
    const READ = `query($id: ID!) { soul(id: $id) { crystallization { ready unmet needs { condition message } } evidence { markdown } } }`;
    const waiting = (await gql(READ, { id: ada })).soul;
    const recency = `a shard recorded or revealed after the last attunement (${attunedAt}): any shard recorded since counts, whatever its createdAt`;
    expect(waiting.crystallization).toEqual({ ready: false, unmet: ['RECENCY'], needs: [{ condition: 'RECENCY', message: recency }] });
    expect(waiting.evidence.markdown).toContain(`Readiness: not ready — RECENCY needs ${recency}\n`);
    tick();
    // Observed a week before the attunement, recorded after it: new evidence.
    const imported = await gql(
      `mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { shards { createdAt recordedAt } readySouls { id } } } }`,
      { inputs: [{ content: 'Wrote the migration notes before the release', source: 'import', soulIds: [ada], createdAt: iso(T0 - 7 * DAY_MS) }] },
    );
    expect(imported.dropShards).toEqual({ __typename: 'DropShardsPayload', shards: [{ createdAt: iso(T0 - 7 * DAY_MS), recordedAt: iso(now()) }], readySouls: [{ id: ada }] });
    expect((await gql(READ, { id: ada })).soul.crystallization).toEqual({ ready: true, unmet: [], needs: [] });
  });

  it('answers NotFoundError, ValidationError and InvalidStateError, writing nothing', async () => {
    const ada = await newSoul('Ada');
    expect(await soulMutation('stampAttuned', { soulId: '99' })).toEqual({ __typename: 'NotFoundError', entity: 'Soul', id: '99', message: 'Soul 99 not found' });
    expect(await soulMutation('stampAttuned', { soulId: 'abc' })).toEqual({ __typename: 'ValidationError', field: 'soulId', message: 'must be a positive row id, got "abc"' });
    await soulMutation('retireSoul', { id: ada });
    const before = await snapshot();
    expect(await soulMutation('stampAttuned', { soulId: ada })).toEqual({ __typename: 'InvalidStateError', message: `soul ${ada} is dormant: awaken it first` });
    expect(await snapshot()).toEqual(before);
  });
});

describe('fadeExhaustedShards', () => {
  it('fades shards cited by shardFadeCitations distinct traits, once', async () => {
    const ada = await newSoul('Ada');
    const exhausted = await newShard('Ran the tests twice', 'chat', [ada]);
    const once = await newShard('Drank green tea', 'email', [ada]);
    await newTrait(ada, 'Runs the tests', [exhausted, once]);
    await newTrait(ada, 'Tests twice', [exhausted]);
    tick();
    expect(await gql('mutation { fadeExhaustedShards { fadedCount } }')).toEqual({ fadeExhaustedShards: { fadedCount: 1 } });
    expect(await gql(`{ faded: shard(id: "${exhausted}") { status updatedAt } kept: shard(id: "${once}") { status } }`)).toEqual({
      faded: { status: 'FADED', updatedAt: iso(T0 + MINUTE) },
      kept: { status: 'PENDING' },
    });
    expect(await gql('mutation { fadeExhaustedShards { fadedCount } }')).toEqual({ fadeExhaustedShards: { fadedCount: 0 } });
    expect(await gql(`{ soul(id: "${ada}") { pendingShardCount } shards(status: FADED) { edges { node { id } } } }`)).toEqual({
      soul: { pendingShardCount: 1 },
      shards: { edges: [{ node: { id: exhausted } }] },
    });
  });
});
