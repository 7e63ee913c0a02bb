import { percent } from './format.ts';
import type { WorkshopQuery } from './gql/graphql.ts';
import { Chip } from './ui.tsx';

type Evidence = NonNullable<WorkshopQuery['soul']>['evidence'];

/**
 * The evidence report's consolidation and promotion candidates as buttons: a click places the traits as the hint
 * says (both into one consolidation, or into the essence). A hint the plan already follows shows as applied.
 */
export function WorkshopHints({ evidence, places, disabled, onMerge, onPromote }: { evidence: Evidence; places: Record<string, string>; disabled: boolean; onMerge: (aId: string, bId: string) => void; onPromote: (id: string) => void }) {
  const pairs = evidence.consolidationCandidates.filter((p) => places[p.a.id] !== undefined && places[p.b.id] !== undefined).slice(0, 4);
  const promotions = evidence.promotionCandidates.filter((c) => places[c.trait.id] !== undefined).slice(0, 2);
  if (pairs.length === 0 && promotions.length === 0) return null;
  return (
    <aside class="hints" aria-label="Hints from the evidence report">
      {pairs.map((pair) => {
        const merged = places[pair.a.id].startsWith('group:') && places[pair.a.id] === places[pair.b.id];
        return (
          <button
            type="button"
            key={`${pair.a.id}-${pair.b.id}`}
            class={`hint hint--button${merged ? ' hint--applied' : ''}`}
            disabled={disabled || merged}
            title={merged ? 'Already merged in the plan' : disabled ? 'Your token has no refine scope' : undefined}
            onClick={() => onMerge(pair.a.id, pair.b.id)}
            aria-label={merged ? `Merged: “${pair.a.principle}” and “${pair.b.principle}”` : `Merge “${pair.a.principle}” and “${pair.b.principle}” (${percent(pair.similarity)} alike)`}
          >
            <Chip tone="info">{merged ? 'merged ✓' : `merge? ${percent(pair.similarity)}`}</Chip> “{pair.a.principle}” + “{pair.b.principle}”
          </button>
        );
      })}
      {promotions.map((c) => {
        const promoted = places[c.trait.id] === 'promote';
        return (
          <button
            type="button"
            key={c.trait.id}
            class={`hint hint--button${promoted ? ' hint--applied' : ''}`}
            disabled={disabled || promoted}
            title={promoted ? 'Already promoted in the plan' : disabled ? 'Your token has no refine scope' : undefined}
            onClick={() => onPromote(c.trait.id)}
            aria-label={promoted ? `Promoted: “${c.trait.principle}”` : `Promote “${c.trait.principle}” into the essence`}
          >
            <Chip tone="good">{promoted ? 'promoted ✓' : 'promote?'}</Chip> “{c.trait.principle}”
          </button>
        );
      })}
    </aside>
  );
}
