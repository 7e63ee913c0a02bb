import { useEffect, useState } from 'preact/hooks';
import type { SoulOrder } from './gql/graphql.ts';
import { orders, orderWords, readRosterParams, rosterHash, type RosterParams } from './roster-params.ts';

/** The params and a setter: typing replaces the history entry, turning a page adds one (so Back turns it back). */
export function useRosterParams(): [RosterParams, (change: Partial<RosterParams>, push?: boolean) => void] {
  const [params, setParams] = useState(() => readRosterParams(location.hash));
  useEffect(() => {
    const update = () => setParams(readRosterParams(location.hash));
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  const change = (next: Partial<RosterParams>, push = false) => {
    const merged = { ...params, ...next };
    const hash = rosterHash(merged);
    if (push) location.hash = hash;
    else history.replaceState(history.state, '', hash);
    setParams(merged);
  };
  return [params, change];
}

export function RosterToolbar({ params, onChange, shown, total }: { params: RosterParams; onChange: (change: Partial<RosterParams>, push?: boolean) => void; shown: number; total: number }) {
  return (
    <div class="roster-tools" role="search" aria-label="The roster">
      <div class="field field--inline field--grow">
        <label for="roster-search">Find</label>
        <input id="roster-search" type="search" value={params.q} placeholder="name or description" onInput={(e) => onChange({ q: e.currentTarget.value, page: 1 })} />
      </div>
      <div class="field field--inline">
        <label for="roster-sort">Sort by</label>
        <select id="roster-sort" value={params.sort} onChange={(e) => onChange({ sort: e.currentTarget.value as SoulOrder, page: 1 })}>
          {orders.map((order) => (
            <option key={order} value={order}>
              {orderWords[order]}
            </option>
          ))}
        </select>
      </div>
      {params.q ? (
        <p class="muted roster-tools__count" aria-live="polite">
          {shown} of {total} awake souls match
        </p>
      ) : null}
    </div>
  );
}

/** Previous / next and where we are; the page is clamped to the ones that exist. */
export function Pager({ page, pages, first, last, total, onPage }: { page: number; pages: number; first: number; last: number; total: number; onPage: (page: number) => void }) {
  if (pages <= 1) return null;
  return (
    <nav class="pager" aria-label="Roster pages">
      <button type="button" class="btn btn--plain" onClick={() => onPage(page - 1)} disabled={page <= 1} title={page <= 1 ? 'This is the first page' : undefined}>
        Previous
      </button>
      <span class="pager__where" aria-live="polite">
        Page {page} of {pages} · souls {first}–{last} of {total}
      </span>
      <button type="button" class="btn btn--plain" onClick={() => onPage(page + 1)} disabled={page >= pages} title={page >= pages ? 'This is the last page' : undefined}>
        Next
      </button>
    </nav>
  );
}
