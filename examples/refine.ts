// One scripted refinement cycle, no LLM: take the most urgent ready soul, read its evidence report, draft an
// imperative principle from the heaviest NOVEL cluster, add it as a trait that cites the cluster's shards, and stamp
// the attunement.
// A real deployment would hand `evidence.markdown` to an LLM or a person here instead of picking mechanically.
//
//   node examples/refine.ts [url] [--token T]
//
// url defaults to SOULS_URL, then http://127.0.0.1:4000/graphql; the token (for a server with --tokens-file) to SOULS_TOKEN.
import { parseArgs } from 'node:util';
import { RefineAddTraitDocument, RefineEvidenceDocument, RefineReadinessDocument, RefineStampAttunedDocument, type RefineEvidenceQuery } from './gql/graphql.ts';
import { apiToken, apiUrl, describeError, failWith, tokenOption, typedClient } from './typed-client.ts';

type Cluster = NonNullable<RefineEvidenceQuery['soul']>['evidence']['clusters'][number];

const PRINCIPLE_MAX = 2000; // the API bounds principles (2 KiB by default); shards may be longer

function indent(block: string): string {
  return block
    .trimEnd()
    .split('\n')
    .map((line) => (line ? `    ${line}` : ''))
    .join('\n');
}

/**
 * The heaviest cluster no trait covers yet, of several shards if there is one (a single shard is an anecdote, not a
 * pattern); failing that, the heaviest one. Clusters come highest weight first.
 */
function pickCluster(clusters: readonly Cluster[]): Cluster | undefined {
  const novel = clusters.filter((c) => c.alignment.kind === 'NOVEL');
  return novel.find((c) => c.memberCount > 1) ?? novel[0] ?? clusters[0];
}

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

// --- Drafting a principle from a cluster ---------------------------------------------------------------------------
// A principle is one behaviour, in the imperative (the character sheet's hint). Shards say what the soul did, in the
// past tense and the third person; the draft takes the representative shard, puts its verb in the imperative, speaks
// to the soul as "you", names every thing the shards did it to ("a sword or an axe") and drops the counts they differ on.

const DETERMINERS = new Set(['a', 'an', 'the', 'this', 'that', 'these', 'those', 'his', 'her', 'its', 'their', 'some', 'any', 'each', 'every']);
const FUNCTION_WORDS = new Set([
  ...DETERMINERS,
  ...['to', 'into', 'onto', 'on', 'in', 'at', 'by', 'for', 'from', 'with', 'without', 'before', 'after', 'over', 'under', 'about'],
  ...['through', 'until', 'while', 'during', 'of', 'off', 'out', 'up', 'down', 'as', 'than', 'and', 'or', 'but', 'instead', 'not'],
  ...['it', 'them', 'they', 'he', 'she', 'him', 'we', 'us', 'you', 'i', 'itself', 'herself', 'himself', 'themselves'],
  ...['was', 'were', 'is', 'are', 'be', 'been', 'had', 'has', 'have', 'did', 'does', 'would', 'will', 'could', 'should', 'can'],
]);
const NUMBERS = /^(\d+|one|two|three|four|five|six|seven|eight|nine|ten|twice|thrice)$/;
const SECOND_PERSON: Record<string, string> = {
  she: 'you', he: 'you', her: 'your', his: 'your', their: 'your', herself: 'yourself', himself: 'yourself', itself: 'yourself', themselves: 'yourself',
};
const IRREGULAR: Record<string, string> = {
  ran: 'run', told: 'tell', sang: 'sing', gave: 'give', found: 'find', took: 'take', made: 'make', kept: 'keep', left: 'leave',
  wrote: 'write', sent: 'send', spoke: 'speak', brought: 'bring', bought: 'buy', thought: 'think', taught: 'teach', held: 'hold',
  stood: 'stand', went: 'go', came: 'come', saw: 'see', did: 'do', had: 'have', got: 'get', began: 'begin', chose: 'choose',
  broke: 'break', fought: 'fight', caught: 'catch', hid: 'hide', led: 'lead', met: 'meet', paid: 'pay', said: 'say', sold: 'sell',
  sought: 'seek', won: 'win', felt: 'feel', knew: 'know', heard: 'hear', lost: 'lose', built: 'build', spent: 'spend', dealt: 'deal',
  threw: 'throw', drew: 'draw', shook: 'shake', woke: 'wake', struck: 'strike', stuck: 'stick', rode: 'ride', drove: 'drive', sat: 'sit',
  created: 'create', split: 'split', let: 'let', put: 'put', set: 'set', cut: 'cut', read: 'read', shut: 'shut', spread: 'spread',
};
/** Past-tense stems that take back their final e: refus(ed), ignor(ed), hagg(led), judg(ed), upda(ted), combin(ed)… */
const TAKES_E = /(?:[cvz]|[^aeious]s|[^aeioursl]l|[dr]g|[ae]ng|[^aeiou][aiou][dkmbgsr]|[^aeiou][aou]t|[^aeiou][iu]n|u)$/;

/**
 * "Refused" → "Refuse", "Checked" → "Check", "Re-ran" → "Re-run": a shard's opening verb in the past tense as an
 * imperative; null when the word is not one ("Readers found…").
 */
export function imperative(verb: string): string | null {
  const hyphen = verb.lastIndexOf('-');
  if (hyphen > 0) {
    const last = imperative(verb.slice(hyphen + 1));
    return last === null ? null : verb.slice(0, hyphen + 1) + last;
  }
  const word = verb.toLowerCase();
  let base = IRREGULAR[word];
  if (!base) {
    if (!/^\p{L}{2,}ed$/u.test(word)) return null;
    const stem = word.slice(0, -2);
    if (word.length > 4 && word.endsWith('ied')) base = `${word.slice(0, -3)}y`; // carried
    else if (word.endsWith('eed')) base = word.slice(0, -1); // agreed
    else if (/([bgmnprt])\1$/.test(stem) || (/ll$/.test(stem) && stem.length > 5)) base = stem.slice(0, -1); // stopped, travelled
    else base = TAKES_E.test(stem) ? `${stem}e` : stem;
  }
  return verb[0] === verb[0].toUpperCase() ? base[0].toUpperCase() + base.slice(1) : base;
}

type Token = { text: string; key: string };

/** Longer differences are not the same thing said another way: they are not listed. */
const MAX_VARIANT_WORDS = 5;
const MAX_VARIANTS = 4;

function tokens(content: string): Token[] {
  return content
    .trim()
    .split(/\s+/)
    .map((text) => ({ text, key: text.toLowerCase().replace(/[’']s\b/, '').replace(/[^\p{L}\p{N}-]/gu, '').replace(/(?<=...)s$/, '') }));
}

const bare = (text: string) => text.replace(/[.,;:!?]+$/, '');
const isContent = (t: Token) => t.key !== '' && !FUNCTION_WORDS.has(t.key);
/** A noun phrase's words: content words up to an adverb ("the player bluntly"). */
const inPhrase = (t: Token) => isContent(t) && !t.key.endsWith('ly');

/** The noun phrase another shard has where the representative has one: between the same two words, a determiner first. */
function counterpart(member: Token[], before: Token | undefined, after: Token | undefined): string | null {
  const start = before ? member.findIndex((t) => t.key === before.key) : -1;
  if (before && start < 0) return null;
  const end = after ? member.findIndex((t, i) => i > start && t.key === after.key) : member.length;
  const phrase = member.slice(start + 1, end < 0 ? start + 1 : end);
  if (end < 0 || phrase.length === 0 || phrase.length > MAX_VARIANT_WORDS || !DETERMINERS.has(phrase[0].key)) return null;
  return phrase.map((t) => bare(t.text)).join(' ');
}

/** "a", "a or b", "a, b or c". */
const either = (items: readonly string[]) => (items.length === 1 ? items[0] : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`);

/** A principle drafted from a cluster of shards (deterministic: the same cluster gives the same draft). */
export function draftPrinciple(cluster: { representative: { id: string; content: string }; members: readonly { id: string; content: string }[] }): string {
  const rep = tokens(cluster.representative.content);
  const others = cluster.members.filter((m) => m.id !== cluster.representative.id).map((m) => tokens(m.content));
  const shared = (t: Token) => others.length === 0 || others.filter((m) => m.some((o) => o.key === t.key)).length * 2 >= others.length;
  const words: string[] = [];
  for (let i = 0; i < rep.length; i++) {
    const token = rep[i];
    if (NUMBERS.test(token.key) && !shared(token)) continue; // "three smaller tasks" and "four smaller tasks": smaller tasks
    let end = i + 1;
    while (end < rep.length && inPhrase(rep[end])) end++;
    const phrase = rep.slice(i, end);
    if (!DETERMINERS.has(token.key) || phrase.length === 1 || phrase.slice(1).every(shared)) {
      words.push(token.text);
      continue;
    }
    const variants = others.map((m) => counterpart(m, rep[i - 1], rep[end])).filter((v) => v !== null);
    const named = [...new Set([phrase.map((t) => bare(t.text)).join(' '), ...variants])];
    words.push(named.length <= MAX_VARIANTS ? either(named) + phrase.at(-1)!.text.slice(bare(phrase.at(-1)!.text).length) : phrase.map((t) => t.text).join(' '));
    i = end - 1;
  }
  const verb = imperative(words[0]);
  // A shard that does not open on what the soul did ("Readers found…") becomes something to remember.
  words[0] = verb ?? `Remember that ${words[0][0].toLowerCase()}${words[0].slice(1)}`;
  const text = words
    .map((word) => word.replace(/\p{L}+/gu, (w) => SECOND_PERSON[w.toLowerCase()] ?? w))
    .join(' ')
    .replace(/[.,;:!?]*$/, '');
  return `${text}.`;
}

function provenanceOf(cluster: Cluster): string {
  return (
    `Evidence cluster of ${plural(cluster.memberCount, 'shard')} from ${cluster.sources.join(', ')} over ${cluster.ageSpanDays.toFixed(1)} days ` +
    `(weight ${cluster.weight.toFixed(2)}), represented by shard ${cluster.representative.id}: "${cluster.representative.content}"`
  );
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: tokenOption });
  const request = typedClient(apiUrl(positionals), apiToken(values));

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
  console.log(`  chosen: ${cluster.alignment.kind} cluster of ${plural(cluster.memberCount, 'shard')}:`);
  for (const member of cluster.members) console.log(`    - ${member.content}`);
  const principle = draftPrinciple(cluster).slice(0, PRINCIPLE_MAX);
  console.log(`  principle: ${principle}`);
  console.log(
    '    A trait is one behavioural principle, in the imperative: the rule the shards show, not a copy of one of them.\n' +
      '    Drafted here from what most of the cluster shares; a person or an LLM reading the evidence report writes it better.\n' +
      '    Its provenance says how it was earned: no provenance, no trait.',
  );

  const { addTrait } = await request(RefineAddTraitDocument, {
    soulId: soul.id,
    input: {
      principle,
      provenance: provenanceOf(cluster),
      citeShardIds: cluster.members.map((m) => m.id),
    },
  });
  switch (addTrait.__typename) {
    case 'TraitPayload':
      console.log(`  added trait ${addTrait.trait.id}, citing ${plural(addTrait.trait.citations.length, 'shard')}; ${addTrait.soul.activeTraitCount}/${addTrait.soul.traitLimit} traits`);
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
