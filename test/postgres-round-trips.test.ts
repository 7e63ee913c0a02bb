// What one dropShard costs in database round trips on PostgreSQL (PGlite here), counted by the statement-time histogram
// of /metrics (one observation a round trip): a replica 2 ms from its database pays each of them on every write.
import { afterEach, describe, expect, it } from 'vitest';
import { DAY_MS } from '../src/engine/index.ts';
import { metricSample, serverPerTest, type LiveServer } from './support/server.ts';

const start = serverPerTest(afterEach);
const T0 = Date.UTC(2026, 0, 10);
const DROP = `mutation Drop($input: DropShardInput!) { dropShard(input: $input) { __typename
  ... on DropShardPayload { shard { id } readySouls { id } } ... on Error { message } } }`;

async function roundTrips(server: LiveServer): Promise<number> {
  const text = await (await fetch(server.url.replace(/\/graphql$/, '/metrics'))).text();
  return metricSample(text, 'souls_pg_statement_duration_seconds_count');
}

describe('dropShard on PostgreSQL', () => {
  it('costs three round trips below the cheap gate and past it, and one more only for a soul with themes', async () => {
    const server = await start({ path: 'pglite:memory', start: T0 });
    const soul = async (name: string) => (await server.data(`mutation { createSoul(input: { name: "${name}", essence: "e" }) { ... on SoulPayload { soul { id } } } }`)).createSoul.soul.id as string;
    const [quiet, busy, judged] = [await soul('Quiet'), await soul('Busy'), await soul('Judged')];
    const drop = async (soulId: string, content: string, source: string, daysAgo = 0) => {
      const input = { content, source, soulIds: [soulId], createdAt: new Date(T0 - daysAgo * DAY_MS).toISOString() };
      const result = (await server.data(DROP, { input })).dropShard;
      expect(result.__typename).toBe('DropShardPayload');
      return result;
    };
    const cost = async (soulId: string, content: string, source: string) => {
      const before = await roundTrips(server);
      const result = await drop(soulId, content, source);
      return { roundTrips: (await roundTrips(server)) - before, result };
    };
    // Past the cheap gate (three shards, two sources, two days apart): its edge check clusters the soul's shards.
    const shardIds: string[] = [];
    for (const soulId of [busy, judged]) {
      for (const [i, text] of ['Merged the release branch after the review.', 'Wrote the migration guide for the new API.', 'Profiled the parser and cut its allocations.'].entries()) {
        shardIds.push((await drop(soulId, text, `source-${i % 2}`, 2 - i)).shard.id);
      }
    }
    await server.data('mutation Assign($soulId: ID!, $a: [ThemeAssignmentInput!]!) { assignThemes(soulId: $soulId, assignments: $a) { __typename } }', {
      soulId: judged,
      a: [{ shardIds: [shardIds[3]], newThemeName: 'releases' }],
    });
    // Each soul's texts are in the cluster memo after its first write past the gate.
    await drop(busy, 'Fixed the flaky login test.', 'source-2');
    await drop(judged, 'Fixed the flaky login test.', 'source-2');

    const below = await cost(quiet, 'Answered the support ticket.', 'source-0');
    expect(below.result.readySouls).toEqual([]);
    const past = await cost(busy, 'Reviewed the pull request on caching.', 'source-3');
    const themed = await cost(judged, 'Reviewed the pull request on caching.', 'source-3');
    // The soul's lock with BEGIN, the insert, the gate with COMMIT; the answer is the shard as written, not read back.
    expect(below.roundTrips).toBe(3);
    expect(past.roundTrips).toBe(3);
    // Its shard → theme map: the gate says whether a soul has themes, so only a soul with some pays for it.
    expect(themed.roundTrips).toBe(4);
  }, 120_000);
});
