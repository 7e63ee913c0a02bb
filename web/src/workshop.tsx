import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { request } from './api.ts';
import { errorText, fieldProblem, traitNames } from './fields.ts';
import { plural } from './format.ts';
import {
  LevelUpDocument,
  PreviewLevelUpDocument,
  RevertLevelUpDocument,
  SoulChangedDocument,
  WorkshopDocument,
  type LevelUpMutation,
  type LevelUpPlanInput,
  type TraitSheetFragment,
  type WorkshopQuery,
} from './gql/graphql.ts';
import { href, navigate, useDebounced, useQuery, useSubscription } from './hooks.ts';
import { TraitSignals } from './sheet.tsx';
import { bounds } from './limits.ts';
import { WorkshopHints } from './workshop-hints.tsx';
import { useCan, useSession } from './session.ts';
import { Area, BlockDiff, Button, Chip, ErrorNote, LevelBadge, Loading, Panel, ScopeNote, Warnings, XpBar, why } from './ui.tsx';

type WorkshopSoul = NonNullable<WorkshopQuery['soul']>;
type Trait = TraitSheetFragment;

/** Where a trait goes in the plan: carried as it is, promoted into the essence, or merged in a consolidation. */
type Place = 'carry' | 'promote' | `group:${number}`;
type Group = { key: number; principle: string; provenance: string; principleEdited: boolean; provenanceEdited: boolean };
const emptyGroup = (key: number): Group => ({ key, principle: '', provenance: '', principleEdited: false, provenanceEdited: false });
type Payload = Extract<LevelUpMutation['levelUp'], { __typename: 'LevelUpPayload' }>;
type Result = { payload: Payload; before: { level: number; active: number } };

const DRAG_TYPE = 'application/x-souls-trait';

export function Workshop({ soulId }: { soulId: string }) {
  const workshop = useQuery(WorkshopDocument, { id: soulId }, soulId);
  const [result, setResult] = useState<Result | null>(null);
  // A change made elsewhere (another tab, a script) makes the plan stale; our own level-up does not count.
  const executing = useRef(false);
  const [changedElsewhere, setChangedElsewhere] = useState(false);
  useSubscription(SoulChangedDocument, { soulId }, soulId, () => {
    if (!executing.current) setChangedElsewhere(true);
  });
  if (workshop.error && !workshop.data) return <ErrorNote error={workshop.error} retry={() => void workshop.refetch()} />;
  if (!workshop.data) return <Loading what="the workshop" />;
  const soul = workshop.data.soul;
  if (!soul) return <p class="panel">There is no soul {soulId}.</p>;
  return (
    <div class="workshop">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href.roster()}>Roster</a> <span aria-hidden="true">›</span> <a href={href.sheet(soul.id)}>{soul.name}</a> <span aria-hidden="true">›</span>{' '}
        <span aria-current="page">Level-up workshop</span>
      </nav>
      {result ? (
        <LevelUpResult
          soulName={soul.name}
          result={result}
          onAgain={() => {
            executing.current = false;
            setChangedElsewhere(false);
            setResult(null);
            void workshop.refetch();
          }}
        />
      ) : (
        <>
          {changedElsewhere ? (
            <p class="scope-note" role="status">
              {soul.name} changed elsewhere since this workshop opened.{' '}
              <Button
                variant="quiet"
                onClick={() => {
                  setChangedElsewhere(false);
                  void workshop.refetch();
                }}
              >
                Reload the workshop
              </Button>
            </p>
          ) : null}
          <Planner
            key={`${soul.id}:${soul.level}:${soul.traits.map((t) => t.id).join(',')}`}
            soul={soul}
            executing={executing}
            onLevelledUp={(payload) => {
              setResult({ payload, before: { level: soul.level, active: soul.activeTraitCount } });
            }}
          />
        </>
      )}
    </div>
  );
}

function Planner({ soul, executing, onLevelledUp }: { soul: WorkshopSoul; executing: { current: boolean }; onLevelledUp: (payload: Payload) => void }) {
  const { notify } = useSession();
  const canRefine = useCan('REFINE');
  const [places, setPlaces] = useState<Record<string, Place>>(() => Object.fromEntries(soul.traits.map((t) => [t.id, 'carry' as Place])));
  const [groups, setGroups] = useState<Group[]>([]);
  const [nextKey, setNextKey] = useState(1);
  const [essence, setEssence] = useState(soul.essence);
  const [busy, setBusy] = useState(false);
  const [dragging, setDragging] = useState<string | null>(null);
  const newLevel = soul.level + 1;

  const members = (place: Place) => soul.traits.filter((t) => places[t.id] === place);
  const groupName = (g: Group) => `Consolidation ${groups.indexOf(g) + 1}`;
  const named = (message: string) => traitNames(message, soul.traits);
  // A plan problem names consolidations by their index in the plan, which skips the empty groups.
  const groupNaming = (list: string, index: number) => {
    const sent = groups.filter((g) => members(`group:${g.key}`).length > 0)[index];
    return list === 'consolidations' && sent ? groupName(sent).toLowerCase() : undefined;
  };

  // The merged texts draft themselves from the group's members until the person edits them: the principle as the
  // sources' principles joined (a starting point to edit into one), the provenance as where it came from.
  const draftPrinciple = (sources: Trait[]) => sources.map((t) => (/[.!?…]$/u.test(t.principle.trim()) ? t.principle.trim() : `${t.principle.trim()}.`)).join(' ');
  const draftProvenance = (sources: Trait[]) => (sources.length ? `Consolidated at level ${newLevel} from ${sources.map((t) => `“${t.principle}”`).join(' and ')}` : '');
  useEffect(() => {
    setGroups((current) =>
      current.map((g) => {
        const sources = soul.traits.filter((t) => places[t.id] === `group:${g.key}`);
        return { ...g, principle: g.principleEdited ? g.principle : draftPrinciple(sources), provenance: g.provenanceEdited ? g.provenance : draftProvenance(sources) };
      }),
    );
  }, [places]);

  const move = (traitId: string, to: Place | 'new') => {
    if (to === 'new') {
      const key = nextKey;
      setNextKey(key + 1);
      setGroups((current) => [...current, emptyGroup(key)]);
      setPlaces((current) => ({ ...current, [traitId]: `group:${key}` }));
    } else setPlaces((current) => ({ ...current, [traitId]: to }));
  };
  /** Both traits into one consolidation: the one either is already in, else a new one. */
  const mergePair = (aId: string, bId: string) => {
    const existing = [places[aId], places[bId]].find((place) => place.startsWith('group:'));
    if (existing) {
      setPlaces((current) => ({ ...current, [aId]: existing, [bId]: existing }));
      return;
    }
    const key = nextKey;
    setNextKey(key + 1);
    setGroups((current) => [...current, emptyGroup(key)]);
    setPlaces((current) => ({ ...current, [aId]: `group:${key}`, [bId]: `group:${key}` }));
  };
  const removeGroup = (key: number) => {
    setPlaces((current) => Object.fromEntries(Object.entries(current).map(([id, place]) => [id, place === `group:${key}` ? 'carry' : place])) as Record<string, Place>);
    setGroups((current) => current.filter((g) => g.key !== key));
  };
  const updateGroup = (key: number, change: Partial<Group>) => setGroups((current) => current.map((g) => (g.key === key ? { ...g, ...change } : g)));

  const plan: LevelUpPlanInput = useMemo(
    () => ({
      newEssence: essence,
      consolidations: groups
        .map((g) => ({ sourceTraitIds: soul.traits.filter((t) => places[t.id] === `group:${g.key}`).map((t) => t.id), mergedPrinciple: g.principle, mergedProvenance: g.provenance }))
        .filter((c) => c.sourceTraitIds.length > 0),
      promotedTraitIds: soul.traits.filter((t) => places[t.id] === 'promote').map((t) => t.id),
      carriedTraitIds: soul.traits.filter((t) => places[t.id] === 'carry').map((t) => t.id),
    }),
    [essence, groups, places, soul.traits],
  );
  const settled = useDebounced(plan, 300);
  const key = JSON.stringify(settled);
  const preview = useQuery(PreviewLevelUpDocument, { soulId: soul.id, plan: settled }, key);
  // The sentence under the button and the button read one state: the verdict on the plan as it is now, or none yet.
  // (An older verdict, or `loading` that trails the plan by a render, once let "The plan is valid." sit over a disabled button.)
  const shownPreview = preview.data?.previewLevelUp ?? null;
  const verdict = preview.dataKey === JSON.stringify(plan) ? shownPreview : null;
  const refusal = busy ? `Levelling ${soul.name} up…` : !verdict ? (preview.error ? 'The preview of this plan failed: try again' : 'Checking the plan as it is now…') : verdict.valid ? null : planRefusal(verdict.error, groupNaming, named);

  const promoted = members('promote');
  // A principle is an imperative ("Keep the forge lit") and the essence third-person prose: the principles are offered
  // as a draft to rewrite in the essence's voice, and only what the person adds joins the essence.
  const [weaving, setWeaving] = useState<string | null>(null);
  const weave = () => setWeaving(promoted.map((t) => t.principle.trim()).filter((p) => !essence.includes(p)).join(' '));
  const addWoven = () => {
    if (weaving?.trim()) setEssence(`${essence.trim()} ${weaving.trim()}`.trim());
    setWeaving(null);
  };

  const execute = async () => {
    setBusy(true);
    executing.current = true;
    try {
      const { levelUp } = await request(LevelUpDocument, { soulId: soul.id, plan });
      if (levelUp.__typename === 'LevelUpPayload') onLevelledUp(levelUp);
      else {
        executing.current = false;
        notify(levelUp.message, 'error');
      }
    } catch (error) {
      executing.current = false;
      notify(`${soul.name} did not level up. ${errorText(error)}`, 'error');
    } finally {
      setBusy(false);
    }
  };

  const dropProps = (to: Place | 'new') => ({
    onDragOver: (e: DragEvent) => {
      if (e.dataTransfer?.types.includes(DRAG_TYPE)) {
        e.preventDefault();
        e.dataTransfer.dropEffect = 'move';
        (e.currentTarget as HTMLElement).classList.add('dropzone--over');
      }
    },
    onDragLeave: (e: DragEvent) => (e.currentTarget as HTMLElement).classList.remove('dropzone--over'),
    onDrop: (e: DragEvent) => {
      e.preventDefault();
      (e.currentTarget as HTMLElement).classList.remove('dropzone--over');
      const id = e.dataTransfer?.getData(DRAG_TYPE);
      if (id && places[id] !== undefined) move(id, to);
      setDragging(null);
    },
  });

  const card = (trait: Trait) => (
    <TraitCard key={trait.id} trait={trait} place={places[trait.id]} groups={groups} groupName={groupName} dragging={dragging === trait.id} disabled={!canRefine} onDrag={setDragging} onMove={(to) => move(trait.id, to)} />
  );

  return (
    <>
      <div class="page-head">
        <div class="page-head__who">
          <LevelBadge level={soul.level} />
          <div>
            <h1 class="page-title">Level-up workshop: {soul.name}</h1>
            <p class="page-sub">
              Every active trait goes somewhere: <strong>carried</strong> into level {newLevel}, <strong>merged</strong> with related traits into one principle, or <strong>promoted</strong> into the essence. Drag the cards, or
              use each card's “Place” menu.
            </p>
          </div>
        </div>
        <div class="workshop__xp">
          <XpBar active={soul.activeTraitCount} limit={soul.traitLimit} />
        </div>
      </div>
      <ScopeNote scope="REFINE" />
      {soul.traits.length === 0 ? <p class="panel">{soul.name} has no active traits: nothing to level up yet.</p> : null}
      <WorkshopHints evidence={soul.evidence} places={places} disabled={!canRefine} onMerge={mergePair} onPromote={(id) => move(id, 'promote')} />
      <div class="board">
        <section class="column dropzone" aria-labelledby="carry-title" {...dropProps('carry')} data-zone="carry">
          <h2 class="column__title" id="carry-title">
            Carried <span class="muted">({members('carry').length})</span>
          </h2>
          <p class="column__hint">Kept as they are, at generation {newLevel}.</p>
          <ul class="card-list">{members('carry').map(card)}</ul>
        </section>
        <section class="column column--groups" aria-labelledby="groups-title">
          <h2 class="column__title" id="groups-title">
            Consolidations <span class="muted">({groups.length})</span>
          </h2>
          {groups.map((g) => {
            const inside = members(`group:${g.key}`);
            return (
              <fieldset key={g.key} class="group dropzone" {...dropProps(`group:${g.key}`)} data-zone={`group-${groups.indexOf(g) + 1}`}>
                <legend>
                  {groupName(g)} <span class="muted">({plural(inside.length, 'trait')})</span>
                </legend>
                <ul class="card-list">{inside.map(card)}</ul>
                {inside.length === 0 ? <p class="column__hint">Empty: drop traits here, or place them with their menu.</p> : null}
                <Area
                  label={`Merged principle of ${groupName(g).toLowerCase()}`}
                  hint="Drafted from the traits’ principles: edit it into one"
                  value={g.principle}
                  onInput={(principle) => updateGroup(g.key, { principle, principleEdited: true })}
                  required
                  rows={2}
                  placeholder="One principle that says what these traits say"
                  disabled={!canRefine}
                  maxBytes={bounds.principleBytes}
                />
                <Area label={`Merged provenance of ${groupName(g).toLowerCase()}`} value={g.provenance} onInput={(provenance) => updateGroup(g.key, { provenance, provenanceEdited: true })} required rows={2} disabled={!canRefine} maxBytes={bounds.provenanceBytes} />
                <Button variant="quiet" onClick={() => removeGroup(g.key)} disabled={!canRefine}>
                  Dissolve {groupName(g).toLowerCase()}
                </Button>
              </fieldset>
            );
          })}
          <div class="dropzone dropzone--new" {...dropProps('new')} data-zone="new">
            <p>Drop a trait here to start a consolidation</p>
            <Button
              scope="REFINE"
              variant="quiet"
              onClick={() => {
                const key = nextKey;
                setNextKey(key + 1);
                setGroups((current) => [...current, emptyGroup(key)]);
              }}
            >
              New empty consolidation
            </Button>
          </div>
        </section>
        <section class="column dropzone column--promote" aria-labelledby="promote-title" {...dropProps('promote')} data-zone="promote">
          <h2 class="column__title" id="promote-title">
            Promoted into the essence <span class="muted">({promoted.length})</span>
          </h2>
          <p class="column__hint">The principle leaves the trait list and lives in the essence: weave it in below.</p>
          <ul class="card-list">{promoted.map(card)}</ul>
        </section>
      </div>
      <div class="workshop__bottom">
        <Panel title={`The new essence (level ${newLevel})`} id="essence-title">
          <Area label="Essence" hint="The narrative core after this level-up; promoted principles belong in it" value={essence} onInput={setEssence} required rows={6} disabled={!canRefine} maxBytes={bounds.essenceBytes} />
          <div class="form-actions">
            <Button scope="REFINE" variant="quiet" onClick={weave} disabled={promoted.length === 0 || weaving !== null} title={why([promoted.length === 0, 'Promote a trait first: its “Place” menu, or drag it to “Promoted into the essence”'], [weaving !== null, 'The draft is open below'])} aria-expanded={weaving !== null} aria-controls="weave-draft">
              Weave promoted principles in
            </Button>
            <Button variant="quiet" onClick={() => setEssence(soul.essence)} disabled={essence === soul.essence} title={why([essence === soul.essence, 'The essence is the current one'])}>
              Restore the current essence
            </Button>
          </div>
          {weaving !== null ? (
            <div id="weave-draft" class="weave">
              <Area
                label="Draft for the essence"
                hint={`The promoted principles as they were written, in the imperative: rewrite them as prose about ${soul.name}, as the essence reads, then add them`}
                value={weaving}
                onInput={setWeaving}
                rows={3}
                disabled={!canRefine}
                maxBytes={bounds.essenceBytes}
              />
              <div class="form-actions">
                <Button scope="REFINE" variant="plain" onClick={addWoven} disabled={!weaving.trim()} title={why([!weaving.trim(), 'The draft is empty'])}>
                  Add to the essence
                </Button>
                <Button variant="quiet" onClick={() => setWeaving(null)}>
                  Discard the draft
                </Button>
              </div>
            </div>
          ) : null}
        </Panel>
        <Panel title="Preview" id="preview-title" class="preview">
          <div class="verdict-line" aria-live="polite">
            {busy ? (
              <p id="plan-verdict" class="verdict verdict--checking">
                {refusal}
              </p>
            ) : !verdict ? (
              shownPreview ? (
                <p id="plan-verdict" class="verdict verdict--checking" role="status">
                  {refusal}
                </p>
              ) : (
                <div id="plan-verdict">
                  <Loading what="the preview" />
                </div>
              )
            ) : verdict.valid ? (
              <p class="verdict verdict--ready">
                <strong>The plan is valid.</strong> {plural(plan.consolidations.length, 'consolidation')}, {plan.promotedTraitIds.length} promoted, {plan.carriedTraitIds.length} carried: {soul.activeTraitCount} → {plural(plan.consolidations.length + plan.carriedTraitIds.length, 'active trait')}.
              </p>
            ) : (
              <div id="plan-verdict" class="verdict verdict--invalid">
                <strong>Not yet valid:</strong>
                <ul>
                  {verdict.error?.problems.map((p) => (
                    <li key={p.field}>{fieldProblem(p.field, named(p.message), groupNaming)}</li>
                  ))}
                  {verdict.error?.missing.length ? <li>{plural(verdict.error.missing.length, 'trait')} not placed</li> : null}
                  {verdict.error?.duplicated.length ? <li>{plural(verdict.error.duplicated.length, 'trait')} placed twice</li> : null}
                  {verdict.error?.notActive.length ? <li>{plural(verdict.error.notActive.length, 'trait')} no longer active: reload the workshop</li> : null}
                </ul>
              </div>
            )}
            {verdict ? <Warnings warnings={verdict.warnings} words={named} /> : null}
          </div>
          {preview.error ? <ErrorNote error={preview.error} /> : null}
          {shownPreview ? (
            <div class={verdict ? undefined : 'stale-preview'}>
              <BlockDiff before={shownPreview.before} after={shownPreview.after ?? null} />
            </div>
          ) : null}
          <div class="form-actions">
            <Button
              scope="REFINE"
              variant="primary"
              class="btn--big"
              onClick={() => void execute()}
              disabled={refusal !== null}
              title={refusal ?? undefined}
              aria-describedby={refusal !== null ? 'plan-verdict' : undefined}
            >
              Level up to {newLevel}
            </Button>
          </div>
        </Panel>
      </div>
    </>
  );
}

/** Why the level-up button is disabled, as its tooltip: the plan's own problems first (such as a plan that changes nothing). */
function planRefusal(error: { message: string; problems: ReadonlyArray<{ field: string; message: string }> } | null | undefined, groupNaming: (list: string, index: number) => string | undefined, named: (message: string) => string): string {
  if (!error) return 'Not yet valid';
  return `Not yet valid: ${error.problems.length > 0 ? error.problems.map((p) => fieldProblem(p.field, named(p.message), groupNaming)).join('; ') : named(error.message)}`;
}

function TraitCard({
  trait,
  place,
  groups,
  groupName,
  dragging,
  disabled,
  onDrag,
  onMove,
}: {
  trait: Trait;
  place: Place;
  groups: Group[];
  groupName: (g: Group) => string;
  dragging: boolean;
  disabled: boolean;
  onDrag: (id: string | null) => void;
  onMove: (to: Place | 'new') => void;
}) {
  const selectId = `place-${trait.id}`;
  return (
    <li
      class={`trait-card${dragging ? ' trait-card--dragging' : ''}`}
      draggable={!disabled}
      data-trait-id={trait.id}
      onDragStart={(e) => {
        e.dataTransfer?.setData(DRAG_TYPE, trait.id);
        e.dataTransfer?.setData('text/plain', trait.principle);
        if (e.dataTransfer) e.dataTransfer.effectAllowed = 'move';
        onDrag(trait.id);
      }}
      onDragEnd={() => onDrag(null)}
    >
      <span class="trait-card__grip" aria-hidden="true">
        ⠿
      </span>
      <div class="trait-card__body">
        <p class="trait-card__principle">{trait.principle}</p>
        <TraitSignals trait={trait} />
        <div class="trait-card__place">
          <label for={selectId}>Place</label>
          <select id={selectId} value={place} disabled={disabled} aria-label={`Place “${trait.principle}”`} onChange={(e) => onMove(e.currentTarget.value as Place | 'new')}>
            <option value="carry">Carry</option>
            {groups.map((g) => (
              <option key={g.key} value={`group:${g.key}`}>
                Merge into {groupName(g).toLowerCase()}
              </option>
            ))}
            <option value="new">Merge into a new consolidation</option>
            <option value="promote">Promote into the essence</option>
          </select>
        </div>
      </div>
    </li>
  );
}

/** The transformation: the badge increments, merged traits arrive, the XP bar resets to what was carried. */
function LevelUpResult({ soulName, result, onAgain }: { soulName: string; result: Result; onAgain: () => void }) {
  const { notify } = useSession();
  const { payload, before } = result;
  const [shown, setShown] = useState({ level: before.level, active: before.active });
  const [reverted, setReverted] = useState(false);
  useEffect(() => {
    // A revert answered before the animation's step must not be overwritten by it.
    if (reverted) return;
    const timer = setTimeout(() => setShown({ level: payload.soul.level, active: payload.soul.activeTraitCount }), 350);
    return () => clearTimeout(timer);
  }, [payload, reverted]);
  const revert = async () => {
    try {
      // The event's id makes a retried click safe: it can never revert the level-up before this one.
      const { revertLevelUp } = await request(RevertLevelUpDocument, { soulId: payload.soul.id, levelEventId: payload.event.id });
      if (revertLevelUp.__typename === 'RevertLevelUpPayload') {
        notify(`Reverted: ${soulName} is level ${revertLevelUp.soul.level} again`, 'success');
        setReverted(true);
        setShown({ level: revertLevelUp.soul.level, active: before.active });
      } else notify(revertLevelUp.message, 'error');
    } catch (error) {
      notify(`The level-up was not reverted. ${errorText(error)}`, 'error');
    }
  };
  const levelled = shown.level !== before.level;
  return (
    <section class={`levelled${levelled ? ' levelled--done' : ''}`} aria-labelledby="levelled-title" aria-live="polite">
      <div class="levelled__burst" aria-hidden="true" />
      <div class="levelled__card">
        <LevelBadge level={shown.level} size="large" celebrate={levelled && !reverted} />
        <div class="levelled__main">
          <h1 id="levelled-title" class="page-title">
            {reverted ? `${soulName} is back at level ${shown.level}` : `${soulName} reached level ${payload.soul.level}`}
          </h1>
          <XpBar active={shown.active} limit={payload.soul.traitLimit} />
          {reverted ? (
            <p class="muted">
              The level-up is undone: its {plural(before.active, 'trait')} {before.active === 1 ? 'is' : 'are'} active again as they were, the merged ones are gone and the essence is the one before.
            </p>
          ) : (
            <p class="muted">
              {plural(before.active, 'active trait')} became {payload.soul.activeTraitCount}: {plural(payload.event.consolidated.length, 'trait')} merged into {payload.event.merged.length}, {payload.event.promoted.length} promoted into the essence,{' '}
              {payload.event.carried.length} carried.
            </p>
          )}
        </div>
      </div>
      {reverted ? null : (
        <>
          <div class="levelled__grid">
            <Panel title="Merged" id="merged-title">
              {payload.event.merged.length === 0 ? <p class="muted">No consolidation.</p> : null}
              <ul class="merge-list">
                {payload.event.merged.map((t, i) => (
                  <li key={t.id} class="merge-list__item">
                    <span class="merge-list__sources" aria-label="Merged from">
                      {payload.event.consolidated
                        .filter((source) => source.mergedInto?.id === t.id)
                        .map((source, j) => (
                          <span key={source.id} class={`merge-list__source merge-list__source--${j % 2 ? 'right' : 'left'}`} style={{ animationDelay: `${0.2 + i * 0.2}s` }}>
                            {source.principle}
                          </span>
                        ))}
                    </span>
                    <span class="merge-list__merged" style={{ animationDelay: `${0.9 + i * 0.2}s` }}>
                      {t.principle}
                    </span>
                  </li>
                ))}
              </ul>
            </Panel>
            <Panel title="Into the essence" id="essence-new-title">
              {payload.event.promoted.length ? (
                <ul class="promote-list">
                  {payload.event.promoted.map((t) => (
                    <li key={t.id}>{t.principle}</li>
                  ))}
                </ul>
              ) : (
                <p class="muted">No trait promoted: the essence below is the one written in the plan.</p>
              )}
              <p class="essence-flow">{payload.soul.essence}</p>
            </Panel>
            <Panel title="Carried" id="carried-title">
              {payload.event.carried.length === 0 ? <p class="muted">No trait carried: every one was merged or promoted.</p> : null}
              <ul class="carry-list">
                {payload.event.carried.map((t) => (
                  <li key={t.id}>{t.principle}</li>
                ))}
              </ul>
            </Panel>
          </div>
          <Warnings warnings={payload.warnings} words={(message) => traitNames(message, [...payload.event.consolidated, ...payload.event.promoted, ...payload.event.carried, ...payload.event.merged])} />
        </>
      )}
      <div class="form-actions">
        <a class="btn btn--primary" href={href.sheet(payload.soul.id)}>
          Open the sheet
        </a>
        <Button variant="quiet" onClick={() => navigate(href.roster())}>
          Back to the roster
        </Button>
        {reverted ? (
          <Button variant="quiet" onClick={onAgain}>
            Plan again
          </Button>
        ) : (
          <Button scope="REFINE" variant="quiet" onClick={() => void revert()}>
            Revert this level-up
          </Button>
        )}
      </div>
    </section>
  );
}
