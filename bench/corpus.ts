/**
 * Deterministic, seeded corpus of behavioural observations (of AI agents and
 * game characters), for benchmarks and property tests. Texts are 1-3
 * sentences, 60-250 characters, built from templates over a shared
 * vocabulary so that they overlap lexically as real observations do; about
 * 15% are near-duplicates of earlier texts (a word changed, inserted or
 * removed, case changed, or a sentence appended).
 */

/** mulberry32: a small, fast, deterministic PRNG returning floats in [0, 1). */
export function makeRng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MIN_LENGTH = 60;
const MAX_LENGTH = 250;
const NEAR_DUPLICATE_RATE = 0.15;

const POOLS: Record<string, readonly string[]> = {
  actor: [
    'coordinator', 'planner', 'reviewer', 'build agent', 'research agent', 'assistant',
    'shopkeeper', 'guard captain', 'blacksmith', 'innkeeper', 'scout', 'healer',
    'merchant', 'quartermaster', 'support bot', 'test runner', 'archivist', 'navigator',
  ],
  pastVerb: [
    'skipped', 'ignored', 'double-checked', 'rewrote', 'summarized', 'forgot', 'reused',
    'questioned', 'postponed', 'cached', 'rejected', 'escalated', 'copied', 'verified',
    'misread', 'reordered', 'dropped', 'repeated',
  ],
  object: [
    'Docker context', 'test results', 'error log', 'user request', 'deployment plan',
    'inventory list', 'trade offer', 'quest notes', 'patrol route', 'config file',
    'dependency graph', 'schema migration', 'price list', 'map markers', 'API token',
    'release checklist', 'cached answer', 'previous summary',
  ],
  gerund: [
    'delegating', 'planning', 'reviewing', 'retrying', 'summarizing', 'negotiating',
    'patrolling', 'restocking', 'debugging', 'deploying', 'answering', 'escorting',
    'refactoring', 'bartering',
  ],
  task: [
    'build task', 'bug report', 'pull request', 'supply run', 'night watch', 'release',
    'database upgrade', 'caravan escort', 'customer ticket', 'code review', 'market day',
    'incident review', 'test suite', 'data import',
  ],
  adverb: [
    'repeatedly', 'quietly', 'carefully', 'hastily', 'always', 'rarely', 'again',
    'silently', 'politely', 'nervously', 'consistently', 'suddenly',
  ],
  trigger: [
    'the tests failed', 'the player haggled', 'a timeout occurred', 'the user was rude',
    'the budget ran low', 'night fell', 'the queue grew long', 'a stranger arrived',
    'the review was late', 'the cache expired', 'the gate was attacked', 'rain started',
  ],
  reaction: [
    'retried without changes', 'raised the price', 'asked for clarification',
    'gave up early', 'called for backup', 'switched to a smaller model', 'closed the shop',
    'logged a warning', 'apologized twice', 'locked the gate', 'wrote a longer plan',
    'blamed the tooling',
  ],
  place: [
    'north gate', 'market square', 'tavern', 'staging cluster', 'main branch', 'harbor',
    'forge', 'CI pipeline', 'old bridge', 'shared drive', 'watchtower', 'sandbox',
  ],
  preference: [
    'short answers', 'detailed plans', 'cash deals', 'written contracts', 'small commits',
    'safe routes', 'cached results', 'fresh builds', 'direct questions', 'quiet nights',
  ],
  frequency: ['twice', 'three times', 'every morning', 'once a week', 'after every failure', 'on busy days'],
};

const TEMPLATES: readonly string[] = [
  'The {actor} {pastVerb} the {object} when {gerund} the {task}.',
  'The {actor} {adverb} {pastVerb} the {object} before {gerund} the {task}.',
  'When {trigger}, the {actor} {reaction}.',
  'During the {task}, the {actor} {pastVerb} the {object} {frequency}.',
  'The {actor} prefers {preference} over {preference} when {gerund}.',
  'Near the {place}, the {actor} {pastVerb} the {object}.',
  'The {actor} asked the {actor} about the {object} {frequency}.',
  'After {trigger}, the {actor} {adverb} {reaction}.',
  'The {actor} {reaction} while {gerund} the {task} at the {place}.',
  'Observed: the {actor} {pastVerb} the {object} and {reaction}.',
  'The {actor} tends to {reactionBase} when {trigger}.',
  'Each {task} the {actor} {pastVerb} the {object} {adverb}.',
];

const REACTION_BASE: readonly string[] = [
  'retry without changes', 'raise the price', 'ask for clarification', 'give up early',
  'call for backup', 'close the shop', 'log a warning', 'apologize twice', 'lock the gate',
];

function pick<T>(rng: () => number, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)];
}

function capitalize(s: string): string {
  return s.length === 0 ? s : s[0].toUpperCase() + s.slice(1);
}

function makeSentence(rng: () => number): string {
  const template = pick(rng, TEMPLATES);
  const filled = template.replace(/\{(\w+)\}/g, (_m, name: string) =>
    name === 'reactionBase' ? pick(rng, REACTION_BASE) : pick(rng, POOLS[name]),
  );
  return capitalize(filled);
}

function makeFreshText(rng: () => number): string {
  for (;;) {
    const sentenceCount = 1 + Math.floor(rng() * 3);
    const sentences: string[] = [];
    for (let k = 0; k < sentenceCount; k++) sentences.push(makeSentence(rng));
    let text = sentences.join(' ');
    // Too short: add sentences (up to 3); too long: drop from the end.
    while (text.length < MIN_LENGTH && sentences.length < 3) {
      sentences.push(makeSentence(rng));
      text = sentences.join(' ');
    }
    while (text.length > MAX_LENGTH && sentences.length > 1) {
      sentences.pop();
      text = sentences.join(' ');
    }
    if (text.length >= MIN_LENGTH && text.length <= MAX_LENGTH) return text;
  }
}

const ALL_WORDS: readonly string[] = Object.values(POOLS).flatMap((pool) =>
  pool.flatMap((phrase) => phrase.split(' ')),
);

/** One random small edit of a text; may return a text outside the length bounds. */
function mutate(rng: () => number, text: string): string {
  const words = text.split(' ');
  const at = Math.floor(rng() * words.length);
  switch (Math.floor(rng() * 5)) {
    case 0: // change a word
      words[at] = pick(rng, ALL_WORDS);
      return words.join(' ');
    case 1: // insert a word
      words.splice(at, 0, pick(rng, rng() < 0.5 ? POOLS.adverb : ALL_WORDS));
      return words.join(' ');
    case 2: // remove a word
      if (words.length > 1) words.splice(at, 1);
      return words.join(' ');
    case 3: // change case: one word, or the whole text
      if (rng() < 0.3) return rng() < 0.5 ? text.toUpperCase() : text.toLowerCase();
      words[at] = words[at] === words[at].toUpperCase() ? words[at].toLowerCase() : words[at].toUpperCase();
      return words.join(' ');
    default: // append a sentence (staying within 3 sentences)
      return text.split(/(?<=\.) /).length < 3 ? `${text} ${makeSentence(rng)}` : text;
  }
}

/** `count` observation texts, deterministic for `seed`. */
export function makeObservationCorpus(count: number, seed: number): string[] {
  return makeLabelledObservationCorpus(count, seed).texts;
}

/**
 * The same texts as makeObservationCorpus, with their true themes: a fresh
 * text starts a theme of its own (its slots are drawn independently of every
 * other text), and a near-duplicate belongs to the theme of the text it was
 * edited from. `labels[i]` is the index of the theme's first text.
 */
export function makeLabelledObservationCorpus(count: number, seed: number): { texts: string[]; labels: number[] } {
  const rng = makeRng(seed);
  const texts: string[] = [];
  const labels: number[] = [];
  for (let i = 0; i < count; i++) {
    let text: string | undefined;
    let label = i;
    if (i > 0 && rng() < NEAR_DUPLICATE_RATE) {
      const from = Math.floor(rng() * texts.length);
      const source = texts[from];
      for (let attempt = 0; attempt < 8 && text === undefined; attempt++) {
        const edited = mutate(rng, source);
        if (edited !== source && edited.length >= MIN_LENGTH && edited.length <= MAX_LENGTH) text = edited;
      }
      if (text !== undefined) label = labels[from];
    }
    texts.push(text ?? makeFreshText(rng));
    labels.push(label);
  }
  return { texts, labels };
}
