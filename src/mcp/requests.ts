// What an /mcp request may ask before the SDK sees it: a shape the SDK's validation parses in bounded time, a cost
// within the GraphQL API's maxCost (a JSON-RPC batch's calls summed), and a listen filter this server can honour.
import { expensiveFieldCosts } from '../server/limits-cost.ts';
import type { Limits } from '../server/limits.ts';

export type McpLimits = Pick<Limits, 'maxCost' | 'maxNesting' | 'maxListItems' | 'maxListenStreamsPerToken' | 'maxListenUris'>;

/** A refusal sent as one JSON-RPC error (id null for a batch), before anything runs. */
export type McpRefusal = { status: number; code: number; message: string; data?: Record<string, unknown> };

/** What any tool call or resource read costs on top of what its work adds, like a GraphQL operation's few fields. */
export const CALL_COST = 10;
const ROSTER_PAGE = 20;

type Message = { method?: unknown; params?: unknown };
const record = (value: unknown): Record<string, unknown> => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {});

/** One message's cost by GraphQL's weights: an evidence report 2,500, a crystallization verdict 10 a soul. */
export function messageCost(message: Message): number {
  const params = record(message.params);
  if (message.method === 'resources/read') return CALL_COST + (/\/evidence\.md$/.test(String(params.uri)) ? expensiveFieldCosts.evidence : 0);
  if (message.method !== 'tools/call') return 0;
  const args = record(params.arguments);
  switch (params.name) {
    case 'soul_evidence':
      return CALL_COST + expensiveFieldCosts.evidence;
    // Assigning or unassigning answers with the report's unjudgedCount: one report.
    case 'evidence_judge':
      return CALL_COST + (args.action === 'assign' || args.action === 'unassign' ? expensiveFieldCosts.evidence : 0);
    case 'soul_read': {
      if (args.soulId === undefined && args.name === undefined) {
        const page = typeof args.limit === 'number' && args.limit > 0 ? Math.min(args.limit, 50) : ROSTER_PAGE;
        return CALL_COST + page * expensiveFieldCosts.crystallization;
      }
      return CALL_COST + (Array.isArray(args.sections) && args.sections.includes('crystallization') ? expensiveFieldCosts.crystallization : 0);
    }
    default:
      return CALL_COST;
  }
}

/**
 * Objects with many keys are what the SDK's validation is slow on (an 11.7 MB `arguments` object of 987,500 keys held
 * the event loop for 28 s, an array of 8 million numbers for 1 s); nesting is bounded too, as the body is serialized
 * again, recursively, for the SDK. Both in one pass that stops at the first excess.
 */
function shapeRefusal(body: unknown, limits: McpLimits): McpRefusal | null {
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

/** The refusal of a parsed body (one message or a batch), or null when it may go on to the SDK. */
export function requestRefusal(body: unknown, limits: McpLimits): McpRefusal | null {
  const shape = shapeRefusal(body, limits);
  if (shape) return shape;
  const messages = (Array.isArray(body) ? body : [body]).map(record);
  const cost = messages.reduce((sum, message) => sum + messageCost(message), 0);
  if (cost > limits.maxCost) {
    const evidence = messages.filter((m) => messageCost(m) >= expensiveFieldCosts.evidence).length;
    return {
      status: 400,
      code: -32600,
      message:
        `Invalid Request: the request costs ${cost}, over the cost limit of ${limits.maxCost} (maxCost, as on /graphql): ` +
        `${messages.length} message(s)${evidence > 0 ? `, ${evidence} of them evidence reports at ${expensiveFieldCosts.evidence} each` : ''}. ` +
        'Nothing was run; send fewer calls per request',
      data: { cost, limit: limits.maxCost, setting: 'maxCost' },
    };
  }
  return null;
}

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
