/**
 * A measured refinement cycle (issue 34): a scripted refiner, deterministic and following the skills literally, drives
 * one soul through MCP over HTTP on a real server: observe 36 shards, read the report, judge themes, oppose the
 * contradiction, add and cite traits, observe 18 more, judge and cite again, level up and revert by id. It judges by
 * the corpus labels (bench/agent-corpus.ts), never by the report's suggestions. It counts the calls and the characters
 * of tool results it reads (every text block, what a model reads), along two paths:
 *   before: the skills as they were (full reports, shard_search to read, one call per theme action and per cited trait);
 *   after:  the cheap path (reports since a revision, unjudged shards with their text, one judge call, one cite call).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { addTrait, createSoul, manualClock, openSoulsDb, type SoulsDb } from '../src/engine/index.ts';
import { buildApp } from '../src/server/app.ts';
import { SOUL, THEMES, WAVE_1, WAVE_2, type CorpusShard, type Label } from './agent-corpus.ts';
import type { BenchRow } from './engine.ts';

const DAY_MS = 86_400_000;
const T0 = Date.UTC(2026, 4, 1);

export type CyclePath = 'before' | 'after';
export type CycleStats = { calls: number; characters: number; byTool: Record<string, { calls: number; characters: number }> };
export type CycleResult = {
  stats: CycleStats;
  db: SoulsDb;
  soulId: number;
  startingTraitId: number;
  /** The theme the refiner made for each label. */
  themeIds: Partial<Record<Label, number>>;
  /** The trait it added for each label (B, C, D, E, N). */
  traitIds: Partial<Record<Label, number>>;
  levelEventId: number;
  /** The ids each label's shards got, both waves. */
  shardIds: Record<Label, number[]>;
  stop(): Promise<void>;
};

type Answer = { isError: boolean; text: string; blocks: string[]; data: any };

class Session {
  stats: CycleStats = { calls: 0, characters: 0, byTool: {} };
  readonly client: Client;
  constructor(client: Client) {
    this.client = client;
  }

  async call(name: string, args: Record<string, unknown>): Promise<Answer> {
    const result = await this.client.callTool({ name, arguments: args });
    const blocks = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? '');
    const characters = blocks.reduce((n, b) => n + b.length, 0);
    this.stats.calls++;
    this.stats.characters += characters;
    const tool = (this.stats.byTool[name] ??= { calls: 0, characters: 0 });
    tool.calls++;
    tool.characters += characters;
    const answer = { isError: result.isError === true, text: blocks.join('\n'), blocks, data: (result.structuredContent ?? {}) as any };
    if (answer.isError) throw new Error(`${name} ${JSON.stringify(args)} refused: ${answer.text}`);
    return answer;
  }
}

/** The unjudged shard ids a markdown report names: members of clusters that are no theme, and the single shards. */
export function unjudgedIdsInMarkdown(markdown: string): number[] {
  const ids: number[] = [];
  for (const line of markdown.split('\n')) {
    const cluster = /^\d+\. \[(.*?)\] (.*)$/.exec(line);
    if (cluster && !cluster[1].startsWith('theme "')) ids.push(...idsIn(cluster[2].replace(/"[^"]*"/g, '')));
    const singles = /resembles? nothing else .*?: ids? (.*)$/.exec(line);
    if (singles) ids.push(...idsIn(singles[1].replace(/\([^)]*\)/g, '')));
  }
  return [...new Set(ids)];
}

const idsIn = (text: string) => [...text.matchAll(/#(\d+)/g)].map((m) => Number(m[1]));

/** Runs the cycle on a fresh in-memory database behind a real server; stop() closes both. */
export async function runAgentCycle(path: CyclePath): Promise<CycleResult> {
  const clock = manualClock(T0);
  const db = openSoulsDb({ clock });
  const soul = await createSoul(db, { name: SOUL.name, essence: SOUL.essence });
  const starting = await addTrait(db, soul.id, SOUL.startingTrait);
  const app = buildApp({ db, graphiql: false });
  const { url } = await app.start(0, '127.0.0.1');
  const client = new Client({ name: 'agent-cycle', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url.replace(/graphql$/, 'mcp'))));
  const session = new Session(client);
  const stop = async () => {
    await client.close();
    await app.stop();
  };
  try {
    const refiner = new ScriptedRefiner(session, soul.id, starting.id, path);
    // Wave 1: observed over the three weeks before T0, then the cycle runs on T0.
    await refiner.observe(WAVE_1, (i) => T0 - (21 - Math.floor((i * 20) / WAVE_1.length)) * DAY_MS);
    await refiner.refine();
    clock.advance(10 * DAY_MS);
    await refiner.observe(WAVE_2, (i) => T0 + (1 + Math.floor((i * 8) / WAVE_2.length)) * DAY_MS);
    await refiner.refine();
    const levelEventId = await refiner.levelUpAndRevert();
    return { stats: session.stats, db, soulId: soul.id, startingTraitId: starting.id, themeIds: refiner.themeIds, traitIds: refiner.traitIds, levelEventId, shardIds: refiner.shardIds, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

class ScriptedRefiner {
  themeIds: Partial<Record<Label, number>> = {};
  traitIds: Partial<Record<Label, number>> = {};
  shardIds: Record<Label, number[]> = { A: [], B: [], C: [], D: [], E: [], X: [], N: [] };
  /** What the refiner knows of each shard it has read: its label (from the corpus, by content). */
  private labelOf = new Map<number, Label | null>();
  private byContent = new Map([...WAVE_1, ...WAVE_2].map((s) => [s.content, s.label]));
  /** Shard ids already cited per trait id. */
  private cited = new Map<number, Set<number>>();
  private revision: string | null = null;

  private session: Session;
  private soulId: number;
  private startingTraitId: number;
  private path: CyclePath;
  constructor(session: Session, soulId: number, startingTraitId: number, path: CyclePath) {
    this.session = session;
    this.soulId = soulId;
    this.startingTraitId = startingTraitId;
    this.path = path;
  }

  private call(name: string, args: Record<string, unknown>) {
    return this.session.call(name, args);
  }

  async observe(wave: readonly CorpusShard[], at: (i: number) => number): Promise<void> {
    const shards = wave.map((s, i) => ({ content: s.content, source: s.source, soulIds: [this.soulId], createdAt: new Date(at(i)).toISOString() }));
    const { data } = await this.call('shard_observe', { shards });
    (data.shardIds as number[]).forEach((id, i) => {
      const label = wave[i].label;
      if (label !== null) this.shardIds[label].push(id);
    });
  }

  /** propose-traits: read, judge, oppose, add and cite. */
  async refine(): Promise<void> {
    const unjudged = this.path === 'before' ? await this.readUnjudged() : await this.readUnjudgedSince();
    await this.judge(unjudged);
    if (this.path === 'before') await this.call('soul_evidence', { soulId: this.soulId });
    await this.addTraits();
    await this.citeThemes();
    await this.call('soul_attune', { soulId: this.soulId });
  }

  /** The cheap path: one report (since the last revision read), whose unjudged lines carry each shard's text. */
  private async readUnjudgedSince(): Promise<number[]> {
    const report = await this.call('soul_evidence', { soulId: this.soulId, ...(this.revision === null ? {} : { since: this.revision }) });
    this.revision = report.data.revision;
    const ids: number[] = [];
    for (const line of report.blocks[0].split('\n')) {
      const match = /^- #(\d+) · [^·]+ · \S+ · (.*?)(?: \(\d\.\d\d\))?$/.exec(line);
      if (!match) continue;
      const id = Number(match[1]);
      ids.push(id);
      this.labelOf.set(id, this.labelOfText(match[2]));
    }
    return ids;
  }

  /** A line's text may be clipped (ending with "…"): its label is the corpus shard it begins. */
  private labelOfText(text: string): Label | null {
    if (this.byContent.has(text)) return this.byContent.get(text)!;
    const start = text.replace(/…$/, '');
    return [...this.byContent].find(([content]) => content.startsWith(start))?.[1] ?? null;
  }

  /** The unjudged shards and their labels, read the way the path's skills say. */
  private async readUnjudged(): Promise<number[]> {
    const report = await this.call('soul_evidence', { soulId: this.soulId });
    const ids = unjudgedIdsInMarkdown(report.blocks[0]);
    for (let k = 0; k < ids.length; k += 20) {
      const { data } = await this.call('shard_search', { ids: ids.slice(k, k + 20) });
      for (const shard of data.shards as { id: number; content: string }[]) this.labelOf.set(shard.id, this.byContent.get(shard.content) ?? null);
    }
    return ids;
  }

  /** Every unjudged shard with a label goes to its label's theme (made when new); the contradiction's theme opposes the starting trait. */
  private async judge(unjudged: readonly number[]): Promise<void> {
    const groups = Map.groupBy(unjudged.filter((id) => this.labelOf.get(id) != null), (id) => this.labelOf.get(id)!);
    const labels = [...groups.keys()].sort();
    // The cheap path opposes the contradiction in the same call that names it.
    const opposeNow = (label: Label) => this.path === 'after' && label === 'X' && !this.opposed;
    const assignments = labels.map((label) => {
      const themeId = this.themeIds[label];
      const target = themeId === undefined ? { newThemeName: THEMES[label].name } : { themeId };
      return { shardIds: groups.get(label)!, ...target, ...(opposeNow(label) ? { opposes: [this.startingTraitId] } : {}) };
    });
    if (assignments.length === 0) return;
    if (labels.includes('X') && this.path === 'after') this.opposed = true;
    const { data } = await this.call('evidence_judge', { action: 'assign', soulId: this.soulId, assignments });
    for (const theme of data.themes as { id: number; name: string }[]) {
      const label = labels.find((l) => THEMES[l].name === theme.name);
      if (label) this.themeIds[label] = theme.id;
    }
    const contradiction = this.themeIds.X;
    if (contradiction !== undefined && !this.opposed) {
      await this.call('evidence_judge', { action: 'oppose', themeId: contradiction, traitId: this.startingTraitId });
      this.opposed = true;
    }
  }
  private opposed = false;

  /** A trait for each new theme that calls for one: read its members whole, check the traits, dry-run, add citing them. */
  private async addTraits(): Promise<void> {
    const fresh = (Object.keys(THEMES) as Label[]).filter((l) => THEMES[l].principle !== null && this.themeIds[l] !== undefined && this.traitIds[l] === undefined);
    if (fresh.length === 0) return;
    if (this.path === 'before') {
      for (const label of fresh) await this.call('shard_search', { ids: this.shardIds[label].slice(0, 20) });
      await this.call('soul_read', { soulId: this.soulId, sections: ['traits'] });
    }
    for (const label of fresh) {
      const members = this.judgedMembers(label);
      const change = { action: 'add', soulId: this.soulId, principle: THEMES[label].principle, provenance: `Theme "${THEMES[label].name}": shards ${members.map((id) => `#${id}`).join(', ')}.` };
      await this.call('trait_change', { ...change, dryRun: true });
      const { data } = await this.call('trait_change', { ...change, citeShardIds: members });
      this.traitIds[label] = data.trait.id;
      this.cited.set(data.trait.id, new Set(members));
    }
  }

  /** Each theme's members not yet cited by its trait (A's by the starting trait), one cite call per trait. */
  private async citeThemes(): Promise<void> {
    const traitOf = (label: Label) => (label === 'A' ? this.startingTraitId : this.traitIds[label]);
    const cites: { traitId: number; shardIds: number[] }[] = [];
    for (const label of ['A', 'B', 'C', 'D', 'E', 'N'] as Label[]) {
      const traitId = traitOf(label);
      if (traitId === undefined) continue;
      const cited = this.cited.get(traitId) ?? new Set();
      const missing = this.judgedMembers(label).filter((id) => !cited.has(id));
      if (missing.length === 0) continue;
      cites.push({ traitId, shardIds: missing });
      this.cited.set(traitId, new Set([...cited, ...missing]));
    }
    if (this.path === 'after') {
      if (cites.length > 0) await this.call('trait_change', { action: 'cite', cites });
      return;
    }
    for (const { traitId, shardIds } of cites) await this.call('trait_change', { action: 'cite', traitId, citeShardIds: shardIds });
  }

  private judgedMembers(label: Label): number[] {
    return this.shardIds[label].filter((id) => this.labelOf.has(id));
  }

  /** judge-level-up, then plan-level-up: promote the mentoring trait into the essence, carry the rest; revert by id. */
  async levelUpAndRevert(): Promise<number> {
    let active: number[];
    if (this.path === 'before') {
      await this.call('soul_read', { soulId: this.soulId, render: 'full', sections: ['traits', 'levels'] });
      await this.call('soul_evidence', { soulId: this.soulId, format: 'json' });
      const { data } = await this.call('soul_read', { soulId: this.soulId, render: 'full', sections: ['traits'] });
      active = (data.soul.traits as { id: number; status?: string }[]).map((t) => t.id);
    } else {
      // The report since the last read names the candidates; the refiner knows the active traits it made.
      const report = await this.call('soul_evidence', { soulId: this.soulId, since: this.revision });
      this.revision = report.data.revision;
      active = [this.startingTraitId, ...Object.values(this.traitIds)].sort((a, b) => a - b);
    }
    const promoted = this.traitIds.E!;
    const plan = {
      soulId: this.soulId,
      newEssence: `${SOUL.essence} She teaches by pairing with juniors on real work.`,
      promotedTraitIds: [promoted],
      carriedTraitIds: active.filter((id) => id !== promoted),
    };
    await this.call('levelup', { ...plan, dryRun: true });
    const applied = await this.call('levelup', plan);
    const levelEventId = applied.data.levelEventId as number;
    await this.call('soul_attune', { soulId: this.soulId });
    await this.call('levelup_revert', { soulId: this.soulId, levelEventId });
    return levelEventId;
  }
}

export async function benchAgentCycle(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const path of ['before', 'after'] as const) {
    const cycle = await runAgentCycle(path);
    await cycle.stop();
    const { calls, characters } = cycle.stats;
    rows.push(
      { name: `${path}: calls`, value: `${calls}`, unit: 'calls', better: 'lower' },
      { name: `${path}: characters read`, value: `${characters}`, unit: 'characters', better: 'lower' },
      { name: `${path}: characters per call`, value: `${Math.round(characters / calls)}`, unit: 'characters', better: 'lower' },
    );
  }
  return rows;
}

if (import.meta.main) {
  for (const path of ['before', 'after'] as const) {
    const cycle = await runAgentCycle(path);
    await cycle.stop();
    console.log(path, cycle.stats.calls, 'calls', cycle.stats.characters, 'characters');
    for (const [tool, s] of Object.entries(cycle.stats.byTool)) console.log(`  ${tool}: ${s.calls} calls, ${s.characters} characters`);
  }
}
