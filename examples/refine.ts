// One scripted refinement cycle, no LLM: take the most urgent ready soul, read its evidence report, turn the
// heaviest NOVEL cluster into a trait that cites the cluster's shards, and stamp the attunement.
// A real deployment would hand `evidence.markdown` to an LLM or a person here instead of picking mechanically.
//
//   node examples/refine.ts [url]      (url defaults to SOULS_URL, then http://127.0.0.1:4000/graphql)
import { parseArgs } from 'node:util';
import { RefineAddTraitDocument, RefineEvidenceDocument, RefineReadinessDocument, RefineStampAttunedDocument, type RefineEvidenceQuery } from './gql/graphql.ts';
import { apiUrl, describeError, failWith, typedClient } from './typed-client.ts';

type Cluster = NonNullable<RefineEvidenceQuery['soul']>['evidence']['clusters'][number];

const PRINCIPLE_MAX = 2000; // the API bounds principles (2 KiB by default); shards may be longer

function indent(block: string): string {
  return block
    .trimEnd()
    .split('\n')
    .map((line) => (line ? `    ${line}` : ''))
    .join('\n');
}

/** The heaviest cluster no trait covers yet; failing that, the heaviest one (clusters come highest weight first). */
function pickCluster(clusters: readonly Cluster[]): Cluster | undefined {
  return clusters.find((c) => c.alignment.kind === 'NOVEL') ?? clusters[0];
}

function provenanceOf(cluster: Cluster): string {
  const shards = `${cluster.memberCount} shard${cluster.memberCount === 1 ? '' : 's'}`;
  return (
    `Evidence cluster of ${shards} from ${cluster.sources.join(', ')} over ${cluster.ageSpanDays.toFixed(1)} days ` +
    `(weight ${cluster.weight.toFixed(2)}), represented by shard ${cluster.representative.id}: "${cluster.representative.content}"`
  );
}

async function main(): Promise<void> {
  const { positionals } = parseArgs({ allowPositionals: true });
  const request = typedClient(apiUrl(positionals));

  const { crystallizationReadiness } = await request(RefineReadinessDocument);
  if (crystallizationReadiness.length === 0) {
    console.log('Nothing is ready for refinement: no soul has enough diverse, new evidence yet.');
    return;
  }
  const [top] = crystallizationReadiness;
  console.log(`${crystallizationReadiness.length} ready; refining ${top.soul.name} (id ${top.soul.id}, priority ${top.priority.toFixed(1)})`);

  const { soul } = await request(RefineEvidenceDocument, { soulId: top.soul.id });
  if (!soul) throw new Error(`soul ${top.soul.id} disappeared`);
  console.log(`\nBefore (${soul.activeTraitCount}/${soul.traitLimit} traits):\n${indent(soul.rendered)}\n`);
  for (const action of soul.evidence.suggestedActions) console.log(`  suggestion: ${action.message}`);

  const cluster = pickCluster(soul.evidence.clusters);
  if (!cluster) throw new Error(`${soul.name} is ready but its evidence report has no clusters`);
  console.log(`  chosen: ${cluster.alignment.kind} cluster of ${cluster.memberCount}: ${cluster.representative.content}`);

  const { addTrait } = await request(RefineAddTraitDocument, {
    soulId: soul.id,
    input: {
      principle: cluster.representative.content.slice(0, PRINCIPLE_MAX),
      provenance: provenanceOf(cluster),
      citeShardIds: cluster.members.map((m) => m.id),
    },
  });
  switch (addTrait.__typename) {
    case 'TraitPayload':
      console.log(`  added trait ${addTrait.trait.id}, citing ${addTrait.trait.citations.length} shards; ${addTrait.soul.activeTraitCount}/${addTrait.soul.traitLimit} traits`);
      break;
    case 'CapacityError':
      // Not a failure of this script: the soul needs a level-up (consolidate, promote, rewrite the essence) first.
      console.log(`  ${soul.name} is at capacity (${addTrait.activeCount}/${addTrait.limit} traits): a level-up is recommended before adding traits.`);
      console.log('  Not attuned: the soul stays ready until it is refined.');
      return;
    case 'ValidationError':
    case 'NotFoundError':
    case 'InvalidStateError':
      throw new Error(`addTrait refused: ${describeError(addTrait)}`);
  }

  const { stampAttuned } = await request(RefineStampAttunedDocument, { soulId: soul.id });
  if (stampAttuned.__typename !== 'SoulPayload') throw new Error(`stampAttuned refused: ${stampAttuned.message}`);
  const after = stampAttuned.soul;
  console.log(`  attuned at ${after.lastAttunedAt}; ready now: ${after.crystallization.ready ? 'yes' : 'no (waits for new evidence)'}`);
  console.log(`\nAfter:\n${indent(after.rendered)}`);
}

if (import.meta.main) await main().catch(failWith);
