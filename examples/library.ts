// The engine as a library: no server, an in-memory database, a clock we move by hand.
import {
  DAY_MS,
  addTrait,
  createSoul,
  crystallizationReadiness,
  dropShard,
  formatEvidence,
  manualClock,
  openSoulsDb,
  renderSoul,
  stampAttuned,
} from '../src/engine/index.ts';

const clock = manualClock(Date.UTC(2026, 0, 1));
const db = openSoulsDb({ clock }); // or openSoulsDb({ path: 'souls.db' })

const mira = await createSoul(db, {
  name: 'Mira',
  description: 'Quartermaster of the northern keep',
  essence: 'Mira grew up counting sacks in a famine year. She trusts ledgers over rumours and speaks plainly.',
});

await dropShard(db, 'Refused to hand out rations until the ledger was checked.', 'quest_turnin', [mira.id], { tags: ['supplies'] });
clock.advance(2 * DAY_MS);
await dropShard(db, 'Asked the player for proof before believing the raid rumour.', 'dialogue', [mira.id]);
const { readySoulIds } = await dropShard(db, 'Double-checked the grain count twice before the winter feast.', 'session_observation', [mira.id]);
console.log('ready:', readySoulIds.includes(mira.id)); // this write crossed the crystallization threshold

const [ready] = await crystallizationReadiness(db);
const report = await formatEvidence(db, ready.soulId);
console.log(report.markdown); // pre-digested evidence for whoever decides: a person, a script or an LLM

const top = report.clusters[0];
await addTrait(db, mira.id, {
  principle: 'Verify claims against the record before acting on them.',
  provenance: `Evidence cluster around shard ${top.representativeId}: rations, raid rumour, grain count.`,
  citeShardIds: report.clusters.flatMap((c) => c.memberIds),
});
await stampAttuned(db, mira.id);

console.log(await renderSoul(db, mira.id)); // the identity block for a system prompt
