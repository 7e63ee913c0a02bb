// Seeds a running Souls API with a small world: three game NPCs and an AI coordinator, their traits,
// and shards from several sources spread over two weeks, so that some souls are ready for refinement.
//
//   node examples/seed.ts [url] [--now 2026-06-01T00:00:00Z] [--token T]
//
// url defaults to SOULS_URL, then http://127.0.0.1:4000/graphql; the token (for a server with --tokens-file) to SOULS_TOKEN.
// Shards are back-dated with `createdAt` relative to --now (default: this machine's clock). The server refuses
// dates in its future, so against a server whose clock differs from this machine's, pass the server's now.
// Souls that already exist (by name) are left alone, so running it twice changes nothing.
import { parseArgs } from 'node:util';
import { SeedAddTraitDocument, SeedCreateSoulDocument, SeedDropShardsDocument, SeedSoulByNameDocument, SeedSummaryDocument } from './gql/graphql.ts';
import { apiToken, apiUrl, describeError, failWith, tokenOption, typedClient } from './typed-client.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

type SeedShard = { content: string; source: string; daysAgo: number; souls: string[]; tags?: string[] };
type SeedTrait = { principle: string; provenance: string; cites?: string[] };
type SeedSoul = { key: string; name: string; slug: string; description: string; essence: string; traits: SeedTrait[] };

export const seedSouls: SeedSoul[] = [
  {
    key: 'mira',
    name: 'Mira',
    slug: 'mira',
    description: 'Quartermaster of the northern keep',
    essence: 'Mira grew up counting sacks in a famine year. She trusts ledgers over rumours and speaks plainly.',
    traits: [
      {
        principle: 'Say the unwelcome thing plainly rather than let a bad deal stand.',
        provenance: 'Dialogue review, chapter one: called out the bridge toll to the player.',
        cites: ['Told the player bluntly that the bridge toll was a swindle.'],
      },
      { principle: 'Feed the garrison first; favours come after.', provenance: 'Design brief for the northern keep, confirmed in two playtests.' },
    ],
  },
  {
    key: 'brannoc',
    name: 'Brannoc',
    slug: 'brannoc',
    description: "Blacksmith of Harrow's Ford",
    essence: 'Brannoc learned the forge from his mother and has buried friends who trusted bad steel. He is slow to praise and quick to help.',
    traits: [
      { principle: 'Never hand over a blade before it is ready.', provenance: 'Forge logs across the first three sessions.' },
      { principle: 'Help the village first when raiders come.', provenance: 'Quest turn-ins after the first raid.' },
      { principle: 'Distrust coin that arrives too easily.', provenance: 'Dialogue with the merchant guild envoy.' },
    ],
  },
  {
    key: 'sela',
    name: 'Sela',
    slug: 'sela',
    description: 'Scout of the eastern marches',
    essence: 'Sela maps the marches alone and reports only what she has seen with her own eyes.',
    traits: [{ principle: 'Report what was seen, not what was heard.', provenance: 'Scouting reports reviewed by the quest designer.' }],
  },
  {
    key: 'relay',
    name: 'Relay',
    slug: 'relay',
    description: 'Coordinates a team of coding agents',
    essence: 'Relay plans work for a small team of coding agents, hands out tasks and reviews what comes back. It values clear briefs and verified results.',
    traits: [
      { principle: 'Write a brief that names the files and the acceptance test.', provenance: 'Manual reviews of the first twenty delegations.' },
      { principle: 'Verify a result by running it, not by reading the report.', provenance: 'Two regressions that a summary had called fixed.' },
    ],
  },
];

export const seedShards: SeedShard[] = [
  { content: 'Checked the ledger twice before handing out the winter rations.', source: 'quest_turnin', daysAgo: 9, souls: ['mira'], tags: ['supplies'] },
  { content: 'Told the player bluntly that the bridge toll was a swindle.', source: 'dialogue', daysAgo: 7, souls: ['mira'] },
  { content: 'Checked the ledger twice before handing out the spare arrows.', source: 'session_observation', daysAgo: 6, souls: ['mira'], tags: ['supplies'] },
  { content: 'Helped Brannoc count the arrows after the raid on the ford.', source: 'quest_turnin', daysAgo: 3, souls: ['mira', 'brannoc'], tags: ['raid'] },
  { content: 'Checked the ledger again before handing out rations to the night guard.', source: 'dialogue', daysAgo: 2, souls: ['mira'], tags: ['supplies'] },
  { content: 'Refused to sell a sword before the quench had fully cooled.', source: 'forge_log', daysAgo: 12, souls: ['brannoc'], tags: ['forge'] },
  { content: 'Refused to sell an axe before the quench had fully cooled.', source: 'forge_log', daysAgo: 8, souls: ['brannoc'], tags: ['forge'] },
  { content: 'Warned the player that cheap steel gets people killed.', source: 'dialogue', daysAgo: 4, souls: ['brannoc'] },
  { content: 'Counted the eastern watchtowers twice before reporting them.', source: 'session_observation', daysAgo: 5, souls: ['sela'] },
  { content: 'Ignored a rumour of wolves until she found the tracks herself.', source: 'session_observation', daysAgo: 4, souls: ['sela'] },
  { content: 'Split the migration into three smaller tasks before delegating it.', source: 'delegation', daysAgo: 14, souls: ['relay'], tags: ['planning'] },
  { content: "Re-ran the benchmark itself instead of trusting the agent's summary.", source: 'manual_review', daysAgo: 11, souls: ['relay'], tags: ['review'] },
  { content: 'Split the refactor into four smaller tasks before delegating it.', source: 'delegation', daysAgo: 10, souls: ['relay'], tags: ['planning'] },
  { content: 'Split the failing test suite into smaller tasks before delegating the fixes.', source: 'manual_review', daysAgo: 5, souls: ['relay'], tags: ['planning'] },
  { content: 'Readers found the weekly status notes too long to act on.', source: 'reader_feedback', daysAgo: 3, souls: ['relay'], tags: ['status'] },
  { content: 'Asked for the weekly status notes to lead with the decisions needed.', source: 'reader_feedback', daysAgo: 1, souls: ['relay'], tags: ['status'] },
  { content: 'Gave the agent a deadline and a fallback plan for the flaky API.', source: 'delegation', daysAgo: 0.5, souls: ['relay'] },
];

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

function parseNow(value: string | undefined): number {
  if (value === undefined) return Date.now();
  const at = Date.parse(value);
  if (Number.isNaN(at)) throw new Error(`--now must be an ISO date-time, got "${value}"`);
  return at;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { ...tokenOption, now: { type: 'string' } } });
  const url = apiUrl(positionals);
  const now = parseNow(values.now);
  const request = typedClient(url, apiToken(values));
  console.log(`Seeding ${url} (now = ${new Date(now).toISOString()})`);

  // 1. Souls: create the missing ones, leave existing ones alone.
  const created = new Map<string, string>(); // key → id
  for (const soul of seedSouls) {
    const existing = await request(SeedSoulByNameDocument, { name: soul.name });
    if (existing.soulByName && !existing.soulByName.dormant) {
      console.log(`  ${soul.name}: exists (id ${existing.soulByName.id}), left alone`);
      continue;
    }
    const { createSoul } = await request(SeedCreateSoulDocument, {
      input: { name: soul.name, slug: soul.slug, description: soul.description, essence: soul.essence },
    });
    if (createSoul.__typename !== 'SoulPayload') throw new Error(`createSoul ${soul.name}: ${describeError(createSoul)}`);
    created.set(soul.key, createSoul.soul.id);
  }
  if (created.size === 0) {
    console.log('Nothing to seed: every seed soul exists.');
    return;
  }

  // 2. Shards, back-dated, in one batch (one transaction, one crystallization pass).
  const shards = seedShards
    .map((shard) => ({ shard, soulIds: shard.souls.flatMap((key) => created.get(key) ?? []) }))
    .filter(({ soulIds }) => soulIds.length > 0);
  const { dropShards } = await request(SeedDropShardsDocument, {
    inputs: shards.map(({ shard, soulIds }) => ({
      content: shard.content,
      source: shard.source,
      soulIds,
      tags: shard.tags,
      createdAt: new Date(now - shard.daysAgo * DAY_MS).toISOString(),
    })),
  });
  if (dropShards.__typename !== 'DropShardsPayload') throw new Error(`dropShards: ${describeError(dropShards)}`);
  const shardIdByContent = new Map(shards.map(({ shard }, i) => [shard.content, dropShards.shards[i].id]));
  console.log(`  dropped ${dropShards.shards.length} shards; now ready: ${dropShards.readySouls.map((s) => s.name).join(', ') || 'none'}`);

  // 3. Traits, citing shards where the seed says so.
  for (const soul of seedSouls) {
    const soulId = created.get(soul.key);
    if (!soulId) continue;
    for (const trait of soul.traits) {
      const citeShardIds = (trait.cites ?? []).flatMap((content) => shardIdByContent.get(content) ?? []);
      const { addTrait } = await request(SeedAddTraitDocument, { soulId, input: { principle: trait.principle, provenance: trait.provenance, citeShardIds } });
      if (addTrait.__typename !== 'TraitPayload') throw new Error(`addTrait for ${soul.name}: ${addTrait.message}`);
    }
    console.log(`  ${soul.name}: created (id ${soulId}) with ${plural(soul.traits.length, 'trait')}`);
  }

  // 4. Where that leaves the roster.
  const summary = await request(SeedSummaryDocument);
  console.log('');
  for (const soul of summary.souls) {
    const { ready, priority, unmet } = soul.crystallization;
    const state = ready ? `ready (priority ${priority.toFixed(1)})` : `not ready: ${unmet.join(', ')}`;
    console.log(`${soul.name.padEnd(12)} id ${soul.id.padEnd(4)} ${plural(soul.activeTraitCount, 'trait').padEnd(10)} ${String(soul.pendingShardCount).padStart(3)} pending  ${state}`);
  }
}

if (import.meta.main) await main().catch(failWith);
