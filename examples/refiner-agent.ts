// The loop an LLM runs as the refiner soul: read readiness, follow a skill by calling the MCP tools, and watch the
// refiner's own shards grow from what it applies. The model sits behind one small interface (RefinerModel); the
// scripted stand-in below makes the same kind of calls deterministically, so the example (and its test) needs no
// network. Swap in a real model by implementing `next`.
//
//   node examples/refiner-agent.ts                 a demo world in memory, served in-process
//   node examples/refiner-agent.ts --db FILE       a database with a refiner (souls refiner init), through `souls mcp` over stdio
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { DAY_MS, manualClock, openSoulsDb } from '../src/engine/index.ts';
import { localCaller } from '../src/server/auth.ts';
import { createSoulsPubSub } from '../src/server/pubsub.ts';
import { createSoulsMcpServer } from '../src/mcp/server.ts';
import { loadSkillSet } from '../src/mcp/skills.ts';
import { initRefiner } from '../src/mcp/refiner.ts';
import { seedDemo } from '../scripts/demo.ts';

export type ToolCall = { name: string; arguments: Record<string, unknown> };
export type Observation = { call: ToolCall; isError: boolean; text: string; data: any };
/** What the model sees on each turn: the skill it follows (the prompt's text), the soul, and every call so far with its result. */
export type Turn = { skill: string; instructions: string; soul: { id: number; name: string }; observations: readonly Observation[] };

/** The one seam to a language model: the next tool call for this turn, or null when the skill is done for this soul. */
export interface RefinerModel {
  next(turn: Turn): Promise<ToolCall | null>;
}

/**
 * A deterministic stand-in for a model following the propose-traits skill: evidence first, then a trait from the
 * heaviest novel cluster (dry run, then for real, citing its members), then attune. A real model writes the
 * principle from the shards; this one quotes the representative shard.
 */
export const scriptedModel: RefinerModel = {
  async next({ soul, observations }) {
    const last = observations.at(-1);
    if (!last) return { name: 'soul_evidence', arguments: { soulId: soul.id, format: 'json', limit: 5 } };
    if (last.isError) return null;
    if (last.call.name === 'soul_evidence') {
      const { report, suggestedActions } = last.data;
      if (suggestedActions.some((a: { kind: string }) => a.kind === 'AT_CAPACITY')) return null;
      const cluster = report.clusters.find((c: { alignment: { kind: string }; sources: string[] }) => c.alignment.kind === 'NOVEL' && c.sources.length >= 2) ?? report.clusters.find((c: { alignment: { kind: string } }) => c.alignment.kind === 'NOVEL');
      if (!cluster) return null;
      const principle = `Keep to what this shows: ${cluster.representative.replace(/[.…]+$/, '')}.`;
      const provenance = `A cluster of ${cluster.memberCount} shards from ${cluster.sources.join(', ')} (representative #${cluster.representativeId}).`;
      return { name: 'trait_change', arguments: { action: 'add', soulId: soul.id, principle, provenance, citeShardIds: cluster.memberIds, dryRun: true } };
    }
    if (last.call.name === 'trait_change' && last.call.arguments.dryRun) return { ...last.call, arguments: { ...last.call.arguments, dryRun: false } };
    if (last.call.name === 'trait_change') return { name: 'soul_attune', arguments: { soulId: soul.id } };
    return null;
  },
};

async function callTool(client: Client, call: ToolCall): Promise<Observation> {
  const result = await client.callTool({ name: call.name, arguments: call.arguments });
  const text = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? '').join('\n');
  return { call, isError: result.isError === true, text, data: result.structuredContent ?? {} };
}

export type AgentOptions = { refinerId: number; skill?: string; maxSouls?: number; maxSteps?: number; log?: (line: string) => void };

/** One pass: every ready soul but the refiner itself, one skill each, then the refiner's own shard counts. */
export async function runRefinerAgent(client: Client, model: RefinerModel, options: AgentOptions): Promise<{ refined: number[]; outcomeShards: number; regretShards: number }> {
  const log = options.log ?? ((line: string) => console.log(line));
  const skill = options.skill ?? 'propose-traits';
  const counts = async () => {
    const sources = (await callTool(client, { name: 'soul_read', arguments: { soulId: options.refinerId, sections: ['shardCounts'] } })).data.soul.shardCounts.bySource as { source: string; count: number }[];
    const of = (source: string) => sources.find((s) => s.source === source)?.count ?? 0;
    return { outcome: of('refinement_outcome'), regret: of('refinement_regret') };
  };
  const before = await counts();
  log(`Refiner soul ${options.refinerId}: ${before.outcome} outcome shards, ${before.regret} regret shards`);
  const roster = (await callTool(client, { name: 'soul_read', arguments: { limit: 50 } })).data.souls as { id: number; name: string; ready: boolean }[];
  const ready = roster.filter((s) => s.ready && s.id !== options.refinerId).slice(0, options.maxSouls ?? 3);
  const prompt = await client.getPrompt({ name: skill, arguments: {} });
  const instructions = (prompt.messages[0].content as { text: string }).text;
  const refined: number[] = [];
  for (const soul of ready) {
    log(`Refining ${soul.name} (soul ${soul.id}) with the ${skill} skill`);
    const observations: Observation[] = [];
    for (let step = 0; step < (options.maxSteps ?? 8); step++) {
      const call = await model.next({ skill, instructions, soul, observations });
      if (!call) break;
      const seen = await callTool(client, call);
      observations.push(seen);
      const brief = seen.isError ? `refused: ${seen.text}` : call.name === 'trait_change' && seen.data.trait ? `trait #${seen.data.trait.id} "${seen.data.trait.principle}"` : call.name === 'trait_change' ? 'previewed' : 'ok';
      log(`  ${call.name}${call.arguments.action ? ` ${String(call.arguments.action)}` : ''}${call.arguments.dryRun ? ' (dry run)' : ''}: ${brief}`);
    }
    if (observations.some((o) => o.call.name === 'soul_attune' && !o.isError)) refined.push(soul.id);
    else log('  nothing to change here');
    const now = await counts();
    log(`  the refiner now has ${now.outcome} outcome shards, ${now.regret} regret shards`);
  }
  const after = await counts();
  return { refined, outcomeShards: after.outcome, regretShards: after.regret };
}

/** The demo world in memory with a refiner, on a hand-moved clock, served in-process. */
async function inProcessDemo(): Promise<{ client: Client; refinerId: number; close(): Promise<void> }> {
  const now = Date.UTC(2026, 5, 1, 12);
  const clock = manualClock(now);
  const db = openSoulsDb({ clock });
  await seedDemo(db, clock, { now });
  clock.advance(DAY_MS);
  const { soul } = await initRefiner(db);
  const server = createSoulsMcpServer({ db, pubsub: createSoulsPubSub(), caller: localCaller, refinerId: soul.id, skills: await loadSkillSet() });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'refiner-agent', version: '1.0.0' });
  await client.connect(clientSide);
  return { client, refinerId: soul.id, close: async () => (await client.close(), await server.close()) };
}

/** `souls mcp --db FILE --refiner` as a child process, as an agent host would start it. */
async function overStdio(db: string): Promise<{ client: Client; refinerId: number; close(): Promise<void> }> {
  const cli = fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
  const transport = new StdioClientTransport({ command: process.execPath, args: [cli, 'mcp', '--db', db, '--refiner'], stderr: 'inherit' });
  const client = new Client({ name: 'refiner-agent', version: '1.0.0' });
  await client.connect(transport);
  const roster = await callTool(client, { name: 'soul_read', arguments: { name: 'Refiner' } });
  if (roster.isError) throw new Error(`no refiner in ${db}: run souls refiner init --db ${db}`);
  return { client, refinerId: roster.data.soul.id, close: () => client.close() };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { db: { type: 'string' } } });
  const session = values.db ? await overStdio(values.db) : await inProcessDemo();
  try {
    const { refined, outcomeShards, regretShards } = await runRefinerAgent(session.client, scriptedModel, { refinerId: session.refinerId });
    console.log(`Refined ${refined.length} soul(s); the refiner has ${outcomeShards} outcome and ${regretShards} regret shards.`);
  } finally {
    await session.close();
  }
}
