import { useState } from 'preact/hooks';
import { request } from './api.ts';
import { errorText } from './fields.ts';
import { date } from './format.ts';
import { ReactivateTraitDocument, type InactiveTraitFragment, type TraitStatus } from './gql/graphql.ts';
import { useCan, useSession } from './session.ts';
import { Button, Chip, Panel } from './ui.tsx';

const statusOrder: TraitStatus[] = ['REVERTED', 'CONSOLIDATED', 'PROMOTED'];
const statusWords: Record<TraitStatus, string> = { ACTIVE: 'active', REVERTED: 'reverted', CONSOLIDATED: 'consolidated', PROMOTED: 'promoted' };

/**
 * Traits that left the active list: reverted by hand, consolidated into a merged trait or promoted into the
 * essence at a level-up. Any of them can be reactivated (reactivateTrait) while the soul is under its trait limit.
 */
export function InactiveTraits({ soul, traits, onChanged }: { soul: { id: string; dormant: boolean; atCapacity: boolean; traitLimit: number }; traits: readonly InactiveTraitFragment[]; onChanged: () => void }) {
  const sorted = [...traits].sort((a, b) => statusOrder.indexOf(a.status) - statusOrder.indexOf(b.status) || Date.parse(b.updatedAt) - Date.parse(a.updatedAt) || Number(b.id) - Number(a.id));
  const blocked = soul.dormant ? 'The soul is dormant: awaken it first.' : soul.atCapacity ? `At the trait limit (${soul.traitLimit}): revert a trait or level up first.` : null;
  return (
    <Panel title={`Set-aside traits (${traits.length})`} id="inactive-title" class="inactive">
      {traits.length === 0 ? (
        <p class="muted">No trait has been set aside. Reverted traits, and traits consolidated or promoted at a level-up, are kept here and can be reactivated.</p>
      ) : (
        <>
          <p class="muted">Reverted by hand, or consolidated and promoted at a level-up. Reactivating puts a trait back on the active list.</p>
          {blocked ? (
            <p class="scope-note" role="note" id="reactivate-blocked">
              {blocked}
            </p>
          ) : null}
          <ul class="inactive__list">
            {sorted.map((trait) => (
              <InactiveTraitRow key={trait.id} trait={trait} blocked={blocked} onChanged={onChanged} />
            ))}
          </ul>
        </>
      )}
    </Panel>
  );
}

function InactiveTraitRow({ trait, blocked, onChanged }: { trait: InactiveTraitFragment; blocked: string | null; onChanged: () => void }) {
  const { notify } = useSession();
  const can = useCan('REFINE');
  const [busy, setBusy] = useState(false);
  const reactivate = async () => {
    setBusy(true);
    try {
      const { reactivateTrait } = await request(ReactivateTraitDocument, { id: trait.id });
      if (reactivateTrait.__typename === 'TraitPayload') notify(`Reactivated: ${reactivateTrait.trait.principle}`, 'success');
      else notify(reactivateTrait.message, 'error');
      onChanged();
    } catch (error) {
      notify(`The trait was not reactivated. ${errorText(error)}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <li class="inactive__trait" data-trait-id={trait.id} data-status={trait.status.toLowerCase()}>
      <p class="trait__principle">{trait.principle}</p>
      <span class="signals">
        <Chip tone={trait.status === 'REVERTED' ? 'warn' : 'info'} title={`Status: ${statusWords[trait.status]}`}>
          {statusWords[trait.status]} {date(trait.updatedAt)}
        </Chip>
        <Chip title="Generation: the level the trait was earned or last carried at">gen {trait.generation}</Chip>
      </span>
      {trait.mergedInto ? <p class="muted inactive__merged">Merged into “{trait.mergedInto.principle}”</p> : null}
      <details class="trait__provenance">
        <summary>Provenance</summary>
        <p>{trait.provenance}</p>
        <p class="muted">Earned {date(trait.createdAt)}</p>
      </details>
      <div class="trait__actions">
        <Button scope="REFINE" variant="quiet" disabled={busy || blocked !== null} {...(can && blocked ? { 'aria-describedby': 'reactivate-blocked' } : {})} onClick={() => void reactivate()} aria-label={`Reactivate: ${trait.principle}`}>
          Reactivate
        </Button>
      </div>
    </li>
  );
}

