import type { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import type { Scope, TokenEntry } from '../src/server/auth.ts';
import { addTrait, assignThemes, citeShard, createSoul, dropShard, getShard, getTheme, levelUp, listThemes, opposeTrait, retireSoul, revertTrait, type SoulsDb } from '../src/engine/index.ts';
import { startServer, type LiveServer } from './support/server.ts';
import { trackListeners, type Topic } from './support/listeners.ts';

const WAIT_MS = 3_000;

/** One token per scope, one with several, all at least 16 characters (loadTokens' rule). */
const tokens: TokenEntry[] = [
  { name: 'reader', token: 'tok-read-7f3a9c2e5b1d4f60', scopes: ['read'] },
  { name: 'observer', token: 'tok-observe-0c8e2a7d4b9f', scopes: ['observe'] },
  { name: 'refiner', token: 'tok-refine-5d1b8f3e6a2c7', scopes: ['refine'] },
  { name: 'administrator', token: 'tok-admin-9e4c1a7f2d8b36', scopes: ['admin'] },
  { name: 'agent', token: 'tok-agent-3b7d2f9a1c6e58', scopes: ['read', 'observe', 'refine'] },
];
/** A well-formed credential no server knows: it must be refused like a missing one, and never echoed. */
const INVALID_TOKEN = 'tok-unknown-4a6c8e0b2d4f6a';
const secrets = [...tokens.map((t) => t.token), INVALID_TOKEN];

type Caller = { label: string; authorization?: string; scopes: readonly Scope[] | null };

/** null scopes: the caller is not authenticated at all. */
const callers: Caller[] = [
  { label: 'no token', scopes: null },
  { label: 'an invalid token', authorization: `Bearer ${INVALID_TOKEN}`, scopes: null },
  ...tokens.map((t) => ({ label: `${t.name} (${t.scopes.join('+')})`, authorization: `Bearer ${t.token}`, scopes: t.scopes })),
];

/** What a successful call of a field looks like; each setup makes something new for it to act on. */
type Operation = {
  field: string;
  /** The scope the field needs; 'any' = every authenticated caller. */
  scope: Scope | 'any';
  query: string;
  setup: (db: SoulsDb) => Promise<Record<string, unknown>>;
  /** Checks the data of an allowed call (and, for writes, that the write happened). */
  allowed: (value: any, db: SoulsDb, variables: Record<string, unknown>) => Promise<void> | void;
};

let counter = 0;
const unique = (prefix: string) => `${prefix} ${++counter}`;

async function soul(db: SoulsDb) {
  return createSoul(db, { name: unique('Soul'), essence: 'Calm, curious and careful.' });
}
/** A soul with a trait and a theme holding one of its shards. */
async function soulWithTheme(db: SoulsDb) {
  const { soul: s, trait } = await soulWithTrait(db);
  const { shardId } = await dropShard(db, 'Reviewed the parser change', 'review', [s.id]);
  const [theme] = (await assignThemes(db, s.id, [{ shardIds: [shardId], newThemeName: unique('Reviews') }])).themes;
  return { soul: s, trait, shardId, theme };
}
async function soulWithTrait(db: SoulsDb) {
  const s = await soul(db);
  const trait = await addTrait(db, s.id, { principle: `Reviews every change before merging (${counter})`, provenance: 'Seen in many reviews.' });
  return { soul: s, trait };
}

const result = `__typename ... on Error { message }`;
const payload = (typename: string) => (value: any) => expect(value, JSON.stringify(value)).toMatchObject({ __typename: typename });

const mutations: Operation[] = [
  {
    field: 'createSoul',
    scope: 'admin',
    query: `mutation($input: CreateSoulInput!) { createSoul(input: $input) { ${result} } }`,
    setup: async () => ({ input: { name: unique('Fresh'), essence: 'New.' } }),
    allowed: payload('SoulPayload'),
  },
  {
    field: 'updateSoul',
    scope: 'admin',
    query: `mutation($id: ID!) { updateSoul(id: $id, input: { description: "changed by the test" }) { ${result} } }`,
    setup: async (db) => ({ id: String((await soul(db)).id) }),
    allowed: payload('SoulPayload'),
  },
  {
    field: 'retireSoul',
    scope: 'admin',
    query: `mutation($id: ID!) { retireSoul(id: $id) { ${result} } }`,
    setup: async (db) => ({ id: String((await soul(db)).id) }),
    allowed: payload('SoulPayload'),
  },
  {
    field: 'awakenSoul',
    scope: 'admin',
    query: `mutation($id: ID!) { awakenSoul(id: $id) { ${result} } }`,
    setup: async (db) => {
      const s = await soul(db);
      await retireSoul(db, s.id);
      return { id: String(s.id) };
    },
    allowed: payload('SoulPayload'),
  },
  {
    field: 'addTrait',
    scope: 'refine',
    query: `mutation($soulId: ID!) { addTrait(soulId: $soulId, input: { principle: "Writes tests first", provenance: "Observed." }) { ${result} } }`,
    setup: async (db) => ({ soulId: String((await soul(db)).id) }),
    allowed: payload('TraitPayload'),
  },
  {
    field: 'reviseTrait',
    scope: 'refine',
    query: `mutation($id: ID!) { reviseTrait(id: $id, input: { principle: "Reviews every change twice" }) { ${result} } }`,
    setup: async (db) => ({ id: String((await soulWithTrait(db)).trait.id) }),
    allowed: payload('TraitPayload'),
  },
  {
    field: 'revertTrait',
    scope: 'refine',
    query: `mutation($id: ID!) { revertTrait(id: $id) { ${result} } }`,
    setup: async (db) => ({ id: String((await soulWithTrait(db)).trait.id) }),
    allowed: payload('TraitPayload'),
  },
  {
    field: 'reactivateTrait',
    scope: 'refine',
    query: `mutation($id: ID!) { reactivateTrait(id: $id) { ${result} } }`,
    setup: async (db) => {
      const { trait } = await soulWithTrait(db);
      await revertTrait(db, trait.id);
      return { id: String(trait.id) };
    },
    allowed: payload('TraitPayload'),
  },
  {
    field: 'levelUp',
    scope: 'refine',
    query: `mutation($soulId: ID!, $plan: LevelUpPlanInput!) { levelUp(soulId: $soulId, plan: $plan) { ${result} } }`,
    setup: async (db) => {
      const { soul: s, trait } = await soulWithTrait(db);
      return { soulId: String(s.id), plan: { newEssence: 'Calmer now.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [String(trait.id)] } };
    },
    allowed: payload('LevelUpPayload'),
  },
  {
    field: 'revertLevelUp',
    scope: 'refine',
    query: `mutation($soulId: ID!) { revertLevelUp(soulId: $soulId) { ${result} } }`,
    setup: async (db) => {
      const { soul: s, trait } = await soulWithTrait(db);
      await levelUp(db, s.id, { newEssence: 'Calmer now.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [trait.id] });
      return { soulId: String(s.id) };
    },
    allowed: payload('RevertLevelUpPayload'),
  },
  {
    field: 'dropShard',
    scope: 'observe',
    query: `mutation($soulId: ID!) { dropShard(input: { content: "Fixed the flaky build", source: "ci", soulIds: [$soulId] }) { ${result} } }`,
    setup: async (db) => ({ soulId: String((await soul(db)).id) }),
    allowed: payload('DropShardPayload'),
  },
  {
    field: 'dropShards',
    scope: 'observe',
    query: `mutation($soulId: ID!) {
      dropShards(inputs: [{ content: "Paired on the parser", source: "chat", soulIds: [$soulId] }, { content: "Wrote the release notes", source: "email", soulIds: [$soulId] }]) { ${result} }
    }`,
    setup: async (db) => ({ soulId: String((await soul(db)).id) }),
    allowed: payload('DropShardsPayload'),
  },
  {
    field: 'citeShard',
    scope: 'refine',
    query: `mutation($shardId: ID!, $traitId: ID!) { citeShard(shardId: $shardId, traitId: $traitId) { ${result} } }`,
    setup: async (db) => {
      const { soul: s, trait } = await soulWithTrait(db);
      const { shardId } = await dropShard(db, 'Reviewed the parser change', 'review', [s.id]);
      return { shardId: String(shardId), traitId: String(trait.id) };
    },
    allowed: payload('CiteShardPayload'),
  },
  {
    field: 'unciteShard',
    scope: 'refine',
    query: `mutation($shardId: ID!, $traitId: ID!) { unciteShard(shardId: $shardId, traitId: $traitId) { ${result} } }`,
    setup: async (db) => {
      const { soul: s, trait } = await soulWithTrait(db);
      const { shardId } = await dropShard(db, 'Reviewed the parser change', 'review', [s.id]);
      await citeShard(db, shardId, trait.id);
      return { shardId: String(shardId), traitId: String(trait.id) };
    },
    allowed: payload('CiteShardPayload'),
  },
  {
    field: 'revealShards',
    scope: 'observe',
    query: `mutation($ids: [ID!]!) { revealShards(ids: $ids) { ${result} } }`,
    setup: async (db) => {
      const s = await soul(db);
      const { shardId } = await dropShard(db, 'A sealed observation', 'diary', [s.id], { sealed: true });
      return { ids: [String(shardId)] };
    },
    allowed: payload('RevealShardsPayload'),
  },
  {
    field: 'stampAttuned',
    scope: 'refine',
    query: `mutation($soulId: ID!) { stampAttuned(soulId: $soulId) { ${result} } }`,
    setup: async (db) => ({ soulId: String((await soul(db)).id) }),
    allowed: payload('SoulPayload'),
  },
  {
    field: 'importSoulMd',
    scope: 'refine',
    query: `mutation($input: ImportSoulMdInput!) { importSoulMd(input: $input) { ${result} } }`,
    setup: async () => ({ input: { text: `---\nname: ${unique('Imported')}\n---\n\n## Who You Are\n\nSomeone imported.\n\n## Traits\n\n- Reads the file first.\n`, apply: true } }),
    allowed: payload('SoulMdImportPayload'),
  },
  {
    field: 'fadeExhaustedShards',
    scope: 'refine',
    query: `mutation { fadeExhaustedShards { fadedCount } }`,
    // A shard cited by shardFadeCitations (2) distinct traits: the maintenance run fades it.
    setup: async (db) => {
      const { soul: s, trait } = await soulWithTrait(db);
      const other = await addTrait(db, s.id, { principle: 'Answers questions patiently', provenance: 'Chat logs.' });
      const { shardId } = await dropShard(db, 'Explained the release process twice', 'chat', [s.id]);
      await citeShard(db, shardId, trait.id);
      await citeShard(db, shardId, other.id);
      return { shardId };
    },
    allowed: async (value, db, variables) => {
      expect(value.fadedCount).toBeGreaterThanOrEqual(1);
      expect((await getShard(db, variables.shardId as number))?.status).toBe('faded');
    },
  },
  {
    field: 'assignThemes',
    scope: 'refine',
    query: `mutation($soulId: ID!, $shardId: ID!) { assignThemes(soulId: $soulId, assignments: [{ shardIds: [$shardId], newThemeName: "Parsing" }]) { ${result} } }`,
    setup: async (db) => {
      const s = await soul(db);
      const { shardId } = await dropShard(db, 'Rewrote the tokenizer', 'review', [s.id]);
      return { soulId: String(s.id), shardId: String(shardId) };
    },
    allowed: async (value, db, variables) => {
      expect(value.__typename).toBe('AssignThemesPayload');
      expect((await listThemes(db, Number(variables.soulId))).map((t) => t.name)).toEqual(['Parsing']);
    },
  },
  {
    field: 'unassignShards',
    scope: 'refine',
    query: `mutation($soulId: ID!, $shardId: ID!) { unassignShards(soulId: $soulId, shardIds: [$shardId]) { ${result} } }`,
    setup: async (db) => {
      const { soul: s, shardId, theme } = await soulWithTheme(db);
      return { soulId: String(s.id), shardId: String(shardId), themeId: theme.id };
    },
    allowed: async (value, db, variables) => {
      expect(value.__typename).toBe('AssignThemesPayload');
      expect((await getTheme(db, variables.themeId as number))!.memberIds).toEqual([]);
    },
  },
  {
    field: 'renameTheme',
    scope: 'refine',
    query: `mutation($id: ID!) { renameTheme(id: $id, name: "Careful reviews") { ${result} } }`,
    setup: async (db) => ({ id: String((await soulWithTheme(db)).theme.id) }),
    allowed: payload('ThemePayload'),
  },
  {
    field: 'opposeTrait',
    scope: 'refine',
    query: `mutation($themeId: ID!, $traitId: ID!) { opposeTrait(themeId: $themeId, traitId: $traitId) { ${result} } }`,
    setup: async (db) => {
      const { theme, trait } = await soulWithTheme(db);
      return { themeId: String(theme.id), traitId: String(trait.id) };
    },
    allowed: payload('ThemePayload'),
  },
  {
    field: 'unopposeTrait',
    scope: 'refine',
    query: `mutation($themeId: ID!, $traitId: ID!) { unopposeTrait(themeId: $themeId, traitId: $traitId) { ${result} } }`,
    setup: async (db) => {
      const { theme, trait } = await soulWithTheme(db);
      await opposeTrait(db, theme.id, trait.id);
      return { themeId: String(theme.id), traitId: String(trait.id) };
    },
    allowed: payload('ThemePayload'),
  },
];

/** Every Query field, over a fixture that makes each of them answer something. */
function queries(fixture: () => { soulId: string; traitId: string; shardId: string; soulName: string }): Operation[] {
  const nonNull = (value: unknown) => expect(value).not.toBeNull();
  const read = (field: string, query: string, variables: () => Record<string, unknown> = () => ({})): Operation => ({
    field,
    scope: 'read',
    query,
    setup: async () => variables(),
    allowed: nonNull,
  });
  return [
    {
      field: 'caller',
      scope: 'any',
      query: `{ caller { name scopes } }`,
      setup: async () => ({}),
      allowed: (value) => expect(value.name).toMatch(/\S/),
    },
    read('soul', `query($id: ID!) { soul(id: $id) { id name traits { principle } } }`, () => ({ id: fixture().soulId })),
    read('soulByName', `query($name: String!) { soulByName(name: $name) { id } }`, () => ({ name: fixture().soulName })),
    read('souls', `{ souls { id } }`),
    read('soulsConnection', `{ soulsConnection { totalCount edges { node { id } } } }`),
    read('dormantSouls', `{ dormantSouls { id } }`),
    read('trait', `query($id: ID!) { trait(id: $id) { id principle } }`, () => ({ id: fixture().traitId })),
    read('shard', `query($id: ID!) { shard(id: $id) { id content } }`, () => ({ id: fixture().shardId })),
    read('shards', `query($soulId: ID) { shards(soulId: $soulId) { totalCount } }`, () => ({ soulId: fixture().soulId })),
    read('searchShards', `{ searchShards(query: "parser") { score } }`),
    read('crystallizationReadiness', `{ crystallizationReadiness { priority } }`),
    read('shardCountsPerSoul', `{ shardCountsPerSoul { pending } }`),
    read('shardCountsByTag', `{ shardCountsByTag { tag count } }`),
    read('settings', `{ settings { traitLimit } }`),
    read('previewTraitChanges', `query($soulId: ID!) { previewTraitChanges(soulId: $soulId, add: [{ principle: "Sleeps well", provenance: "Told us." }]) { before after } }`, () => ({
      soulId: fixture().soulId,
    })),
    read(
      'previewLevelUp',
      `query($soulId: ID!, $plan: LevelUpPlanInput!) { previewLevelUp(soulId: $soulId, plan: $plan) { valid } }`,
      () => ({ soulId: fixture().soulId, plan: { newEssence: 'Wiser.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [fixture().traitId] } }),
    ),
  ];
}

/** Every row of every table: refused writes must leave it as it was. */
function snapshot(db: SoulsDb): string {
  const sqlite = (db.store as unknown as { db?: DatabaseSync }).db;
  if (!sqlite?.prepare) throw new Error('the test expects the SQLite store (db.store.db)');
  const tables = sqlite.prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as { name: string }[];
  if (tables.length === 0) throw new Error('no tables found');
  return JSON.stringify(tables.map(({ name }) => [name, sqlite.prepare(`SELECT * FROM "${name}"`).all()]));
}

/** Counts the events mutations publish (a refused write must publish none). */
function countPublished(server: LiveServer): () => number {
  const pubsub = server.app.pubsub as { publish: (...args: any[]) => void };
  const original = pubsub.publish.bind(pubsub);
  let published = 0;
  pubsub.publish = (...args: any[]) => {
    published++;
    original(...args);
  };
  return () => published;
}

type Response = { status: number; text: string; body: any; challenge: string | null };

/** One HTTP operation; no response may ever contain a token, valid or not. */
async function post(server: LiveServer, query: string, variables: Record<string, unknown>, authorization?: string, accept = 'application/graphql-response+json'): Promise<Response> {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept, ...(authorization ? { authorization } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const text = await response.text();
  for (const secret of secrets) expect(text, 'a response echoed a token').not.toContain(secret);
  return { status: response.status, text, body: JSON.parse(text), challenge: response.headers.get('www-authenticate') };
}

function expectUnauthenticated(response: Response): void {
  expect(response.status, response.text).toBe(401);
  expect(response.body.data, response.text).toBeUndefined();
  expect(response.body.errors).toHaveLength(1);
  expect(response.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  expect(response.challenge, 'a 401 without a WWW-Authenticate challenge').toMatch(/^Bearer realm="souls"/);
}

function expectForbidden(response: Response, field: string): void {
  expect(response.status, response.text).toBe(200);
  expect(response.body.data === null || response.body.data?.[field] === null, response.text).toBe(true);
  expect(response.body.errors, response.text).toHaveLength(1);
  expect(response.body.errors[0]).toMatchObject({ path: [field], extensions: { code: 'FORBIDDEN' } });
}

/** Does a caller with these scopes get this field? */
const allows = (scopes: readonly Scope[] | null, scope: Scope | 'any') => scopes !== null && (scope === 'any' || scopes.includes(scope));

let fixture: { soulId: string; traitId: string; shardId: string; soulName: string };

async function buildFixture(db: SoulsDb) {
  const { soul: s, trait } = await soulWithTrait(db);
  const { shardId } = await dropShard(db, 'Rewrote the parser over the weekend', 'chat', [s.id], { tags: ['parser'] });
  fixture = { soulId: String(s.id), traitId: String(trait.id), shardId: String(shardId), soulName: s.name };
}

const operations = [...mutations, ...queries(() => fixture)];

describe('scoped tokens over HTTP', () => {
  let server: LiveServer;
  let published: () => number;

  beforeAll(async () => {
    server = await startServer({ app: { tokens } });
    published = countPublished(server);
    await buildFixture(server.app.db);
  });
  afterAll(() => server.stop());

  it('the table covers all 23 mutations of the contract and every Query field of the schema', () => {
    const { yoga } = server.app;
    const schema = yoga.getEnveloped().schema;
    expect(mutations.map((m) => m.field).sort()).toEqual(Object.keys(schema.getMutationType()!.getFields()).sort());
    expect(mutations).toHaveLength(23);
    expect(queries(() => fixture).map((q) => q.field).sort()).toEqual(Object.keys(schema.getQueryType()!.getFields()).sort());
  });

  describe.each(operations)('$field (needs $scope)', (operation) => {
    it.each(callers)('under $label', async (caller) => {
      const { db } = server.app;
      const variables = await operation.setup(db);
      const before = snapshot(db);
      const publishedBefore = published();
      const response = await post(server, operation.query, variables, caller.authorization);

      if (allows(caller.scopes, operation.scope)) {
        expect(response.status, response.text).toBe(200);
        expect(response.body.errors, response.text).toBeUndefined();
        await operation.allowed(response.body.data[operation.field], db, variables);
        // The check below is only meaningful because an allowed write does change the snapshot.
        if (operation.query.startsWith('mutation')) expect(snapshot(db), 'an allowed write wrote nothing').not.toBe(before);
        return;
      }
      if (caller.scopes === null) expectUnauthenticated(response);
      else expectForbidden(response, operation.field);
      expect(snapshot(db), 'a refused operation wrote to the database').toBe(before);
      expect(published(), 'a refused operation published an event').toBe(publishedBefore);
    });
  });

  it('a field the token lacks is refused while the fields it has in the same operation are answered', async () => {
    const reader = tokens.find((t) => t.name === 'reader')!;
    const response = await post(server, `query($id: ID!) { settings { traitLimit } soul(id: $id) { id } }`, { id: fixture.soulId }, `Bearer ${reader.token}`);
    expect(response.body).toEqual({ data: { settings: { traitLimit: 10 }, soul: { id: fixture.soulId } } });
    // A read-only token may not write in the same request as it reads: the mutation is refused as a whole.
    const mixed = await post(server, `mutation { stampAttuned(soulId: "${fixture.soulId}") { __typename } }`, {}, `Bearer ${reader.token}`);
    expectForbidden(mixed, 'stampAttuned');
  });

  it('Query.caller names the token and its scopes, never the token itself', async () => {
    const agent = tokens.find((t) => t.name === 'agent')!;
    const response = await post(server, `{ caller { name scopes } }`, {}, `Bearer ${agent.token}`);
    expect(response.body).toEqual({ data: { caller: { name: 'agent', scopes: ['READ', 'OBSERVE', 'REFINE'] } } });
  });

  it('takes the scheme in any case and refuses other schemes, bare tokens and tokens with extra text', async () => {
    const reader = tokens.find((t) => t.name === 'reader')!;
    const query = `{ settings { traitLimit } }`;
    for (const header of [`bearer ${reader.token}`, `BEARER ${reader.token}`, `Bearer   ${reader.token}  `]) {
      const response = await post(server, query, {}, header);
      expect(response.status, header).toBe(200);
      expect(response.body).toEqual({ data: { settings: { traitLimit: 10 } } });
    }
    for (const header of [reader.token, `Basic ${reader.token}`, `Bearer ${reader.token}x`, `Bearer ${reader.token} ${reader.token}`, 'Bearer', 'Bearer ']) {
      expectUnauthenticated(await post(server, query, {}, header));
    }
  });

  it('challenges with WWW-Authenticate: Bearer (RFC 6750): no error code without credentials, invalid_token for a wrong one', async () => {
    const query = `{ settings { traitLimit } }`;
    const reader = tokens.find((t) => t.name === 'reader')!;
    expect((await post(server, query, {})).challenge).toBe('Bearer realm="souls"');
    expect((await post(server, query, {}, `Basic ${reader.token}`)).challenge).toBe('Bearer realm="souls"');
    expect((await post(server, query, {}, `Bearer ${INVALID_TOKEN}`)).challenge).toBe(
      'Bearer realm="souls", error="invalid_token", error_description="the bearer token is not known to this server"',
    );
    for (const malformed of ['Bearer', 'Bearer ', `Bearer ${reader.token} ${reader.token}`]) {
      expect((await post(server, query, {}, malformed)).challenge, malformed).toBe(
        'Bearer realm="souls", error="invalid_request", error_description="the Authorization header must be Bearer followed by one token"',
      );
    }
    expect((await post(server, query, {}, `Bearer ${reader.token}`)).challenge).toBeNull();
  });

  it('answers 401 UNAUTHENTICATED to GET requests and to application/json clients too', async () => {
    const get = await fetch(`${server.url}?query=${encodeURIComponent('{ settings { traitLimit } }')}`, {
      headers: { accept: 'application/json', 'x-graphql-yoga-csrf': '1' },
    });
    const text = await get.text();
    expect(get.status, text).toBe(401);
    expect(get.headers.get('www-authenticate')).toBe('Bearer realm="souls"');
    expect(JSON.parse(text).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expectUnauthenticated(await post(server, `{ settings { traitLimit } }`, {}, undefined, 'application/json'));
  });

  it('does not log refused calls as unexpected errors', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const observer = tokens.find((t) => t.name === 'observer')!;
      expectForbidden(await post(server, `{ souls { id } }`, {}, `Bearer ${observer.token}`), 'souls');
      expectUnauthenticated(await post(server, `{ souls { id } }`, {}, `Bearer ${INVALID_TOKEN}`));
      expect(errors.mock.calls.map((call) => String(call[0]).slice(0, 200))).toEqual([]);
    } finally {
      errors.mockRestore();
    }
  });
});

/** Paths of a response's errors, as `field.0.field`, sorted. */
const errorPaths = (body: any): string[] => (body.errors ?? []).map((e: any) => (e.path ?? []).join('.')).sort();

/**
 * A write a write-only token may make: selecting only ids it gets them back;
 * selecting what only `read` may see, it gets FORBIDDEN there (null spreads
 * up through the non-null fields, as GraphQL has it) and never the data.
 */
type PayloadRead = {
  label: string;
  token: string;
  /** the mutation with `$selection` for the payload's selection */
  mutation: string;
  setup: (db: SoulsDb) => Promise<Record<string, unknown>>;
  ids: { selection: string; expected: (variables: Record<string, unknown>) => unknown };
  /** selections beyond ids, each refused on its own; the paths FORBIDDEN may name */
  beyond: string[];
  forbidden: string[];
};

const ESSENCE = 'An essence only readers may see.';
const PROVENANCE = 'A provenance only readers may see.';
const SHARD_CONTENT = 'Kept the roadmap to themselves';

/** A soul with a trait, a level-up and a visible shard the trait cites: everything a payload could leak. */
async function richSoul(db: SoulsDb) {
  const s = await createSoul(db, { name: unique('Rich'), essence: ESSENCE });
  const trait = await addTrait(db, s.id, { principle: `Keeps secrets (${counter})`, provenance: PROVENANCE });
  const { shardId } = await dropShard(db, SHARD_CONTENT, 'chat', [s.id], { tags: ['secret'] });
  await citeShard(db, shardId, trait.id);
  // A level-up must change something (SPEC §12): the new essence still holds the secret text.
  await levelUp(db, s.id, { newEssence: `${ESSENCE} Grown.`, consolidations: [], promotedTraitIds: [], carriedTraitIds: [trait.id] });
  return { soul: s, trait, shardId };
}

const payloadReads: PayloadRead[] = [
  {
    label: 'an observe token reveals an already visible shard',
    token: 'observer',
    mutation: `mutation($ids: [ID!]!) { revealShards(ids: $ids) { ... on RevealShardsPayload { shards { id $selection } } } }`,
    setup: async (db) => ({ ids: [String((await richSoul(db)).shardId)] }),
    ids: { selection: '', expected: (v) => ({ revealShards: { shards: [{ id: (v.ids as string[])[0] }] } }) },
    beyond: ['souls { id essence traits { provenance } levelHistory { essenceBefore } }', 'content', 'tags', 'citedBy { id }'],
    forbidden: ['revealShards.shards.0.souls', 'revealShards.shards.0.content', 'revealShards.shards.0.tags', 'revealShards.shards.0.citedBy'],
  },
  {
    label: 'an observe token drops a shard',
    token: 'observer',
    mutation: `mutation($soulId: ID!) { dropShard(input: { content: "Seen again", source: "chat", soulIds: [$soulId] }) { ... on DropShardPayload { shard { id $selection } } } }`,
    setup: async (db) => ({ soulId: String((await richSoul(db)).soul.id) }),
    ids: { selection: '', expected: () => ({ dropShard: { shard: { id: expect.stringMatching(/^\d+$/) } } }) },
    beyond: ['souls { essence }', 'citedBy { principle }', 'content'],
    forbidden: ['dropShard.shard.souls', 'dropShard.shard.citedBy', 'dropShard.shard.content'],
  },
  {
    label: 'a refine token repeats an existing citation',
    token: 'refiner',
    mutation: `mutation($shardId: ID!, $traitId: ID!) { citeShard(shardId: $shardId, traitId: $traitId) { ... on CiteShardPayload { shard { id } trait { id $selection } } } }`,
    setup: async (db) => {
      const rich = await richSoul(db);
      return { shardId: String(rich.shardId), traitId: String(rich.trait.id) };
    },
    ids: { selection: '', expected: (v) => ({ citeShard: { shard: { id: v.shardId }, trait: { id: v.traitId } } }) },
    beyond: ['principle', 'provenance', 'soul { id essence }', 'citations { content }', 'signals { stale }'],
    forbidden: ['citeShard.trait.principle', 'citeShard.trait.provenance', 'citeShard.trait.soul', 'citeShard.trait.citations', 'citeShard.trait.signals'],
  },
  {
    label: 'a refine token adds a trait and reads the soul back',
    token: 'refiner',
    mutation: `mutation($soulId: ID!) { addTrait(soulId: $soulId, input: { principle: "Writes tests first", provenance: "Observed." }) { ... on TraitPayload { soul { id $selection } } } }`,
    setup: async (db) => ({ soulId: String((await richSoul(db)).soul.id) }),
    ids: { selection: '', expected: (v) => ({ addTrait: { soul: { id: v.soulId } } }) },
    beyond: ['essence', 'rendered', 'levelHistory { id essenceBefore }', 'evidence { markdown }', 'traits { provenance }', 'crystallization { ready }'],
    forbidden: ['addTrait.soul.essence', 'addTrait.soul.rendered', 'addTrait.soul.levelHistory', 'addTrait.soul.evidence', 'addTrait.soul.traits', 'addTrait.soul.crystallization'],
  },
  {
    label: 'an admin token updates a soul with an empty input',
    token: 'administrator',
    mutation: `mutation($id: ID!) { updateSoul(id: $id, input: {}) { ... on SoulPayload { soul { id $selection } } } }`,
    setup: async (db) => ({ id: String((await richSoul(db)).soul.id) }),
    ids: { selection: '', expected: (v) => ({ updateSoul: { soul: { id: v.id } } }) },
    beyond: ['name', 'essence', 'traits { principle provenance }', 'levelHistory { id essenceBefore }', 'shards { totalCount }'],
    forbidden: ['updateSoul.soul.name', 'updateSoul.soul.essence', 'updateSoul.soul.traits', 'updateSoul.soul.levelHistory', 'updateSoul.soul.shards'],
  },
];

describe('write-only tokens read nothing through mutation payloads', () => {
  let server: LiveServer;
  let open: LiveServer;
  beforeAll(async () => {
    server = await startServer({ app: { tokens } });
    open = await startServer();
  });
  afterAll(() => Promise.all([server.stop(), open.stop()]));
  const bearer = (name: string) => `Bearer ${tokens.find((t) => t.name === name)!.token}`;

  it.each(payloadReads)('$label: selecting ids, gets them', async ({ token, mutation, setup, ids }) => {
    const variables = await setup(server.app.db);
    const response = await post(server, mutation.replace('$selection', ids.selection), variables, bearer(token));
    expect(response.body, response.text).toEqual({ data: ids.expected(variables) });
  });

  it.each(payloadReads)('$label: every field beyond ids is FORBIDDEN, and nothing of it is sent', async ({ token, mutation, setup, beyond, forbidden }) => {
    for (const [i, selection] of beyond.entries()) {
      const response = await post(server, mutation.replace('$selection', selection), await setup(server.app.db), bearer(token));
      expect(response.status, response.text).toBe(200);
      expect(response.body.errors, response.text).toHaveLength(1);
      expect(response.body.errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' } });
      expect(errorPaths(response.body)).toEqual([forbidden[i]]);
      for (const secret of [ESSENCE, PROVENANCE, SHARD_CONTENT, 'Keeps secrets']) expect(response.text).not.toContain(secret);
    }
  });

  it.each(payloadReads)('$label: with read as well (here every scope), every field is answered', async ({ mutation, setup, beyond }) => {
    const response = await post(open, mutation.replace('$selection', beyond.join(' ')), await setup(open.app.db));
    expect(response.body.errors, response.text).toBeUndefined();
  });
});

describe('a server without tokens', () => {
  let server: LiveServer;

  beforeAll(async () => {
    server = await startServer();
    await buildFixture(server.app.db);
  });
  afterAll(() => server.stop());

  it.each(operations)('lets any caller use $field', async (operation) => {
    const variables = await operation.setup(server.app.db);
    const response = await post(server, operation.query, variables);
    expect(response.status, response.text).toBe(200);
    expect(response.body.errors, response.text).toBeUndefined();
    await operation.allowed(response.body.data[operation.field], server.app.db, variables);
  });

  it('runs every request as the local caller with every scope, whatever Authorization says', async () => {
    for (const authorization of [undefined, `Bearer ${INVALID_TOKEN}`]) {
      const response = await post(server, `{ caller { name scopes } }`, {}, authorization);
      expect(response.body).toEqual({ data: { caller: { name: 'local', scopes: ['READ', 'OBSERVE', 'REFINE', 'ADMIN'] } } });
    }
  });
});

// ---------------------------------------------------------------------------
// Subscriptions


async function until(done: () => boolean, describe: () => string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`after ${WAIT_MS} ms: ${describe()}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** One graphql-ws subscription on a client of its own: what it received, and how its socket closed. */
class WsSubscription {
  readonly results: any[] = [];
  readonly frames: string[] = [];
  error: unknown = null;
  completed = false;
  closed: { code: number; reason: string } | null = null;
  readonly client: Client;

  constructor(url: string, authorization: string | undefined, query: string) {
    this.client = createClient({
      url,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      connectionParams: authorization === undefined ? undefined : { authorization },
      on: {
        closed: (event: any) => (this.closed = { code: event.code, reason: String(event.reason ?? '') }),
        message: (message) => this.frames.push(JSON.stringify(message)),
      },
    });
    this.client.subscribe(
      { query },
      {
        next: (value) => this.results.push(value),
        error: (error) => (this.error = error),
        complete: () => (this.completed = true),
      },
    );
  }

  describe(): string {
    return JSON.stringify({ results: this.results, closed: this.closed, completed: this.completed, error: String(this.error) });
  }

  ended(): Promise<void> {
    return until(() => this.completed || this.error !== null, () => `the subscription did not end: ${this.describe()}`);
  }
}

describe('scoped tokens on subscriptions', () => {
  let server: LiveServer;
  let listeners: ReturnType<typeof trackListeners>;
  let subscriptions: WsSubscription[] = [];
  const admin = tokens.find((t) => t.name === 'administrator')!;
  const subscription = `subscription { soulChanged { kind soul { id } } }`;

  beforeAll(async () => {
    server = await startServer({ app: { tokens } });
    listeners = trackListeners(server);
    await buildFixture(server.app.db);
  });
  afterEach(async () => {
    await Promise.all(subscriptions.map((s) => s.client.dispose()));
    subscriptions = [];
    await until(() => listeners.count('soulChanged') === 0, () => 'a subscription still listens after its client went');
  });
  afterAll(() => server.stop());

  /** An admin write that fires soulChanged (UPDATED) for the fixture soul. */
  async function touchSoul(): Promise<void> {
    const response = await post(server, `mutation($id: ID!) { updateSoul(id: $id, input: { description: "touched" }) { __typename } }`, { id: fixture.soulId }, `Bearer ${admin.token}`);
    expect(response.body).toEqual({ data: { updateSoul: { __typename: 'SoulPayload' } } });
  }

  it.each(callers)('over graphql-ws under $label', async (caller) => {
    const ws = new WsSubscription(server.wsUrl, caller.authorization, subscription);
    subscriptions.push(ws);

    if (caller.scopes === null) {
      // Refused at connection_init: the socket closes with 4403 before any operation runs.
      await until(() => ws.closed !== null && ws.error !== null, () => `the socket did not close: ${ws.describe()}`);
      expect(ws.closed!.code).toBe(4403);
      expect(ws.results).toEqual([]);
      expect(listeners.count('soulChanged')).toBe(0);
    } else if (!caller.scopes.includes('read')) {
      // Refused at subscribe time (authorizeOnSubscribe): one FORBIDDEN result, no data, then complete.
      await ws.ended();
      expect(ws.results, ws.describe()).toHaveLength(1);
      expect(ws.results[0].data ?? null).toBeNull();
      expect(ws.results[0].errors).toHaveLength(1);
      expect(ws.results[0].errors[0]).toMatchObject({ path: ['soulChanged'], extensions: { code: 'FORBIDDEN' } });
      expect(ws.completed).toBe(true);
      expect(listeners.count('soulChanged')).toBe(0);
      // Nothing arrives afterwards either.
      await touchSoul();
      expect(ws.results).toHaveLength(1);
    } else {
      await listeners.until('soulChanged', 1, caller.label);
      await touchSoul();
      await until(() => ws.results.length === 1, () => `no event arrived: ${ws.describe()}`);
      expect(ws.results[0]).toEqual({ data: { soulChanged: { kind: 'UPDATED', soul: { id: fixture.soulId } } } });
    }
    const seen = ws.frames.join('\n') + JSON.stringify(ws.closed);
    for (const secret of secrets) expect(seen, 'a WebSocket frame echoed a token').not.toContain(secret);
  });

  it('a raw socket with a bad token in connection_init is closed with 4403', async () => {
    for (const params of [{}, { authorization: `Bearer ${INVALID_TOKEN}` }, { authorization: 42 }]) {
      const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws');
      const frames: string[] = [];
      const closed = new Promise<{ code: number; reason: string }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no close within ${WAIT_MS} ms; frames ${JSON.stringify(frames)}`)), WAIT_MS);
        socket.on('message', (data) => frames.push(String(data)));
        socket.on('close', (code, reason) => {
          clearTimeout(timer);
          resolve({ code, reason: String(reason) });
        });
      });
      socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: params })));
      const { code, reason } = await closed;
      expect(code, JSON.stringify(params)).toBe(4403);
      expect(frames.filter((f) => f.includes('connection_ack'))).toEqual([]);
      expect(reason).not.toContain(INVALID_TOKEN);
    }
  });

  it("an authenticated socket applies the token's scopes to queries and mutations too", async () => {
    const reader = tokens.find((t) => t.name === 'reader')!;
    const client = createClient({ url: server.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { authorization: `Bearer ${reader.token}` } });
    try {
      const read = await client.iterate({ query: `{ caller { name } }` }).next();
      expect(read.value).toEqual({ data: { caller: { name: 'reader' } } });
      const before = snapshot(server.app.db);
      const write = await client.iterate({ query: `mutation { retireSoul(id: "${fixture.soulId}") { __typename } }` }).next();
      expect(write.value.data ?? null).toBeNull();
      expect(write.value.errors[0]).toMatchObject({ path: ['retireSoul'], extensions: { code: 'FORBIDDEN' } });
      expect(snapshot(server.app.db)).toBe(before);
    } finally {
      await client.dispose();
    }
  });

  describe('over SSE', () => {
    const controllers: AbortController[] = [];
    afterEach(() => {
      for (const controller of controllers.splice(0)) controller.abort();
    });

    /** Opens an SSE subscription; `text()` is what has streamed so far. */
    async function sse(authorization?: string) {
      const controller = new AbortController();
      controllers.push(controller);
      const response = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ query: subscription }),
        signal: controller.signal,
      });
      let text = '';
      let ended = false;
      void (async () => {
        try {
          for await (const chunk of response.body!) text += Buffer.from(chunk).toString('utf8');
        } catch {
          // aborted by afterEach
        } finally {
          ended = true;
        }
      })();
      return { status: response.status, challenge: response.headers.get('www-authenticate'), text: () => text, ended: () => ended };
    }

    const nextPayloads = (text: string) =>
      text
        .split('\n\n')
        .filter((block) => block.startsWith('event: next'))
        .map((block) => JSON.parse(block.slice(block.indexOf('data:') + 5)));

    it('needs the Authorization header: without it, 401 UNAUTHENTICATED', async () => {
      for (const authorization of [undefined, `Bearer ${INVALID_TOKEN}`]) {
        const stream = await sse(authorization);
        expect(stream.status).toBe(401);
        expect(stream.challenge).toMatch(/^Bearer realm="souls"/);
        await until(stream.ended, () => `the stream did not end: ${stream.text()}`);
        const [payload] = nextPayloads(stream.text());
        expect(payload.data).toBeUndefined();
        expect(payload.errors[0].extensions.code).toBe('UNAUTHENTICATED');
        expect(stream.text()).not.toContain(INVALID_TOKEN);
      }
      expect(listeners.count('soulChanged')).toBe(0);
    });

    it('refuses a token without read with FORBIDDEN', async () => {
      const observer = tokens.find((t) => t.name === 'observer')!;
      const stream = await sse(`Bearer ${observer.token}`);
      await until(stream.ended, () => `the stream did not end: ${stream.text()}`);
      const payloads = nextPayloads(stream.text());
      expect(payloads).toHaveLength(1);
      expect(payloads[0].data ?? null).toBeNull();
      expect(payloads[0].errors[0]).toMatchObject({ path: ['soulChanged'], extensions: { code: 'FORBIDDEN' } });
      expect(listeners.count('soulChanged')).toBe(0);
    });

    it('streams events to a token with read', async () => {
      const reader = tokens.find((t) => t.name === 'reader')!;
      const stream = await sse(`Bearer ${reader.token}`);
      expect(stream.status).toBe(200);
      await listeners.until('soulChanged', 1, 'SSE reader');
      await touchSoul();
      await until(() => nextPayloads(stream.text()).length === 1, () => `no event arrived: ${stream.text()}`);
      expect(nextPayloads(stream.text())).toEqual([{ data: { soulChanged: { kind: 'UPDATED', soul: { id: fixture.soulId } } } }]);
    });
  });
});

describe('subscriptions on a server without tokens', () => {
  it('accepts a socket without connectionParams', async () => {
    const server = await startServer();
    const listeners = trackListeners(server);
    const ws = new WsSubscription(server.wsUrl, undefined, `subscription { soulChanged { kind } }`);
    try {
      await listeners.until('soulChanged', 1, 'no tokens');
      const created = await post(server, `mutation { createSoul(input: { name: "Ada", essence: "Calm." }) { __typename } }`, {});
      expect(created.body).toEqual({ data: { createSoul: { __typename: 'SoulPayload' } } });
      await until(() => ws.results.length === 1, () => `no event arrived: ${ws.describe()}`);
      expect(ws.results[0]).toEqual({ data: { soulChanged: { kind: 'CREATED' } } });
    } finally {
      await ws.client.dispose();
      await server.stop();
    }
  });
});
