import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, onSocketState, request, subscribe } from './api.ts';

export type QueryState<T> = {
  data: T | null;
  /** The key whose variables `data` answers: a screen compares it with the key it shows, never `loading` (which trails a key change by a render). */
  dataKey: string | null;
  error: ApiError | null;
  loading: boolean;
  /** Fetches again; the current data stays on screen until the answer arrives. */
  refetch: () => Promise<void>;
};

/**
 * Runs a typed query when `key` changes (serialize the variables into it); stale answers are dropped.
 * With `skip` nothing is fetched and the data is null.
 */
export function useQuery<TResult, TVars>(document: TypedDocumentNode<TResult, TVars>, variables: TVars, key: string, skip = false): QueryState<TResult> {
  const [answer, setAnswer] = useState<{ data: TResult | null; key: string | null }>({ data: null, key: null });
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  const variablesRef = useRef(variables);
  variablesRef.current = variables;

  const refetch = useCallback(async () => {
    const mine = ++generation.current;
    if (skip) {
      setAnswer({ data: null, key: null });
      setError(null);
      setLoading(false);
      return;
    }
    setLoading(true);
    try {
      const result = await (request as (d: TypedDocumentNode<TResult, TVars>, v: TVars) => Promise<TResult>)(document, variablesRef.current);
      if (mine !== generation.current) return;
      setAnswer({ data: result, key });
      setError(null);
    } catch (caught) {
      if (mine !== generation.current) return;
      setError(caught instanceof ApiError ? caught : new ApiError(String(caught), 0));
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, [document, key, skip]);

  useEffect(() => {
    void refetch();
  }, [refetch]);

  return { data: answer.data, dataKey: answer.key, error, loading, refetch };
}

/** Calls `onEvent` for every event of a typed subscription while the component is mounted. */
export function useSubscription<TResult, TVars>(document: TypedDocumentNode<TResult, TVars>, variables: TVars, key: string, onEvent: (data: TResult) => void): void {
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => subscribe(document, variables, (data) => handler.current(data)), [document, key]);
}

/**
 * Calls `refetch` when what the live events say may have been missed: the tab comes back into view or focus (a
 * change made by another process, such as an agent attuning over MCP on stdio, publishes no event here), or the live
 * connection is back after a drop.
 */
export function useResync(refetch: () => void): void {
  const latest = useRef(refetch);
  latest.current = refetch;
  useEffect(() => {
    const visible = () => {
      if (document.visibilityState === 'visible') latest.current();
    };
    let dropped = false;
    const stopSocket = onSocketState((state) => {
      if (state === 'reconnecting') dropped = true;
      else if (state === 'live' && dropped) {
        dropped = false;
        latest.current();
      }
    });
    document.addEventListener('visibilitychange', visible);
    addEventListener('focus', visible);
    return () => {
      stopSocket();
      document.removeEventListener('visibilitychange', visible);
      removeEventListener('focus', visible);
    };
  }, []);
}

/** `value`, once it has stopped changing for `ms`. */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/** A function that calls `run` once after calls stop for `ms` (for bursts of subscription events). */
export function useDebouncedCallback(run: () => void, ms: number): () => void {
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const latest = useRef(run);
  latest.current = run;
  useEffect(() => () => {
    if (timer.current) clearTimeout(timer.current);
  }, []);
  return useCallback(() => {
    if (timer.current) clearTimeout(timer.current);
    timer.current = setTimeout(() => latest.current(), ms);
  }, [ms]);
}

/** The current location hash, parsed into a route. */
export type Route =
  | { screen: 'roster' }
  | { screen: 'sheet'; soulId: string }
  | { screen: 'refine'; soulId: string }
  | { screen: 'workshop'; soulId: string }
  | { screen: 'missing'; hash: string };

export function parseRoute(hash: string): Route {
  // The roster keeps its search, order and page after a "?" (see roster-tools.tsx).
  const path = hash.replace(/^#/, '').split('?')[0] || '/';
  if (path === '/' || path === '') return { screen: 'roster' };
  const match = /^\/soul\/(\d+)(?:\/(refine|workshop))?\/?$/.exec(path);
  if (!match) return { screen: 'missing', hash };
  const soulId = match[1];
  if (match[2] === 'refine') return { screen: 'refine', soulId };
  if (match[2] === 'workshop') return { screen: 'workshop', soulId };
  return { screen: 'sheet', soulId };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

export const href = {
  roster: () => '#/',
  sheet: (id: string) => `#/soul/${id}`,
  refine: (id: string) => `#/soul/${id}/refine`,
  workshop: (id: string) => `#/soul/${id}/workshop`,
};

export function navigate(to: string): void {
  if (location.hash !== to) location.hash = to;
}
