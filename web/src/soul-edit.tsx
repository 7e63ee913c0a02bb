import { useState } from 'preact/hooks';
import { request } from './api.ts';
import { UpdateSoulDocument, type UpdateSoulInput } from './gql/graphql.ts';
import { errorText, resultProblem } from './fields.ts';
import { bounds } from './limits.ts';
import { useCan, useSession } from './session.ts';
import { Area, Button, Field, ProblemNote, why } from './ui.tsx';

type Editable = { id: string; name: string; description: string; essence: string };

/** Why the server refused the form: `field` is the path it names (input.name, …), null for the form as a whole. */
export type SoulProblem = { field: string | null; text: string };

/** Which of the three fields a refusal is about, by its path's last name. */
function problemAt(problem: SoulProblem | null, name: 'name' | 'description' | 'essence'): string | null {
  if (!problem?.field) return null;
  return problem.field.split('.').at(-1) === name ? problem.text : null;
}

/** A soul's name, description and essence, each with the server's refusal right under it: the new-soul and edit forms. */
export function SoulFields(props: {
  name: string;
  description: string;
  essence: string;
  onName: (value: string) => void;
  onDescription: (value: string) => void;
  onEssence: (value: string) => void;
  essenceRows: number;
  disabled: boolean;
  problem: SoulProblem | null;
}) {
  const { problem } = props;
  const placed = (['name', 'description', 'essence'] as const).some((name) => problemAt(problem, name) !== null);
  return (
    <>
      <Field label="Name" value={props.name} onInput={props.onName} required disabled={props.disabled} maxLength={bounds.nameLength} problem={problemAt(problem, 'name')} />
      <Field label="Description" hint="A short line for cards and listings" value={props.description} onInput={props.onDescription} disabled={props.disabled} maxBytes={bounds.descriptionBytes} problem={problemAt(problem, 'description')} />
      <Area label="Essence" hint="The narrative core of the identity, as prose" value={props.essence} onInput={props.onEssence} required rows={props.essenceRows} disabled={props.disabled} maxBytes={bounds.essenceBytes} problem={problemAt(problem, 'essence')} />
      <ProblemNote problem={placed ? null : (problem?.text ?? null)} />
    </>
  );
}

/** A refusal of the soul forms, or a request that failed, as the forms show it. */
export function soulProblem(error: { message: string; field?: string | null }): SoulProblem {
  return { field: error.field ?? null, text: resultProblem(error) };
}

/**
 * The administrative escape hatch (updateSoul): name, description and essence overwritten directly, bypassing
 * evolution. Only what changed is sent; nothing is written until Save.
 */
export function SoulEditor({ soul, onSaved }: { soul: Editable; onSaved: () => void }) {
  const { notify } = useSession();
  const can = useCan('ADMIN');
  const [open, setOpen] = useState(false);
  const [name, setName] = useState(soul.name);
  const [description, setDescription] = useState(soul.description);
  const [essence, setEssence] = useState(soul.essence);
  const [problem, setProblem] = useState<SoulProblem | null>(null);
  const [busy, setBusy] = useState(false);

  const start = () => {
    setName(soul.name);
    setDescription(soul.description);
    setEssence(soul.essence);
    setProblem(null);
    setOpen(true);
  };
  const input: UpdateSoulInput = {};
  if (name !== soul.name) input.name = name;
  if (description !== soul.description) input.description = description;
  if (essence !== soul.essence) input.essence = essence;
  const changed = Object.keys(input).length > 0;

  const save = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const { updateSoul } = await request(UpdateSoulDocument, { id: soul.id, input });
      if (updateSoul.__typename === 'SoulPayload') {
        notify(`Saved ${updateSoul.soul.name}`, 'success');
        setOpen(false);
        onSaved();
      } else setProblem(soulProblem(updateSoul));
    } catch (error) {
      setProblem({ field: null, text: errorText(error) });
    } finally {
      setBusy(false);
    }
  };

  if (!open) {
    return (
      <div class="soul-edit__open">
        <Button scope="ADMIN" variant="quiet" onClick={start} aria-expanded={false} aria-controls="soul-edit">
          Edit name, description and essence
        </Button>
      </div>
    );
  }
  return (
    <form id="soul-edit" class="soul-edit" aria-labelledby="soul-edit-title" onSubmit={(e) => void save(e)}>
      <h2 id="soul-edit-title" class="sub-title">
        Edit {soul.name}
      </h2>
      <p class="field__hint">An administrative correction: it overwrites the fields directly, outside evolution (no level-up, nothing to revert).</p>
      <SoulFields name={name} description={description} essence={essence} onName={setName} onDescription={setDescription} onEssence={setEssence} essenceRows={5} disabled={!can} problem={problem} />
      <div class="form-actions">
        <button type="submit" class="btn btn--primary" disabled={!can || busy || !changed || !name.trim() || !essence.trim()} title={why([!can, 'Your token has no admin scope'], [busy, 'Saving…'], [!changed, 'Nothing changed yet'], [!name.trim(), 'The soul needs a name'], [!essence.trim(), 'The soul needs an essence'])}>
          Save changes
        </button>
        <Button variant="quiet" onClick={() => setOpen(false)}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
