import { useEffect, useState } from 'preact/hooks';
import { request } from './api.ts';
import { errorText, resultProblem } from './fields.ts';
import { date, decimal, needsText, plural } from './format.ts';
import { Term } from './glossary.tsx';
import {
  AwakenSoulDocument,
  CreateSoulDocument,
  RetireSoulDocument,
  RosterCrystallizationReadyDocument,
  RosterDocument,
  RosterLevelChangedDocument,
  RosterShardDroppedDocument,
  RosterSoulChangedDocument,
  type RosterQuery,
  type SoulCardFragment,
} from './gql/graphql.ts';
import { href, navigate, useDebouncedCallback, useQuery, useResync, useSubscription } from './hooks.ts';
import { bounds } from './limits.ts';
import { compareBy, matchesSoul, orderWords, ROSTER_PAGE } from './roster-params.ts';
import { Pager, RosterToolbar, useRosterParams } from './roster-tools.tsx';
import { useCan, useSession } from './session.ts';
import { SoulFields, soulProblem, type SoulProblem } from './soul-edit.tsx';
import { ImportSoulMd } from './soulmd.tsx';
import { Button, ErrorNote, Field, LevelBadge, Loading, Panel, ScopeNote, ShardMarks, useFlash, XpBar, why } from './ui.tsx';

type Dormant = RosterQuery['dormantSouls'][number];

export function Roster() {
  const [params, setParams] = useRosterParams();
  const compare = compareBy[params.sort];
  const roster = useQuery(RosterDocument, { orderBy: params.sort }, `roster:${params.sort}`);
  const [cards, setCards] = useState<SoulCardFragment[]>([]);
  const [dormant, setDormant] = useState<Dormant[]>([]);
  const [creating, setCreating] = useState(false);
  const [importing, setImporting] = useState(false);
  const refetchSoon = useDebouncedCallback(() => void roster.refetch(), 150);

  useEffect(() => {
    if (!roster.data) return;
    setCards([...roster.data.souls].sort(compare));
    setDormant(roster.data.dormantSouls);
  }, [roster.data]);

  // Live: every event carries the soul's fresh card; patch it in place and keep the order.
  const patch = (souls: readonly SoulCardFragment[]) => {
    setCards((current) => {
      let missing = false;
      const next = current.map((card) => souls.find((s) => s.id === card.id) ?? card);
      for (const soul of souls) if (!soul.dormant && !current.some((c) => c.id === soul.id)) missing = true;
      if (missing) refetchSoon();
      return next.filter((card) => !card.dormant).sort(compare);
    });
  };
  useSubscription(RosterSoulChangedDocument, {}, 'roster', (data) => {
    const { kind, soul } = data.soulChanged;
    if (kind === 'CREATED' || kind === 'RETIRED' || kind === 'AWAKENED') refetchSoon();
    else patch([soul]);
  });
  useSubscription(RosterShardDroppedDocument, {}, 'roster', (data) => patch(data.shardDropped.shard.souls));
  useSubscription(RosterLevelChangedDocument, {}, 'roster', (data) => patch([data.levelChanged.soul]));
  useSubscription(RosterCrystallizationReadyDocument, {}, 'roster', (data) => patch([data.crystallizationReady.soul]));
  useResync(refetchSoon);

  const readyCount = cards.filter((c) => c.crystallization.ready).length;
  // Search and paging run here: Query.souls has an order but no filter or page arguments (see the README).
  const found = params.q ? cards.filter((soul) => matchesSoul(soul, params.q)) : cards;
  const pages = Math.max(1, Math.ceil(found.length / ROSTER_PAGE));
  const page = Math.min(params.page, pages);
  const shown = found.slice((page - 1) * ROSTER_PAGE, page * ROSTER_PAGE);

  return (
    <div class="roster">
      <div class="page-head">
        <div>
          <h1 class="page-title">Roster</h1>
          <p class="page-sub">
            {roster.data ? (
              <>
                {plural(cards.length, 'soul')} awake · {readyCount} ready to refine · {dormant.length} dormant.{params.sort === 'READINESS' ? ' Souls that need attention float to the top.' : ''}
              </>
            ) : (
              'Every soul, most ready for refinement first.'
            )}
          </p>
        </div>
        <div class="page-head__actions">
          <Button scope="REFINE" onClick={() => setImporting((open) => !open)} aria-expanded={importing} aria-controls="import-soul">
            {importing ? 'Close import' : 'Import'}
          </Button>
          <Button scope="ADMIN" variant="primary" onClick={() => setCreating((open) => !open)} aria-expanded={creating} aria-controls="new-soul">
            {creating ? 'Close' : 'New soul'}
          </Button>
        </div>
      </div>
      <ScopeNote scope="ADMIN" />
      {importing ? (
        <ImportSoulMd
          onImported={() => {
            setImporting(false);
            void roster.refetch();
          }}
        />
      ) : null}
      {creating ? (
        <NewSoulForm
          onDone={() => {
            setCreating(false);
            void roster.refetch();
          }}
        />
      ) : null}
      {roster.error && !roster.data ? <ErrorNote error={roster.error} retry={() => void roster.refetch()} /> : null}
      {!roster.data && !roster.error ? <Loading what="the roster" /> : null}
      {roster.data && cards.length === 0 ? (
        <div class="panel empty">
          <p>No souls yet. Create one, or fill a database with the demo souls: <code>npm run demo</code>.</p>
        </div>
      ) : null}
      {roster.data && cards.length > 0 ? <RosterToolbar params={params} onChange={setParams} shown={found.length} total={cards.length} /> : null}
      {roster.data && cards.length > 0 && found.length === 0 ? (
        <p class="panel empty" role="status">
          No awake soul matches “{params.q}”.
        </p>
      ) : null}
      <ul class="cards" aria-label={`Souls by ${orderWords[params.sort].toLowerCase()}`}>
        {shown.map((soul) => (
          <li key={soul.id}>
            <SoulCard soul={soul} onRetired={() => void roster.refetch()} />
          </li>
        ))}
      </ul>
      <Pager page={page} pages={pages} first={(page - 1) * ROSTER_PAGE + 1} last={(page - 1) * ROSTER_PAGE + shown.length} total={found.length} onPage={(to) => setParams({ page: to }, true)} />
      {roster.data ? <DormantList souls={dormant} onAwakened={() => void roster.refetch()} /> : null}
    </div>
  );
}

export function SoulCard({ soul, onRetired }: { soul: SoulCardFragment; onRetired?: () => void }) {
  const { notify } = useSession();
  const [confirming, setConfirming] = useState(false);
  const levelled = useFlash(soul.level);
  const becameReady = useFlash(soul.crystallization.ready);
  const { ready } = soul.crystallization;
  const needs = needsText(soul.crystallization.needs);
  const retire = async () => {
    try {
      const { retireSoul } = await request(RetireSoulDocument, { id: soul.id });
      if (retireSoul.__typename === 'SoulPayload') {
        notify(`${soul.name} is dormant now`, 'success');
        onRetired?.();
      } else notify(retireSoul.message, 'error');
    } catch (error) {
      notify(`${soul.name} was not retired. ${errorText(error)}`, 'error');
    }
    setConfirming(false);
  };
  return (
    <article class={`soul-card${ready ? ' soul-card--ready' : ''}${soul.atCapacity ? ' soul-card--full' : ''}${levelled ? ' soul-card--levelled' : ''}${becameReady && ready ? ' soul-card--awakening' : ''}`} aria-labelledby={`soul-${soul.id}-name`} data-soul-id={soul.id}>
      {onRetired ? (
        <div class="soul-card__retire">
          {confirming ? (
            <span class="confirm">
              <Button scope="ADMIN" variant="danger" onClick={() => void retire()}>
                Retire {soul.name}
              </Button>
              <Button variant="quiet" onClick={() => setConfirming(false)}>
                Keep
              </Button>
            </span>
          ) : (
            <Button scope="ADMIN" variant="quiet" onClick={() => setConfirming(true)} aria-label={`Retire ${soul.name}`}>
              Retire
            </Button>
          )}
        </div>
      ) : null}
      <header class="soul-card__head">
        <LevelBadge level={soul.level} celebrate={levelled} />
        <div class="soul-card__title">
          <h2 class="soul-card__name" id={`soul-${soul.id}-name`}>
            <a href={href.sheet(soul.id)}>{soul.name}</a>
          </h2>
          <p class="soul-card__desc">{soul.description || <em>No description</em>}</p>
        </div>
      </header>
      <XpBar active={soul.activeTraitCount} limit={soul.traitLimit} />
      <div class="soul-card__shards">
        <span class="soul-card__label">Shards</span>
        <ShardMarks count={soul.pendingShardCount} ready={ready} unmet={ready ? undefined : needs} />
      </div>
      <p class="soul-card__status" data-testid="status">
        {ready ? (
          <>
            <strong>{plural(soul.crystallization.pendingCount, 'shard')}</strong> from {plural(soul.crystallization.distinctSources, 'source')} · <Term name="priority" /> {decimal(soul.crystallization.priority, 0)}
          </>
        ) : needs ? (
          <>Gathering evidence: needs {needs}</>
        ) : (
          'Settled'
        )}
      </p>
      <footer class="soul-card__actions">
        <a class="btn btn--plain" href={href.sheet(soul.id)} aria-label={`Open ${soul.name}'s sheet`}>
          Sheet
        </a>
        <a class={`btn ${ready ? 'btn--primary' : 'btn--plain'}`} href={href.refine(soul.id)} aria-label={`Refine ${soul.name}`}>
          Refine
        </a>
        <a class={`btn ${soul.atCapacity ? 'btn--primary' : 'btn--plain'}`} href={href.workshop(soul.id)} aria-label={`Level up ${soul.name} in the workshop`}>
          Level up
        </a>
      </footer>
    </article>
  );
}

/** Creates a soul and opens its sheet, where its first shards are dropped. */
function NewSoulForm({ onDone }: { onDone: () => void }) {
  const { notify } = useSession();
  const can = useCan('ADMIN');
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [essence, setEssence] = useState('');
  const [problem, setProblem] = useState<SoulProblem | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const { createSoul } = await request(CreateSoulDocument, { input: { name, description: description || null, essence } });
      if (createSoul.__typename === 'SoulPayload') {
        notify(`${createSoul.soul.name} joins the roster: drop its first shards here`, 'success');
        onDone();
        navigate(href.sheet(createSoul.soul.id));
      } else setProblem(soulProblem(createSoul));
    } catch (error) {
      setProblem({ field: null, text: `Nothing was created. ${errorText(error)}` });
    } finally {
      setBusy(false);
    }
  };
  return (
    <form id="new-soul" class="panel new-soul" onSubmit={(e) => void submit(e)} aria-labelledby="new-soul-title">
      <header class="panel__header">
        <h2 id="new-soul-title" class="panel__title">
          A new soul
        </h2>
      </header>
      <div class="panel__body form-grid">
        <SoulFields name={name} description={description} essence={essence} onName={setName} onDescription={setDescription} onEssence={setEssence} essenceRows={3} disabled={!can} problem={problem} />
        <div class="form-actions">
          <button type="submit" class="btn btn--primary" disabled={!can || busy || !name.trim() || !essence.trim()} title={why([!can, 'Your token has no admin scope'], [busy, 'Creating the soul…'], [!name.trim(), 'Give the soul a name first'], [!essence.trim(), 'Write its essence first'])}>
            Create soul
          </button>
        </div>
      </div>
    </form>
  );
}

function DormantList({ souls, onAwakened }: { souls: Dormant[]; onAwakened: () => void }) {
  return (
    <Panel title={`Dormant souls (${souls.length})`} class="dormant">
      {souls.length === 0 ? (
        <p class="muted">No soul sleeps. A retired soul keeps its whole history and can be awakened.</p>
      ) : (
        <ul class="dormant__list">
          {souls.map((soul) => (
            <DormantRow key={soul.id} soul={soul} onAwakened={onAwakened} />
          ))}
        </ul>
      )}
    </Panel>
  );
}

function DormantRow({ soul, onAwakened }: { soul: Dormant; onAwakened: () => void }) {
  const { notify } = useSession();
  const [rename, setRename] = useState<string | null>(null);
  const awaken = async () => {
    try {
      const { awakenSoul } = await request(AwakenSoulDocument, { id: soul.id, name: rename });
      if (awakenSoul.__typename === 'SoulPayload') {
        notify(`${awakenSoul.soul.name} awakens`, 'success');
        onAwakened();
      } else if (awakenSoul.__typename === 'ConflictError') {
        setRename(rename ?? `${soul.name} II`);
        notify(`${resultProblem(awakenSoul)}: choose another name`, 'error');
      } else notify(resultProblem(awakenSoul), 'error');
    } catch (error) {
      notify(`${soul.name} still sleeps. ${errorText(error)}`, 'error');
    }
  };
  return (
    <li class="dormant__row">
      <LevelBadge level={soul.level} size="small" />
      <div class="dormant__who">
        <a href={href.sheet(soul.id)}>{soul.name}</a>
        <span class="muted">
          {soul.description}
          {soul.deletedAt ? ` · retired ${date(soul.deletedAt)}` : ''}
        </span>
      </div>
      {rename !== null ? <Field label="New name" value={rename} onInput={setRename} maxLength={bounds.nameLength} /> : null}
      <Button scope="ADMIN" onClick={() => void awaken()} aria-label={`Awaken ${soul.name}`}>
        Awaken
      </Button>
    </li>
  );
}
