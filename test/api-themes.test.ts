import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import type { TokenEntry } from '../src/server/auth.ts';
import { startServer, type LiveServer } from './support/server.ts';
import { trackListeners } from './support/listeners.ts';

const DAY_MS = 86_400_000;
const WAIT_MS = 3_000;

const tokens: TokenEntry[] = [
  { name: 'judge', token: 'tok-judge-5d1b8f3e6a2c7f90', scopes: ['read', 'observe', 'refine', 'admin'] },
  { name: 'reader', token: 'tok-read-7f3a9c2e5b1d4f60', scopes: ['read'] },
];
const judge = { authorization: `Bearer ${tokens[0].token}` };

const texts = [
  'Fixed the Docker build cache for the api image',
  'Fixed the Docker build cache for the web image',
  'Fixed the Docker build cache for the worker image',
  'Cooked a spicy curry for the whole team on friday',
];

let server: LiveServer;
let clients: Client[] = [];

beforeEach(async () => {
  server = await startServer({ app: { tokens } });
});

afterEach(async () => {
  await Promise.all(clients.map((client) => client.dispose()));
  clients = [];
  await server.stop();
});

function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  return server.data(query, variables, judge);
}

/** A soul with the four texts as shards, from two sources over four days, and a trait citing the third. */
async function seed() {
  const soul = (await gql(`mutation { createSoul(input: { name: "Ada", essence: "A careful engineer." }) { ... on SoulPayload { soul { id } } } }`)).createSoul.soul.id;
  const shardIds: string[] = [];
  for (const [i, content] of texts.entries()) {
    const createdAt = new Date(server.clock.now() - (4 - i) * DAY_MS).toISOString();
    const data = await gql(`mutation($input: DropShardInput!) { dropShard(input: $input) { ... on DropShardPayload { shard { id } } } }`, {
      input: { soulIds: [soul], content, source: i % 2 ? 'chat' : 'journal', createdAt },
    });
    shardIds.push(data.dropShard.shard.id);
  }
  const trait = (
    await gql(`mutation($soul: ID!, $shard: ID!) { addTrait(soulId: $soul, input: { principle: "Fixed the Docker build cache for every image", provenance: "p", citeShardIds: [$shard] }) { ... on TraitPayload { trait { id } } } }`, {
      soul,
      shard: shardIds[2],
    })
  ).addTrait.trait.id;
  return { soul, shardIds, trait };
}

const assign = `mutation($soulId: ID!, $assignments: [ThemeAssignmentInput!]!) {
  assignThemes(soulId: $soulId, assignments: $assignments) {
    __typename
    ... on AssignThemesPayload { soul { id } themes { id name memberCount members { id } createdBy createdAt soul { id } opposes { id } } }
    ... on ValidationError { field message }
    ... on NotFoundError { entity id }
  }
}`;

const report = `query($id: ID!) { soul(id: $id) {
  themes { id name memberCount }
  crystallization { clusterCount }
  evidence { unjudgedCount clusters { memberCount representative { id } theme { id name } suggestedTheme { id } } markdown }
  traits { id counterEvidence { id } }
} }`;

describe('themes over HTTP', () => {
  it('assigns, reads, renames, opposes and unassigns, each answering its payload; the report and Shard.theme follow', async () => {
    const { soul, shardIds, trait } = await seed();
    const created = (await gql(assign, { soulId: soul, assignments: [{ shardIds: [shardIds[0], shardIds[1]], newThemeName: 'Builds' }, { shardIds: [shardIds[3]], newThemeName: 'Food' }] })).assignThemes;
    expect(created).toEqual({
      __typename: 'AssignThemesPayload',
      soul: { id: soul },
      themes: [
        { id: expect.any(String), name: 'Builds', memberCount: 2, members: [{ id: shardIds[0] }, { id: shardIds[1] }], createdBy: 'judge', createdAt: new Date(server.clock.now()).toISOString(), soul: { id: soul }, opposes: [] },
        { id: expect.any(String), name: 'Food', memberCount: 1, members: [{ id: shardIds[3] }], createdBy: 'judge', createdAt: expect.any(String), soul: { id: soul }, opposes: [] },
      ],
    });
    const [builds, food] = created.themes.map((t: { id: string }) => t.id);

    let data = await gql(report, { id: soul });
    expect(data.soul.themes).toEqual([{ id: builds, name: 'Builds', memberCount: 2 }, { id: food, name: 'Food', memberCount: 1 }]);
    expect(data.soul.evidence.unjudgedCount).toBe(1);
    expect(data.soul.evidence.clusters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ memberCount: 2, theme: { id: builds, name: 'Builds' }, suggestedTheme: null }),
        expect.objectContaining({ memberCount: 1, theme: { id: food, name: 'Food' }, suggestedTheme: null }),
        { memberCount: 1, representative: { id: shardIds[2] }, theme: null, suggestedTheme: { id: builds } },
      ]),
    );
    expect(data.soul.evidence.clusters).toHaveLength(3);
    expect(data.soul.crystallization.clusterCount).toBe(3);

    const shardThemes = await gql(`query($a: ID!, $b: ID!, $soul: ID!) { a: shard(id: $a) { theme(soulId: $soul) { id name } } b: shard(id: $b) { theme(soulId: $soul) { id } } }`, {
      a: shardIds[0],
      b: shardIds[2],
      soul,
    });
    expect(shardThemes).toEqual({ a: { theme: { id: builds, name: 'Builds' } }, b: { theme: null } });

    const renamed = await gql(`mutation($id: ID!) { renameTheme(id: $id, name: "Build caching") { __typename ... on ThemePayload { theme { id name } } } }`, { id: builds });
    expect(renamed.renameTheme).toEqual({ __typename: 'ThemePayload', theme: { id: builds, name: 'Build caching' } });

    const opposed = await gql(`mutation($theme: ID!, $trait: ID!) { opposeTrait(themeId: $theme, traitId: $trait) { __typename ... on ThemePayload { theme { opposes { id } } } } }`, { theme: builds, trait });
    expect(opposed.opposeTrait).toEqual({ __typename: 'ThemePayload', theme: { opposes: [{ id: trait }] } });
    data = await gql(report, { id: soul });
    expect(data.soul.traits).toEqual([{ id: trait, counterEvidence: [{ id: shardIds[0] }, { id: shardIds[1] }] }]);
    expect(data.soul.evidence.markdown).toContain(`contradicted by theme "Build caching" (#${builds}): #${shardIds[0]}, #${shardIds[1]}`);
    // Its cluster contradicts the trait (SPEC §13): never NOVEL, never a new-trait candidate.
    const aligned = await gql(`query($id: ID!) { soul(id: $id) { evidence { clusters { theme { id } alignment { kind trait { id } } } suggestedActions { kind } } } }`, { id: soul });
    expect(aligned.soul.evidence.clusters.find((c: { theme: { id: string } | null }) => c.theme?.id === builds).alignment).toEqual({ kind: 'CONTRADICTING', trait: { id: trait } });
    expect(aligned.soul.evidence.suggestedActions.map((a: { kind: string }) => a.kind)).not.toContain('NOVEL_CLUSTER');

    const unopposed = await gql(`mutation($theme: ID!, $trait: ID!) { unopposeTrait(themeId: $theme, traitId: $trait) { __typename ... on ThemePayload { theme { opposes { id } } } } }`, { theme: builds, trait });
    expect(unopposed.unopposeTrait.theme.opposes).toEqual([]);

    const left = await gql(`mutation($soul: ID!, $ids: [ID!]!) { unassignShards(soulId: $soul, shardIds: $ids) { __typename ... on AssignThemesPayload { themes { id memberCount } } } }`, {
      soul,
      ids: [shardIds[0], shardIds[1], shardIds[3]],
    });
    expect(left.unassignShards).toEqual({ __typename: 'AssignThemesPayload', themes: [{ id: builds, memberCount: 0 }, { id: food, memberCount: 0 }] });
    data = await gql(report, { id: soul });
    expect(data.soul.evidence.unjudgedCount).toBe(4);
    expect(data.soul.evidence.clusters.every((c: { theme: unknown }) => c.theme === null)).toBe(true);
  });

  it('answers bad input as typed errors naming the field, and writes nothing', async () => {
    const { soul, shardIds, trait } = await seed();
    const [theme] = (await gql(assign, { soulId: soul, assignments: [{ shardIds: [shardIds[0]], newThemeName: 'Builds' }] })).assignThemes.themes;
    const other = (await gql(`mutation { createSoul(input: { name: "Bo", essence: "A cook." }) { ... on SoulPayload { soul { id } } } }`)).createSoul.soul.id;
    const refusal = async (soulId: string, assignments: unknown) => (await gql(assign, { soulId, assignments })).assignThemes;

    expect(await refusal(soul, [{ shardIds: [shardIds[1]], themeId: theme.id, newThemeName: 'X' }])).toMatchObject({ __typename: 'ValidationError', field: 'assignments[0]' });
    expect(await refusal(soul, [{ shardIds: [shardIds[1]] }])).toMatchObject({ __typename: 'ValidationError', field: 'assignments[0]' });
    expect(await refusal(soul, [{ shardIds: [shardIds[1]], newThemeName: 'x'.repeat(201) }])).toMatchObject({ __typename: 'ValidationError', field: 'assignments[0].newThemeName' });
    expect(await refusal(soul, [{ shardIds: ['nope'], newThemeName: 'X' }])).toMatchObject({ __typename: 'ValidationError', field: 'assignments[0].shardIds[0]' });
    expect(await refusal(other, [{ shardIds: [shardIds[1]], newThemeName: 'X' }])).toMatchObject({ __typename: 'ValidationError', field: 'assignments[0].shardIds[0]' });
    expect(await refusal(other, [{ shardIds: [shardIds[1]], themeId: theme.id }])).toMatchObject({ __typename: 'ValidationError' });
    expect(await refusal('999', [{ shardIds: [shardIds[1]], newThemeName: 'X' }])).toEqual({ __typename: 'NotFoundError', entity: 'Soul', id: '999' });
    expect(await refusal(soul, [{ shardIds: ['9999'], newThemeName: 'X' }])).toEqual({ __typename: 'NotFoundError', entity: 'Shard', id: '9999' });
    expect(await refusal(soul, [{ shardIds: [shardIds[1]], themeId: '9999' }])).toEqual({ __typename: 'NotFoundError', entity: 'Theme', id: '9999' });

    const themeResult = `__typename ... on ValidationError { field } ... on NotFoundError { entity } ... on InvalidStateError { message }`;
    expect((await gql(`mutation($id: ID!) { renameTheme(id: $id, name: "  ") { ${themeResult} } }`, { id: theme.id })).renameTheme).toEqual({ __typename: 'ValidationError', field: 'name' });
    expect((await gql(`mutation { renameTheme(id: "9999", name: "X") { ${themeResult} } }`)).renameTheme).toEqual({ __typename: 'NotFoundError', entity: 'Theme' });
    expect((await gql(`mutation($id: ID!) { opposeTrait(themeId: $id, traitId: "9999") { ${themeResult} } }`, { id: theme.id })).opposeTrait).toEqual({ __typename: 'NotFoundError', entity: 'Trait' });
    await gql(`mutation($id: ID!) { revertTrait(id: $id) { __typename } }`, { id: trait });
    expect((await gql(`mutation($id: ID!, $trait: ID!) { opposeTrait(themeId: $id, traitId: $trait) { ${themeResult} } }`, { id: theme.id, trait })).opposeTrait).toMatchObject({
      __typename: 'InvalidStateError',
    });
    expect((await gql(`mutation($id: ID!) { unopposeTrait(themeId: "x", traitId: $id) { ${themeResult} } }`, { id: trait })).unopposeTrait).toEqual({ __typename: 'ValidationError', field: 'themeId' });

    const data = await gql(`query($id: ID!) { soul(id: $id) { themes { name memberCount opposes { id } } } }`, { id: soul });
    expect(data.soul.themes).toEqual([{ name: 'Builds', memberCount: 1, opposes: [] }]);
  });

  it('refuses judged counter-evidence as support (SPEC §13), naming the field and the conflict; nothing is written', async () => {
    const { soul, shardIds, trait } = await seed();
    const [builds] = (await gql(assign, { soulId: soul, assignments: [{ shardIds: [shardIds[0], shardIds[1]], newThemeName: 'Builds' }] })).assignThemes.themes;
    const errors = `__typename ... on ValidationError { field message } ... on InvalidStateError { message }`;
    // The trait cites no member of Builds: the theme may oppose it. Then it may not cite one.
    expect((await gql(`mutation($t: ID!, $r: ID!) { opposeTrait(themeId: $t, traitId: $r) { __typename } }`, { t: builds.id, r: trait })).opposeTrait.__typename).toBe('ThemePayload');
    expect((await gql(`mutation($s: ID!, $r: ID!) { citeShard(shardId: $s, traitId: $r) { ${errors} } }`, { s: shardIds[1], r: trait })).citeShard).toEqual({
      __typename: 'ValidationError',
      field: 'shardId',
      message: `shard ${shardIds[1]} is a member of theme "Builds" (#${builds.id}), which opposes trait ${trait}: judged counter-evidence is never support (cite other shards, or unoppose the theme first)`,
    });
    // Nor may a shard it cites join the theme.
    expect((await gql(assign, { soulId: soul, assignments: [{ shardIds: [shardIds[3], shardIds[2]], themeId: builds.id }] })).assignThemes).toMatchObject({
      __typename: 'ValidationError',
      field: 'assignments[0].shardIds[1]',
      message: expect.stringContaining(`trait ${trait} cites shard ${shardIds[2]}, and theme "Builds" (#${builds.id}) opposes it`),
    });
    // A theme whose members the trait cites (a wrong id) may not oppose it.
    const [food] = (await gql(assign, { soulId: soul, assignments: [{ shardIds: [shardIds[2]], newThemeName: 'Cache work' }] })).assignThemes.themes;
    expect((await gql(`mutation($t: ID!, $r: ID!) { opposeTrait(themeId: $t, traitId: $r) { ${errors} } }`, { t: food.id, r: trait })).opposeTrait).toEqual({
      __typename: 'ValidationError',
      field: 'traitId',
      message: `trait ${trait} cites shard ${shardIds[2]} of theme "Cache work" (#${food.id}): a theme whose members a trait cites cannot oppose it (check the trait id, or take those citations back first)`,
    });
    const state = await gql(`query($id: ID!) { soul(id: $id) { themes { name members { id } opposes { id } } } trait(id: "${trait}") { counterEvidence { id } } }`, { id: soul });
    expect(state.soul.themes).toEqual([
      { name: 'Builds', members: [{ id: shardIds[0] }, { id: shardIds[1] }], opposes: [{ id: trait }] },
      { name: 'Cache work', members: [{ id: shardIds[2] }], opposes: [] },
    ]);
    expect(state.trait.counterEvidence).toEqual([{ id: shardIds[0] }, { id: shardIds[1] }]);
  });

  it('refuses a theme write that changes nothing as an InvalidStateError, recording nothing', async () => {
    const { soul, shardIds, trait } = await seed();
    const [builds] = (await gql(assign, { soulId: soul, assignments: [{ shardIds: [shardIds[0]], newThemeName: 'Builds' }] })).assignThemes.themes;
    await gql(`mutation($t: ID!, $r: ID!) { opposeTrait(themeId: $t, traitId: $r) { __typename } }`, { t: builds.id, r: trait });
    const history = `query($id: ID!) { soul(id: $id) { themes { name members { id } opposes { id } } } }`;
    const before = await gql(history, { id: soul });
    const invalid = { __typename: 'InvalidStateError', message: expect.stringContaining('nothing to') };
    const state = `__typename ... on InvalidStateError { message }`;
    expect((await gql(`mutation($t: ID!, $r: ID!) { opposeTrait(themeId: $t, traitId: $r) { ${state} } }`, { t: builds.id, r: trait })).opposeTrait).toEqual(invalid);
    expect((await gql(`mutation($t: ID!) { renameTheme(id: $t, name: "Builds") { ${state} } }`, { t: builds.id })).renameTheme).toEqual(invalid);
    expect((await gql(assign.replace('... on NotFoundError', '... on InvalidStateError { message } ... on NotFoundError'), { soulId: soul, assignments: [{ shardIds: [shardIds[0]], themeId: builds.id }] })).assignThemes).toEqual({
      __typename: 'InvalidStateError',
      message: `shard ${shardIds[0]} is in theme ${builds.id} already: nothing to change`,
    });
    expect((await gql(`mutation($s: ID!, $ids: [ID!]!) { unassignShards(soulId: $s, shardIds: $ids) { ${state} } }`, { s: soul, ids: [shardIds[3]] })).unassignShards).toEqual(invalid);
    expect(await gql(history, { id: soul })).toEqual(before);
    expect((await gql(`mutation($t: ID!, $r: ID!) { unopposeTrait(themeId: $t, traitId: $r) { __typename } }`, { t: builds.id, r: trait })).unopposeTrait.__typename).toBe('ThemePayload');
    expect((await gql(`mutation($t: ID!, $r: ID!) { unopposeTrait(themeId: $t, traitId: $r) { ${state} } }`, { t: builds.id, r: trait })).unopposeTrait).toEqual(invalid);
  });

  it('needs the refine scope to judge', async () => {
    const { soul, shardIds } = await seed();
    const { body } = await server.request(assign, { soulId: soul, assignments: [{ shardIds: [shardIds[0]], newThemeName: 'Builds' }] }, { authorization: `Bearer ${tokens[1].token}` });
    expect(body.errors[0].extensions.code).toBe('FORBIDDEN');
    expect((await gql(`query($id: ID!) { soul(id: $id) { themes { id } } }`, { id: soul })).soul.themes).toEqual([]);
  });

  it('soulChanged fires THEMES_CHANGED for every theme write, none for a refused one', async () => {
    const { soul, shardIds, trait } = await seed();
    const listeners = trackListeners(server);
    const client = createClient({ url: server.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: judge });
    clients.push(client);
    const kinds: string[] = [];
    client.subscribe({ query: `subscription($id: ID) { soulChanged(soulId: $id) { kind soul { id } } }`, variables: { id: soul } }, {
      next: (result) => kinds.push((result.data as any).soulChanged.kind),
      error: () => {},
      complete: () => {},
    });
    await listeners.until('soulChanged', 1);

    const [theme] = (await gql(assign, { soulId: soul, assignments: [{ shardIds: [shardIds[0]], newThemeName: 'Builds' }] })).assignThemes.themes;
    expect((await gql(assign, { soulId: soul, assignments: [{ shardIds: [shardIds[0]] }] })).assignThemes.__typename).toBe('ValidationError');
    await gql(`mutation($id: ID!) { renameTheme(id: $id, name: "Caching") { __typename } }`, { id: theme.id });
    await gql(`mutation($id: ID!, $trait: ID!) { opposeTrait(themeId: $id, traitId: $trait) { __typename } }`, { id: theme.id, trait });
    await gql(`mutation($id: ID!, $trait: ID!) { unopposeTrait(themeId: $id, traitId: $trait) { __typename } }`, { id: theme.id, trait });
    await gql(`mutation($soul: ID!, $ids: [ID!]!) { unassignShards(soulId: $soul, shardIds: $ids) { __typename } }`, { soul, ids: [shardIds[0]] });

    const deadline = Date.now() + WAIT_MS;
    while (kinds.length < 5 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(kinds).toEqual(['THEMES_CHANGED', 'THEMES_CHANGED', 'THEMES_CHANGED', 'THEMES_CHANGED', 'THEMES_CHANGED']);
  });
});
