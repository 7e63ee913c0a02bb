// Fills a database with a small, lived-in world so every screen of the character sheet has something to show:
// four awake souls (three game NPCs and an AI agent) and one dormant, traits with provenance and citations,
// a level-up in one soul's history and a reverted one in another's, and shards from several sources spread
// over six weeks. Everything goes through the engine with a hand-moved clock, so createdAt values are real.
//
//   npm run demo [-- --db ./data/souls.db] [--port PORT] [--force]   # --port: the server's port, named in what to do next
//   souls seed-demo [--db path] [--force]
//
// It refuses a database that already has souls unless --force is given.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import {
  addTrait,
  closeSoulsDb,
  createSoul,
  crystallizationReadiness,
  DAY_MS,
  dropShard,
  levelUp,
  listDormantSouls,
  listSouls,
  manualClock,
  openSoulsDb,
  retireSoul,
  revertLevelUp,
  SoulsError,
  stampAttuned,
  type SoulsDb,
} from '../src/engine/index.ts';

export type ManualClock = ReturnType<typeof manualClock>;

/** How far back the demo world starts. */
export const DEMO_SPAN_DAYS = 42;

export type DemoSummary = {
  /** soul ids by name */
  souls: Record<string, number>;
  shardCount: number;
  traitCount: number;
  readySouls: string[];
  dormantSouls: string[];
};

type Shard = { day: number; content: string; source: string; tags?: string[]; also?: string[] };
type Trait = { day: number; principle: string; provenance: string; cites?: string[] };

const souls = {
  mira: {
    name: 'Mira',
    slug: 'mira',
    description: 'Quartermaster of the northern keep',
    essence: 'Mira grew up counting sacks in a famine year. She trusts ledgers over rumours and speaks plainly, even to captains.',
    day: 0,
  },
  brannoc: {
    name: 'Brannoc',
    slug: 'brannoc',
    description: "Blacksmith of Harrow's Ford",
    essence: 'Brannoc learned the forge from his mother and has buried friends who trusted bad steel. He is slow to praise and quick to help.',
    day: 1,
  },
  relay: {
    name: 'Relay',
    slug: 'relay',
    description: 'AI agent that coordinates a team of coding agents',
    essence: 'Relay plans work for a small team of coding agents, hands out tasks and reviews what comes back. It values clear briefs and verified results.',
    day: 2,
  },
  wenna: {
    name: 'Wenna',
    slug: 'wenna',
    description: 'Herbalist of the old mill, retired from the story',
    essence: 'Wenna knows every root in the valley and trades remedies for gossip. She left the story when the mill burned.',
    day: 3,
  },
  sela: {
    name: 'Sela',
    slug: 'sela',
    description: 'Scout of the eastern marches',
    essence: 'Sela maps the marches alone and reports only what she has seen with her own eyes.',
    day: 5,
  },
} as const;

type Key = keyof typeof souls;

const traits: Record<Key, Trait[]> = {
  mira: [
    { day: 1, principle: 'Check the ledger before handing out supplies.', provenance: 'Design brief for the northern keep; confirmed in the first playtest.' },
    { day: 2, principle: 'Check the stores ledger before every distribution.', provenance: 'Quest turn-ins in week one: she refused to issue arrows unrecorded.', cites: ['Checked the ledger twice before handing out the winter rations.'] },
    { day: 3, principle: 'Say the unwelcome thing plainly rather than let a bad deal stand.', provenance: 'Dialogue review, chapter one: called out the bridge toll to the player.', cites: ['Told the player bluntly that the bridge toll was a swindle.'] },
    { day: 4, principle: 'Feed the garrison first; favours come after.', provenance: 'Design brief, confirmed in two playtests when nobles asked for extra rations.' },
    { day: 6, principle: 'Trust a count made twice over a rumour heard once.', provenance: 'Session notes: ignored the raid rumour until the scouts confirmed it.', cites: ['Asked for proof before believing the rumour of a raid on the granary.'] },
    // after the level-up on day 14
    { day: 18, principle: 'Teach recruits to keep their own tallies.', provenance: 'Two quest lines in week three where she handed the ledger to a recruit.', cites: ['Showed a new recruit how to tally the arrow bundles.'] },
    { day: 24, principle: 'Keep a reserve the captains do not know about.', provenance: 'Playtest four: the hidden reserve saved the keep in the siege event.' },
  ],
  brannoc: [
    { day: 2, principle: 'Never sell a blade before the quench has cooled.', provenance: 'Forge logs across the first three sessions.', cites: ['Refused to sell a sword before the quench had fully cooled.'] },
    { day: 3, principle: 'Never sell an axe before the quench has cooled.', provenance: 'Forge log, session four: sent a woodcutter away until morning.', cites: ['Refused to sell an axe before the quench had fully cooled.'] },
    { day: 4, principle: 'Help the village first when raiders come.', provenance: 'Quest turn-ins after the first raid on the ford.' },
    { day: 5, principle: 'Distrust coin that arrives too easily.', provenance: 'Dialogue with the merchant guild envoy, chapter two.' },
    { day: 7, principle: 'Warn buyers plainly that cheap steel gets people killed.', provenance: 'Three dialogues with adventurers haggling over price.', cites: ['Warned the player that cheap steel gets people killed.'] },
    { day: 9, principle: 'Mend the tools of the poor without charge.', provenance: 'Village quest chain: mended the miller’s hinges for a loaf.' },
    { day: 11, principle: 'Teach an apprentice by letting them ruin one bar.', provenance: 'Forge logs with the apprentice Tam, sessions five and six.' },
    { day: 13, principle: 'Keep the forge lit through the night before a battle.', provenance: 'Event log of the siege of the ford.' },
    { day: 17, principle: 'Help the village first, before any paying customer.', provenance: 'Second raid: closed the shop to repair the palisade.', cites: ['Closed the shop to help repair the village palisade.'] },
    { day: 22, principle: 'Speak of his mother’s forge only to those who earned it.', provenance: 'Companion dialogue tree, trust level three and above.' },
  ],
  relay: [
    { day: 3, principle: 'Write a brief that names the files and the acceptance test.', provenance: 'Manual reviews of the first twenty delegations.', cites: ['Named the exact files and the acceptance test in the migration brief.'] },
    { day: 4, principle: 'Verify a result by running it, not by reading the report.', provenance: 'Two regressions that a summary had called fixed.', cites: ["Re-ran the benchmark itself instead of trusting the agent's summary."] },
    { day: 6, principle: 'Split large work into tasks one agent can finish in a sitting.', provenance: 'Delegation outcomes: big tasks stalled, small ones landed.', cites: ['Split the migration into three smaller tasks before delegating it.'] },
    { day: 8, principle: 'Split a refactor into small tasks before delegating it.', provenance: 'The refactor of the parser landed only once it was cut in four.' },
    { day: 12, principle: 'Lead status notes with the decisions that are needed.', provenance: 'Reader feedback on the weekly notes.' },
  ],
  wenna: [
    { day: 4, principle: 'Trade a remedy for a story, never for coin.', provenance: 'Dialogue review, chapter one.' },
    { day: 6, principle: 'Warn of side effects before giving any draught.', provenance: 'Quest turn-ins with the fevered miller.' },
  ],
  sela: [
    { day: 6, principle: 'Report what was seen, not what was heard.', provenance: 'Scouting reports reviewed by the quest designer.' },
    { day: 8, principle: 'Count twice before reporting numbers.', provenance: 'Watchtower reports, chapter two.' },
  ],
};

const shards: Record<Key, Shard[]> = {
  mira: [
    { day: 1, content: 'Checked the ledger twice before handing out the winter rations.', source: 'quest_turnin', tags: ['supplies'] },
    { day: 2, content: 'Told the player bluntly that the bridge toll was a swindle.', source: 'dialogue', tags: ['honesty'] },
    { day: 4, content: 'Asked for proof before believing the rumour of a raid on the granary.', source: 'session_observation', tags: ['rumour'] },
    { day: 8, content: 'Checked the ledger twice before handing out the spare arrows.', source: 'session_observation', tags: ['supplies'] },
    { day: 10, content: 'Refused the baron’s steward extra grain without a signed order.', source: 'dialogue', tags: ['supplies', 'authority'] },
    { day: 12, content: 'Helped Brannoc count the arrows after the raid on the ford.', source: 'quest_turnin', tags: ['raid'], also: ['brannoc'] },
    // after the attunement on day 15
    { day: 17, content: 'Showed a new recruit how to tally the arrow bundles.', source: 'quest_turnin', tags: ['teaching'] },
    { day: 20, content: 'Checked the ledger again before handing out rations to the night guard.', source: 'dialogue', tags: ['supplies'] },
    { day: 23, content: 'Told the captain plainly that his men were eating the siege reserve.', source: 'dialogue', tags: ['honesty', 'authority'] },
    { day: 26, content: 'Checked the ledger twice before handing out the spare bowstrings.', source: 'session_observation', tags: ['supplies'] },
    { day: 29, content: 'Let the recruit run the morning count on her own.', source: 'playtest_note', tags: ['teaching'] },
    { day: 31, content: 'Hid four sacks of oats behind the chapel without telling the captains.', source: 'playtest_note', tags: ['supplies', 'secrecy'] },
    { day: 34, content: 'Told the player plainly that the reward was smaller than promised.', source: 'dialogue', tags: ['honesty'] },
    { day: 37, content: 'Showed two new recruits how to tally the grain sacks.', source: 'session_observation', tags: ['teaching'] },
    { day: 40, content: 'Refused to trust a traveller’s tale of a second army without a scout’s word.', source: 'quest_turnin', tags: ['rumour'] },
  ],
  brannoc: [
    { day: 2, content: 'Refused to sell a sword before the quench had fully cooled.', source: 'forge_log', tags: ['forge'] },
    { day: 3, content: 'Refused to sell an axe before the quench had fully cooled.', source: 'forge_log', tags: ['forge'] },
    { day: 6, content: 'Warned the player that cheap steel gets people killed.', source: 'dialogue', tags: ['honesty'] },
    { day: 9, content: 'Mended the miller’s door hinges for a loaf of bread.', source: 'quest_turnin', tags: ['village'] },
    { day: 14, content: 'Closed the shop to help repair the village palisade.', source: 'quest_turnin', tags: ['village', 'raid'] },
    { day: 18, content: 'Let the apprentice spoil a bar of iron and said nothing until evening.', source: 'forge_log', tags: ['teaching'] },
    // after the attunement on day 30
    { day: 31, content: 'Refused to sell a spear before the quench had fully cooled.', source: 'forge_log', tags: ['forge'] },
    { day: 33, content: 'Turned away a guild envoy who paid in advance without haggling.', source: 'dialogue', tags: ['coin'] },
    { day: 35, content: 'Worked through the night to re-shoe the militia’s horses.', source: 'quest_turnin', tags: ['village', 'raid'] },
    { day: 37, content: 'Warned a young knight that his cheap blade would fail him.', source: 'dialogue', tags: ['honesty'] },
    { day: 39, content: 'Refused to sell a dagger before the quench had fully cooled.', source: 'playtest_note', tags: ['forge'] },
    { day: 41, content: 'Told the apprentice the story of his mother’s forge for the first time.', source: 'dialogue', tags: ['teaching'] },
  ],
  relay: [
    { day: 3, content: 'Named the exact files and the acceptance test in the migration brief.', source: 'delegation', tags: ['planning'] },
    { day: 4, content: "Re-ran the benchmark itself instead of trusting the agent's summary.", source: 'manual_review', tags: ['review'] },
    { day: 5, content: 'Split the migration into three smaller tasks before delegating it.', source: 'delegation', tags: ['planning'] },
    { day: 9, content: 'Split the refactor into four smaller tasks before delegating it.', source: 'delegation', tags: ['planning'] },
    { day: 11, content: 'Readers found the weekly status notes too long to act on.', source: 'reader_feedback', tags: ['status'] },
    { day: 14, content: 'Re-ran the failing tests itself before accepting the fix.', source: 'manual_review', tags: ['review'] },
    { day: 19, content: 'Asked for the weekly status notes to lead with the decisions needed.', source: 'reader_feedback', tags: ['status'] },
    { day: 25, content: 'Split the failing test suite into smaller tasks before delegating the fixes.', source: 'manual_review', tags: ['planning'] },
    { day: 28, content: 'Gave the agent a deadline and a fallback plan for the flaky API.', source: 'delegation', tags: ['risk'] },
    { day: 31, content: 'Re-ran the load test itself before accepting the agent’s numbers.', source: 'ci_report', tags: ['review'] },
    { day: 33, content: 'Named the exact files and the acceptance test in the search brief.', source: 'delegation', tags: ['planning'] },
    { day: 36, content: 'Caught a summary that claimed green tests while CI was red.', source: 'ci_report', tags: ['review'] },
    { day: 38, content: 'Gave the agent a fallback plan before it touched the payment code.', source: 'delegation', tags: ['risk'] },
    { day: 41, content: 'The status note opened with two decisions and readers acted the same day.', source: 'reader_feedback', tags: ['status'] },
  ],
  wenna: [
    { day: 4, content: 'Traded a fever remedy for the story of the miller’s quarrel.', source: 'dialogue', tags: ['trade'] },
    { day: 7, content: 'Warned the player that the sleeping draught causes nightmares.', source: 'quest_turnin', tags: ['remedies'] },
    { day: 12, content: 'Refused silver for a poultice and asked for news of the keep instead.', source: 'dialogue', tags: ['trade'] },
    { day: 19, content: 'Gathered moonroot by the river before the frost.', source: 'session_observation', tags: ['remedies'] },
    { day: 30, content: 'Asked the player to carry a remedy to the burned mill’s family.', source: 'dialogue', tags: ['remedies'], also: ['mira'] },
  ],
  sela: [
    { day: 7, content: 'Counted the eastern watchtowers twice before reporting them.', source: 'scouting_report', tags: ['marches'] },
    { day: 13, content: 'Ignored a rumour of wolves until she found the tracks herself.', source: 'scouting_report', tags: ['marches'] },
    { day: 21, content: 'Mapped the ford at dawn and marked where the riverbed shifted.', source: 'scouting_report', tags: ['maps'] },
    { day: 27, content: 'Reported three campfires, not the thirty the farmer claimed.', source: 'scouting_report', tags: ['marches'] },
    { day: 35, content: 'Returned a day late rather than guess at the pass beyond the ridge.', source: 'scouting_report', tags: ['maps'] },
  ],
};

/** Things that happen on a given day besides shards and traits. */
type Event = { day: number; run: (ids: Record<Key, number>, traitIds: Map<string, number>) => Promise<unknown> };

/**
 * Seeds `db` (whose clock must be `clock`) with the demo world, ending at `now`: the clock starts DEMO_SPAN_DAYS
 * earlier and is moved forward between writes, so the history reads like six weeks of play. The clock is left at `now`.
 */
export async function seedDemo(db: SoulsDb, clock: ManualClock, options: { now?: number; force?: boolean } = {}): Promise<DemoSummary> {
  if (db.clock !== clock) throw new SoulsError('seedDemo: the database must run on the clock it is given');
  const existing = (await listSouls(db)).length + (await listDormantSouls(db)).length;
  if (existing > 0 && !options.force) throw new SoulsError(`the database already has ${existing} soul${existing === 1 ? '' : 's'}: pass --force to add the demo souls anyway`);
  const now = options.now ?? Date.now();
  const start = now - DEMO_SPAN_DAYS * DAY_MS;
  // Writes happen in the morning of their day, at a different minute each, so orderings are stable.
  let minute = 0;
  const at = (day: number) => start + day * DAY_MS + 9 * 3_600_000 + (minute++ % 600) * 60_000;

  const ids = {} as Record<Key, number>;
  const shardIds = new Map<string, number>();
  const traitIds = new Map<string, number>();
  let shardCount = 0;
  let traitCount = 0;

  const events: Event[] = [
    // Mira's first level-up: the two ledger traits merge, plain speaking moves into the essence.
    {
      day: 14,
      run: (s, t) =>
        levelUp(db, s.mira, {
          newEssence:
            'Mira grew up counting sacks in a famine year. She trusts ledgers over rumours, checks the stores before anything leaves them, and says the unwelcome thing plainly, even to captains.',
          consolidations: [
            {
              sourceTraitIds: [t.get('Check the ledger before handing out supplies.')!, t.get('Check the stores ledger before every distribution.')!],
              mergedPrinciple: 'Check the stores ledger before anything leaves the keep.',
              mergedProvenance: 'Merged at level 1 from two ledger habits seen in quest turn-ins and the design brief.',
            },
          ],
          promotedTraitIds: [t.get('Say the unwelcome thing plainly rather than let a bad deal stand.')!],
          carriedTraitIds: [t.get('Feed the garrison first; favours come after.')!, t.get('Trust a count made twice over a rumour heard once.')!],
        }),
    },
    { day: 15, run: (s) => stampAttuned(db, s.mira) },
    // Relay levelled up too early, and the designer took it back two days later.
    {
      day: 20,
      run: (s, t) =>
        levelUp(db, s.relay, {
          newEssence: 'Relay plans work for a small team of coding agents and splits it into small, verifiable tasks.',
          consolidations: [
            {
              sourceTraitIds: [t.get('Split large work into tasks one agent can finish in a sitting.')!, t.get('Split a refactor into small tasks before delegating it.')!],
              mergedPrinciple: 'Split work into small tasks before delegating it.',
              mergedProvenance: 'Two delegation habits that always travel together.',
            },
          ],
          promotedTraitIds: [],
          carriedTraitIds: [
            t.get('Write a brief that names the files and the acceptance test.')!,
            t.get('Verify a result by running it, not by reading the report.')!,
            t.get('Lead status notes with the decisions that are needed.')!,
          ],
        }),
    },
    { day: 22, run: (s) => revertLevelUp(db, s.relay) },
    { day: 23, run: (s) => stampAttuned(db, s.relay) },
    { day: 28, run: (s) => stampAttuned(db, s.wenna) },
    { day: 30, run: (s) => stampAttuned(db, s.brannoc) },
    { day: 32, run: (s) => retireSoul(db, s.wenna) },
  ];

  type Step = { day: number; order: number; run: () => Promise<unknown> };
  const steps: Step[] = [];
  for (const [key, soul] of Object.entries(souls) as [Key, (typeof souls)[Key]][]) {
    steps.push({
      day: soul.day,
      order: 0,
      run: async () => {
        ids[key] = (await createSoul(db, { name: soul.name, slug: soul.slug, description: soul.description, essence: soul.essence })).id;
      },
    });
    for (const shard of shards[key]) {
      steps.push({
        day: shard.day,
        order: 1,
        run: async () => {
          const soulIds = [ids[key], ...(shard.also ?? []).map((k) => ids[k as Key])];
          const { shardId } = await dropShard(db, shard.content, shard.source, soulIds, { tags: shard.tags });
          shardIds.set(shard.content, shardId);
          shardCount++;
        },
      });
    }
    for (const trait of traits[key]) {
      steps.push({
        day: trait.day,
        order: 2,
        run: async () => {
          const citeShardIds = (trait.cites ?? []).map((content) => {
            const id = shardIds.get(content);
            if (id === undefined) throw new SoulsError(`demo data: "${trait.principle}" cites an unknown or later shard "${content}"`);
            return id;
          });
          traitIds.set(trait.principle, (await addTrait(db, ids[key], { principle: trait.principle, provenance: trait.provenance, citeShardIds })).id);
          traitCount++;
        },
      });
    }
  }
  for (const event of events) steps.push({ day: event.day, order: 3, run: () => event.run(ids, traitIds) });
  // Stable: same day → souls, then shards, then traits, then events, each in declaration order.
  steps.sort((a, b) => a.day - b.day || a.order - b.order);

  clock.set(start);
  for (const step of steps) {
    clock.set(Math.max(clock.now(), at(step.day)));
    await step.run();
  }
  clock.set(now);

  const ready = await crystallizationReadiness(db);
  const byId = new Map(Object.entries(ids).map(([key, id]) => [id, souls[key as Key].name]));
  return {
    souls: Object.fromEntries(Object.entries(ids).map(([key, id]) => [souls[key as Key].name, id])),
    shardCount,
    traitCount,
    readySouls: ready.map((r) => byId.get(r.soulId) ?? String(r.soulId)),
    dormantSouls: (await listDormantSouls(db)).map((s) => s.name),
  };
}

/**
 * Whether another program has the SQLite file open now: a connection in WAL mode keeps `FILE-wal` beside it, and the
 * last one to close removes it. Asked before the demo opens the file itself.
 */
export function openElsewhere(path: string): boolean {
  return path !== ':memory:' && !/^[a-z]+:\/\//i.test(path) && existsSync(`${path}-wal`);
}

/**
 * What to do next: start a server on the file, or, when one has it open already, only reload the page. A port is named
 * only when given (`--port`): a running server may listen anywhere, and it prints its address when it starts.
 */
export function demoNextStep(path: string, elsewhere: boolean, start: string, port?: number): string {
  const sheet = port === undefined ? null : `http://127.0.0.1:${port}/`;
  if (elsewhere) {
    return `${path} is open in another program, a running server most likely: it sees the souls at once, so reload the character sheet ${
      sheet ? `(${sheet})` : 'at the address that server printed when it started ("Character sheet on http://…/")'
    }.`;
  }
  return sheet
    ? `Start the server on it (${start} --port ${port}) and open ${sheet} for the character sheet.`
    : `Start the server on it (${start}) and open the address it prints ("Character sheet on http://…/") for the character sheet.`;
}

/** `npm run demo` and `souls seed-demo`: seeds a database file and prints what it made. */
export async function runDemo(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { db: { type: 'string' }, port: { type: 'string' }, force: { type: 'boolean', default: false } },
    allowPositionals: false,
  });
  const path = values.db ?? process.env.SOULS_DB ?? './data/souls.db';
  const portText = values.port ?? process.env.SOULS_PORT;
  const port = portText === undefined ? undefined : Number(portText);
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port <= 65535)) throw new SoulsError(`--port must be a port number from 1 to 65535, got ${JSON.stringify(portText)}`);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const elsewhere = openElsewhere(path);
  const now = Date.now();
  const clock = manualClock(now);
  const db = openSoulsDb({ path, clock });
  try {
    const summary = await seedDemo(db, clock, { now, force: values.force });
    console.log(`Seeded ${path}: ${Object.keys(summary.souls).join(', ')} (${summary.traitCount} traits, ${summary.shardCount} shards over ${DEMO_SPAN_DAYS} days).`);
    console.log(`Ready for refinement: ${summary.readySouls.join(', ') || 'none'}. Dormant: ${summary.dormantSouls.join(', ') || 'none'}.`);
    console.log(demoNextStep(path, elsewhere, `npm start -- --db ${path}`, port));
  } finally {
    closeSoulsDb(db);
  }
}

if (import.meta.main) {
  runDemo(process.argv.slice(2)).catch((error: unknown) => {
    console.error(`demo: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
