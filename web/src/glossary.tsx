import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

/** The words of the engine the screens use (`word`), explained once (SPEC §4, §8, §9). */
export const glossary = {
  crystallization: {
    word: 'crystallization',
    term: 'Crystallization',
    text: 'The gate that says a soul is ready to refine: at least the threshold of pending shards, in two or more clusters, from two or more sources, spread over more than a day, with one newer than the last attunement.',
  },
  priority: {
    word: 'priority',
    term: 'Priority',
    text: 'How urgently a ready soul wants refining: pending shards × distinct sources × days the evidence spans, divided by the days since the last attunement (when more than one). Higher comes first on the roster.',
  },
  attunement: {
    word: 'attunement',
    term: 'Attunement',
    text: 'The stamp that closes a refinement cycle ("Done: stamp attunement"). Afterwards the soul needs a shard newer than the stamp before it is ready again, and its priority decays with the days since.',
  },
  theme: {
    word: 'theme',
    term: 'Theme',
    text: 'A name you give some of a soul’s shards, remembered: the evidence report always groups them as one cluster. Shards in no theme are “not yet judged”; a theme can be marked as opposing a trait, and its shards then count as counter-evidence for it, never as support.',
  },
  density: {
    word: 'density',
    term: 'Density',
    text: 'Citation density of a trait: shards cited as its evidence per day of its age. Denser traits come first in the rendered block.',
  },
  redundancy: {
    word: 'redundancy',
    term: 'Redundancy',
    text: 'Essence redundancy: how much a trait’s principle resembles the essence (trigram similarity, 0–100%). A high value means it could be promoted into the essence at the next level-up.',
  },
  gen: {
    word: 'gen',
    term: 'Gen (generation)',
    text: 'The level at which a trait was earned, merged or last carried through a level-up.',
  },
  freshness: {
    word: 'freshness',
    term: 'Freshness',
    text: 'How recent a cluster’s shards are: 100% for today, falling as exp(−age / relevance half-life), about 37% at the half-life (60 days by default). Fresher clusters weigh more.',
  },
  weight: {
    word: 'weight',
    term: 'Weight',
    text: 'A cluster’s rank in the evidence report: shards in it × the share of distinct sources × mean freshness.',
  },
} as const;

export type GlossaryKey = keyof typeof glossary;

const openers = new Set<(key: GlossaryKey | null) => void>();

/** Opens the glossary dialog, at one entry when given. */
export function openGlossary(key: GlossaryKey | null = null): void {
  for (const open of openers) open(key);
}

/** A word of the engine's: its explanation as a tooltip, and a click (or Enter) opens the glossary at it. */
export function Term({ name, children }: { name: GlossaryKey; children?: ComponentChildren }) {
  return (
    <button type="button" class="term" title={glossary[name].text} aria-haspopup="dialog" onClick={() => openGlossary(name)}>
      {children ?? glossary[name].word}
    </button>
  );
}

/** The glossary: a button for the header and the dialog it opens. */
export function Glossary() {
  const dialog = useRef<HTMLDialogElement>(null);
  const [focus, setFocus] = useState<GlossaryKey | null>(null);
  useEffect(() => {
    const open = (key: GlossaryKey | null) => {
      setFocus(key);
      if (!dialog.current?.open) dialog.current?.showModal();
    };
    openers.add(open);
    return () => void openers.delete(open);
  }, []);
  useEffect(() => {
    if (focus && dialog.current?.open) dialog.current.querySelector(`#glossary-${focus}`)?.scrollIntoView({ block: 'nearest' });
  }, [focus]);
  return (
    <>
      <button type="button" class="btn btn--quiet" aria-haspopup="dialog" onClick={() => openGlossary()}>
        Glossary
      </button>
      <dialog ref={dialog} class="glossary" aria-labelledby="glossary-title" onClose={() => setFocus(null)}>
        <header class="glossary__head">
          <h2 id="glossary-title" class="panel__title">
            Glossary
          </h2>
          <form method="dialog">
            <button type="submit" class="btn btn--quiet" autofocus>
              Close
            </button>
          </form>
        </header>
        <dl class="glossary__list">
          {(Object.keys(glossary) as GlossaryKey[]).map((key) => (
            <div key={key} id={`glossary-${key}`} class={`glossary__entry${focus === key ? ' glossary__entry--focus' : ''}`}>
              <dt>{glossary[key].term}</dt>
              <dd>{glossary[key].text}</dd>
            </div>
          ))}
        </dl>
      </dialog>
    </>
  );
}
