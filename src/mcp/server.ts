// The Souls MCP server: the tools a caller's scopes allow, the soul resources, and the skills (as prompts and as the skills extension).
import { McpServer, ProtocolError, ProtocolErrorCode, ResourceNotFoundError, ResourceTemplate, type CallToolResult } from '@modelcontextprotocol/server';
import { formatEvidence, getSoul, listSouls, NotFoundError, renderSoul, unjudgedLines, type SoulsDb } from '../engine/index.ts';
import { mayReadSouls, type Caller } from '../server/auth.ts';
import type { SoulsEvents, SoulsPubSub } from '../server/pubsub.ts';
import type { ToolContext, ToolDefinition } from './context.ts';
import { soulEvidence } from './evidence.ts';
import { levelup, levelupRevert } from './levels.ts';
import { collectRegrets } from './refiner.ts';
import { idsOnlyResult, idsOnlySchema } from './read-scope.ts';
import { reportUnexpected, toolError, ToolRefusal } from './results.ts';
import { shardObserve, shardSearch } from './shards.ts';
import { attachSkills, type SkillSet } from './skills.ts';
import { soulAttune, soulManage, soulRead } from './souls.ts';
import { evidenceJudge } from './themes.ts';
import { traitChange } from './traits.ts';
import { wireSchema } from './wire.ts';
import { evidenceUri, soulUri } from './schemas.ts';

export const SERVER_NAME = 'souls';

/** Every tool, in the order they are listed: reads first, then the verbs by scope. */
export const tools = [soulRead, shardSearch, soulEvidence, shardObserve, evidenceJudge, traitChange, levelup, levelupRevert, soulAttune, soulManage] as readonly ToolDefinition[];

export { evidenceUri, soulUri };

export type SoulsMcpOptions = {
  db: SoulsDb;
  pubsub: SoulsPubSub;
  caller: Caller;
  /** The refiner this session acts as (its soul id), or null. */
  refinerId?: number | null;
  skills?: SkillSet;
  /**
   * How resource updates reach this instance's client: 'subscribed' sends them for the URIs the client subscribed to
   * (2025-era resources/subscribe), 'all' sends every one and lets the entry route them (2026-era subscriptions/listen
   * on stdio), 'none' sends nothing (per-request HTTP instances; the handler's bus carries them instead).
   */
  updates?: 'subscribed' | 'all' | 'none';
  version?: string;
};

/** After any write the refiners' regrets are brought up to date: a revert made elsewhere is noticed on the next write here. */
const WRITE_SCOPES = new Set(['observe', 'refine', 'admin']);

export function createSoulsMcpServer(options: SoulsMcpOptions): McpServer {
  const { db, pubsub, caller } = options;
  const readable = mayReadSouls(caller);
  const mcp = new McpServer(
    { name: SERVER_NAME, title: 'Souls', version: options.version ?? '0.1.0' },
    {
      instructions:
        'Souls evolves the identity of agents and characters from evidence. Start with soul_read (the roster, most ready first), read soul_evidence ' +
        'for a ready soul, change traits with trait_change or level it up with levelup (dryRun first), then soul_attune. The prompts are step-by-step skills.',
      // Without read there is nothing to list or follow: a listen stream's resource filter is then honoured as empty.
      capabilities: readable ? { resources: { subscribe: true, listChanged: false } } : {},
    },
  );
  const ctx: ToolContext = { db, caller, pubsub, refinerId: options.refinerId ?? null };
  const allowed = tools.filter((t) => caller.scopes.has(t.scope));
  for (const tool of allowed) {
    const outputSchema = wireSchema(readable ? tool.output : idsOnlySchema(tool.output), 'output', tool.name);
    mcp.registerTool(tool.name, { title: tool.title, description: tool.description, inputSchema: wireSchema(tool.input, 'input', tool.name), outputSchema, annotations: tool.annotations }, async (args: unknown) => {
      try {
        if (!readable && (args as { dryRun?: unknown }).dryRun === true) {
          throw new ToolRefusal('dryRun', 'shows the names and texts a change would touch, which needs the "read" scope', 'Leave dryRun out, or ask the operator for a token with the "read" scope');
        }
        const result = await tool.run(args as never, ctx);
        if (!result.isError && WRITE_SCOPES.has(tool.scope)) await collectRegrets(db, pubsub).catch(reportUnexpected);
        return readable ? result : idsOnlyResult(result);
      } catch (error) {
        // The SDK would answer a thrown error with its message.
        return toolError(error);
      }
    });
  }
  refuseUnlisted(mcp, caller, new Set(allowed.map((t) => t.name)));
  if (readable) {
    registerResources(mcp, db);
    if (options.skills) attachSkills(mcp, options.skills);
    wireUpdates(mcp, pubsub, options.updates ?? 'subscribed');
  }
  return mcp;
}

type RawHandler = (request: unknown, ctx: unknown) => Promise<unknown>;

/**
 * A tool the caller's scopes do not allow is not listed; called anyway, it is refused with a message that names
 * the scope it needs (the SDK alone would answer "Tool … not found", as for a misspelt name).
 */
function refuseUnlisted(mcp: McpServer, caller: Caller, allowed: ReadonlySet<string>): void {
  const server = mcp.server as unknown as { _getRequestHandler(method: string): RawHandler | undefined };
  const callTool = server._getRequestHandler('tools/call');
  if (!callTool) {
    // No tool at all is allowed: answer every call with the refusal.
    mcp.server.registerCapabilities({ tools: { listChanged: false } });
    mcp.server.setRequestHandler('tools/list', () => ({ tools: [] }));
  } else {
    mcp.server.removeRequestHandler('tools/call');
  }
  mcp.server.setRequestHandler('tools/call', async (request, handlerCtx): Promise<CallToolResult> => {
    const name = request.params.name;
    const tool = tools.find((t) => t.name === name);
    if (tool && !allowed.has(name)) {
      const scopes = [...caller.scopes].join(', ') || 'none';
      return toolError(new ToolRefusal(null, `the tool ${name} needs the "${tool.scope}" scope, and this caller (${caller.name}) has ${scopes}`, `Use the tools listed for you, or ask the operator for a token with the "${tool.scope}" scope`));
    }
    if (!tool || !callTool) {
      return toolError(new ToolRefusal('name', `there is no tool ${JSON.stringify(name)}`, `The tools you may call are ${[...allowed].join(', ') || 'none'}`));
    }
    return (await callTool(request, handlerCtx)) as CallToolResult;
  });
}

/** A resource read's failure as the protocol says it: not found (with the URI), or a masked internal error. */
async function answering<T>(read: () => Promise<T>, uri?: URL): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof ProtocolError) throw error;
    if (error instanceof NotFoundError && uri) throw notFound(uri);
    reportUnexpected(error);
    throw new ProtocolError(ProtocolErrorCode.InternalError, 'internal error: the resource could not be read. Try again; if it persists, report it to the operator');
  }
}

const notFound = (uri: URL) => new ResourceNotFoundError(uri.href, `there is no resource ${uri.href}: list the resources, or call soul_read, to find soul ids`);

function registerResources(mcp: McpServer, db: SoulsDb): void {
  const list = async () =>
    answering(async () => ({
      resources: (await listSouls(db)).flatMap((s) => [
        { uri: soulUri(s.id), name: `${s.name}: soul`, mimeType: 'text/markdown' },
        { uri: evidenceUri(s.id), name: `${s.name}: evidence`, mimeType: 'text/markdown' },
      ]),
    }));
  const soulIdOf = async (uri: URL, value: string | string[] | undefined) => {
    const raw = Array.isArray(value) ? value[0] : value;
    const id = raw !== undefined && /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : NaN;
    const soul = Number.isSafeInteger(id) ? await getSoul(db, id) : null;
    if (!soul) throw notFound(uri);
    return soul.id;
  };
  mcp.registerResource(
    'soul',
    new ResourceTemplate('souls://{soulId}/soul.md', { list }),
    { title: 'A soul\'s rendered block', description: 'The identity block with every trait and its provenance, as markdown', mimeType: 'text/markdown' },
    async (uri, variables) =>
      answering(async () => ({ contents: [{ uri: uri.href, mimeType: 'text/markdown', text: await renderSoul(db, await soulIdOf(uri, variables.soulId), { includeProvenance: true }) }] }), uri),
  );
  mcp.registerResource(
    'evidence',
    new ResourceTemplate('souls://{soulId}/evidence.md', { list: undefined }),
    { title: 'A soul\'s evidence report', description: 'The whole evidence report over the soul\'s pending shards, as markdown', mimeType: 'text/markdown' },
    async (uri, variables) =>
      answering(async () => ({ contents: [{ uri: uri.href, mimeType: 'text/markdown', text: (await formatEvidence(db, await soulIdOf(uri, variables.soulId))).markdown }] }), uri),
  );
  mcp.registerResource(
    'unjudged',
    new ResourceTemplate('souls://{soulId}/unjudged.md', { list: undefined }),
    { title: 'A soul\'s unjudged shards', description: `Every unjudged shard of the report (at most ${UNJUDGED_RESOURCE_LINES}) as "#id · source · date · text", by the theme each resembles`, mimeType: 'text/markdown' },
    async (uri, variables) =>
      answering(async () => {
        const report = await formatEvidence(db, await soulIdOf(uri, variables.soulId));
        const text = unjudgedLines(report, report.unjudged, report.unjudgedCount, UNJUDGED_RESOURCE_LINES).slice(1).join('\n') + '\n';
        return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text }] };
      }, uri),
  );
}

/** Lines the unjudged resource lists; the report's markdown lists MARKDOWN_UNJUDGED. */
export const UNJUDGED_RESOURCE_LINES = 1000;

/**
 * Follows the event bus until stopped, a write at a time; calls `onChange` once per soul and kind for the writes read
 * in one turn of the event loop (a batch of 10,000 shards for one soul is one change, not 10,000).
 */
export function followSoulChanges(pubsub: SoulsPubSub, onChange: (soulId: number, what: 'soul' | 'evidence') => void): () => void {
  const pending = new Map<number, 'soul' | 'evidence'>();
  const note = (soulId: number, what: 'soul' | 'evidence') => {
    if (pending.size === 0) setImmediate(flush);
    if (pending.get(soulId) !== 'soul') pending.set(soulId, what);
  };
  const flush = () => {
    const batch = [...pending];
    pending.clear();
    for (const [soulId, what] of batch) {
      try {
        onChange(soulId, what);
      } catch {
        // A listener gone wrong loses its update; thrown from here it would end the process.
      }
    }
  };
  let stopped = false;
  const streams = new Set<AsyncIterator<unknown>>();
  // Cut off as too slow (SUBSCRIBER_TOO_SLOW), a topic is followed again from then on.
  const follow = async <T extends 'soulChanged' | 'shardDropped'>(topic: T, each: (event: SoulsEvents[T]) => void) => {
    while (!stopped) {
      const stream = pubsub.subscribeWrites(topic);
      streams.add(stream);
      try {
        for await (const events of stream) for (const event of events) each(event);
        return;
      } catch {
        continue;
      } finally {
        streams.delete(stream);
      }
    }
  };
  void follow('soulChanged', (event) => note(event.soulId, 'soul'));
  void follow('shardDropped', (event) => {
    for (const soulId of event.soulIds) note(soulId, 'evidence');
  });
  return () => {
    stopped = true;
    for (const stream of streams) void stream.return?.();
  };
}

function wireUpdates(mcp: McpServer, pubsub: SoulsPubSub, mode: 'subscribed' | 'all' | 'none'): void {
  const subscribed = new Set<string>();
  let stop: (() => void) | null = null;
  const send = (uri: string) => {
    if (mode === 'all' || subscribed.has(uri)) void mcp.server.sendResourceUpdated({ uri }).catch(() => undefined);
  };
  // Followed only while someone can hear it: a bulk import publishes an event per shard.
  const follow = () => {
    stop ??= followSoulChanges(pubsub, (soulId, what) => {
      // A change to the block changes the evidence too (alignment, signals); new shards change the evidence only.
      if (what === 'soul') send(soulUri(soulId));
      send(evidenceUri(soulId));
    });
  };
  mcp.server.setRequestHandler('resources/subscribe', (request) => {
    // A per-request HTTP instance is gone before any update: saying yes would promise what never comes.
    if (mode === 'none') throw new ProtocolError(ProtocolErrorCode.InvalidRequest, 'this stateless HTTP session cannot receive resource updates: listen for them with subscriptions/listen (protocol 2026-07-28), or use stdio');
    subscribed.add(request.params.uri);
    if (mode === 'subscribed') follow();
    return {};
  });
  mcp.server.setRequestHandler('resources/unsubscribe', (request) => {
    subscribed.delete(request.params.uri);
    if (mode === 'subscribed' && subscribed.size === 0) {
      stop?.();
      stop = null;
    }
    return {};
  });
  if (mode === 'all') follow();
  const previousClose = mcp.server.onclose;
  mcp.server.onclose = () => {
    previousClose?.();
    stop?.();
  };
}
