import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError, currentToken, onReachable, onSocketState, onUnauthenticated, request, setToken, type SocketState } from './api.ts';
import { Glossary } from './glossary.tsx';
import { AppCallerDocument, type AppCallerQuery } from './gql/graphql.ts';
import { href, useRoute } from './hooks.ts';
import { Refinement } from './refine.tsx';
import { Roster } from './roster.tsx';
import { SessionContext, type Session } from './session.ts';
import { Sheet } from './sheet.tsx';
import { ErrorNote, Loading, ProblemNote } from './ui.tsx';
import { Workshop } from './workshop.tsx';

type Toast = { id: number; message: string; tone: 'info' | 'error' | 'success' };

type Boot = { state: 'loading' } | { state: 'ready'; data: AppCallerQuery } | { state: 'token'; rejected: boolean } | { state: 'error'; error: ApiError };

export function App() {
  const [boot, setBoot] = useState<Boot>({ state: 'loading' });
  // One message at a time: a new one replaces the last, so a stale toast never sits over the next message.
  const [toast, setToast] = useState<Toast | null>(null);

  const notify = useCallback((message: string, tone: Toast['tone'] = 'info') => {
    const id = Date.now() + Math.random();
    setToast({ id, message, tone });
    setTimeout(() => setToast((shown) => (shown?.id === id ? null : shown)), tone === 'error' ? 8000 : 4000);
  }, []);

  const load = useCallback(async () => {
    try {
      const data = await request(AppCallerDocument);
      setBoot({ state: 'ready', data });
    } catch (error) {
      const apiError = error instanceof ApiError ? error : new ApiError(String(error), 0);
      if (apiError.unauthenticated) setBoot({ state: 'token', rejected: currentToken() !== null });
      else setBoot({ state: 'error', error: apiError });
    }
  }, []);

  useEffect(() => {
    void load();
    // Any later 401 (a token revoked while the page is open) brings the prompt back.
    return onUnauthenticated(() => setBoot({ state: 'token', rejected: currentToken() !== null }));
  }, [load]);

  const session = useMemo<Session | null>(
    () => (boot.state === 'ready' ? { caller: boot.data.caller, settings: boot.data.settings, usesToken: currentToken() !== null, notify } : null),
    [boot, notify],
  );

  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      {boot.state === 'loading' ? (
        <main id="main" class="page page--center">
          <Loading what="the Souls server" />
        </main>
      ) : boot.state === 'error' ? (
        <main id="main" class="page page--center">
          <ErrorNote error={boot.error} retry={() => void load()} />
        </main>
      ) : boot.state === 'token' ? (
        <TokenPrompt
          rejected={boot.rejected}
          onSubmit={(token) => {
            setToken(token);
            setBoot({ state: 'loading' });
            void load();
          }}
        />
      ) : (
        <SessionContext.Provider value={session}>
          <Shell
            onSignOut={() => {
              setToken(null);
              setBoot({ state: 'loading' });
              void load();
            }}
          />
        </SessionContext.Provider>
      )}
      <div class="toasts" role="status" aria-live="polite">
        {toast ? (
          <p key={toast.id} class={`toast toast--${toast.tone}`}>
            <span>{toast.message}</span>
            <button type="button" class="toast__close" aria-label="Dismiss the message" onClick={() => setToast(null)}>
              ×
            </button>
          </p>
        ) : null}
      </div>
    </>
  );
}

function TokenPrompt({ rejected, onSubmit }: { rejected: boolean; onSubmit: (token: string) => void }) {
  const [value, setValue] = useState('');
  return (
    <main id="main" class="page page--center">
      <div class="token-page">
      <p class="token-brand" aria-hidden="true">
        <span class="brand__sigil" />
        <span class="brand__name">Souls</span>
        <span class="brand__tag">character sheets</span>
      </p>
      <form
        class="panel token-prompt"
        aria-labelledby="token-title"
        onSubmit={(event) => {
          event.preventDefault();
          if (value.trim()) onSubmit(value);
        }}
      >
        <header class="panel__header">
          <h1 id="token-title" class="panel__title">
            A token, traveller
          </h1>
        </header>
        <div class="panel__body">
          <p>This Souls server requires an access token. Ask whoever runs it for one; its scopes decide what this sheet lets you do.</p>
          <ProblemNote problem={rejected ? 'The server did not accept that token. Check it and try again.' : null} />
          <div class="field">
            <label for="token-input">Access token</label>
            <input id="token-input" type="password" autocomplete="current-password" value={value} onInput={(e) => setValue(e.currentTarget.value)} required aria-describedby="token-hint" />
            <small id="token-hint" class="field__hint">
              Kept in this browser's local storage and sent as a bearer token over HTTP and WebSocket.
            </small>
          </div>
          <button type="submit" class="btn btn--primary" disabled={!value.trim()} title={value.trim() ? undefined : 'Paste a token first'}>
            Enter
          </button>
        </div>
      </form>
      </div>
    </main>
  );
}

function Shell({ onSignOut }: { onSignOut: () => void }) {
  const route = useRoute();
  const [socket, setSocket] = useState<SocketState>('closed');
  const [reachable, setReachable] = useState(true);
  useEffect(() => onSocketState(setSocket), []);
  useEffect(() => onReachable(setReachable), []);
  return (
    <>
      <Header connection={reachable ? socket : 'offline'} onSignOut={onSignOut} />
      <main id="main" class="page" tabIndex={-1}>
        {route.screen === 'roster' ? (
          <Roster />
        ) : route.screen === 'sheet' ? (
          <Sheet soulId={route.soulId} key={`sheet-${route.soulId}`} />
        ) : route.screen === 'refine' ? (
          <Refinement soulId={route.soulId} key={`refine-${route.soulId}`} />
        ) : route.screen === 'workshop' ? (
          <Workshop soulId={route.soulId} key={`workshop-${route.soulId}`} />
        ) : (
          <div class="panel">
            <p>
              Nothing lives at <code>{route.hash}</code>. <a href={href.roster()}>Back to the roster</a>.
            </p>
          </div>
        )}
      </main>
    </>
  );
}

type Connection = SocketState | 'offline';

function Header({ connection, onSignOut }: { connection: Connection; onSignOut: () => void }) {
  return (
    <SessionContext.Consumer>
      {(session) =>
        session ? (
          <header class="topbar">
            <a class="brand" href={href.roster()}>
              <span class="brand__sigil" aria-hidden="true" />
              <span class="brand__name">Souls</span>
              <span class="brand__tag">character sheets</span>
            </a>
            <nav aria-label="Main">
              <a href={href.roster()}>Roster</a>
              <Glossary />
            </nav>
            <div class="topbar__who">
              <span class={`live live--${connection}`} title={connectionTitle[connection]}>
                <span class="live__dot" aria-hidden="true" />
                {connectionLabel[connection]}
              </span>
              <span class="who" title={`Scopes: ${session.caller.scopes.join(', ').toLowerCase()}`}>
                <span class="who__name">{session.caller.name}</span>
                <span class="who__scopes">{session.caller.scopes.map((s) => s.toLowerCase()).join(' · ')}</span>
              </span>
              {session.usesToken ? (
                <button type="button" class="btn btn--quiet" onClick={onSignOut}>
                  Forget token
                </button>
              ) : null}
            </div>
          </header>
        ) : null
      }
    </SessionContext.Consumer>
  );
}

const connectionLabel: Record<Connection, string> = { connecting: 'Connecting', live: 'Live', closed: 'Idle', reconnecting: 'Reconnecting', refused: 'Refused', offline: 'Offline' };
const connectionTitle: Record<Connection, string> = {
  connecting: 'Opening the live connection',
  live: 'Live: changes appear as they happen',
  closed: 'No live subscription open',
  reconnecting: 'The live connection dropped: retrying',
  refused: 'The server refused the live connection (token)',
  offline: 'The Souls server cannot be reached: retrying',
};
