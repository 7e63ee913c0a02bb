import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, request } from './api.ts';
import { errorText } from './fields.ts';
import { ago, ageDays, date, plural } from './format.ts';
import {
  CiteShardDocument,
  FadeExhaustedShardsDocument,
  RevealShardsDocument,
  SearchSoulShardsDocument,
  SoulShardsDocument,
  type SheetQuery,
  type ShardRowFragment,
  type ShardStatus,
} from './gql/graphql.ts';
import { useDebounced, useQuery } from './hooks.ts';
import { useCan, useSession } from './session.ts';
import { Button, Chip, ErrorNote, Panel, ScopeNote, why } from './ui.tsx';

type SheetSoul = NonNullable<SheetQuery['soul']>;

/** Shards per page of the sheet's list (well inside the server's query cost limit); "Show more" follows the cursor. */
export const SHARD_PAGE = 200;

type View = 'pending' | 'sealed' | 'faded';
const viewFilter: Record<View, { status: ShardStatus; sealed: boolean | null }> = {
  pending: { status: 'PENDING', sealed: false },
  sealed: { status: 'PENDING', sealed: true },
  faded: { status: 'FADED', sealed: null },
};

type Pages = { items: ShardRowFragment[]; total: number; endCursor: string | null; hasNext: boolean };

/**
 * The soul's shards through the cursor connection: the first page when the filter changes, the next one on
 * `more()`. A refresh (`version`) reloads page by page as many as were shown, so "Show more" is not undone.
 */
function useShardPages(soulId: string, view: View, tag: string, version: number) {
  const [pages, setPages] = useState<Pages | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const shown = useRef(SHARD_PAGE);
  const filterKey = `${soulId}:${view}:${tag}`;
  const lastFilter = useRef(filterKey);
  const generation = useRef(0);

  const fetchPage = useCallback(
    (first: number, after: string | null) =>
      request(SoulShardsDocument, { id: soulId, first, after, tags: tag ? [tag] : null, ...viewFilter[view] }).then((data) => data.soul?.shards ?? null),
    [soulId, view, tag],
  );

  useEffect(() => {
    if (lastFilter.current !== filterKey) {
      lastFilter.current = filterKey;
      shown.current = SHARD_PAGE;
    }
    const mine = ++generation.current;
    const want = shown.current;
    const reload = async (): Promise<Pages | null> => {
      const items: ShardRowFragment[] = [];
      let after: string | null = null;
      for (;;) {
        const page = await fetchPage(SHARD_PAGE, after);
        if (!page) return null;
        items.push(...page.edges.map((e) => e.node));
        after = page.pageInfo.endCursor ?? null;
        if (!page.pageInfo.hasNextPage || items.length >= want || mine !== generation.current) return { items, total: page.totalCount, endCursor: after, hasNext: page.pageInfo.hasNextPage };
      }
    };
    reload()
      .then((pages) => {
        if (mine !== generation.current) return;
        setError(null);
        setPages(pages);
      })
      .catch((caught: unknown) => {
        if (mine === generation.current) setError(caught instanceof ApiError ? caught : new ApiError(String(caught), 0));
      });
  }, [filterKey, version, fetchPage]);

  const more = async () => {
    if (!pages?.hasNext || busy) return;
    const mine = generation.current;
    setBusy(true);
    try {
      const page = await fetchPage(SHARD_PAGE, pages.endCursor);
      if (mine !== generation.current || !page) return;
      const seen = new Set(pages.items.map((s) => s.id));
      const items = [...pages.items, ...page.edges.map((e) => e.node).filter((s) => !seen.has(s.id))];
      shown.current = items.length;
      setPages({ items, total: page.totalCount, endCursor: page.pageInfo.endCursor ?? null, hasNext: page.pageInfo.hasNextPage });
    } catch (caught) {
      setError(caught instanceof ApiError ? caught : new ApiError(String(caught), 0));
    } finally {
      setBusy(false);
    }
  };
  return { pages, error, busy, more };
}

/** Every word of the query appears in the shard (case-insensitive): the search of the sealed and faded lists. */
function matchesWords(shard: ShardRowFragment, query: string): boolean {
  const text = `${shard.content} ${shard.source} ${shard.tags.join(' ')}`.toLowerCase();
  return query
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => text.includes(word));
}

export function ShardsPanel({ soul, version, onChanged, dropForm }: { soul: SheetSoul; version: number; onChanged: () => void; dropForm: ComponentChildren }) {
  const { settings } = useSession();
  const [view, setView] = useState<View>('pending');
  const [tag, setTag] = useState('');
  const [search, setSearch] = useState('');
  const [citing, setCiting] = useState<string | null>(null);
  const query = useDebounced(search.trim(), 250);
  const list = useShardPages(soul.id, view, tag, version);
  // Full-text search (bm25) covers exactly the pending, unsealed list; the other lists are searched word by word.
  const serverSearch = view === 'pending' && query !== '';
  const hits = useQuery(SearchSoulShardsDocument, { soulId: soul.id, query }, `${soul.id}:${query}:${version}`, !serverSearch);
  const shards: ShardRowFragment[] = useMemo(() => {
    if (serverSearch) return (hits.data?.searchShards ?? []).map((h) => h.shard).filter((s) => !tag || s.tags.includes(tag));
    const loaded = list.pages?.items ?? [];
    return query ? loaded.filter((s) => matchesWords(s, query)) : loaded;
  }, [list.pages, hits.data, query, tag, serverSearch]);
  const groups = useMemo(() => {
    const bySource = new Map<string, ShardRowFragment[]>();
    for (const shard of shards) bySource.set(shard.source, [...(bySource.get(shard.source) ?? []), shard]);
    return [...bySource.entries()].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]));
  }, [shards]);
  const total = list.pages?.total ?? 0;
  const loaded = list.pages?.items.length ?? 0;
  const noun = view === 'pending' ? 'pending' : view;
  const filtered = query !== '' || tag !== '';

  return (
    <Panel title={`Pending shards (${soul.pendingShardCount})`} id="shards-title">
      {dropForm}
      <div class="filters filters--shards" role="search">
        <div class="field field--inline">
          <label for="shard-view">Show</label>
          <select id="shard-view" value={view} onChange={(e) => setView(e.currentTarget.value as View)}>
            <option value="pending">Pending ({soul.pendingShardCount})</option>
            <option value="sealed">Sealed ({soul.sealedShards.totalCount})</option>
            <option value="faded">Faded ({soul.fadedShards.totalCount})</option>
          </select>
        </div>
        <div class="field field--inline">
          <label for="shard-tag">Tag</label>
          <select id="shard-tag" value={tag} onChange={(e) => setTag(e.currentTarget.value)}>
            <option value="">All tags</option>
            {soul.shardCountsByTag.map((t) => (
              <option key={t.tag} value={t.tag}>
                {t.tag} ({t.count})
              </option>
            ))}
          </select>
        </div>
        <div class="field field--inline field--grow">
          <label for="shard-search">Search</label>
          <input id="shard-search" type="search" value={search} placeholder="words in the shards" onInput={(e) => setSearch(e.currentTarget.value)} />
        </div>
      </div>
      <ShardTools view={view} shown={shards} onChanged={onChanged} />
      {list.error ? <ErrorNote error={list.error} /> : null}
      <p class="muted shard-count" aria-live="polite">
        {filtered ? `${plural(shards.length, 'shard')} match` : `${plural(total, 'shard')} ${noun}`}
        {!serverSearch && loaded < total ? ` (the newest ${loaded} of ${total} shown${filtered ? ' are searched' : ''})` : ''}
      </p>
      {groups.map(([source, items]) => (
        <section key={source} class="shard-group" aria-label={`Source ${source}`}>
          <h3 class="shard-group__title">
            {source} <span class="muted">· {items.length}</span>
          </h3>
          <ul class="shards">
            {items.map((shard) => (
              <ShardItem
                key={shard.id}
                shard={shard}
                soul={soul}
                fadeAt={settings.shardFadeCitations}
                citing={citing === shard.id}
                onCite={(open) => setCiting(open ? shard.id : null)}
                onChanged={onChanged}
              />
            ))}
          </ul>
        </section>
      ))}
      {!serverSearch && list.pages?.hasNext ? (
        <div class="shard-more">
          <Button variant="plain" onClick={() => void list.more()} disabled={list.busy} title={why([list.busy, 'Loading…'])}>
            Show {Math.min(SHARD_PAGE, total - loaded)} more
          </Button>
          <span class="muted">
            {loaded} of {total} shown
          </span>
        </div>
      ) : null}
    </Panel>
  );
}

/** Panel-wide actions: reveal the sealed shards shown, fade exhausted shards (maintenance across every soul). */
function ShardTools({ view, shown, onChanged }: { view: View; shown: ShardRowFragment[]; onChanged: () => void }) {
  const { notify, settings } = useSession();
  const [busy, setBusy] = useState(false);
  const sealed = shown.filter((s) => s.sealed);
  const reveal = async () => {
    setBusy(true);
    try {
      const { revealShards } = await request(RevealShardsDocument, { ids: sealed.map((s) => s.id) });
      if (revealShards.__typename === 'RevealShardsPayload') notify(revealedMessage(revealShards.shards.length, revealShards.readySouls), 'success');
      else notify(revealShards.message, 'error');
      onChanged();
    } catch (error) {
      notify(`Nothing was revealed. ${errorText(error)}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  const fade = async () => {
    setBusy(true);
    try {
      const { fadeExhaustedShards } = await request(FadeExhaustedShardsDocument);
      notify(fadeExhaustedShards.fadedCount ? `Faded ${plural(fadeExhaustedShards.fadedCount, 'exhausted shard')}` : 'No shard is exhausted: nothing faded', 'success');
      onChanged();
    } catch (error) {
      notify(`Nothing was faded. ${errorText(error)}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="shard-tools">
      {view === 'sealed' ? (
        <>
          <ScopeNote scope="OBSERVE" />
          <Button scope="OBSERVE" onClick={() => void reveal()} disabled={busy || sealed.length === 0} title={why([busy, 'Revealing…'], [sealed.length === 0, 'No sealed shard to reveal'])}>
            Reveal {sealed.length === 1 ? 'this sealed shard' : `these ${sealed.length} sealed shards`}
          </Button>
        </>
      ) : null}
      <Button scope="REFINE" variant="quiet" onClick={() => void fade()} disabled={busy} title={why([busy, 'Fading…'])} aria-describedby="fade-hint">
        Fade exhausted shards
      </Button>
      <small id="fade-hint" class="field__hint">
        Maintenance for every soul: shards cited by {settings.shardFadeCitations} or more traits fade and stop counting as pending evidence.
      </small>
    </div>
  );
}

function revealedMessage(count: number, readySouls: readonly { name: string }[]): string {
  const ready = readySouls.length ? `: ${readySouls.map((s) => s.name).join(', ')} ${readySouls.length === 1 ? 'is' : 'are'} ready to refine` : '';
  return `Revealed ${plural(count, 'shard')}${ready}`;
}

function ageBand(iso: string): string {
  const days = ageDays(iso);
  return days < 3 ? 'fresh' : days < 14 ? 'recent' : days < 45 ? 'old' : 'ancient';
}

function ShardItem({
  shard,
  soul,
  fadeAt,
  citing,
  onCite,
  onChanged,
}: {
  shard: ShardRowFragment;
  soul: SheetSoul;
  fadeAt: number;
  citing: boolean;
  onCite: (open: boolean) => void;
  onChanged: () => void;
}) {
  const { notify } = useSession();
  const [busy, setBusy] = useState(false);
  const exhausted = shard.status === 'PENDING' && shard.citedBy.length >= fadeAt;
  const canObserve = useCan('OBSERVE');
  const canRefine = useCan('REFINE');
  const contentId = `shard-${shard.id}-content`;
  const reveal = async () => {
    setBusy(true);
    try {
      const { revealShards } = await request(RevealShardsDocument, { ids: [shard.id] });
      if (revealShards.__typename === 'RevealShardsPayload') notify(revealedMessage(1, revealShards.readySouls), 'success');
      else notify(revealShards.message, 'error');
      onChanged();
    } catch (error) {
      notify(`Nothing was revealed. ${errorText(error)}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <li class={`shard${shard.sealed ? ' shard--sealed' : ''}${shard.status === 'FADED' ? ' shard--faded' : ''}`} data-shard-id={shard.id}>
      <span class={`age age--${ageBand(shard.createdAt)}`} title={date(shard.createdAt)}>
        {ago(shard.createdAt)}
      </span>
      <span class="shard__content" id={contentId}>
        {shard.content}
      </span>
      {shard.citedBy.length ? (
        <span class="shard__cited" title={`Cited by: ${shard.citedBy.map((t) => t.principle).join(' · ')}`}>
          ✦ {shard.citedBy.length}
        </span>
      ) : null}
      <span class="shard__meta">
        {shard.tags.length ? <span class="shard__tags">{shard.tags.map((t) => `#${t}`).join(' ')}</span> : null}
        {shard.sealed ? (
          <Chip tone="info" title="Hidden from crystallization and reports until revealed">
            sealed
          </Chip>
        ) : null}
        {shard.status === 'FADED' ? <Chip title="Cited by enough traits: no longer pending evidence">faded</Chip> : null}
        {exhausted ? (
          <Chip tone="warn" title={`Cited by ${shard.citedBy.length} traits: “Fade exhausted shards” fades it`}>
            exhausted
          </Chip>
        ) : null}
        <span class="shard__actions">
          {shard.sealed ? (
            <Button scope="OBSERVE" variant="quiet" class="btn--small" onClick={() => void reveal()} disabled={busy} title={why([busy, 'Revealing…'])} {...(canObserve ? { 'aria-describedby': contentId } : {})}>
              Reveal
            </Button>
          ) : null}
          <Button
            scope="REFINE"
            variant="quiet"
            class="btn--small"
            onClick={() => onCite(!citing)}
            disabled={soul.dormant || soul.traits.length === 0}
            title={soul.dormant ? 'The soul is dormant: awaken it first' : soul.traits.length === 0 ? 'No active trait to cite it for' : undefined}
            aria-expanded={citing}
            aria-label="Cite as evidence"
            {...(canRefine ? { 'aria-describedby': contentId } : {})}
          >
            Cite…
          </Button>
        </span>
      </span>
      {citing ? <CiteForm shard={shard} soul={soul} onDone={() => onCite(false)} onChanged={onChanged} /> : null}
    </li>
  );
}

/** Cites the shard as evidence for one of the soul's active traits (citeShard, idempotent per pair). */
function CiteForm({ shard, soul, onDone, onChanged }: { shard: ShardRowFragment; soul: SheetSoul; onDone: () => void; onChanged: () => void }) {
  const { notify } = useSession();
  const citing = new Set(shard.citedBy.map((t) => t.id));
  const choices = soul.traits.filter((t) => !citing.has(t.id));
  const [traitId, setTraitId] = useState(choices[0]?.id ?? '');
  const [busy, setBusy] = useState(false);
  const selectId = `cite-${shard.id}`;
  const cite = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const { citeShard } = await request(CiteShardDocument, { shardId: shard.id, traitId });
      if (citeShard.__typename === 'CiteShardPayload') {
        notify(`Cited as evidence for: ${citeShard.trait.principle}`, 'success');
        onDone();
        onChanged();
      } else notify(citeShard.message, 'error');
    } catch (error) {
      notify(`The shard was not cited. ${errorText(error)}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="cite-form" onSubmit={(e) => void cite(e)} aria-label="Cite this shard">
      {choices.length === 0 ? (
        <p class="muted">Every active trait already cites this shard.</p>
      ) : (
        <div class="field">
          <label for={selectId}>Evidence for the trait</label>
          <select id={selectId} value={traitId} onChange={(e) => setTraitId(e.currentTarget.value)}>
            {choices.map((t) => (
              <option key={t.id} value={t.id}>
                {t.principle}
              </option>
            ))}
          </select>
        </div>
      )}
      <div class="form-actions">
        <button type="submit" class="btn btn--primary btn--small" disabled={busy || !traitId} title={why([busy, 'Citing…'], [!traitId, 'Choose the trait first'])}>
          Cite
        </button>
        <Button variant="quiet" class="btn--small" onClick={onDone}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
