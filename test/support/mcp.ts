import { Client } from '@modelcontextprotocol/client';
import { afterEach, beforeEach } from 'vitest';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { createSoulsPubSub, type SoulsPubSub } from '../../src/server/pubsub.ts';
import { localCaller, scopes as allScopes, type Caller, type Scope } from '../../src/server/auth.ts';
import { createSoulsMcpServer } from '../../src/mcp/server.ts';
import { loadSkillSet, type SkillSet } from '../../src/mcp/skills.ts';
import { manualClock, openSoulsDb, type SoulsDb } from '../../src/engine/index.ts';
import { seedDemo } from '../../scripts/demo.ts';

export const DEMO_NOW = Date.UTC(2026, 5, 1, 12);

/** The demo world on a manual clock, in memory. */
export async function demoDb() {
  const clock = manualClock(DEMO_NOW);
  const db = openSoulsDb({ clock });
  const summary = await seedDemo(db, clock, { now: DEMO_NOW });
  return { db, clock, summary };
}

export function callerWith(...scopes: Scope[]): Caller {
  return scopes.length === allScopes.length ? localCaller : { name: `test-${scopes.join('-')}`, scopes: new Set(scopes) };
}

let skillSet: Promise<SkillSet> | null = null;
export function projectSkills(): Promise<SkillSet> {
  return (skillSet ??= loadSkillSet());
}

export type Connected = { client: Client; pubsub: SoulsPubSub; close(): Promise<void> };

/** A real MCP client over the SDK's in-memory transport, talking to a Souls MCP server on `db`. */
export async function connect(db: SoulsDb, options: { caller?: Caller; refinerId?: number | null; pubsub?: SoulsPubSub } = {}): Promise<Connected> {
  const pubsub = options.pubsub ?? createSoulsPubSub();
  const server = createSoulsMcpServer({ db, pubsub, caller: options.caller ?? localCaller, refinerId: options.refinerId ?? null, skills: await projectSkills() });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'souls-test', version: '1.0.0' });
  await client.connect(clientSide);
  return {
    client,
    pubsub,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

type ToolResult = Awaited<ReturnType<Client['callTool']>>;

/** Calls a tool; returns the result, its text blocks and its structured content (typed loosely for assertions). */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result: ToolResult = await client.callTool({ name, arguments: args });
  const blocks = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? '');
  return { result, isError: result.isError === true, blocks, text: blocks.join('\n'), data: (result.structuredContent ?? {}) as any };
}

export type DemoSession = Awaited<ReturnType<typeof demoDb>> & { session: Connected };

/**
 * Per test: the demo world and an MCP client connected to it, handed to `use` before the test and closed after it;
 * `tool(name, args)` calls one of its tools.
 */
export function demoSessionPerTest(use: (demo: DemoSession) => void): { tool: (name: string, args?: Record<string, unknown>) => ReturnType<typeof call> } {
  let session: Connected | null = null;
  beforeEach(async () => {
    const demo = await demoDb();
    session = await connect(demo.db);
    use({ ...demo, session });
  });
  afterEach(async () => {
    await session?.close();
    session = null;
  });
  return { tool: (name, args = {}) => call(session!.client, name, args) };
}
