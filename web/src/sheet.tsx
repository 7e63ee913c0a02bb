import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { request } from './api.ts';
import { errorText, resultProblem } from './fields.ts';
import { ago, date, decimal, needsText, percent, plural } from './format.ts';
import { Term } from './glossary.tsx';
import {
  AwakenSoulDocument,
  DropShardDocument,
  RevertLevelUpDocument,
  SheetDocument,
  SoulChangedDocument,
  SoulShardDroppedDocument,
  type LevelEventSheetFragment,
  type SheetQuery,
  type SoulCardFragment,
  type TraitSheetFragment,
} from './gql/graphql.ts';
import { href, useDebouncedCallback, useQuery, useSubscription } from './hooks.ts';
import { bounds, tagListLength } from './limits.ts';
import { EssenceDiff } from './essence-diff.tsx';
import { EvidenceChart } from './evidence-chart.tsx';
import { InactiveTraits } from './inactive-traits.tsx';
import { ShardsPanel } from './shard-list.tsx';
import { SoulEditor } from './soul-edit.tsx';
import { ExportSoulMd } from './soulmd.tsx';
import { useCan, useSession } from './session.ts';
import { Button, Chip, ErrorNote, Field, LevelBadge, Loading, Panel, ProblemNote, RenderedBlock, ScopeNote, ShardMarks, useFlash, XpBar, why } from './ui.tsx';

type SheetSoul = NonNullable<SheetQuery['soul']>;

export function Sheet({ soulId }: { soulId: string }) {
  const [full, setFull] = useState(false);
  const sheet = useQuery(SheetDocument, { id: soulId, full }, `${soulId}:${full}`);
  const [shardsVersion, setShardsVersion] = useState(0);
  const refresh = useDebouncedCallback(() => {
    void sheet.refetch();
    setShardsVersion((v) => v + 1);
  }, 120);
  useSubscription(SoulChangedDocument, { soulId }, soulId, refresh);
  useSubscription(SoulShardDroppedDocument, { soulId }, soulId, refresh);

  if (sheet.error && !sheet.data) return <ErrorNote error={sheet.error} retry={() => void sheet.refetch()} />;
  if (!sheet.data) return <Loading what="the character sheet" />;
  const soul = sheet.data.soul;
  if (!soul) {
    return (
      <div class="panel">
        <p>
          There is no soul {soulId}. <a href={href.roster()}>Back to the roster</a>.
        </p>
      </div>
    );
  }
  return (
    <div class="sheet">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href.roster()}>Roster</a> <span aria-hidden="true">›</span> <span aria-current="page">{soul.name}</span>
      </nav>
      <SoulHero soul={soul} onChanged={refresh}>
        <SoulEditor soul={soul} onSaved={refresh} />
      </SoulHero>
      <div class="sheet__grid">
        <div class="sheet__col">
          <Panel title="Rendered identity" id="rendered-title">
            <RenderedBlock text={soul.rendered} full={full} onToggleFull={setFull} />
          </Panel>
          <Panel title={`Traits (${soul.traits.length} / ${soul.traitLimit})`} id="traits-title">
            {soul.traits.length === 0 ? <p class="muted">No active traits yet: refine the soul from its evidence to earn the first.</p> : null}
            <ol class="traits">
              {soul.traits.map((trait) => (
                <TraitEntry key={trait.id} trait={trait} />
              ))}
            </ol>
          </Panel>
          <InactiveTraits soul={soul} traits={soul.inactiveTraits} onChanged={refresh} />
          <Panel title="SOUL.md" id="soulmd-title">
            <ExportSoulMd soulId={soul.id} />
          </Panel>
        </div>
        <div class="sheet__col">
          <Panel title="Level history" id="history-title">
            <Timeline soulId={soul.id} history={soul.levelHistory} onReverted={refresh} />
          </Panel>
          <EvidenceChart soulId={soul.id} version={shardsVersion} />
          <ShardsPanel soul={soul} version={shardsVersion} onChanged={refresh} dropForm={<DropShardForm soul={soul} onDropped={refresh} />} />
        </div>
      </div>
    </div>
  );
}

/** The soul's card, large: badge, XP bar, shard marks, readiness and the ways on. */
export function SoulHero({ soul, onChanged, children }: { soul: SoulCardFragment & { essence?: string }; onChanged?: () => void; children?: ComponentChildren }) {
  const { notify } = useSession();
  const levelled = useFlash(soul.level);
  const { ready } = soul.crystallization;
  const needs = needsText(soul.crystallization.needs);
  const awaken = async () => {
    try {
      const { awakenSoul } = await request(AwakenSoulDocument, { id: soul.id });
      if (awakenSoul.__typename === 'SoulPayload') notify(`${soul.name} awakens`, 'success');
      else notify(awakenSoul.message, 'error');
      onChanged?.();
    } catch (error) {
      notify(`${soul.name} still sleeps. ${errorText(error)}`, 'error');
    }
  };
  return (
    <section class={`hero${ready ? ' hero--ready' : ''}${levelled ? ' hero--levelled' : ''}`} aria-labelledby="hero-name">
      <LevelBadge level={soul.level} size="large" celebrate={levelled} />
      <div class="hero__main">
        <h1 class="hero__name" id="hero-name">
          {soul.name}
          {soul.dormant ? <span class="dormant-tag">Dormant</span> : null}
        </h1>
        <p class="hero__desc">{soul.description}</p>
        {soul.essence ? <p class="hero__essence">{soul.essence}</p> : null}
        {children}
      </div>
      <div class="hero__side">
        <XpBar active={soul.activeTraitCount} limit={soul.traitLimit} />
        <div class="hero__shards">
          <span class="soul-card__label">Pending shards: {soul.pendingShardCount}</span>
          <ShardMarks count={soul.pendingShardCount} ready={ready} unmet={ready ? undefined : needs} />
        </div>
        <p class="hero__status">{ready ? <strong>Ready to refine</strong> : needs ? `Needs ${needs}` : 'Settled'}</p>
        <div class="hero__actions">
          {soul.dormant ? (
            <Button scope="ADMIN" variant="primary" onClick={() => void awaken()}>
              Awaken {soul.name}
            </Button>
          ) : (
            <>
              <a class={`btn ${ready ? 'btn--primary' : 'btn--plain'}`} href={href.refine(soul.id)}>
                Refine
              </a>
              <a class={`btn ${soul.atCapacity ? 'btn--primary' : 'btn--plain'}`} href={href.workshop(soul.id)}>
                Level-up workshop
              </a>
            </>
          )}
        </div>
      </div>
    </section>
  );
}

export function TraitSignals({ trait, staleDays }: { trait: TraitSheetFragment; staleDays?: number }) {
  const s = trait.signals;
  return (
    <span class="signals">
      <Chip tone={s.citationCount > 0 ? 'good' : 'plain'} title="Shards cited as evidence">
        {plural(s.citationCount, 'citation')}
      </Chip>
      <Chip>
        <Term name="density" /> {decimal(s.citationDensity)}
      </Chip>
      {s.stale ? (
        <Chip tone="warn" title={`Unchanged and uncited for ${staleDays ?? 'the stale'} days`}>
          stale
        </Chip>
      ) : null}
      <Chip tone={s.essenceRedundancy >= 0.3 ? 'info' : 'plain'}>
        <Term name="redundancy" /> {percent(s.essenceRedundancy)}
      </Chip>
      <Chip>
        <Term name="gen" /> {trait.generation}
      </Chip>
    </span>
  );
}

function TraitEntry({ trait }: { trait: TraitSheetFragment }) {
  const { settings } = useSession();
  return (
    <li class="trait" data-trait-id={trait.id}>
      <p class="trait__principle">{trait.principle}</p>
      <TraitSignals trait={trait} staleDays={settings.staleDays} />
      <details class="trait__provenance">
        <summary>Provenance and citations</summary>
        <p>{trait.provenance}</p>
        {trait.citations.length ? (
          <ul class="citations">
            {trait.citations.map((shard) => (
              <li key={shard.id}>
                <q>{shard.content}</q> <span class="muted">— {shard.source}, {ago(shard.createdAt)}</span>
              </li>
            ))}
          </ul>
        ) : (
          <p class="muted">No shard cited yet.</p>
        )}
        <p class="muted">Earned {date(trait.createdAt)}</p>
      </details>
    </li>
  );
}

function Timeline({ soulId, history, onReverted }: { soulId: string; history: readonly LevelEventSheetFragment[]; onReverted: () => void }) {
  const { notify } = useSession();
  const [confirming, setConfirming] = useState(false);
  const latest = [...history].reverse().find((e) => !e.revertedAt) ?? null;
  const revert = async () => {
    setConfirming(false);
    try {
      // The shown latest event's id: a stale page or a double click is refused instead of reverting the level-up before it.
      const { revertLevelUp } = await request(RevertLevelUpDocument, { soulId, levelEventId: latest?.id ?? null });
      if (revertLevelUp.__typename === 'RevertLevelUpPayload') notify(`Level-up reverted: back to level ${revertLevelUp.soul.level}`, 'success');
      else notify(revertLevelUp.message, 'error');
      onReverted();
    } catch (error) {
      notify(`The level-up was not reverted. ${errorText(error)}`, 'error');
    }
  };
  if (history.length === 0) return <p class="muted">No level-up yet. When the traits fill the bar, consolidate them in the workshop.</p>;
  return (
    <ol class="timeline">
      {[...history].reverse().map((event) => (
        <li key={event.id} class={`timeline__event${event.revertedAt ? ' timeline__event--reverted' : ''}`} data-event-id={event.id}>
          <span class="timeline__node" aria-hidden="true">
            {event.level}
          </span>
          <div class="timeline__card">
            <h3 class="timeline__title">
              Level {event.level - 1} → {event.level}
              <span class="muted"> · {date(event.createdAt)}</span>
              {event.revertedAt ? <span class="reverted-tag">Reverted {date(event.revertedAt)}</span> : null}
            </h3>
            <p class="timeline__counts">
              {plural(event.consolidated.length, 'trait')} consolidated{event.merged.length ? ` into ${event.merged.length}` : ''} · {event.promoted.length} promoted · {event.carried.length} carried
            </p>
            {event.merged.length ? (
              <ul class="timeline__list" aria-label="Merged principles">
                {event.merged.map((t) => (
                  <li key={t.id}>⟡ {t.principle}</li>
                ))}
              </ul>
            ) : null}
            {event.promoted.length ? (
              <ul class="timeline__list" aria-label="Promoted into the essence">
                {event.promoted.map((t) => (
                  <li key={t.id}>↑ {t.principle}</li>
                ))}
              </ul>
            ) : null}
            <details class="timeline__essence">
              <summary>Essence before and after (changes marked)</summary>
              <EssenceDiff before={event.essenceBefore} after={event.essenceAfter} />
            </details>
            {latest && event.id === latest.id ? (
              confirming ? (
                <span class="confirm">
                  <Button scope="REFINE" variant="danger" onClick={() => void revert()}>
                    Revert to level {event.level - 1}
                  </Button>
                  <Button variant="quiet" onClick={() => setConfirming(false)}>
                    Keep it
                  </Button>
                </span>
              ) : (
                <Button scope="REFINE" variant="quiet" onClick={() => setConfirming(true)}>
                  Revert this level-up
                </Button>
              )
            ) : null}
          </div>
        </li>
      ))}
    </ol>
  );
}

function DropShardForm({ soul, onDropped }: { soul: SheetSoul; onDropped: () => void }) {
  const { notify } = useSession();
  const can = useCan('OBSERVE');
  const [open, setOpen] = useState(false);
  const [content, setContent] = useState('');
  const [source, setSource] = useState('manual_reflection');
  const [tags, setTags] = useState('');
  // Empty means now; an earlier day records evidence gathered before (readiness wants it spread over more than a day).
  const [observed, setObserved] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const { dropShard } = await request(DropShardDocument, {
        input: {
          content,
          source,
          soulIds: [soul.id],
          tags: tags
            .split(',')
            .map((t) => t.trim())
            .filter(Boolean),
          createdAt: observedAt(observed),
        },
      });
      if (dropShard.__typename === 'DropShardPayload') {
        notify(dropShard.readySouls.length ? `Shard dropped: ${soul.name} is ready to refine` : 'Shard dropped', 'success');
        setContent('');
        setProblem(null);
        onDropped();
      } else setProblem(resultProblem(dropShard, { createdAt: 'Observed on' }));
    } catch (error) {
      setProblem(`The shard was not dropped. ${errorText(error)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="drop">
      <ScopeNote scope="OBSERVE" />
      <Button scope="OBSERVE" variant="quiet" onClick={() => setOpen((o) => !o)} aria-expanded={open} aria-controls="drop-shard">
        {open ? 'Close' : 'Drop a shard'}
      </Button>
      {open ? (
        <form id="drop-shard" class="drop__form" onSubmit={(e) => void submit(e)} aria-label="Drop a shard">
          <Field label="Observation" value={content} onInput={setContent} required disabled={!can} placeholder="What the soul did or said" maxBytes={bounds.shardContentBytes} />
          <div class="form-row">
            <Field label="Source" value={source} onInput={setSource} required disabled={!can} list="shard-sources" hint="The evidence channel" maxLength={bounds.sourceLength} />
            <datalist id="shard-sources">
              {soul.shardCountsBySource.map((s) => (
                <option key={s.source} value={s.source} />
              ))}
            </datalist>
            <Field label="Tags" value={tags} onInput={setTags} disabled={!can} hint={`Comma-separated; up to ${bounds.tagsPerShard} tags of ${bounds.tagLength} characters`} maxLength={tagListLength} />
            <Field label="Observed on" type="date" value={observed} onInput={setObserved} disabled={!can} max={localDay(new Date())} hint="Leave empty for now; an earlier day records past evidence" />
          </div>
          <ProblemNote problem={problem} />
          <button type="submit" class="btn btn--primary" disabled={!can || busy || !content.trim() || !source.trim()} title={why([!can, 'Your token has no observe scope'], [busy, 'Dropping the shard…'], [!content.trim(), 'Write the observation first'], [!source.trim(), 'Name its source first'])}>
            Drop shard
          </button>
        </form>
      ) : null}
    </div>
  );
}

/** YYYY-MM-DD of `when` in this browser's time zone (a date input's value). */
function localDay(when: Date): string {
  return `${when.getFullYear()}-${String(when.getMonth() + 1).padStart(2, '0')}-${String(when.getDate()).padStart(2, '0')}`;
}

/** A day picked in the date input, as an instant (noon of that day here); none, or today, is left to the server's now. */
function observedAt(day: string): string | null {
  if (!day || day >= localDay(new Date())) return null;
  const [y, m, d] = day.split('-').map(Number);
  return new Date(y, m - 1, d, 12).toISOString();
}
