import { useEffect, useState } from 'preact/hooks';
import { request } from './api.ts';
import { errorText, resultProblem, traitNames } from './fields.ts';
import { ago, days, decimal, needsText, percent, plural } from './format.ts';
import { Term } from './glossary.tsx';
import {
  AddTraitDocument,
  EvidenceDocument,
  PreviewTraitChangesDocument,
  ReviseTraitDocument,
  RevertTraitDocument,
  SoulChangedDocument,
  SoulShardDroppedDocument,
  StampAttunedDocument,
  type EvidenceQuery,
  type PreviewTraitChangesQueryVariables,
  type TraitResultFieldsFragment,
  type TraitSheetFragment,
} from './gql/graphql.ts';
import { href, useDebounced, useDebouncedCallback, useQuery, useSubscription } from './hooks.ts';
import { bounds } from './limits.ts';
import { TraitSignals } from './sheet.tsx';
import { useCan, useSession } from './session.ts';
import { JudgeCluster, ThemesList, TraitCounterEvidence, UnassignButton } from './themes.tsx';
import { Area, BlockDiff, Button, Chip, ErrorNote, LevelBadge, Loading, overBound, Panel, RenderedBlock, ScopeNote, ShardMarks, Warnings, XpBar } from './ui.tsx';

type EvidenceSoul = NonNullable<EvidenceQuery['soul']>;
type Report = EvidenceSoul['evidence'];
type Cluster = Report['clusters'][number];

/** One decision at a time: the change being considered, previewed before it is confirmed or discarded. */
type Proposal =
  | { kind: 'add'; principle: string; provenance: string; cite: { id: string; content: string; source: string }[]; citeIds: string[]; from: string }
  | { kind: 'revise'; trait: TraitSheetFragment; principle: string; provenance: string }
  | { kind: 'revert'; trait: TraitSheetFragment };

export function Refinement({ soulId }: { soulId: string }) {
  const evidence = useQuery(EvidenceDocument, { id: soulId }, soulId);
  const [proposal, setProposal] = useState<Proposal | null>(null);
  // Counts proposals started (not edits of one), so the panel comes into view and takes focus once per start.
  const [started, setStarted] = useState(0);
  const propose = (p: Proposal) => {
    setProposal(p);
    setStarted((n) => n + 1);
  };
  const refresh = useDebouncedCallback(() => void evidence.refetch(), 150);
  useSubscription(SoulChangedDocument, { soulId }, soulId, refresh);
  // New evidence re-opens a cycle closed by attunement.
  useSubscription(SoulShardDroppedDocument, { soulId }, soulId, refresh);

  if (evidence.error && !evidence.data) return <ErrorNote error={evidence.error} retry={() => void evidence.refetch()} />;
  if (!evidence.data) return <Loading what="the evidence report" />;
  const soul = evidence.data.soul;
  if (!soul) return <p class="panel">There is no soul {soulId}.</p>;
  const report = soul.evidence;

  return (
    <div class="refine">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href.roster()}>Roster</a> <span aria-hidden="true">›</span> <a href={href.sheet(soul.id)}>{soul.name}</a> <span aria-hidden="true">›</span>{' '}
        <span aria-current="page">Refinement</span>
      </nav>
      <div class="page-head">
        <div class="page-head__who">
          <LevelBadge level={soul.level} />
          <div>
            <h1 class="page-title">Refine {soul.name}</h1>
            <p class="page-sub">Read the evidence, propose one change, preview its effect on the rendered block, then confirm or discard it.</p>
          </div>
        </div>
        <AttuneButton soul={soul} onDone={refresh} />
      </div>
      <div class="refine__grid">
        <div class="refine__evidence">
          <EvidenceReport report={report} soul={soul} onPropose={propose} onChanged={() => void evidence.refetch()} />
        </div>
        <div class="refine__soul">
          <ProposalPanel soul={soul} proposal={proposal} started={started} onChange={setProposal} onConfirmed={() => void evidence.refetch()} />
          <Panel title="The soul now" id="soul-now-title">
            <div class="mini-card">
              <XpBar active={soul.activeTraitCount} limit={soul.traitLimit} />
              <ShardMarks count={soul.pendingShardCount} ready={soul.crystallization.ready} unmet={needsText(soul.crystallization.needs)} />
            </div>
            <details class="soul-now__block" open={proposal === null}>
              <summary>The rendered block</summary>
              <RenderedBlock text={soul.rendered} />
            </details>
            <h3 class="sub-title">Active traits</h3>
            <ol class="traits traits--compact">
              {soul.traits.map((trait) => (
                <li key={trait.id} class={`trait${proposalTouches(proposal, trait.id) ? ' trait--proposed' : ''}`}>
                  <p class="trait__principle">{trait.principle}</p>
                  <TraitSignals trait={trait} />
                  <TraitCounterEvidence trait={trait} possible={report.possibleCounterEvidence} />
                  <div class="trait__actions">
                    <Button scope="REFINE" variant="quiet" onClick={() => propose({ kind: 'revise', trait, principle: trait.principle, provenance: trait.provenance })} aria-label={`Propose a revision of: ${trait.principle}`}>
                      Revise
                    </Button>
                    <Button scope="REFINE" variant="quiet" onClick={() => propose({ kind: 'revert', trait })} aria-label={`Propose reverting: ${trait.principle}`}>
                      Revert
                    </Button>
                  </div>
                </li>
              ))}
            </ol>
          </Panel>
        </div>
      </div>
    </div>
  );
}

function proposalTouches(proposal: Proposal | null, traitId: string): boolean {
  return proposal !== null && proposal.kind !== 'add' && proposal.trait.id === traitId;
}

function AttuneButton({ soul, onDone }: { soul: EvidenceSoul; onDone: () => void }) {
  const { notify } = useSession();
  // Stamped, and no shard has arrived since: stamping again would change nothing.
  const waiting = soul.lastAttunedAt !== null && soul.crystallization.unmet.includes('RECENCY');
  const stamp = async () => {
    try {
      const { stampAttuned } = await request(StampAttunedDocument, { soulId: soul.id });
      if (stampAttuned.__typename === 'SoulPayload') notify(`${soul.name} is attuned: the next refinement waits for new evidence`, 'success');
      else notify(stampAttuned.message, 'error');
      onDone();
    } catch (error) {
      notify(`Attunement was not stamped. ${errorText(error)}`, 'error');
    }
  };
  return (
    <div class="attune">
      <Button scope="REFINE" onClick={() => void stamp()} disabled={waiting} title={waiting ? 'Attuned already: the soul waits for a shard recorded after its last attunement' : 'Marks this refinement cycle done: the soul waits for new evidence before it is ready again'}>
        Done: stamp attunement
      </Button>
      <small class="muted">
        {soul.lastAttunedAt ? `Last attuned ${ago(soul.lastAttunedAt)}${waiting ? ': waiting for new evidence' : ''}` : 'Never attuned'} · <Term name="attunement">what is this?</Term>
      </small>
    </div>
  );
}

/** A single shard no theme holds: folded with the others like it, since it resembles nothing else yet. */
const isSingle = (cluster: Cluster) => cluster.memberCount === 1 && !cluster.theme;

function EvidenceReport({ report, soul, onPropose, onChanged }: { report: Report; soul: EvidenceSoul; onPropose: (p: Proposal) => void; onChanged: () => void }) {
  const c = soul.crystallization;
  const needs = needsText(c.needs);
  const canRefine = useCan('REFINE');
  // Numbered as listed: clusters first, then the single shards that resemble nothing else.
  const grouped = report.clusters.filter((cluster) => !isSingle(cluster));
  const singles = report.clusters.filter(isSingle);
  const listed = [...grouped, ...singles];
  const card = (cluster: Cluster) => (
    <ClusterCard key={cluster.representative.id} cluster={cluster} index={listed.indexOf(cluster)} maxWeight={report.clusters[0].weight} soul={soul} canRefine={canRefine} onPropose={onPropose} onChanged={onChanged} />
  );
  return (
    <>
      <Panel title="Evidence report" id="evidence-title">
        <div class={`verdict${c.ready ? ' verdict--ready' : ''}`}>
          <strong>
            <Term name="crystallization">{c.ready ? 'Ready for refinement' : 'Not ready yet'}</Term>
          </strong>
          <span>
            {plural(c.pendingCount, 'pending shard')} · {plural(c.distinctSources, 'source')} · spread over {days(c.ageSpreadDays)}
            {c.ready ? (
              <>
                {' '}
                · <Term name="priority" /> {decimal(c.priority, 0)}
              </>
            ) : needs ? (
              ` · needs ${needs}`
            ) : null}
          </span>
        </div>
        <p class="trend">
          Trend: {plural(report.trend.recentCount, 'shard')} in the last 14 days against {report.trend.previousCount} before (velocity {report.trend.velocity >= 0 ? '+' : ''}
          {report.trend.velocity}){report.trend.newSources.length ? ` · new sources: ${report.trend.newSources.join(', ')}` : ''}
        </p>
        {report.similarity.vectorModel !== null ? (
          <p class={`vectors${report.similarity.reindexNeeded ? ' vectors--missing' : ''}`}>
            Vectors (similarity {report.similarity.mode.toLowerCase()}): {report.similarity.vectors}
          </p>
        ) : null}
        {report.suggestedActions.length ? (
          <>
            <h3 class="sub-title">Suggested actions</h3>
            <ul class="actions-list">
              {report.suggestedActions.map((action) => (
                <li key={action.kind + action.message} class={`suggestion suggestion--${action.kind.toLowerCase()}`}>
                  {action.message}
                  {action.kind === 'AT_CAPACITY' || action.kind === 'CONSOLIDATION_CANDIDATES' || action.kind === 'PROMOTION_CANDIDATES' ? (
                    <>
                      {' '}
                      <a href={href.workshop(soul.id)}>Open the workshop</a>
                    </>
                  ) : null}
                </li>
              ))}
            </ul>
          </>
        ) : null}
      </Panel>
      <Panel title={`Clusters (${report.clusterCount}), heaviest first`} id="clusters-title">
        {report.clusters.length === 0 ? <p class="muted">No considered shards.</p> : null}
        {report.clusters.length < report.clusterCount ? (
          <p class="muted clusters__paged">
            Showing the heaviest {report.clusters.length} of {report.clusterCount}.
          </p>
        ) : null}
        <p class="unjudged" aria-live="polite">
          {report.unjudgedCount ? `${plural(report.unjudgedCount, 'shard')} not yet judged` : 'Every shard is judged: each belongs to a theme'} · <Term name="theme">what is a theme?</Term>
        </p>
        <ol class="clusters">{grouped.map(card)}</ol>
        {singles.length ? (
          <details class="singles">
            <summary class="sub-title singles-title">
              {/* On a paged list the count is of the clusters shown, so it says "of them" rather than count the soul's shards. */}
              {report.clusters.length < report.clusterCount
                ? `${singles.length} of them ${singles.length === 1 ? 'resembles' : 'resemble'} nothing else`
                : singles.length === 1
                  ? '1 shard resembles nothing else'
                  : `${singles.length} shards resemble nothing else`}
            </summary>
            <ol class="clusters" start={grouped.length + 1}>
              {singles.map(card)}
            </ol>
          </details>
        ) : null}
      </Panel>
      <Panel title={`Themes (${soul.themes.length})`} id="themes-title">
        <ThemesList soul={soul} onChanged={onChanged} />
      </Panel>
      {report.tensions.length || report.consolidationCandidates.length || report.promotionCandidates.length ? (
        <Panel title="Between the traits" id="pairs-title">
          {report.tensions.length ? (
            <>
              <h3 class="sub-title">Tensions</h3>
              <ul class="pairs">
                {report.tensions.map((pair) => (
                  <li key={`${pair.a.id}-${pair.b.id}`}>
                    <Chip tone="warn">{percent(pair.similarity)}</Chip> “{pair.a.principle}” <em>against</em> “{pair.b.principle}”
                  </li>
                ))}
              </ul>
            </>
          ) : null}
          {report.consolidationCandidates.length ? (
            <>
              <h3 class="sub-title">Consolidation candidates</h3>
              <ul class="pairs">
                {report.consolidationCandidates.map((pair) => (
                  <li key={`${pair.a.id}-${pair.b.id}`}>
                    <Chip tone="info">{percent(pair.similarity)}</Chip> “{pair.a.principle}” + “{pair.b.principle}”
                  </li>
                ))}
              </ul>
            </>
          ) : null}
          {report.promotionCandidates.length ? (
            <>
              <h3 class="sub-title">Promotion candidates</h3>
              <ul class="pairs">
                {report.promotionCandidates.map((candidate) => (
                  <li key={candidate.trait.id}>
                    <Chip tone="good">
                      <Term name="redundancy" /> {percent(soul.traits.find((t) => t.id === candidate.trait.id)?.signals.essenceRedundancy ?? 0)}
                    </Chip>{' '}
                    “{candidate.trait.principle}”
                  </li>
                ))}
              </ul>
            </>
          ) : null}
        </Panel>
      ) : null}
    </>
  );
}

function ClusterCard({ cluster, index, maxWeight, soul, canRefine, onPropose, onChanged }: { cluster: Cluster; index: number; maxWeight: number; soul: EvidenceSoul; canRefine: boolean; onPropose: (p: Proposal) => void; onChanged: () => void }) {
  // A cluster contradicting a trait (a judged theme opposing it) is no support to revise the trait with.
  const aligned = cluster.alignment.kind === 'REINFORCING' && cluster.alignment.trait ? soul.traits.find((t) => t.id === cluster.alignment.trait!.id) : undefined;
  const proposeAdd = () =>
    onPropose({
      kind: 'add',
      principle: '',
      provenance: `${plural(cluster.memberCount, 'shard')} from ${cluster.sources.join(', ')} over ${days(cluster.ageSpanDays)}, e.g. “${cluster.representative.content}”`,
      cite: cluster.members,
      citeIds: cluster.members.map((m) => m.id),
      from: cluster.memberCount === 1 ? 'a single shard' : `cluster ${index + 1}`,
    });
  const judge = cluster.theme ? null : (
    <JudgeCluster soulId={soul.id} members={cluster.members} suggested={cluster.suggestedTheme} themes={soul.themes} label={cluster.representative.content} onChanged={onChanged} />
  );
  if (isSingle(cluster)) {
    return (
      <li class={`cluster cluster--single cluster--${cluster.alignment.kind.toLowerCase()}`} aria-label={`Cluster ${index + 1}: ${cluster.representative.content}`}>
        <blockquote class="cluster__rep">{cluster.representative.content}</blockquote>
        <p class="cluster__meta">
          {cluster.sources.join(', ')} · {ago(cluster.members[0]?.createdAt ?? '')} · <Term name="weight" /> {decimal(cluster.weight)}
        </p>
        <span class="cluster__align">
          {cluster.alignment.kind === 'REINFORCING' ? <Chip tone="good">Reinforces “{cluster.alignment.trait?.principle}”</Chip> : null}
          {cluster.sharedWith.map((shared) => (
            <Chip key={shared.soul.id}>shared with {shared.soul.name}</Chip>
          ))}
        </span>
        <div class="cluster__actions">
          <Button scope="REFINE" variant="quiet" onClick={proposeAdd} disabled={!canRefine || soul.atCapacity} title={soul.atCapacity ? 'At capacity: level up first' : undefined} aria-label={`Propose a trait from the shard: ${cluster.representative.content}`}>
            Propose a trait
          </Button>
          {judge}
        </div>
      </li>
    );
  }
  return (
    <li class={`cluster cluster--${cluster.alignment.kind.toLowerCase()}${cluster.theme ? ' cluster--themed' : ''}`} aria-label={`Cluster ${index + 1}${cluster.theme ? ` (theme ${cluster.theme.name})` : ''}: ${cluster.representative.content}`}>
      {cluster.theme ? <p class="cluster__theme">Theme: {cluster.theme.name}</p> : null}
      <div class="cluster__head">
        <span class="cluster__rank" aria-hidden="true">
          {index + 1}
        </span>
        <div class="cluster__weight" role="meter" aria-label={`Weight ${decimal(cluster.weight)}`} aria-valuemin={0} aria-valuemax={maxWeight} aria-valuenow={cluster.weight} aria-valuetext={decimal(cluster.weight)}>
          <span style={{ width: `${(cluster.weight / Math.max(maxWeight, 1e-9)) * 100}%` }} />
        </div>
        <span class="cluster__weight-value">
          <Term name="weight" /> {decimal(cluster.weight)}
        </span>
      </div>
      <blockquote class="cluster__rep">{cluster.representative.content}</blockquote>
      <p class="cluster__meta">
        {plural(cluster.memberCount, 'shard')} · {cluster.sources.join(', ')} · over {days(cluster.ageSpanDays)} · <Term name="freshness" /> {percent(cluster.freshness)}
      </p>
      <p class="cluster__align">
        {cluster.alignment.kind === 'NOVEL' ? (
          <Chip tone="info">Novel: no trait covers it</Chip>
        ) : cluster.alignment.kind === 'CONTRADICTING' ? (
          <>
            <Chip tone="warn">Contradicts</Chip> “{cluster.alignment.trait?.principle}” <span class="muted">(judged: counter-evidence, never support)</span>
          </>
        ) : (
          <>
            <Chip tone="good">Reinforces</Chip> “{cluster.alignment.trait?.principle}” <span class="muted">({percent(cluster.alignment.similarity)})</span>
          </>
        )}
        {cluster.sharedWith.map((shared) => (
          <Chip key={shared.soul.id} title={`${shared.sharedCount} of these shards are also attributed to ${shared.soul.name}`}>
            shared with {shared.soul.name} {percent(shared.fraction)}
          </Chip>
        ))}
      </p>
      {cluster.memberCount > 1 ? (
        <details class="cluster__members">
          <summary>All {cluster.memberCount} shards</summary>
          <ul>
            {cluster.members.map((m) => (
              <li key={m.id}>
                {m.content} <span class="muted">— {m.source}, {ago(m.createdAt)}</span>
                {cluster.theme ? (
                  <>
                    {' '}
                    <UnassignButton soulId={soul.id} shard={m} onChanged={onChanged} />
                  </>
                ) : null}
              </li>
            ))}
          </ul>
        </details>
      ) : null}
      <div class="cluster__actions">
        <Button scope="REFINE" variant={cluster.alignment.kind === 'NOVEL' ? 'primary' : 'plain'} onClick={proposeAdd} disabled={!canRefine || soul.atCapacity} title={soul.atCapacity ? 'At capacity: level up first' : undefined}>
          Propose a trait from this cluster
        </Button>
        {aligned ? (
          <Button scope="REFINE" variant="quiet" onClick={() => onPropose({ kind: 'revise', trait: aligned, principle: aligned.principle, provenance: `${aligned.provenance} Reinforced by: “${cluster.representative.content}”` })}>
            Revise the trait it reinforces
          </Button>
        ) : null}
        {judge}
      </div>
    </li>
  );
}

function previewVariables(soulId: string, p: Proposal): PreviewTraitChangesQueryVariables | null {
  switch (p.kind) {
    case 'add':
      return p.principle.trim() && p.provenance.trim() ? { soulId, add: [{ principle: p.principle, provenance: p.provenance, citeShardIds: p.citeIds }] } : null;
    case 'revise':
      return p.principle.trim() && p.provenance.trim() ? { soulId, revise: [{ traitId: p.trait.id, principle: p.principle, provenance: p.provenance }] } : null;
    case 'revert':
      return { soulId, revert: [p.trait.id] };
  }
}

function ProposalPanel({ soul, proposal, started, onChange, onConfirmed }: { soul: EvidenceSoul; proposal: Proposal | null; started: number; onChange: (p: Proposal | null) => void; onConfirmed: () => void }) {
  const { notify } = useSession();
  // A proposal started far down the evidence opens here: bring the panel into view and the caret into its first field.
  useEffect(() => {
    const panel = document.getElementById('proposal-title')?.closest<HTMLElement>('.proposal');
    const form = panel?.querySelector<HTMLElement>('.proposal__form');
    if (!started || !panel || !form) return;
    (form.querySelector<HTMLElement>('textarea') ?? form.querySelector<HTMLElement>('.proposal__kind'))?.focus({ preventScroll: true });
    panel.scrollIntoView({ block: 'start', behavior: matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth' });
  }, [started]);
  const [busy, setBusy] = useState(false);
  const variables = proposal ? previewVariables(soul.id, proposal) : null;
  const settled = useDebounced(variables, 250);
  const key = JSON.stringify(settled);
  const preview = useQuery(PreviewTraitChangesDocument, settled ?? { soulId: soul.id }, key, settled === null);
  // Confirm and the preview read one state: the preview answers the proposal as it is now, or Confirm waits and says so.
  const upToDate = preview.dataKey === JSON.stringify(variables);
  const tooLong = proposal && proposal.kind !== 'revert' ? (overBound('Principle', proposal.principle, { maxBytes: bounds.principleBytes }) ?? overBound('Provenance', proposal.provenance, { maxBytes: bounds.provenanceBytes })) : null;
  const refusal = busy
    ? 'Saving the change…'
    : variables === null
      ? 'Write the principle and its provenance first'
      : (tooLong ?? (preview.error && upToDate ? 'The preview refused this change: see the reason above' : preview.error ? 'The preview failed: change the text to try again' : !upToDate ? 'Checking the change as it is now…' : null));

  const confirm = async () => {
    if (!proposal) return;
    setBusy(true);
    try {
      let result: TraitResultFieldsFragment;
      if (proposal.kind === 'add') result = (await request(AddTraitDocument, { soulId: soul.id, input: { principle: proposal.principle, provenance: proposal.provenance, citeShardIds: proposal.citeIds } })).addTrait;
      else if (proposal.kind === 'revise') result = (await request(ReviseTraitDocument, { id: proposal.trait.id, input: { principle: proposal.principle, provenance: proposal.provenance } })).reviseTrait;
      else result = (await request(RevertTraitDocument, { id: proposal.trait.id })).revertTrait;
      if (result.__typename === 'TraitPayload') {
        notify(proposal.kind === 'add' ? `New trait: ${result.trait.principle}` : proposal.kind === 'revise' ? 'Trait revised' : 'Trait reverted', 'success');
        onChange(null);
        onConfirmed();
      } else notify(resultProblem(result), 'error');
    } catch (error) {
      notify(`The change was not made. ${errorText(error)}`, 'error');
    } finally {
      setBusy(false);
    }
  };

  return (
    <Panel title="Proposal" id="proposal-title" class="proposal">
      <ScopeNote scope="REFINE" />
      {!proposal ? (
        <p class="muted">
          Choose one change: <strong>propose a trait</strong> from a cluster of the evidence, or <strong>revise</strong> or <strong>revert</strong> a trait of the soul. Its effect on the rendered block shows here before anything is written.
        </p>
      ) : (
        <form
          class="proposal__form"
          onSubmit={(e) => {
            e.preventDefault();
            void confirm();
          }}
          aria-label="The proposed change"
        >
          <p class="proposal__kind" tabIndex={-1}>
            {proposal.kind === 'add' ? `Add a trait (from ${proposal.from})` : proposal.kind === 'revise' ? 'Revise a trait' : 'Revert a trait'}
          </p>
          {proposal.kind === 'revert' ? (
            <p>
              Revert “{proposal.trait.principle}”: it leaves the rendered block and stays in the history; it can be reactivated later.
            </p>
          ) : (
            <>
              <Area label="Principle" hint="One behavioural principle, in the imperative" value={proposal.principle} onInput={(principle) => onChange({ ...proposal, principle })} required rows={2} maxBytes={bounds.principleBytes} />
              <Area label="Provenance" hint="How it was earned: no provenance, no trait" value={proposal.provenance} onInput={(provenance) => onChange({ ...proposal, provenance })} required rows={3} maxBytes={bounds.provenanceBytes} />
            </>
          )}
          {proposal.kind === 'add' ? (
            <fieldset class="cite">
              <legend>Cite these shards ({proposal.citeIds.length})</legend>
              {proposal.cite.map((shard) => (
                <label key={shard.id} class="cite__item">
                  <input
                    type="checkbox"
                    checked={proposal.citeIds.includes(shard.id)}
                    onChange={(e) => onChange({ ...proposal, citeIds: e.currentTarget.checked ? [...proposal.citeIds, shard.id] : proposal.citeIds.filter((id) => id !== shard.id) })}
                  />
                  <span>
                    {shard.content} <span class="muted">— {shard.source}</span>
                  </span>
                </label>
              ))}
            </fieldset>
          ) : null}
          <h3 class="sub-title">Preview of the rendered block</h3>
          {variables === null ? (
            <p class="muted">Write the principle and its provenance to see the preview.</p>
          ) : preview.error ? (
            <ErrorNote error={preview.error} />
          ) : preview.data ? (
            <div class={upToDate ? '' : 'stale-preview'} aria-busy={!upToDate}>
              <Warnings warnings={preview.data.previewTraitChanges.warnings} label="Warnings about this change" words={(message) => traitNames(message, soul.traits)} />
              <BlockDiff before={preview.data.previewTraitChanges.before} after={preview.data.previewTraitChanges.after} />
            </div>
          ) : (
            <Loading what="the preview" />
          )}
          <div class="form-actions">
            <Button scope="REFINE" variant="primary" onClick={() => void confirm()} disabled={refusal !== null} title={refusal ?? undefined} aria-describedby={refusal !== null ? 'confirm-refusal' : undefined}>
              Confirm
            </Button>
            <Button variant="quiet" onClick={() => onChange(null)}>
              Discard
            </Button>
          </div>
          {refusal !== null ? (
            <p id="confirm-refusal" class="muted form-actions__why">
              {refusal}
            </p>
          ) : null}
        </form>
      )}
    </Panel>
  );
}

