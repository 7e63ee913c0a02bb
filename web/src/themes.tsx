import { useRef, useState } from 'preact/hooks';
import { request } from './api.ts';
import { errorText, resultProblem } from './fields.ts';
import { percent, plural } from './format.ts';
import {
  AssignThemesDocument,
  OpposeTraitDocument,
  RenameThemeDocument,
  UnassignShardsDocument,
  UnopposeTraitDocument,
  type AssignThemesFieldsFragment,
  type EvidenceQuery,
  type ThemeRefFragment,
  type ThemeResultFieldsFragment,
  type ThemeRowFragment,
} from './gql/graphql.ts';
import { bounds } from './limits.ts';
import { useCan, useSession } from './session.ts';
import { Button, Chip, Field, ProblemNote, why } from './ui.tsx';

type EvidenceSoul = NonNullable<EvidenceQuery['soul']>;
type Member = { id: string; content: string };

/** The form's own controls, for the server's field paths. */
const labels = { newThemeName: 'New theme name', themeId: 'Theme', shardIds: 'Shards', name: 'Theme name', traitId: 'Trait' };

/**
 * Runs one theme write: its result union's error (or an unreachable server) becomes the problem shown beside the
 * control; success says so and refreshes the report.
 */
function useThemeWrite(onChanged: () => void, reword?: (result: AssignThemesFieldsFragment | ThemeResultFieldsFragment) => string | null) {
  const { notify } = useSession();
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const run = async (write: () => Promise<AssignThemesFieldsFragment | ThemeResultFieldsFragment>, done: string, failed: string): Promise<boolean> => {
    setBusy(true);
    setProblem(null);
    try {
      const result = await write();
      if (result.__typename === 'AssignThemesPayload' || result.__typename === 'ThemePayload') {
        notify(done, 'success');
        onChanged();
        return true;
      }
      setProblem(reword?.(result) ?? resultProblem(result, labels));
    } catch (error) {
      setProblem(`${failed} ${errorText(error, labels)}`);
    } finally {
      setBusy(false);
    }
    return false;
  };
  return { busy, problem, run };
}

/**
 * Judging a cluster (or a single shard): accept the theme it resembles in one click, or put some or all of its
 * shards in a theme of the soul or a new one.
 */
export function JudgeCluster({ soulId, members, suggested, themes, label, onChanged }: { soulId: string; members: readonly Member[]; suggested: ThemeRefFragment | null | undefined; themes: readonly ThemeRowFragment[]; label: string; onChanged: () => void }) {
  const [open, setOpen] = useState(false);
  const toggle = useRef<HTMLDivElement>(null);
  // Closing the form puts the keyboard back on the button that opened it.
  const close = () => {
    setOpen(false);
    toggle.current?.querySelector<HTMLElement>('.judge__toggle')?.focus();
  };
  const accept = useThemeWrite(onChanged);
  const canRefine = useCan('REFINE');
  return (
    <div class="judge" ref={toggle}>
      {suggested ? (
        <Button
          scope="REFINE"
          variant="plain"
          class="btn--small"
          disabled={accept.busy}
          title={why([accept.busy, 'Assigning…'])}
          onClick={() =>
            void accept.run(
              async () => (await request(AssignThemesDocument, { soulId, assignments: [{ themeId: suggested.id, shardIds: members.map((m) => m.id) }] })).assignThemes,
              `${plural(members.length, 'shard')} put in “${suggested.name}”`,
              'Nothing was assigned.',
            )
          }
        >
          Resembles “{suggested.name}”: accept
        </Button>
      ) : null}
      <Button scope="REFINE" variant="quiet" class="btn--small judge__toggle" aria-expanded={open} onClick={() => setOpen(!open)} disabled={!canRefine} aria-label={`Assign to a theme: ${label}`}>
        Assign to a theme…
      </Button>
      <ProblemNote problem={accept.problem} />
      {open ? <AssignForm soulId={soulId} members={members} themes={themes} onDone={close} onChanged={onChanged} /> : null}
    </div>
  );
}

function AssignForm({ soulId, members, themes, onDone, onChanged }: { soulId: string; members: readonly Member[]; themes: readonly ThemeRowFragment[]; onDone: () => void; onChanged: () => void }) {
  const [chosen, setChosen] = useState<string[]>(members.map((m) => m.id));
  const [themeId, setThemeId] = useState('');
  const [name, setName] = useState('');
  const selectId = `assign-${members[0]?.id}`;
  // The API's answer to a taken name tells a program to send the theme's id; a person picks that theme in this form's menu.
  const write = useThemeWrite(onChanged, (result) => {
    if (result.__typename !== 'ValidationError' || !result.field.endsWith('newThemeName')) return null;
    const taken = /already has a theme named "(.*)" \(theme/.exec(result.message)?.[1];
    return taken === undefined ? null : `New theme name: there is already a theme named “${taken}”: choose it in the Theme menu above, or give the new theme another name.`;
  });
  const submit = async (event: Event) => {
    event.preventDefault();
    const target = themeId ? { themeId } : { newThemeName: name };
    const themeName = themeId ? themes.find((t) => t.id === themeId)?.name : name.trim();
    const ok = await write.run(
      async () => (await request(AssignThemesDocument, { soulId, assignments: [{ ...target, shardIds: chosen }] })).assignThemes,
      `${plural(chosen.length, 'shard')} put in “${themeName}”`,
      'Nothing was assigned.',
    );
    if (ok) onDone();
  };
  return (
    <form class="judge__form" onSubmit={(e) => void submit(e)} aria-label="Assign to a theme">
      {members.length > 1 ? (
        <fieldset class="cite">
          <legend>Shards to assign ({chosen.length})</legend>
          {members.map((m) => (
            <label key={m.id} class="cite__item">
              <input type="checkbox" checked={chosen.includes(m.id)} onChange={(e) => setChosen(e.currentTarget.checked ? [...chosen, m.id] : chosen.filter((id) => id !== m.id))} />
              <span>{m.content}</span>
            </label>
          ))}
        </fieldset>
      ) : null}
      <div class="field">
        <label for={selectId}>Theme</label>
        <select id={selectId} value={themeId} onChange={(e) => setThemeId(e.currentTarget.value)}>
          <option value="">A new theme</option>
          {themes.map((t) => (
            <option key={t.id} value={t.id}>
              {t.name} ({plural(t.memberCount, 'shard')})
            </option>
          ))}
        </select>
      </div>
      {themeId === '' ? <Field label="New theme name" value={name} onInput={setName} required hint="What these shards have in common, in a few words" maxLength={bounds.nameLength} /> : null}
      <ProblemNote problem={write.problem} />
      <div class="form-actions">
        <button type="submit" class="btn btn--primary btn--small" disabled={write.busy || chosen.length === 0} title={why([write.busy, 'Assigning…'], [chosen.length === 0, 'Tick at least one shard'])}>
          Assign
        </button>
        <Button variant="quiet" class="btn--small" onClick={onDone}>
          Cancel
        </Button>
      </div>
    </form>
  );
}

/** Takes one shard out of its theme, back to the unjudged pool. */
export function UnassignButton({ soulId, shard, onChanged }: { soulId: string; shard: Member; onChanged: () => void }) {
  const write = useThemeWrite(onChanged);
  return (
    <>
      <Button
        scope="REFINE"
        variant="quiet"
        class="btn--small"
        disabled={write.busy}
        title={why([write.busy, 'Unassigning…'])}
        aria-label={`Unassign: ${shard.content}`}
        onClick={() => void write.run(async () => (await request(UnassignShardsDocument, { soulId, shardIds: [shard.id] })).unassignShards, 'The shard is unjudged again', 'Nothing was unassigned.')}
      >
        Unassign
      </Button>
      <ProblemNote problem={write.problem} />
    </>
  );
}

/** The soul's themes: rename one, mark it as opposing a trait (its members become that trait's counter-evidence) or take that back. */
export function ThemesList({ soul, onChanged }: { soul: EvidenceSoul; onChanged: () => void }) {
  if (soul.themes.length === 0) return <p class="muted">No theme yet: assign a cluster’s shards to one above.</p>;
  return (
    <ul class="themes">
      {soul.themes.map((theme) => (
        <ThemeItem key={theme.id} theme={theme} traits={soul.traits} onChanged={onChanged} />
      ))}
    </ul>
  );
}

function ThemeItem({ theme, traits, onChanged }: { theme: ThemeRowFragment; traits: EvidenceSoul['traits']; onChanged: () => void }) {
  const [renaming, setRenaming] = useState(false);
  const item = useRef<HTMLLIElement>(null);
  const stopRenaming = () => {
    setRenaming(false);
    item.current?.querySelector<HTMLElement>('.theme__rename')?.focus();
  };
  const [name, setName] = useState(theme.name);
  const rename = useThemeWrite(onChanged);
  const oppose = useThemeWrite(onChanged);
  const opposed = new Set(theme.opposes.map((t) => t.id));
  const choices = traits.filter((t) => !opposed.has(t.id));
  const [traitId, setTraitId] = useState('');
  const chosenTrait = choices.some((t) => t.id === traitId) ? traitId : (choices[0]?.id ?? '');
  const selectId = `oppose-${theme.id}`;
  const submitRename = async (event: Event) => {
    event.preventDefault();
    if (await rename.run(async () => (await request(RenameThemeDocument, { id: theme.id, name })).renameTheme, `Theme renamed “${name.trim()}”`, 'The theme was not renamed.')) stopRenaming();
  };
  const submitOppose = (event: Event) => {
    event.preventDefault();
    void oppose.run(async () => (await request(OpposeTraitDocument, { themeId: theme.id, traitId: chosenTrait })).opposeTrait, `“${theme.name}” now counts against the trait`, 'Nothing was marked.');
  };
  return (
    <li class="theme" aria-label={`Theme ${theme.name}`} ref={item}>
      <p class="theme__head">
        <strong class="theme__name">{theme.name}</strong> <span class="muted">· {plural(theme.memberCount, 'shard')}</span>{' '}
        <Button
          scope="REFINE"
          variant="quiet"
          class="btn--small theme__rename"
          aria-expanded={renaming}
          aria-label={`Rename the theme ${theme.name}`}
          onClick={() => {
            setName(theme.name);
            setRenaming(!renaming);
          }}
        >
          Rename
        </Button>
      </p>
      {renaming ? (
        <form class="judge__form" onSubmit={(e) => void submitRename(e)} aria-label={`Rename ${theme.name}`}>
          <Field label="Theme name" value={name} onInput={setName} required problem={rename.problem} maxLength={bounds.nameLength} />
          <div class="form-actions">
            <button type="submit" class="btn btn--primary btn--small" disabled={rename.busy} title={why([rename.busy, 'Renaming…'])}>
              Save the name
            </button>
            <Button variant="quiet" class="btn--small" onClick={stopRenaming}>
              Cancel
            </Button>
          </div>
        </form>
      ) : null}
      {theme.opposes.length ? (
        <ul class="theme__opposes">
          {theme.opposes.map((trait) => (
            <li key={trait.id}>
              <Chip tone="warn">opposes</Chip> “{trait.principle}”{' '}
              <Button
                scope="REFINE"
                variant="quiet"
                class="btn--small"
                disabled={oppose.busy}
                title={why([oppose.busy, 'Saving…'])}
                aria-label={`Stop opposing: ${trait.principle}`}
                onClick={() => void oppose.run(async () => (await request(UnopposeTraitDocument, { themeId: theme.id, traitId: trait.id })).unopposeTrait, `“${theme.name}” no longer counts against the trait`, 'Nothing was changed.')}
              >
                Stop opposing
              </Button>
            </li>
          ))}
        </ul>
      ) : null}
      {choices.length ? (
        <form class="theme__oppose" onSubmit={submitOppose} aria-label={`Mark ${theme.name} as opposing a trait`}>
          <div class="field field--inline field--grow">
            <label for={selectId}>Contradicts</label>
            <select id={selectId} value={chosenTrait} onChange={(e) => setTraitId(e.currentTarget.value)}>
              {choices.map((t) => (
                <option key={t.id} value={t.id}>
                  {t.principle}
                </option>
              ))}
            </select>
          </div>
          <button type="submit" class="btn btn--plain btn--small" disabled={oppose.busy} title={why([oppose.busy, 'Saving…'])}>
            Mark as opposing
          </button>
        </form>
      ) : null}
      <ProblemNote problem={oppose.problem} />
    </li>
  );
}

/** Under a trait: the shards judged to contradict it, then those that only may (with the report's reason). */
export function TraitCounterEvidence({ trait, possible }: { trait: EvidenceSoul['traits'][number]; possible: EvidenceSoul['evidence']['possibleCounterEvidence'] }) {
  const maybe = possible.filter((p) => p.trait.id === trait.id);
  if (trait.counterEvidence.length === 0 && maybe.length === 0) return null;
  return (
    <div class="counter">
      {trait.counterEvidence.length ? (
        <>
          <p class="counter__title">Counter-evidence ({trait.counterEvidence.length})</p>
          <ul class="counter__list">
            {trait.counterEvidence.map((s) => (
              <li key={s.id}>
                {s.content} <span class="muted">— {s.source}</span>
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {maybe.length ? (
        <>
          <p class="counter__title">Possibly contradicts it ({maybe.length})</p>
          <ul class="counter__list">
            {maybe.map((p) => (
              <li key={p.shard.id}>
                {p.shard.content} <span class="muted">— {p.shard.source}</span>
                <br />
                <small class="muted">
                  A possibility, not a judgement: {p.reason} (overlap {percent(p.overlap)})
                </small>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </div>
  );
}
