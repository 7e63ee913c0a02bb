import { useMemo } from 'preact/hooks';
import { diffWords, type DiffWord } from './diff.ts';

/**
 * The essence before and after a level-up, side by side, with the words that changed marked on each side
 * (<del> and <ins>, whose roles screen readers announce; a hidden sentence lists the changes too). Each side's
 * text stays the essence itself, so it reads and copies as written.
 */
export function EssenceDiff({ before, after }: { before: string; after: string }) {
  const parts = useMemo(() => diffWords(before, after), [before, after]);
  const changes = parts.filter((p) => p.kind !== 'same' && p.text.trim() !== '');
  return (
    <div class="essence-pair essence-diff">
      <div>
        <h4>Before</h4>
        <p data-side="before">{side(parts, 'removed')}</p>
      </div>
      <div>
        <h4>After</h4>
        <p data-side="after">{side(parts, 'added')}</p>
      </div>
      {changes.length ? (
        <p class="visually-hidden">Changes: {changes.map((p) => `${p.kind} “${p.text.trim()}”`).join('; ')}.</p>
      ) : (
        <p class="muted essence-diff__same">The essence did not change.</p>
      )}
    </div>
  );
}

function side(parts: readonly DiffWord[], changed: 'removed' | 'added') {
  return parts
    .filter((p) => p.kind === 'same' || p.kind === changed)
    .map((p, i) =>
      p.kind === 'same' ? (
        p.text
      ) : changed === 'removed' ? (
        <del key={i} class="word-diff word-diff--removed">
          {p.text}
        </del>
      ) : (
        <ins key={i} class="word-diff word-diff--added">
          {p.text}
        </ins>
      ),
    );
}
