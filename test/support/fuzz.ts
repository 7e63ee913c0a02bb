/**
 * A deterministic, seeded fuzzer for the Souls GraphQL API, shared by
 * test/fuzz.test.ts (in-process server) and scripts/fuzz.ts (child-process
 * server, `npm run fuzz`).
 *
 * Every case starts from a valid operation of the contract with realistic
 * variables and is then mutated at one or more levels: the variables (weird
 * strings, huge numbers, wrong types, deep and huge lists, missing and extra
 * keys), the document (spliced tokens, truncation, duplicated fields and
 * fragments, deep selections, alias/directive/token bombs, bogus operation
 * names) and the HTTP envelope (methods, content types, Accept, bodies that
 * are not JSON, bodies just under and just over the body limit, chunked
 * bodies, GET with and without the CSRF header). Case i is generated from its
 * own PRNG seeded by (seed, i), so any failing case can be replayed alone.
 *
 * Rows written before the fuzz must survive it unchanged. The fuzz creates its
 * own rows first and targets only those: every id it sends, in variables or
 * spliced into a document, is checked against the ids of the known rows
 * (`protectedIds`, the union over all tables) and replaced when it could name
 * one. Global writes cannot reach them either: fadeExhaustedShards only fades
 * shards with enough citations, and the known rows' shards are faded (or not)
 * once before the snapshot, while nothing the fuzz may send can cite them.
 */
import { Agent, request as httpRequest } from 'node:http';
import type { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { getNullableType, isInputObjectType, isListType, Kind, parse, TypeInfo, typeFromAST, visit, visitWithTypeInfo, type GraphQLInputType } from 'graphql';
import { schema } from '../../schema/index.ts';
import { defaultSettings } from '../../src/engine/index.ts';
import { defaultLimits } from '../../src/server/limits.ts';
import { listBounds } from '../../src/server/request-cost.ts';

// ---------------------------------------------------------------------------
// PRNG

export type Rng = {
  next(): number;
  /** 0 ≤ n < max */
  int(max: number): number;
  /** lo ≤ n ≤ hi */
  between(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
};

/** mulberry32: small, fast, good enough to choose test inputs. */
export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (max: number) => Math.floor(next() * max);
  return {
    next,
    int,
    between: (lo, hi) => lo + int(hi - lo + 1),
    pick: (items) => items[int(items.length)],
    chance: (p) => next() < p,
  };
}

/** The seed of case `index` of a run seeded with `seed`. */
export function caseSeed(seed: number, index: number): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  h = Math.imul(h ^ index, 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

// ---------------------------------------------------------------------------
// Weird values

const unicodeSamples = [
  'مرحبا بالعالم', // RTL
  'שלום עולם',
  '\u202Eevil.exe\u202C', // right-to-left override
  '\u200F\u200E\u061C',
  '👩‍👩‍👧‍👦', // ZWJ sequence
  '🧠✨🔥',
  '🏳️‍🌈',
  'e\u0301\u0302\u0303\u0304\u0305', // stacked combining marks
  'Z\u0337\u0322\u031b\u0316\u0344a\u0338\u0321\u0359l\u0335\u0330g\u0336\u0323o',
  '\uD800', // lone high surrogate
  '\uDFFF', // lone low surrogate
  'a\uD83Db\uDE00c',
  '\u0000',
  'a\u0000b\u0000',
  '\u0007\u001b[31mred\u001b[0m',
  '\uFEFFbom',
  '\u200B\u200C\u200D',
  '\uFFFE\uFFFF',
  '\u{10FFFF}\u{E0001}',
  'İstanbul ǅ ß ﬁ ΐ',
  '𝔥𝔢𝔩𝔩𝔬 𝟙𝟚𝟛',
  '\r\n\t \u00A0\u2028\u2029',
];

const hostileStrings = [
  "'; DROP TABLE souls; --",
  '" OR 1=1 --',
  'NEAR(tests commits, 2)',
  '"unterminated',
  'content: tests',
  '* OR *',
  'tests AND',
  '^start OR -minus',
  'a:b:c',
  '{ } [ ] ( )',
  '$variable',
  '__proto__',
  'constructor',
  'toString',
  '%s%n%x',
  '../../package.json',
  '<script>alert(1)</script>',
  '${7*7}',
  '\\',
  '\\u0000',
  '',
  ' ',
  '   \t\n  ',
  '-- • !!!',
  '...',
  'null',
  'undefined',
  'true',
  'yesterday',
  '2025-13-45T99:99:99Z',
  '2026-02-30T00:00:00Z',
  '+275760-09-13T00:00:00.000Z',
  '-000001-01-01T00:00:00Z',
  '2026-01-01T00:00:00+25:00',
];

/** Numbers as they arrive in a JSON body: small and huge, fractional, negative zero. */
const numberSamples = [0, -0, -1, 1.5, 2 ** 31, 2 ** 31 - 1, -(2 ** 31), 2 ** 53, Number.MAX_SAFE_INTEGER, 1e308, -1e308, 5e-324, 0.1 + 0.2];
/** Numbers as strings, for fields that want numbers or ids. */
const numericStrings = ['NaN', 'Infinity', '-Infinity', '1e308', '9007199254740993', '-0', '0x10', '1_000', '1.0e+400', '0', '-1', '00', '1e3', '٣'];
/** Numeric JSON tokens JSON.stringify cannot produce (beyond double precision, overflow, -0), spliced in raw. */
const rawNumberTokens = ['9007199254740993', '-9007199254740993', '1e400', '-1e400', '1e-400', '-0', '-0.0', '123456789012345678901234567890'];

const RAW_OPEN = '\u0001RAW:';
const RAW_CLOSE = '\u0001';
const rawToken = (token: string) => `${RAW_OPEN}${token}${RAW_CLOSE}`;
/** JSON.stringify escapes \u0001; the sentinels become raw tokens after serialization. */
function serialize(value: unknown): string {
  return (JSON.stringify(value) ?? "").replace(/"\\u0001RAW:([^"\\]*)\\u0001"/g, '$1');
}

const words = [
  'tests', 'commits', 'review', 'patience', 'pairing', 'refactor', 'latency', 'logging', 'naming', 'docs', 'deploys', 'rollback',
  'coffee', 'debugging', 'schema', 'migrations', 'caching', 'queues', 'retries', 'budgets', 'ownership', 'estimates', 'mentoring',
];
const sources = ['chat', 'review', 'commit', 'standup', 'retro', 'ticket', 'pager'];

function sentence(rng: Rng, min = 3, max = 12): string {
  const n = rng.between(min, max);
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(rng.pick(words));
  const text = out.join(' ');
  return text[0].toUpperCase() + text.slice(1) + '.';
}

function randomChars(rng: Rng, length: number): string {
  const alphabets = ['abcdefghijklmnopqrstuvwxyz', 'ABCXYZ0123456789', ' \t\n', '{}[]():;,."\'\\$@#!?&|=+-*/<>%^~`', 'éüßçñøåæœ', 'αβγδλπΩ', '中文字符日本語한국어', '🙂🚀💥🧪'];
  let out = '';
  for (let i = 0; i < length; i++) out += rng.pick([...rng.pick(alphabets)]);
  return out;
}

function weirdString(rng: Rng): string {
  switch (rng.int(9)) {
    case 0:
      return rng.pick(unicodeSamples);
    case 1:
      return rng.pick(hostileStrings);
    case 2:
      return randomChars(rng, rng.between(1, 80));
    case 3:
      return rng.pick(unicodeSamples) + sentence(rng) + rng.pick(unicodeSamples);
    case 4:
      // Long: around the shard content bound (8 KiB), or several times it.
      return 'x'.repeat(rng.pick([1000, 8191, 8192, 8193, 20_000]));
    case 5:
      return rng.pick(['🧠', 'é', '\u0301', 'ß', 'a']).repeat(rng.pick([100, 2100, 3000]));
    case 6:
      return rng.pick(numericStrings);
    case 7:
      return `${sentence(rng)}\u0000${sentence(rng)}`;
    default:
      return sentence(rng, 1, 40);
  }
}

function weirdNumber(rng: Rng): unknown {
  if (rng.chance(0.3)) return rawToken(rng.pick(rawNumberTokens));
  if (rng.chance(0.3)) return rng.pick(numericStrings);
  return rng.pick(numberSamples);
}

function deepList(rng: Rng, leaf: unknown): unknown {
  let value: unknown = leaf;
  for (let depth = rng.between(2, 200); depth > 0; depth--) value = [value];
  return value;
}

function deepObject(rng: Rng): unknown {
  let value: unknown = 'deep';
  for (let depth = rng.between(2, 200); depth > 0; depth--) value = { [rng.pick(['a', 'input', 'content', 'soulIds', '__proto__'])]: value };
  return value;
}

function wrongType(rng: Rng, current: unknown): unknown {
  const candidates: unknown[] = [{}, { name: 'x' }, [], ['a', 'b'], true, false, 42, -7.5, 'string', null, [{ nested: [1, 2] }]];
  // Keep the swap a real change of type.
  const kind = (v: unknown) => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v);
  const different = candidates.filter((c) => kind(c) !== kind(current));
  return rng.pick(different.length > 0 ? different : candidates);
}

// ---------------------------------------------------------------------------
// Ids: the fuzz's own rows, and values that name no known row

export type Pool = {
  souls: number[];
  traits: number[];
  shards: number[];
  /** traits by soul, for plans */
  traitsOf: Map<number, number[]>;
  soulNames: string[];
};

/** Whether a value could be read as the row id of a known (protected) row. */
export function couldName(value: unknown, protectedIds: ReadonlySet<number>): boolean {
  if (typeof value === 'number') return Number.isInteger(value) && protectedIds.has(value);
  if (typeof value === 'string') {
    if (value.startsWith(RAW_OPEN)) return couldName(Number(value.slice(RAW_OPEN.length, -RAW_CLOSE.length)), protectedIds);
    return /^\s*[0-9]+\s*$/.test(value) && protectedIds.has(Number(value));
  }
  return false;
}

type Gen = { rng: Rng; pool: Pool; protectedIds: ReadonlySet<number>; wildBase: number };

/** An id that names no known row: far beyond them, not positive, or not a number at all. */
function wildId(g: Gen): unknown {
  const { rng } = g;
  switch (rng.int(6)) {
    case 0:
      return String(g.wildBase + rng.int(100_000));
    case 1:
      return rng.pick(['0', '-1', '', ' ', 'abc', '1.5', '9007199254740993', '999999999999999', '9999999999999999', 'NaN']);
    case 2:
      return rng.pick([0, -1, 2 ** 53, 1e308, 1.5]);
    case 3:
      return weirdString(rng);
    default:
      return String(g.wildBase + rng.int(1000));
  }
}

function idOf(g: Gen, ids: readonly number[]): string {
  return ids.length > 0 && g.rng.chance(0.9) ? String(g.rng.pick(ids)) : String(wildId(g));
}
const soulId = (g: Gen) => idOf(g, g.pool.souls);
const traitId = (g: Gen) => idOf(g, g.pool.traits);
const shardId = (g: Gen) => idOf(g, g.pool.shards);

/** Replaces, everywhere in a value, what could name a known row. */
function guardIds<T>(g: Gen, value: T): T {
  const visit = (v: unknown, depth: number): unknown => {
    if (couldName(v, g.protectedIds)) return String(g.wildBase + g.rng.int(1000));
    if (depth > 300) return v;
    if (Array.isArray(v)) return v.map((x) => visit(x, depth + 1));
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      // Mutators replace values in place and never move them: what sits under `first` is only ever a page size.
      for (const [key, x] of Object.entries(v)) out[key] = key === 'first' ? x : visit(x, depth + 1);
      return out;
    }
    return v;
  };
  return visit(value, 0) as T;
}

// ---------------------------------------------------------------------------
// The contract's operations, valid, with realistic variables

const SOUL_FIELDS = `id name slug essence description level createdAt updatedAt deletedAt lastAttunedAt dormant activeTraitCount traitLimit atCapacity pendingShardCount`;
const CRYSTALLIZATION = `crystallization { ready priority pendingCount distinctSources ageSpreadDays newSinceAttuned clusterCount unmet }`;
const errorFields: Record<string, string> = { NotFoundError: 'entity id', ValidationError: 'field', ConflictError: 'field', CapacityError: 'limit activeCount', InvalidStateError: 'message' };
/** The error members of a result union, each with its own fields. */
const errors = (...types: string[]) => `... on Error { __typename message } ${types.map((t) => `... on ${t} { ${errorFields[t]} }`).join(' ')}`;
const SOUL_ERRORS = errors('NotFoundError', 'ValidationError', 'ConflictError', 'InvalidStateError');
const TRAIT_ERRORS = errors('NotFoundError', 'ValidationError', 'CapacityError', 'InvalidStateError');
const SHARD_FIELDS = `id content source status sealed tags createdAt updatedAt`;
const TRAIT_FIELDS = `id principle provenance generation status createdAt updatedAt`;
const PLAN_ERROR = `message missing duplicated notActive problems { field message }`;

type Operation = {
  name: string;
  kind: 'query' | 'mutation' | 'subscription';
  document: string;
  variables(g: Gen): Record<string, unknown>;
};

function shardInput(g: Gen): Record<string, unknown> {
  const { rng } = g;
  const input: Record<string, unknown> = {
    content: sentence(rng),
    source: rng.pick(sources),
    soulIds: Array.from({ length: rng.between(1, 2) }, () => soulId(g)),
  };
  if (rng.chance(0.6)) input.tags = Array.from({ length: rng.between(0, 4) }, () => rng.pick(words));
  if (rng.chance(0.2)) input.sealed = rng.chance(0.5);
  if (rng.chance(0.1)) input.createdAt = rng.pick(['2025-12-01T00:00:00.000Z', '2025-12-31T23:59:59Z', '1970-01-01T00:00:00Z', '2999-01-01T00:00:00Z']);
  return input;
}

function plan(g: Gen, soul: string): Record<string, unknown> {
  const { rng } = g;
  const traits = [...(g.pool.traitsOf.get(Number(soul)) ?? [])].map(String);
  const consolidations = traits.length >= 2 && rng.chance(0.5) ? [{ sourceTraitIds: traits.splice(0, 2), mergedPrinciple: sentence(rng), mergedProvenance: sentence(rng) }] : [];
  const promoted = traits.length > 0 && rng.chance(0.5) ? traits.splice(0, 1) : [];
  return { newEssence: sentence(rng, 5, 20), consolidations, promotedTraitIds: promoted, carriedTraitIds: traits };
}

export const operations: readonly Operation[] = [
  {
    name: 'soul',
    kind: 'query',
    document: `query Soul($id: ID!, $provenance: Boolean) {
  soul(id: $id) {
    ${SOUL_FIELDS}
    rendered(includeProvenance: $provenance)
    traits(status: [ACTIVE, REVERTED, CONSOLIDATED, PROMOTED]) { ${TRAIT_FIELDS} mergedInto { id } signals { tenure stale citationCount citationDensity essenceRedundancy survivalCount } citations { id } }
    shardCountsBySource { source count }
    shardCountsByTag { tag count }
    ${CRYSTALLIZATION}
    health
    levelHistory { id level essenceBefore essenceAfter consolidated { id } promoted { id } carried { id } merged { id } createdAt revertedAt }
  }
}`,
    variables: (g) => ({ id: soulId(g), provenance: g.rng.chance(0.5) }),
  },
  {
    name: 'soulByName',
    kind: 'query',
    document: `query SoulByName($name: String!) { soulByName(name: $name) { id name essence traits { id principle } } }`,
    variables: (g) => ({ name: g.pool.soulNames.length > 0 && g.rng.chance(0.7) ? g.rng.pick(g.pool.soulNames) : sentence(g.rng, 1, 3) }),
  },
  {
    name: 'souls',
    kind: 'query',
    document: `query Souls($orderBy: SoulOrder) { souls(orderBy: $orderBy) { id name level pendingShardCount ${CRYSTALLIZATION} } }`,
    variables: (g) => ({ orderBy: g.rng.pick(['READINESS', 'NAME', 'LEVEL', 'UPDATED']) }),
  },
  {
    name: 'dormantSouls',
    kind: 'query',
    document: `query Dormant { dormantSouls { id name deletedAt dormant } }`,
    variables: () => ({}),
  },
  {
    name: 'trait',
    kind: 'query',
    document: `query Trait($id: ID!) { trait(id: $id) { ${TRAIT_FIELDS} soul { id name } mergedInto { id } signals { tenure citationCount } citations { id content } } }`,
    variables: (g) => ({ id: traitId(g) }),
  },
  {
    name: 'shard',
    kind: 'query',
    document: `query Shard($id: ID!) { shard(id: $id) { ${SHARD_FIELDS} souls { id name } citedBy { id principle } } }`,
    variables: (g) => ({ id: shardId(g) }),
  },
  {
    name: 'shards',
    kind: 'query',
    document: `query Shards($soulId: ID, $source: String, $tags: [String!], $status: ShardStatus, $first: Int, $after: String) {
  shards(soulId: $soulId, source: $source, tags: $tags, status: $status, first: $first, after: $after) {
    edges { cursor node { ${SHARD_FIELDS} } }
    pageInfo { hasNextPage endCursor }
    totalCount
  }
}`,
    variables: (g) => {
      const { rng } = g;
      const v: Record<string, unknown> = { first: rng.pick([0, 1, 5, 20, 50, 400]) };
      if (rng.chance(0.6)) v.soulId = soulId(g);
      if (rng.chance(0.3)) v.source = rng.pick(sources);
      if (rng.chance(0.3)) v.tags = [rng.pick(words)];
      if (rng.chance(0.3)) v.status = rng.pick(['PENDING', 'FADED']);
      if (rng.chance(0.2)) v.after = rng.pick(['', 'abc', 'MTA=', 'c2hhcmQ6MTA=', 'eyJpZCI6MTB9', '!!!']);
      return v;
    },
  },
  {
    name: 'searchShards',
    kind: 'query',
    document: `query Search($query: String!, $soulId: ID, $first: Int) { searchShards(query: $query, soulId: $soulId, first: $first) { score shard { id content } } }`,
    variables: (g) => {
      const v: Record<string, unknown> = { query: g.rng.chance(0.7) ? g.rng.pick(words) : weirdString(g.rng), first: g.rng.pick([1, 5, 20, 100]) };
      if (g.rng.chance(0.5)) v.soulId = soulId(g);
      return v;
    },
  },
  {
    name: 'crystallizationReadiness',
    kind: 'query',
    document: `query Ready { crystallizationReadiness { priority soul { id name } } }`,
    variables: () => ({}),
  },
  {
    name: 'shardCountsPerSoul',
    kind: 'query',
    document: `query PerSoul { shardCountsPerSoul { pending soul { id } } }`,
    variables: () => ({}),
  },
  {
    name: 'shardCountsByTag',
    kind: 'query',
    document: `query ByTag($soulId: ID) { shardCountsByTag(soulId: $soulId) { tag count } }`,
    variables: (g) => (g.rng.chance(0.5) ? { soulId: soulId(g) } : {}),
  },
  {
    name: 'settings',
    kind: 'query',
    document: `query Settings { settings { traitLimit crystallizationThreshold shardExpiryDays shardFadeCitations shardRelevanceHalfLife clusteringThreshold staleDays redundancyThreshold consolidationThreshold } }`,
    variables: () => ({}),
  },
  {
    name: 'previewTraitChanges',
    kind: 'query',
    document: `query PreviewTraits($soulId: ID!, $add: [AddTraitInput!], $revise: [TraitRevisionInput!], $revert: [ID!]) {
  previewTraitChanges(soulId: $soulId, add: $add, revise: $revise, revert: $revert) { before after }
}`,
    variables: (g) => ({
      soulId: soulId(g),
      add: [{ principle: sentence(g.rng), provenance: sentence(g.rng), citeShardIds: [shardId(g)] }],
      revise: [{ traitId: traitId(g), principle: sentence(g.rng) }],
      revert: g.rng.chance(0.5) ? [traitId(g)] : [],
    }),
  },
  {
    name: 'previewLevelUp',
    kind: 'query',
    document: `query PreviewLevelUp($soulId: ID!, $plan: LevelUpPlanInput!) {
  previewLevelUp(soulId: $soulId, plan: $plan) { valid error { ${PLAN_ERROR} } warnings { kind message traitIds } before after }
}`,
    variables: (g) => {
      const soul = soulId(g);
      return { soulId: soul, plan: plan(g, soul) };
    },
  },
  {
    name: 'evidence',
    kind: 'query',
    document: `query Evidence($id: ID!, $tags: [String!], $query: String) {
  soul(id: $id) {
    id
    evidence(tags: $tags, query: $query) {
      generatedAt shardCount ${CRYSTALLIZATION}
      clusters { memberCount sources sourceDiversity ageSpanDays freshness weight representative { id } members { id } alignment { kind similarity trait { id } } sharedWith { sharedCount fraction soul { id } } }
      traits { id }
      consolidationCandidates { similarity a { id } b { id } }
      tensions { similarity a { id } b { id } }
      promotionCandidates { score trait { id } }
      trend { recentCount previousCount velocity newSources sources { source recent previous } }
      suggestedActions { kind message count traits { id } }
      markdown
    }
  }
}`,
    variables: (g) => {
      const v: Record<string, unknown> = { id: soulId(g) };
      if (g.rng.chance(0.3)) v.tags = [g.rng.pick(words)];
      if (g.rng.chance(0.3)) v.query = g.rng.pick(words);
      return v;
    },
  },
  {
    name: 'soulShards',
    kind: 'query',
    document: `query SoulShards($id: ID!, $sealed: Boolean, $first: Int) { soul(id: $id) { shards(sealed: $sealed, first: $first) { totalCount edges { node { id sealed } } } } }`,
    variables: (g) => ({ id: soulId(g), sealed: g.rng.pick([true, false, null]), first: g.rng.pick([1, 10, 50]) }),
  },
  {
    name: 'introspection',
    kind: 'query',
    document: `query Introspect { __schema { queryType { name } types { name kind fields { name args { name } } } } }`,
    variables: () => ({}),
  },
  {
    name: 'subscription',
    kind: 'subscription',
    document: `subscription Changed($soulId: ID) { soulChanged(soulId: $soulId) { kind at soul { id } } }`,
    variables: (g) => ({ soulId: soulId(g) }),
  },
  {
    name: 'createSoul',
    kind: 'mutation',
    document: `mutation CreateSoul($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { ${SOUL_FIELDS} } } ${SOUL_ERRORS} } }`,
    variables: (g) => {
      const input: Record<string, unknown> = { name: `${sentence(g.rng, 1, 3)} ${g.rng.int(1e9)}`, essence: sentence(g.rng, 5, 20) };
      if (g.rng.chance(0.5)) input.slug = `slug-${g.rng.int(1e9)}`;
      if (g.rng.chance(0.5)) input.description = sentence(g.rng);
      return { input };
    },
  },
  {
    name: 'updateSoul',
    kind: 'mutation',
    document: `mutation UpdateSoul($id: ID!, $input: UpdateSoulInput!) { updateSoul(id: $id, input: $input) { __typename ... on SoulPayload { soul { id name slug essence description } } ${SOUL_ERRORS} } }`,
    variables: (g) => {
      const input: Record<string, unknown> = {};
      if (g.rng.chance(0.3)) input.name = `${sentence(g.rng, 1, 3)} ${g.rng.int(1e9)}`;
      if (g.rng.chance(0.6)) input.essence = sentence(g.rng, 5, 20);
      if (g.rng.chance(0.3)) input.description = sentence(g.rng);
      if (g.rng.chance(0.2)) input.slug = g.rng.chance(0.5) ? null : `slug-${g.rng.int(1e9)}`;
      return { id: soulId(g), input };
    },
  },
  {
    name: 'retireSoul',
    kind: 'mutation',
    document: `mutation Retire($id: ID!) { retireSoul(id: $id) { __typename ... on SoulPayload { soul { id deletedAt dormant } } ${SOUL_ERRORS} } }`,
    variables: (g) => ({ id: soulId(g) }),
  },
  {
    name: 'awakenSoul',
    kind: 'mutation',
    document: `mutation Awaken($id: ID!, $name: String) { awakenSoul(id: $id, name: $name) { __typename ... on SoulPayload { soul { id name deletedAt } } ${SOUL_ERRORS} } }`,
    variables: (g) => ({ id: soulId(g), name: g.rng.chance(0.5) ? `${sentence(g.rng, 1, 2)} ${g.rng.int(1e9)}` : null }),
  },
  {
    name: 'addTrait',
    kind: 'mutation',
    document: `mutation AddTrait($soulId: ID!, $input: AddTraitInput!) { addTrait(soulId: $soulId, input: $input) { __typename ... on TraitPayload { trait { ${TRAIT_FIELDS} citations { id } } soul { id activeTraitCount } } ${TRAIT_ERRORS} } }`,
    variables: (g) => ({
      soulId: soulId(g),
      input: { principle: sentence(g.rng), provenance: sentence(g.rng, 5, 30), citeShardIds: g.rng.chance(0.5) ? [shardId(g)] : [] },
    }),
  },
  {
    name: 'reviseTrait',
    kind: 'mutation',
    document: `mutation ReviseTrait($id: ID!, $input: ReviseTraitInput!) { reviseTrait(id: $id, input: $input) { __typename ... on TraitPayload { trait { ${TRAIT_FIELDS} } } ${TRAIT_ERRORS} } }`,
    variables: (g) => ({ id: traitId(g), input: { principle: sentence(g.rng), ...(g.rng.chance(0.5) ? { provenance: sentence(g.rng) } : {}) } }),
  },
  {
    name: 'revertTrait',
    kind: 'mutation',
    document: `mutation RevertTrait($id: ID!) { revertTrait(id: $id) { __typename ... on TraitPayload { trait { id status } } ${TRAIT_ERRORS} } }`,
    variables: (g) => ({ id: traitId(g) }),
  },
  {
    name: 'reactivateTrait',
    kind: 'mutation',
    document: `mutation ReactivateTrait($id: ID!) { reactivateTrait(id: $id) { __typename ... on TraitPayload { trait { id status } } ${TRAIT_ERRORS} } }`,
    variables: (g) => ({ id: traitId(g) }),
  },
  {
    name: 'levelUp',
    kind: 'mutation',
    document: `mutation LevelUp($soulId: ID!, $plan: LevelUpPlanInput!) {
  levelUp(soulId: $soulId, plan: $plan) {
    __typename
    ... on LevelUpPayload { soul { id level essence } event { id level consolidated { id } promoted { id } carried { id } merged { id } } warnings { kind message traitIds } }
    ... on LevelUpPlanError { ${PLAN_ERROR} }
    ${errors('NotFoundError', 'InvalidStateError')}
  }
}`,
    variables: (g) => {
      const soul = soulId(g);
      return { soulId: soul, plan: plan(g, soul) };
    },
  },
  {
    name: 'revertLevelUp',
    kind: 'mutation',
    document: `mutation RevertLevelUp($soulId: ID!, $levelEventId: ID) { revertLevelUp(soulId: $soulId, levelEventId: $levelEventId) { __typename ... on RevertLevelUpPayload { soul { id level } event { id revertedAt } } ${errors('NotFoundError', 'InvalidStateError')} } }`,
    variables: (g) => ({ soulId: soulId(g), levelEventId: g.rng.chance(0.5) ? String(g.rng.between(1, 40)) : null }),
  },
  {
    name: 'dropShard',
    kind: 'mutation',
    document: `mutation DropShard($input: DropShardInput!) { dropShard(input: $input) { __typename ... on DropShardPayload { shard { ${SHARD_FIELDS} souls { id } } readySouls { id } } ${errors('NotFoundError', 'ValidationError')} } }`,
    variables: (g) => ({ input: shardInput(g) }),
  },
  {
    name: 'dropShards',
    kind: 'mutation',
    document: `mutation DropShards($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { shards { id content tags } readySouls { id } } ${errors('NotFoundError', 'ValidationError')} } }`,
    variables: (g) => ({ inputs: Array.from({ length: g.rng.chance(0.05) ? g.rng.between(100, 600) : g.rng.between(0, 6) }, () => shardInput(g)) }),
  },
  {
    name: 'citeShard',
    kind: 'mutation',
    document: `mutation Cite($shardId: ID!, $traitId: ID!) { citeShard(shardId: $shardId, traitId: $traitId) { __typename ... on CiteShardPayload { shard { id status } trait { id } } ${errors('NotFoundError', 'InvalidStateError')} } }`,
    variables: (g) => ({ shardId: shardId(g), traitId: traitId(g) }),
  },
  {
    name: 'unciteShard',
    kind: 'mutation',
    document: `mutation Uncite($shardId: ID!, $traitId: ID!) { unciteShard(shardId: $shardId, traitId: $traitId) { __typename ... on CiteShardPayload { shard { id status } trait { id } readySouls { id } } ${errors('NotFoundError', 'InvalidStateError')} } }`,
    variables: (g) => ({ shardId: shardId(g), traitId: traitId(g) }),
  },
  {
    name: 'revealShards',
    kind: 'mutation',
    document: `mutation Reveal($ids: [ID!]!) { revealShards(ids: $ids) { __typename ... on RevealShardsPayload { shards { id sealed } readySouls { id } } ${errors('NotFoundError')} } }`,
    variables: (g) => ({ ids: Array.from({ length: g.rng.between(0, 4) }, () => shardId(g)) }),
  },
  {
    name: 'stampAttuned',
    kind: 'mutation',
    document: `mutation Stamp($soulId: ID!) { stampAttuned(soulId: $soulId) { __typename ... on SoulPayload { soul { id lastAttunedAt } } ${SOUL_ERRORS} } }`,
    variables: (g) => ({ soulId: soulId(g) }),
  },
  {
    name: 'fadeExhaustedShards',
    kind: 'mutation',
    document: `mutation Fade { fadeExhaustedShards { fadedCount } }`,
    variables: () => ({}),
  },
];

// ---------------------------------------------------------------------------
// Mutators

type Draft = {
  op: Operation;
  document: unknown;
  variables: unknown;
  operationName: unknown;
  /** extra top-level body keys */
  extra: Record<string, unknown>;
  mutations: string[];
  /** set by listSize: the list it resized, as the server names it, and whether that is over its bound */
  list?: ListExpectation;
};

export type ListExpectation = { argument: string; over: boolean };

/** The bound of each list, as the fuzzed server runs: default limits and settings. */
const boundOf = listBounds(defaultLimits, defaultSettings);

/**
 * The list at `path` in an operation's variables, named as the server names
 * it (`Mutation.dropShards(inputs:)[1].tags`), with its bound; null when the
 * variable is not a whole argument or the path is not a list.
 */
function listAt(document: string, path: Path): { argument: string; bound: number } | null {
  const [variable, ...rest] = path;
  const ast = parse(document);
  const typeInfo = new TypeInfo(schema);
  let coordinate: string | null = null;
  visit(
    ast,
    visitWithTypeInfo(typeInfo, {
      Argument(node) {
        const parent = typeInfo.getParentType();
        const field = typeInfo.getFieldDef();
        if (coordinate === null && parent && field && node.value.kind === Kind.VARIABLE && node.value.name.value === variable) coordinate = `${parent.name}.${field.name}(${node.name.value}:)`;
      },
    }),
  );
  const definition = ast.definitions.flatMap((d) => (d.kind === Kind.OPERATION_DEFINITION ? (d.variableDefinitions ?? []) : [])).find((v) => v.variable.name.value === variable);
  if (coordinate === null || !definition) return null;
  let type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
  let argument: string = coordinate;
  let listCoordinate: string = coordinate;
  for (const key of rest) {
    const nullable = type && getNullableType(type);
    if (typeof key === 'number' && nullable && isListType(nullable)) {
      type = nullable.ofType as GraphQLInputType;
      argument += `[${key}]`;
    } else if (typeof key === 'string' && nullable && isInputObjectType(nullable) && nullable.getFields()[key]) {
      type = nullable.getFields()[key].type;
      listCoordinate = `${nullable.name}.${key}`;
      argument += `.${key}`;
    } else return null;
  }
  return type && isListType(getNullableType(type)) ? { argument, bound: boundOf(listCoordinate).limit } : null;
}

type Path = (string | number)[];

function pathsOf(value: unknown, prefix: Path = [], out: Path[] = [], depth = 0): Path[] {
  if (depth > 6) return out;
  if (Array.isArray(value)) value.slice(0, 8).forEach((v, i) => (out.push([...prefix, i]), pathsOf(v, [...prefix, i], out, depth + 1)));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push([...prefix, k]), pathsOf(v, [...prefix, k], out, depth + 1);
  return out;
}

function getAt(root: unknown, path: Path): unknown {
  return path.reduce<unknown>((v, key) => (v as Record<string | number, unknown>)[key], root);
}

function setAt(root: unknown, path: Path, value: unknown): void {
  const parent = getAt(root, path.slice(0, -1)) as Record<string | number, unknown>;
  parent[path[path.length - 1]] = value;
}

function deleteAt(root: unknown, path: Path): void {
  const parent = getAt(root, path.slice(0, -1));
  const key = path[path.length - 1];
  if (Array.isArray(parent)) parent.splice(Number(key), 1);
  else delete (parent as Record<string, unknown>)[key as string];
}

const variableMutators: Record<string, (g: Gen, d: Draft) => void> = {
  weirdString(g, d) {
    const path = pickPath(g, d);
    if (path) setAt(d.variables, path, weirdString(g.rng));
  },
  weirdNumber(g, d) {
    const path = pickPath(g, d);
    if (path) setAt(d.variables, path, weirdNumber(g.rng));
  },
  wrongType(g, d) {
    const path = pickPath(g, d);
    if (path) setAt(d.variables, path, wrongType(g.rng, getAt(d.variables, path)));
  },
  nullValue(g, d) {
    const path = pickPath(g, d);
    if (path) setAt(d.variables, path, null);
  },
  deepList(g, d) {
    const path = pickPath(g, d);
    if (path) setAt(d.variables, path, deepList(g.rng, getAt(d.variables, path)));
  },
  deepObject(g, d) {
    const path = pickPath(g, d);
    if (path) setAt(d.variables, path, deepObject(g.rng));
  },
  hugeList(g, d) {
    // One huge list per case, of small items: lists of huge lists only measure the fuzzer's memory.
    const path = d.mutations.includes('hugeList') ? null : pickPath(g, d);
    if (!path) return;
    const item = getAt(d.variables, path);
    const small = (JSON.stringify(item) ?? '').length <= 300 ? item : 'x';
    setAt(d.variables, path, Array.from({ length: g.rng.pick([500, 2000, 12_000]) }, () => small));
  },
  listSize(g, d) {
    // A list at its bound, or one item over: refused before execution, naming it, only when over.
    const lists = pathsOf(d.variables).flatMap((path) => {
      const list = Array.isArray(getAt(d.variables, path)) ? listAt(d.op.document, path) : null;
      return list ? [{ path, ...list }] : [];
    });
    if (lists.length === 0) return;
    const { path, argument, bound } = g.rng.pick(lists);
    const items = getAt(d.variables, path) as unknown[];
    const over = g.rng.chance(0.5);
    setAt(d.variables, path, Array.from({ length: bound + (over ? 1 : 0) }, (_, i) => (items.length > 0 ? items[i % items.length] : 'x')));
    d.list = { argument, over };
  },
  removeKey(g, d) {
    const path = pickPath(g, d);
    if (path) deleteAt(d.variables, path);
  },
  removeRequiredVariable(g, d) {
    if (!isRecord(d.variables)) return;
    const keys = Object.keys(d.variables as object);
    if (keys.length > 0) delete (d.variables as Record<string, unknown>)[g.rng.pick(keys)];
  },
  extraVariable(g, d) {
    if (!isRecord(d.variables)) return;
    (d.variables as Record<string, unknown>)[g.rng.pick(['extra', 'unknownVar', '__proto__', 'constructor', 'id2', ''])] = weirdString(g.rng);
  },
  extraInputKey(g, d) {
    const objects = pathsOf(d.variables).filter((p) => {
      const v = getAt(d.variables, p);
      return v !== null && typeof v === 'object' && !Array.isArray(v);
    });
    const target = objects.length > 0 ? getAt(d.variables, g.rng.pick(objects)) : d.variables;
    if (!isRecord(target)) return;
    (target as Record<string, unknown>)[g.rng.pick(['unknownField', 'id', 'soulId', 'status', '__typename', 'deletedAt'])] = weirdString(g.rng);
  },
  variablesNotObject(g, d) {
    d.variables = g.rng.pick<unknown>([[], [d.variables], 'variables', 42, true, null, '{"id":"1"}']);
  },
};

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function pickPath(g: Gen, d: Draft): Path | null {
  const paths = pathsOf(d.variables);
  return paths.length > 0 ? g.rng.pick(paths) : null;
}

const spliceTokens = [
  '{', '}', '(', ')', '[', ']', '...', ':', '!', '=', '|', '&', '@', '$', '$id', '$nope', '"str"', '"""block"""', '"\\u0000"', '"\\uD800"',
  'query', 'mutation', 'subscription', 'fragment', 'on', 'Soul', 'Shard', 'Trait', 'Query', '__typename', '__schema', 'id', 'name',
  '#comment\n', '@include(if: true)', '@skip(if: false)', '@deprecated', '@unknownDirective', 'null', 'true', '1.5e999', '-0', '0x1F',
  '99999999999999999999', 'ACTIVE', 'souls', 'soul(id: $id)', 'settings', '\u0000', '🧠', 'é', '\u202E', '...on Soul { id }', '... Frag',
  ',,,,', '\n\n', 'extend type Query { x: Int }', 'schema { query: Query }', 'directive @d on FIELD',
];

const documentMutators: Record<string, (g: Gen, d: Draft) => void> = {
  deepLiteral(g, d) {
    // Nested list or object literals, around the nesting limit and far past it (graphql-js overflowed near 2,500).
    const doc = String(d.document);
    const at = g.rng.int(doc.length + 1);
    const depth = g.rng.pick([90, 101, 2_500, 20_000]);
    const [open, close] = g.rng.chance(0.5) ? ['[', ']'] : ['{a:', '}'];
    d.document = `${doc.slice(0, at)}${open.repeat(depth)}1${close.repeat(depth)}${doc.slice(at)}`;
  },
  spliceToken(g, d) {
    const doc = String(d.document);
    const at = g.rng.int(doc.length + 1);
    const token = g.rng.chance(0.2) ? String(wildId(g)) : g.rng.pick(spliceTokens);
    d.document = `${doc.slice(0, at)} ${token} ${doc.slice(at)}`;
  },
  truncate(g, d) {
    const doc = String(d.document);
    d.document = doc.slice(0, g.rng.int(doc.length));
  },
  deleteRange(g, d) {
    const doc = String(d.document);
    const from = g.rng.int(doc.length);
    d.document = doc.slice(0, from) + doc.slice(from + g.rng.between(1, 40));
  },
  duplicateFields(g, d) {
    const doc = String(d.document);
    const braces = [...doc.matchAll(/\{/g)].map((m) => m.index);
    if (braces.length === 0) return;
    const at = g.rng.pick(braces) + 1;
    const dup = g.rng.pick([' __typename __typename __typename ', ' id id ', ' __typename a: __typename a: __typename ', ' id: __typename ']);
    d.document = doc.slice(0, at) + dup + doc.slice(at);
  },
  duplicateFragments(g, d) {
    const fragment = g.rng.pick([
      'fragment F on Soul { id name }',
      'fragment F on Query { settings { traitLimit } }',
      'fragment F on Soul { ...G } fragment G on Soul { ...F }',
      'fragment F on Nope { id }',
    ]);
    d.document = `${String(d.document)}\n${fragment}\n${fragment}`;
  },
  deepSelection(g, d) {
    const depth = g.rng.between(3, 60);
    let inner = 'id';
    for (let i = 0; i < depth; i++) inner = i % 2 === 0 ? `soul { ${inner} }` : `traits { ${inner} }`;
    d.document = `query Deep($id: ID!) { trait(id: $id) { ${inner} } }`;
    d.variables = { id: traitId(g) };
    d.operationName = 'Deep';
  },
  aliases(g, d) {
    const n = g.rng.between(10, 80);
    d.document = `query Aliases { ${Array.from({ length: n }, (_, i) => `a${i}: settings { traitLimit }`).join(' ')} }`;
    d.variables = {};
    d.operationName = 'Aliases';
  },
  directives(g, d) {
    const n = g.rng.between(5, 60);
    d.document = `query Directives { settings ${'@include(if: true) '.repeat(n)} { traitLimit } }`;
    d.variables = {};
    d.operationName = 'Directives';
  },
  tokens(g, d) {
    const n = g.rng.pick([500, 2000, 6000]);
    d.document = `query Tokens { settings { ${'traitLimit '.repeat(n)} } }`;
    d.variables = {};
    d.operationName = 'Tokens';
  },
  cost(g, d) {
    d.document = `query Cost { souls { traits { citations { citedBy { citations { souls { shards(first: 500) { edges { node { id citedBy { id } } } } } } } } } } }`;
    d.variables = {};
    d.operationName = 'Cost';
  },
  bogusOperationName(g, d) {
    d.operationName = g.rng.pick<unknown>(['Nope', '', ' ', 'Soul Soul', 42, {}, ['Soul'], true, weirdString(g.rng)]);
  },
  twoOperations(g, d) {
    d.document = `${String(d.document)}\nquery Other { settings { traitLimit } }`;
    if (g.rng.chance(0.5)) d.operationName = null;
  },
  garbageDocument(g, d) {
    d.document = g.rng.chance(0.5) ? randomChars(g.rng, g.rng.between(0, 400)) : g.rng.pick(['', ' ', '#only a comment', '{', '}', '{}', 'query', '{ nope }', '{ settings }', '{ soul { id } }']);
  },
  documentNotString(g, d) {
    d.document = g.rng.pick<unknown>([null, 42, {}, [], ['{ settings { traitLimit } }'], true, { kind: 'Document', definitions: [] }]);
  },
  missingDocument(g, d) {
    d.document = undefined;
  },
  extraBodyKeys(g, d) {
    d.extra = { extensions: g.rng.pick<unknown>([{ persistedQuery: { version: 1, sha256Hash: 'abc' } }, 'x', [], null, { a: deepObject(g.rng) }]), unknown: 1 };
  },
};

// ---------------------------------------------------------------------------
// HTTP

export type WireRequest = { method: string; path: string; headers: Record<string, string>; body: Buffer | null; chunked: boolean };
export type WireResponse = { status: number; headers: Record<string, string | string[] | undefined>; text: string };

export type FuzzCase = {
  index: number;
  op: string;
  mutations: string[];
  request: WireRequest;
  /** the status the envelope alone decides, when it does */
  expectStatus: number | null;
  /** an unmutated, valid operation sent plainly */
  valid: boolean;
  /** a list resized by listSize alone: whether the server must refuse it */
  list: ListExpectation | null;
};

const contentTypes = [
  'application/json',
  'application/json; charset=utf-8',
  'application/graphql-response+json',
  'application/graphql',
  'text/plain',
  'text/plain; charset=utf-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'application/json; charset=utf-16',
  'garbage',
  '',
];
const accepts = ['application/graphql-response+json', 'application/json', 'application/json, text/plain', 'text/html', 'multipart/mixed', '*/*', 'text/event-stream', 'garbage/garbage', ''];
const streamingAccepts = new Set(['*/*', 'text/event-stream', '']);
const paths = ['/graphql/', '/', '/nope', '/graphiql-assets/../../package.json', '/graphiql-assets/%2e%2e/%2e%2e/package.json', '/graphiql-assets/nope.js', '/graphql?query=%ZZ', '/graphql%00', '/GRAPHQL'];
const methods = ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'FOO'];

function envelope(d: Draft): Record<string, unknown> {
  const body: Record<string, unknown> = { ...d.extra };
  if (d.document !== undefined) body.query = d.document;
  if (d.variables !== undefined) body.variables = d.variables;
  if (d.operationName !== undefined) body.operationName = d.operationName;
  return body;
}

function padTo(json: string, size: number): string {
  // Whitespace after the value keeps the JSON valid at any length.
  return json.length >= size ? json : json + ' '.repeat(size - Buffer.byteLength(json));
}

/** Builds case `index` of the run: a valid operation, then (most of the time) mutations at one or more levels. */
export function generateCase(seed: number, index: number, pool: Pool, protectedIds: ReadonlySet<number>, maxBodyBytes: number, wildBase: number): FuzzCase {
  const rng = createRng(caseSeed(seed, index));
  const g: Gen = { rng, pool, protectedIds, wildBase };
  const op = rng.pick(operations);
  const draft: Draft = { op, document: op.document, variables: op.variables(g), operationName: undefined, extra: {}, mutations: [] };
  if (rng.chance(0.5)) draft.operationName = /^(?:query|mutation|subscription)\s+(\w+)/.exec(op.document)?.[1];

  const roll = rng.next();
  const variableMutation = roll >= 0.2 && roll < 0.55;
  const documentMutation = roll >= 0.55 && roll < 0.75;
  const envelopeMutation = roll >= 0.75;
  const apply = (table: Record<string, (g: Gen, d: Draft) => void>) => {
    const names = Object.keys(table);
    for (let n = rng.chance(0.7) ? 1 : rng.between(2, 4); n > 0; n--) {
      const name = rng.pick(names);
      table[name](g, draft);
      draft.mutations.push(name);
    }
  };
  if (variableMutation && rng.chance(0.15)) {
    // Alone, so its oracle holds: a list at its bound or one over.
    variableMutators.listSize(g, draft);
    draft.mutations.push('listSize');
  } else if (variableMutation) apply(variableMutators);
  if (documentMutation) apply(rng.chance(0.7) ? documentMutators : { ...documentMutators, ...variableMutators });

  draft.variables = guardIds(g, draft.variables);
  if (typeof draft.document === 'string') draft.document = draft.document.replace(/\b\d+\b/g, (n) => (couldName(n, protectedIds) ? String(wildBase + rng.int(1000)) : n));

  const headers: Record<string, string> = { 'content-type': 'application/json', accept: rng.pick(['application/graphql-response+json', 'application/json']) };
  let method = 'POST';
  let path = '/graphql';
  let json = serialize(envelope(draft));
  let body: Buffer | null = Buffer.from(json);
  let chunked = false;
  let expectStatus: number | null = null;

  if (envelopeMutation) {
    const kind = rng.pick(['get', 'get', 'method', 'contentType', 'accept', 'body', 'body', 'limit', 'limit', 'chunked', 'path', 'authorization']);
    draft.mutations.push(`http.${kind}`);
    switch (kind) {
      case 'get': {
        method = 'GET';
        const params = new URLSearchParams();
        const env = envelope(draft);
        if (env.query !== undefined) params.set('query', typeof env.query === 'string' ? env.query : serialize(env.query));
        if (env.variables !== undefined && rng.chance(0.9)) params.set('variables', rng.chance(0.9) ? serialize(env.variables) : '{"broken":');
        if (typeof env.operationName === 'string') params.set('operationName', env.operationName);
        path = `/graphql?${params}`;
        body = null;
        delete headers['content-type'];
        if (rng.chance(0.6)) headers['x-graphql-yoga-csrf'] = '1';
        else {
          draft.mutations.push('http.noCsrfHeader');
          // Without the header a GET is answered unless it carries what a browser sends for another site's page.
          if (rng.chance(0.5)) headers['sec-fetch-site'] = 'cross-site';
        }
        break;
      }
      case 'method':
        method = rng.pick(methods);
        if (method === 'GET' || method === 'HEAD') body = null;
        break;
      case 'contentType': {
        const type = rng.pick(contentTypes);
        if (type === '') delete headers['content-type'];
        else headers['content-type'] = type;
        if (type === 'application/x-www-form-urlencoded' && rng.chance(0.5)) body = Buffer.from(new URLSearchParams({ query: String(draft.document) }).toString());
        if (rng.chance(0.5)) headers['x-graphql-yoga-csrf'] = '1';
        break;
      }
      case 'accept': {
        const accept = rng.pick(accepts);
        if (accept === '') delete headers.accept;
        else headers.accept = accept;
        break;
      }
      case 'body': {
        const choice = rng.int(12);
        const bodies = [
          () => json.slice(0, rng.int(json.length)), // truncated JSON
          () => '',
          () => 'null',
          () => '[]',
          () => '"just a string"',
          () => '123',
          () => `\uFEFF${json}`,
          () => json.replace('{', '{"query":"{ settings { traitLimit } }",'), // duplicate key
          () => `${json}${json}`,
          () => "{'query': '{ settings { traitLimit } }'}",
          () => `[${json},${json}]`, // batching
          () => randomChars(rng, rng.between(1, 200)),
        ];
        body = Buffer.from(bodies[choice]());
        if (rng.chance(0.15)) body = Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, ...body]); // invalid UTF-8
        break;
      }
      case 'limit': {
        // Just under, at and just over the body limit; over it must be refused with 413 before parsing.
        const size = maxBodyBytes + rng.pick([-1, 0, 1, 2, 1000]);
        json = padTo(json, size);
        body = Buffer.from(json);
        draft.mutations.push(body.length > maxBodyBytes ? 'limit.over' : 'limit.under');
        if (body.length > maxBodyBytes) expectStatus = 413;
        break;
      }
      case 'chunked':
        chunked = true;
        expectStatus = 411;
        break;
      case 'path':
        path = rng.pick(paths);
        if (rng.chance(0.5)) method = 'GET';
        if (method === 'GET') body = null;
        break;
      case 'authorization':
        headers.authorization = rng.pick(['Bearer junk', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Bearer \u00ff', '']);
        break;
    }
  }

  // A subscription may only be asked for a single response: a stream would never end.
  const document = typeof draft.document === 'string' ? draft.document : serialize(draft.document);
  if (/subscription/i.test(document) || /subscription/i.test(path)) {
    if (headers.accept === undefined || streamingAccepts.has(headers.accept)) headers.accept = 'application/json';
  }
  // Envelope-only expectations. Node refuses a request head over 16 KiB with 431 (and may reset while the client still writes).
  if (path.length > 16 * 1024) expectStatus = 431;
  if (body && body.length > maxBodyBytes && !chunked && method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS') expectStatus = 413;

  const valid = draft.mutations.length === 0;
  // A subscription asked for one JSON response is refused (406): no oracle for it beyond "not 5xx".
  if (valid && op.kind !== 'subscription' && expectStatus === null) expectStatus = 200;
  // Alone, and in a body the server reads, a resized list has an exact oracle.
  const list = draft.list && draft.mutations.length === 1 && expectStatus === null && op.kind !== 'subscription' ? draft.list : null;
  if (list) draft.mutations.push(list.over ? 'listSize.over' : 'listSize.at');
  return { index, op: op.name, mutations: draft.mutations, request: { method, path, headers, body, chunked }, expectStatus, valid, list };
}

export function createClient(url: string, maxSockets: number) {
  const base = new URL(url);
  const agent = new Agent({ keepAlive: true, maxSockets });
  function once(req: WireRequest, timeoutMs: number): Promise<WireResponse & { reused: boolean }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { ...req.headers };
      if (req.body && !req.chunked) headers['content-length'] = req.body.length;
      const r = httpRequest({ host: base.hostname, port: base.port, method: req.method, path: req.path, headers, agent, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= 4 * 1024 * 1024) chunks.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), reused: r.reusedSocket }));
        res.on('error', reject);
      });
      r.on('timeout', () => r.destroy(Object.assign(new Error(`no response within ${timeoutMs} ms`), { code: 'FUZZ_TIMEOUT' })));
      r.on('error', (error) => reject(Object.assign(error, { reused: r.reusedSocket })));
      if (req.body && req.chunked) {
        const half = Math.floor(req.body.length / 2);
        r.write(req.body.subarray(0, half));
        r.end(req.body.subarray(half));
      } else r.end(req.body ?? undefined);
    });
  }
  return {
    /** Sends one request; a reset on a reused keep-alive socket (the server closed it first) is retried once. */
    async send(req: WireRequest, timeoutMs = 15_000): Promise<WireResponse> {
      try {
        return await once(req, timeoutMs);
      } catch (error) {
        if ((error as { reused?: boolean }).reused && ['ECONNRESET', 'EPIPE'].includes((error as NodeJS.ErrnoException).code ?? '')) return once(req, timeoutMs);
        throw error;
      }
    },
    close: () => agent.destroy(),
  };
}

export type Client = ReturnType<typeof createClient>;

/** POSTs one operation as JSON and returns its data; throws on any error, naming the operation. */
export async function gql(client: Client, query: string, variables: Record<string, unknown> = {}): Promise<any> {
  const res = await client.send({ method: 'POST', path: '/graphql', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: Buffer.from(JSON.stringify({ query, variables })), chunked: false });
  const body = JSON.parse(res.text);
  if (res.status !== 200 || body.errors) throw new Error(`setup operation failed (${res.status}): ${res.text.slice(0, 500)}\n${query}`);
  return body.data;
}

// ---------------------------------------------------------------------------
// Known rows, snapshot, integrity

export type KnownRows = { souls: number[]; traits: number[]; shards: number[]; levels: number[] };

const MUTATE = {
  createSoul: `mutation($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } ... on Error { message } } }`,
  retireSoul: `mutation($id: ID!) { retireSoul(id: $id) { __typename ... on Error { message } } }`,
  dropShards: `mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { shards { id } } ... on Error { message } } }`,
  addTrait: `mutation($soulId: ID!, $input: AddTraitInput!) { addTrait(soulId: $soulId, input: $input) { __typename ... on TraitPayload { trait { id } } ... on Error { message } } }`,
  reviseTrait: `mutation($id: ID!, $input: ReviseTraitInput!) { reviseTrait(id: $id, input: $input) { __typename ... on Error { message } } }`,
  citeShard: `mutation($shardId: ID!, $traitId: ID!) { citeShard(shardId: $shardId, traitId: $traitId) { __typename ... on Error { message } } }`,
  levelUp: `mutation($soulId: ID!, $plan: LevelUpPlanInput!) { levelUp(soulId: $soulId, plan: $plan) { __typename ... on LevelUpPayload { event { id merged { id } } } ... on Error { message } } }`,
  stampAttuned: `mutation($soulId: ID!) { stampAttuned(soulId: $soulId) { __typename ... on Error { message } } }`,
  fade: `mutation { fadeExhaustedShards { fadedCount } }`,
};

/** A mutation whose union result must be its payload. */
async function write(client: Client, query: string, variables: Record<string, unknown>): Promise<any> {
  const data = await gql(client, query, variables);
  const result = Object.values(data)[0] as { __typename?: string; message?: string };
  if (result.__typename && !result.__typename.endsWith('Payload')) throw new Error(`setup write returned ${result.__typename}: ${result.message}\n${query}`);
  return result;
}

/** Writes the rows the fuzz must not change: souls (one retired), shards with tags (one sealed, one shared), traits with citations, a level-up, a revision, an attunement. */
export async function writeKnownRows(client: Client): Promise<KnownRows> {
  const soul = async (name: string, essence: string, extra: Record<string, unknown> = {}) =>
    Number((await write(client, MUTATE.createSoul, { input: { name, essence, ...extra } })).soul.id);
  const ada = await soul('Anchor Ada', 'Careful and patient; prefers small steps.', { slug: 'anchor-ada', description: 'Known row: must survive the fuzz.' });
  const bo = await soul('Anchor Bo', 'Quick to ship, quick to apologise.');
  const cy = await soul('Anchor Cy', 'Retired before the fuzz began.');
  const shardInputs = Array.from({ length: 12 }, (_, i) => ({
    content: `Anchor observation ${i}: anchorterm${i} the agent ${words[i % words.length]} and ${words[(i * 5) % words.length]}.`,
    source: sources[i % 3],
    soulIds: i < 6 ? [ada] : i < 10 ? [bo] : [ada, bo],
    tags: [`anchor${i % 3}`, 'known'],
    sealed: i === 9,
  }));
  const shards = (await write(client, MUTATE.dropShards, { inputs: shardInputs })).shards.map((s: { id: string }) => Number(s.id));
  const trait = async (soulId: number, principle: string, cite: number[]) =>
    Number((await write(client, MUTATE.addTrait, { soulId: String(soulId), input: { principle, provenance: `Seen in ${cite.join(', ')}.`, citeShardIds: cite.map(String) } })).trait.id);
  const t1 = await trait(ada, 'Writes tests before code.', [shards[0]]);
  const t2 = await trait(ada, 'Writes the tests first.', [shards[1]]);
  const t3 = await trait(ada, 'Keeps commits small.', [shards[2]]);
  const level = await write(client, MUTATE.levelUp, {
    soulId: String(ada),
    plan: {
      newEssence: 'Careful, patient, test-first; prefers small steps.',
      consolidations: [{ sourceTraitIds: [String(t1), String(t2)], mergedPrinciple: 'Tests come first.', mergedProvenance: 'Two traits merged.' }],
      promotedTraitIds: [String(t3)],
      carriedTraitIds: [],
    },
  });
  const merged = level.event.merged.map((t: { id: string }) => Number(t.id));
  const t4 = await trait(ada, 'Names things plainly.', [shards[3]]);
  await write(client, MUTATE.reviseTrait, { id: String(t4), input: { principle: 'Names things plainly and briefly.' } });
  await write(client, MUTATE.citeShard, { shardId: String(shards[4]), traitId: String(t4) });
  const t5 = await trait(bo, 'Apologises quickly.', [shards[6]]);
  await write(client, MUTATE.stampAttuned, { soulId: String(bo) });
  await write(client, MUTATE.retireSoul, { id: String(cy) });
  // Whatever fading the known rows call for happens now, before the snapshot; the fuzz can add no citation to them.
  await gql(client, MUTATE.fade);
  return { souls: [ada, bo, cy], traits: [t1, t2, t3, ...merged, t4, t5], shards, levels: [Number(level.event.id)] };
}

/** The fuzz's own rows: the only ones it targets by id. */
export async function writePoolRows(client: Client, protectedIds: ReadonlySet<number>, seed: number): Promise<Pool> {
  const rng = createRng(seed ^ 0x5eed);
  const all: Pool = { souls: [], traits: [], shards: [], traitsOf: new Map(), soulNames: [] };
  // Twelve souls whose ids name no known row of any table.
  for (let i = 0; all.souls.filter((id) => !protectedIds.has(id)).length < 12; i++) {
    const name = `Fuzz soul ${i}`;
    all.souls.push(Number((await write(client, MUTATE.createSoul, { input: { name, essence: sentence(rng, 5, 15) } })).soul.id));
    all.soulNames.push(name);
  }
  const targets = all.souls.filter((id) => !protectedIds.has(id));
  const inputs = Array.from({ length: 48 }, (_, i) => ({
    content: sentence(rng, 4, 14),
    source: sources[i % sources.length],
    soulIds: [String(targets[i % targets.length]), ...(i % 5 === 0 ? [String(targets[(i + 1) % targets.length])] : [])],
    tags: [rng.pick(words)],
    sealed: i % 7 === 0,
  }));
  all.shards = (await write(client, MUTATE.dropShards, { inputs })).shards.map((s: { id: string }) => Number(s.id));
  const shardTargets = all.shards.filter((id) => !protectedIds.has(id));
  const ownersOf = new Map<number, number[]>(all.shards.map((id, i) => [id, inputs[i].soulIds.map(Number)]));
  for (const soul of targets) {
    // A trait cites only its own soul's shards (SPEC §12).
    const own = shardTargets.filter((id) => ownersOf.get(id)!.includes(soul));
    for (let t = 0; t < 3; t++) {
      const cite = own.length > 0 ? [String(rng.pick(own))] : [];
      const id = Number((await write(client, MUTATE.addTrait, { soulId: String(soul), input: { principle: sentence(rng), provenance: sentence(rng), citeShardIds: cite } })).trait.id);
      all.traits.push(id);
      if (!protectedIds.has(id)) all.traitsOf.set(soul, [...(all.traitsOf.get(soul) ?? []), id]);
    }
  }
  return {
    souls: targets,
    traits: all.traits.filter((id) => !protectedIds.has(id)),
    shards: shardTargets,
    traitsOf: all.traitsOf,
    soulNames: all.soulNames,
  };
}

export function protectedIdsOf(known: KnownRows): Set<number> {
  return new Set([...known.souls, ...known.traits, ...known.shards, ...known.levels]);
}

const TABLES = ['souls', 'soul_traits', 'soul_levels', 'soul_shards', 'shard_souls', 'shard_citations', 'shard_tags', 'soul_attunements'] as const;

export type Snapshot = { api: unknown; rows: Record<string, unknown[]>; counts: Record<string, number>; fts: Record<string, number[]> };

/** The known rows as the API and the database show them; only fields that do not move with the clock. */
export async function snapshotKnownRows(client: Client, db: DatabaseSync, known: KnownRows): Promise<Snapshot> {
  const list = (ids: number[]) => JSON.stringify(ids);
  const souls = known.souls.map(
    (id) => `s${id}: soul(id: "${id}") { ${SOUL_FIELDS} rendered(includeProvenance: true) traits(status: [ACTIVE, CONSOLIDATED, PROMOTED, REVERTED]) { id status } shardCountsBySource { source count } shardCountsByTag { tag count } levelHistory { id level essenceBefore essenceAfter consolidated { id } promoted { id } carried { id } merged { id } createdAt revertedAt } }`,
  );
  const traits = known.traits.map((id) => `t${id}: trait(id: "${id}") { ${TRAIT_FIELDS} soul { id } mergedInto { id } citations { id } signals { citationCount survivalCount } }`);
  const shards = known.shards.map((id) => `h${id}: shard(id: "${id}") { ${SHARD_FIELDS} souls { id } citedBy { id } }`);
  const api = {
    souls: await gql(client, `query KnownSouls { ${souls.join('\n')} }`),
    traits: await gql(client, `query KnownTraits { ${traits.join('\n')} }`),
    shards: await gql(client, `query KnownShards { ${shards.join('\n')} }`),
  };
  const rows: Record<string, unknown[]> = {
    souls: db.prepare(`SELECT * FROM souls WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`).all(list(known.souls)),
    soul_traits: db.prepare(`SELECT * FROM soul_traits WHERE id IN (SELECT value FROM json_each(?)) OR soul_id IN (SELECT value FROM json_each(?)) ORDER BY id`).all(list(known.traits), list(known.souls)),
    soul_levels: db.prepare(`SELECT * FROM soul_levels WHERE id IN (SELECT value FROM json_each(?)) OR soul_id IN (SELECT value FROM json_each(?)) ORDER BY id`).all(list(known.levels), list(known.souls)),
    soul_shards: db.prepare(`SELECT * FROM soul_shards WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`).all(list(known.shards)),
    shard_souls: db.prepare(`SELECT * FROM shard_souls WHERE shard_id IN (SELECT value FROM json_each(?)) OR soul_id IN (SELECT value FROM json_each(?)) ORDER BY shard_id, soul_id`).all(list(known.shards), list(known.souls)),
    shard_citations: db.prepare(`SELECT * FROM shard_citations WHERE shard_id IN (SELECT value FROM json_each(?)) OR trait_id IN (SELECT value FROM json_each(?)) ORDER BY shard_id, trait_id`).all(list(known.shards), list(known.traits)),
    shard_tags: db.prepare(`SELECT * FROM shard_tags WHERE shard_id IN (SELECT value FROM json_each(?)) ORDER BY shard_id, tag`).all(list(known.shards)),
    soul_attunements: db.prepare(`SELECT * FROM soul_attunements WHERE soul_id IN (SELECT value FROM json_each(?)) ORDER BY soul_id, attuned_at`).all(list(known.souls)),
  };
  const counts: Record<string, number> = {};
  for (const table of TABLES) counts[table] = Number((db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n);
  const fts: Record<string, number[]> = {};
  for (let i = 0; i < known.shards.length; i++) {
    fts[`anchorterm${i}`] = (db.prepare(`SELECT rowid FROM shard_fts WHERE shard_fts MATCH ? ORDER BY rowid`).all(`anchorterm${i}`) as { rowid: number }[]).map((r) => Number(r.rowid));
  }
  return { api, rows, counts, fts };
}

/** What changed in the known rows between two snapshots; the fuzz may only add rows. */
export function compareSnapshots(before: Snapshot, after: Snapshot): string[] {
  const problems: string[] = [];
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  for (const part of ['souls', 'traits', 'shards'] as const) {
    const a = (before.api as Record<string, Record<string, unknown>>)[part];
    const b = (after.api as Record<string, Record<string, unknown>>)[part];
    for (const key of Object.keys(a)) if (!same(a[key], b[key])) problems.push(`API ${part} ${key} changed: ${JSON.stringify(a[key]).slice(0, 300)} → ${JSON.stringify(b[key]).slice(0, 300)}`);
  }
  for (const table of TABLES) {
    if (!same(before.rows[table], after.rows[table])) problems.push(`rows of ${table} touching known ids changed: ${JSON.stringify(before.rows[table]).slice(0, 300)} → ${JSON.stringify(after.rows[table]).slice(0, 300)}`);
    if (after.counts[table] < before.counts[table]) problems.push(`${table} lost rows: ${before.counts[table]} → ${after.counts[table]}`);
  }
  for (const [term, ids] of Object.entries(before.fts)) {
    if (ids.length === 0) problems.push(`FTS did not find ${term} before the fuzz`);
    if (!same(ids, after.fts[term])) problems.push(`FTS for ${term} changed: ${ids} → ${after.fts[term]}`);
  }
  return problems;
}

/** PRAGMA integrity_check, foreign keys and the FTS index against its content table. */
export function integrityProblems(db: DatabaseSync): string[] {
  const problems: string[] = [];
  const integrity = db.prepare('PRAGMA integrity_check').all() as { integrity_check: string }[];
  if (integrity.length !== 1 || integrity[0].integrity_check !== 'ok') problems.push(`integrity_check: ${JSON.stringify(integrity).slice(0, 500)}`);
  const foreign = db.prepare('PRAGMA foreign_key_check').all();
  if (foreign.length > 0) problems.push(`foreign_key_check: ${JSON.stringify(foreign).slice(0, 500)}`);
  try {
    db.exec(`INSERT INTO shard_fts(shard_fts, rank) VALUES ('integrity-check', 1)`);
  } catch (error) {
    problems.push(`FTS integrity-check: ${(error as Error).message}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------
// Checks on every response

/** What a response must never show: stack frames, source paths, JS error names. */
const projectRoot = fileURLToPath(new URL('../..', import.meta.url));
export const leakPatterns: readonly RegExp[] = [
  /\n\s+at /,
  /\bat \S+ \(?\S*:\d+:\d+/,
  /\.ts:/,
  /\.ts\b/,
  /TypeError/,
  /ReferenceError/,
  /RangeError/,
  /node_modules/,
  /file:\/\//,
  new RegExp(projectRoot.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')),
  /"stack"/,
];

/** A text and every string inside it, when it is JSON: escapes in the raw text hide newlines. */
function readable(text: string): string {
  const strings: string[] = [text];
  try {
    const walk = (v: unknown) => {
      if (typeof v === 'string') strings.push(v);
      else if (Array.isArray(v)) v.forEach(walk);
      else if (v !== null && typeof v === 'object') Object.entries(v).forEach(([k, x]) => (strings.push(k), walk(x)));
    };
    walk(JSON.parse(text));
  } catch {
    // not JSON: the raw text is all there is
  }
  return strings.join('\n');
}

function requestText(req: WireRequest): string {
  let path = req.path;
  try {
    path = decodeURIComponent(req.path.replace(/\+/g, ' '));
  } catch {
    // a deliberately broken escape
  }
  return `${readable(req.body ? req.body.toString('utf8') : '')}\n${readable(path)}\n${path.split(/[?&]/).map((p) => readable(p.slice(p.indexOf('=') + 1))).join('\n')}`;
}

export type Violation = { case: number; kind: string; detail: string; op: string; mutations: string[]; seedHint: string };

export type FuzzReport = {
  cases: number;
  validCases: number;
  statuses: Record<string, number>;
  ops: Record<string, number>;
  validOps: Record<string, number>;
  mutations: Record<string, number>;
  crashes: number;
  status5xx: number;
  stackTraces: number;
  internalErrors: number;
  timeouts: number;
  transportErrors: number;
  unexpectedStatus: number;
  /** responses that could not be checked for a leak because the request itself carried the pattern */
  echoedPatterns: number;
  knownRowsChanged: number;
  /** responses carrying a mutation payload: writes that went through */
  successfulWrites: number;
  /** rows each table gained during the fuzz */
  rowsAdded: Record<string, number>;
  integrity: string;
  /** the rows written before the fuzz */
  known: KnownRows | null;
  violations: Violation[];
  durationMs: number;
};

export type FuzzOptions = {
  url: string;
  /** a connection to the server's database (its own, or another on the same file) */
  db: DatabaseSync;
  cases: number;
  seed: number;
  maxBodyBytes: number;
  concurrency?: number;
  timeoutMs?: number;
  onCase?: (fuzzCase: FuzzCase, response: WireResponse | null) => void;
  /** false once the server process is gone (child-process servers) */
  alive?: () => boolean;
};

const bump = (counts: Record<string, number>, key: string) => (counts[key] = (counts[key] ?? 0) + 1);

/** Known rows, snapshot, the fuzz, then: the server still answers, nothing leaked or failed, integrity ok, known rows unchanged. */
export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now();
  const client = createClient(options.url, (options.concurrency ?? 4) + 2);
  const report: FuzzReport = {
    cases: 0,
    validCases: 0,
    statuses: {},
    ops: {},
    validOps: {},
    mutations: {},
    crashes: 0,
    status5xx: 0,
    stackTraces: 0,
    internalErrors: 0,
    timeouts: 0,
    transportErrors: 0,
    unexpectedStatus: 0,
    echoedPatterns: 0,
    knownRowsChanged: 0,
    successfulWrites: 0,
    rowsAdded: {},
    integrity: '',
    known: null,
    violations: [],
    durationMs: 0,
  };
  const violate = (c: FuzzCase | null, kind: string, detail: string) =>
    report.violations.push({ case: c?.index ?? -1, kind, detail: detail.slice(0, 1000), op: c?.op ?? '', mutations: c?.mutations ?? [], seedHint: c ? `seed ${options.seed}, case ${c.index}` : `seed ${options.seed}` });
  try {
    const known = await writeKnownRows(client);
    report.known = known;
    const protectedIds = protectedIdsOf(known);
    const before = await snapshotKnownRows(client, options.db, known);
    const pool = await writePoolRows(client, protectedIds, options.seed);
    const wildBase = 1_000_000;

    let next = 0;
    const worker = async () => {
      while (next < options.cases) {
        if (options.alive && !options.alive()) return;
        const fuzzCase = generateCase(options.seed, next++, pool, protectedIds, options.maxBodyBytes, wildBase);
        report.cases++;
        bump(report.ops, fuzzCase.op);
        if (fuzzCase.valid) (report.validCases++, bump(report.validOps, fuzzCase.op));
        for (const m of fuzzCase.mutations) bump(report.mutations, m);
        let response: WireResponse | null = null;
        try {
          response = await client.send(fuzzCase.request, options.timeoutMs);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code ?? '';
          if (code === 'FUZZ_TIMEOUT') (report.timeouts++, violate(fuzzCase, 'timeout', (error as Error).message));
          else if ([411, 413, 431].includes(fuzzCase.expectStatus ?? 0) && ['ECONNRESET', 'EPIPE'].includes(code)) {
            // The server refused an oversized head or body (or a chunked one) and closed before the client finished writing.
            bump(report.statuses, code);
          } else (report.transportErrors++, violate(fuzzCase, 'transport', `${code} ${(error as Error).message}`));
        }
        if (response) checkResponse(fuzzCase, response);
        options.onCase?.(fuzzCase, response);
      }
    };
    const checkResponse = (c: FuzzCase, res: WireResponse) => {
      bump(report.statuses, String(res.status));
      if (/"__typename":"\w+Payload"/.test(res.text)) report.successfulWrites++;
      if (res.status >= 500) (report.status5xx++, violate(c, '5xx', `${res.status} ${res.text.slice(0, 300)}`));
      const shown = readable(res.text);
      const sent = requestText(c.request);
      for (const pattern of leakPatterns) {
        if (!pattern.test(shown)) continue;
        if (pattern.test(sent)) report.echoedPatterns++;
        else (report.stackTraces++, violate(c, 'leak', `${pattern} in ${res.text.slice(0, 500)}`));
      }
      if (/INTERNAL_SERVER_ERROR|Unexpected error\./.test(res.text)) (report.internalErrors++, violate(c, 'internal', res.text.slice(0, 500)));
      if (c.list) {
        const refused = res.text.includes('"LIST_TOO_LONG"') && res.text.includes(JSON.stringify(c.list.argument));
        if (refused !== c.list.over) violate(c, 'list-bound', `${c.list.argument} ${c.list.over ? 'over its bound was not refused' : 'at its bound was refused'}: ${res.text.slice(0, 300)}`);
      }
      const expected = c.expectStatus;
      if (expected !== null && res.status !== expected) (report.unexpectedStatus++, violate(c, 'status', `expected ${expected}, got ${res.status}: ${res.text.slice(0, 300)}`));
    };
    await Promise.all(Array.from({ length: options.concurrency ?? 4 }, worker));

    // Still alive: a simple query answers.
    try {
      if (options.alive && !options.alive()) throw new Error('the server process exited');
      const data = await gql(client, '{ settings { traitLimit } }');
      if (typeof data.settings.traitLimit !== 'number') throw new Error(`unexpected answer ${JSON.stringify(data)}`);
    } catch (error) {
      report.crashes++;
      violate(null, 'crash', (error as Error).message);
      return report;
    }
    const after = await snapshotKnownRows(client, options.db, known);
    const changed = compareSnapshots(before, after);
    report.knownRowsChanged = changed.length;
    for (const [table, n] of Object.entries(after.counts)) report.rowsAdded[table] = n - before.counts[table];
    for (const problem of changed) violate(null, 'known-rows', problem);
    const integrity = integrityProblems(options.db);
    report.integrity = integrity.length === 0 ? 'ok' : integrity.join('; ');
    for (const problem of integrity) violate(null, 'integrity', problem);
    return report;
  } finally {
    report.durationMs = Date.now() - started;
    client.close();
  }
}

/** One line per figure, for the test log and the script. */
export function formatReport(report: FuzzReport): string {
  const sorted = (counts: Record<string, number>) =>
    Object.entries(counts)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}:${v}`)
      .join(' ');
  return [
    `fuzz: ${report.cases} cases (${report.validCases} unmutated) in ${report.durationMs} ms`,
    `  crashes ${report.crashes}, 5xx ${report.status5xx}, stack traces/leaks ${report.stackTraces}, internal errors ${report.internalErrors}, timeouts ${report.timeouts}, transport errors ${report.transportErrors}, unexpected statuses ${report.unexpectedStatus}`,
    `  successful writes ${report.successfulWrites}; rows added ${sorted(report.rowsAdded)}`,
    `  integrity ${report.integrity || 'not checked'}, known rows changed ${report.knownRowsChanged}, leak checks skipped for echoed input ${report.echoedPatterns}`,
    `  statuses ${sorted(report.statuses)}`,
    `  operations ${sorted(report.ops)}`,
    `  mutations ${sorted(report.mutations)}`,
    ...report.violations.slice(0, 20).map((v) => `  VIOLATION [${v.kind}] ${v.seedHint} ${v.op} [${v.mutations.join(', ')}]: ${v.detail}`),
  ].join('\n');
}
