// What an /mcp request may ask before the SDK sees it: a shape the SDK's validation parses in bounded time, a price
// within the GraphQL API's maxCost by the same price list (a JSON-RPC batch's calls summed), and a listen filter this
// server can honour.
import { listSouls, pendingShardCounts, shardRowBound, type Settings, type SoulsDb } from '../engine/index.ts';
import type { Limits } from '../server/limits.ts';
import { CALL_PRICE, EVIDENCE_PRICES, FIELD_EXTRAS, evidencePrice, fromScratch, SCAN_ROW_PRICE, searchPrice, searchWords, verdictPrice, WRITE_PRICE } from '../server/price-list.ts';

export type McpLimits = Pick<Limits, 'maxCost' | 'maxNesting' | 'maxListItems' | 'maxListenStreamsPerToken' | 'maxListenUris'>;

/** A refusal sent as one JSON-RPC error (id null for a batch), before anything runs. */
export type McpRefusal = { status: number; code: number; message: string; data?: Record<string, unknown> };

/** A tool's page when the call names no limit. */
const TOOL_PAGE = 20;
/** A listed or found shard, a roster line, a trait with its signals, a level of the history: what one item of an answer costs. */
const ITEM_PRICE = 10;

type Message = { method?: unknown; params?: unknown };
const record = (value: unknown): Record<string, unknown> => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {});
const count = (value: unknown) => (Array.isArray(value) ? value.length : 0);
const soulIdOf = (value: unknown): number | null => (typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null);
const EVIDENCE_URI = /^souls:\/\/([1-9][0-9]{0,15})\/evidence\.md$/;

/** What the messages' prices depend on: the shards there are, the awake souls, the named souls' pending shards and whether their partitions are held. */
export type PriceFacts = {
  shardRows: number;
  awakeSouls: number;
  pending: ReadonlyMap<number, number>;
  clustered: (soulId: number) => boolean;
  settings: Pick<Settings, 'traitLimit' | 'maxClusteredShards'>;
};

function toolCall(message: Message): { name: unknown; args: Record<string, unknown> } | null {
  if (message.method !== 'tools/call') return null;
  const params = record(message.params);
  return { name: params.name, args: record(params.arguments) };
}

/** The soul whose evidence report a message reads (a report tool, a judgement answering with its report, the evidence resource), if any. */
function reportedSoul(message: Message): number | null {
  if (message.method === 'resources/read') {
    const match = EVIDENCE_URI.exec(String(record(message.params).uri));
    return match ? Number(match[1]) : null;
  }
  const call = toolCall(message);
  if (call?.name === 'soul_evidence') return soulIdOf(call.args.soulId);
  if (call?.name === 'evidence_judge' && (call.args.action === 'assign' || call.args.action === 'unassign')) return soulIdOf(call.args.soulId);
  return null;
}

/** The souls whose pending shards a message's price depends on. */
function pricedSouls(message: Message): number[] {
  const call = toolCall(message);
  const listed = call?.name === 'shard_search' && call.args.query === undefined ? soulIdOf(call.args.soulId) : null;
  const read = call?.name === 'soul_read' ? soulIdOf(call.args.soulId) : null;
  return [reportedSoul(message), listed, read].filter((id): id is number => id !== null);
}

/** Reads what the messages' prices need, and only that: at most three statements for any batch. */
export async function priceFacts(db: SoulsDb, messages: readonly Message[]): Promise<PriceFacts> {
  const calls = messages.map(toolCall);
  const scans = calls.some((c) => (c?.name === 'shard_search' && (c.args.query !== undefined || c.args.soulId === undefined)) || (c?.name === 'soul_evidence' && c.args.query !== undefined));
  const roster = calls.some((c) => c?.name === 'soul_read' && c.args.soulId === undefined && c.args.name === undefined);
  const souls = [...new Set(messages.flatMap(pricedSouls))];
  return {
    shardRows: scans ? await shardRowBound(db) : 0,
    awakeSouls: roster ? (await listSouls(db)).length : 0,
    pending: souls.length > 0 ? await pendingShardCounts(db, souls) : new Map(),
    clustered: (soulId) => db.clusters.remembers(soulId),
    settings: db.settings,
  };
}

/** Clustering a soul's shards: nothing when its partition is held, else all of them, up to maxClusteredShards. */
function clusteringOf(facts: PriceFacts, soulId: number, shards: number) {
  return facts.clustered(soulId) ? fromScratch(0) : fromScratch(Math.min(shards, facts.settings.maxClusteredShards));
}

/** A soul's evidence report by the price list: the shards it reads, and clustering them when their partition is not held. */
function reportPrice(facts: PriceFacts, soulId: number | null): number {
  if (soulId === null) return EVIDENCE_PRICES.reportRead;
  const shards = facts.pending.get(soulId) ?? 0;
  // Whether its analysis is held is known only once its traits are read: priced as made.
  return evidencePrice({ shards, clustering: clusteringOf(facts, soulId, shards), analysis: shards });
}

function soulReadPrice(args: Record<string, unknown>, facts: PriceFacts): number {
  const page = typeof args.limit === 'number' && args.limit > 0 ? Math.min(args.limit, 50) : TOOL_PAGE;
  if (args.soulId === undefined && args.name === undefined) {
    // The roster by readiness judges every awake soul to order them; the other orders judge the page.
    const judged = args.dormant !== true && (args.orderBy ?? 'READINESS') === 'READINESS' ? facts.awakeSouls : page;
    return verdictPrice({ souls: judged, clustering: fromScratch(0) }) + page * ITEM_PRICE;
  }
  const sections = new Set(Array.isArray(args.sections) ? args.sections : []);
  const soulId = soulIdOf(args.soulId);
  const pending = soulId === null ? 0 : (facts.pending.get(soulId) ?? 0);
  let price = FIELD_EXTRAS['Soul.rendered'] + facts.settings.traitLimit * ITEM_PRICE;
  if (sections.has('crystallization')) price += verdictPrice({ souls: 1, clustering: soulId === null ? fromScratch(0) : clusteringOf(facts, soulId, pending) });
  if (sections.has('shardCounts')) price += SCAN_ROW_PRICE * pending;
  if (sections.has('levels') || sections.has('inactiveTraits')) price += 20 * ITEM_PRICE;
  return price;
}

function shardSearchPrice(args: Record<string, unknown>, facts: PriceFacts): number {
  const page = (typeof args.limit === 'number' && args.limit > 0 ? Math.min(args.limit, 50) : TOOL_PAGE) * ITEM_PRICE;
  if (args.ids !== undefined) return count(args.ids) * ITEM_PRICE;
  if (args.query !== undefined) return searchPrice(facts.shardRows, searchWords(args.query)) + page;
  const soulId = soulIdOf(args.soulId);
  return SCAN_ROW_PRICE * (soulId === null ? facts.shardRows : (facts.pending.get(soulId) ?? 0)) + page;
}

/** One message's price by the price list (src/server/price-list.ts), GraphQL's units. */
export function messageCost(message: Message, facts: PriceFacts): number {
  if (message.method === 'resources/read') {
    const soulId = reportedSoul(message);
    return CALL_PRICE + (soulId === null ? FIELD_EXTRAS['Soul.rendered'] : reportPrice(facts, soulId));
  }
  const call = toolCall(message);
  if (!call) return 0;
  const { name, args } = call;
  switch (name) {
    case 'soul_read':
      return CALL_PRICE + soulReadPrice(args, facts);
    case 'shard_search':
      return CALL_PRICE + shardSearchPrice(args, facts);
    case 'soul_evidence':
      return CALL_PRICE + reportPrice(facts, soulIdOf(args.soulId)) + (args.query === undefined ? 0 : searchPrice(facts.shardRows, searchWords(args.query)));
    // Assigning or unassigning answers with the report's unjudgedCount: one report.
    case 'evidence_judge':
      return CALL_PRICE + (reportedSoul(message) === null ? 0 : reportPrice(facts, reportedSoul(message)));
    case 'shard_observe':
      return CALL_PRICE + (count(args.shards) + count(args.reveal)) * WRITE_PRICE;
    default:
      return CALL_PRICE;
  }
}

/**
 * Objects with many keys are what the SDK's validation is slow on (an 11.7 MB `arguments` object of 987,500 keys held
 * the event loop for 28 s, an array of 8 million numbers for 1 s); nesting is bounded too, as the body is serialized
 * again, recursively, for the SDK. Both in one pass that stops at the first excess.
 */
export function shapeRefusal(body: unknown, limits: McpLimits): McpRefusal | null {
  const stack: [unknown, number][] = [[body, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth > limits.maxNesting) {
      return { status: 400, code: -32600, message: `Invalid Request: the body nests deeper than ${limits.maxNesting} levels (maxNesting)`, data: { limit: limits.maxNesting, setting: 'maxNesting' } };
    }
    if (Array.isArray(value)) {
      for (const item of value) if (item !== null && typeof item === 'object') stack.push([item, depth + 1]);
      continue;
    }
    const keys = Object.keys(value);
    if (keys.length > limits.maxListItems) {
      return {
        status: 400,
        code: -32600,
        message: `Invalid Request: an object in the body has ${keys.length} keys; at most ${limits.maxListItems} are allowed (maxListItems)`,
        data: { limit: limits.maxListItems, setting: 'maxListItems' },
      };
    }
    for (const key of keys) {
      const item = (value as Record<string, unknown>)[key];
      if (item !== null && typeof item === 'object') stack.push([item, depth + 1]);
    }
  }
  return null;
}

/** The refusal of a parsed body priced over maxCost, or null when it may go on to the SDK. */
export function costRefusal(body: unknown, limits: McpLimits, facts: PriceFacts): McpRefusal | null {
  const messages = (Array.isArray(body) ? body : [body]).map(record);
  const prices = messages.map((message) => messageCost(message, facts));
  const cost = Math.ceil(prices.reduce((sum, price) => sum + price, 0));
  if (cost <= limits.maxCost) return null;
  const dearest = prices.indexOf(Math.max(...prices));
  const named = toolCall(messages[dearest])?.name ?? messages[dearest].method;
  return {
    status: 400,
    code: -32600,
    message:
      `Invalid Request: the request costs ${cost}, over the cost limit of ${limits.maxCost} (maxCost, as on /graphql): ` +
      `${messages.length} message(s), the dearest ${String(named)} at ${Math.ceil(prices[dearest])}. Nothing was run; send fewer or narrower calls per request`,
    data: { cost, limit: limits.maxCost, setting: 'maxCost' },
  };
}

/** A parsed body's messages, to read the facts their prices need. */
export const messagesOf = (body: unknown): Message[] => (Array.isArray(body) ? body : [body]).map(record);

const SOUL_RESOURCE = /^souls:\/\/[1-9][0-9]{0,15}\/(soul|evidence)\.md$/;

/** A subscriptions/listen request's resource list: at most maxListenUris of this server's resource URIs. */
export function listenFilterRefusal(message: Message, limits: McpLimits): McpRefusal | null {
  const uris = record(record(record(message.params).notifications)).resourceSubscriptions;
  if (!Array.isArray(uris)) return null;
  if (uris.length > limits.maxListenUris) {
    return {
      status: 200,
      code: -32602,
      message: `Invalid params: notifications.resourceSubscriptions lists ${uris.length} URIs; a stream may follow at most ${limits.maxListenUris} (maxListenUris)`,
      data: { limit: limits.maxListenUris, setting: 'maxListenUris' },
    };
  }
  const foreign = uris.findIndex((uri) => typeof uri !== 'string' || !SOUL_RESOURCE.test(uri));
  if (foreign >= 0) {
    const shown = JSON.stringify(uris[foreign])?.slice(0, 80) ?? String(uris[foreign]);
    return {
      status: 200,
      code: -32602,
      message: `Invalid params: notifications.resourceSubscriptions[${foreign}] (${shown}) is not a resource of this server: souls://{soulId}/soul.md or souls://{soulId}/evidence.md`,
    };
  }
  return null;
}
