import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { AppCallerQuery, Scope } from './gql/graphql.ts';

export type Session = {
  caller: AppCallerQuery['caller'];
  settings: AppCallerQuery['settings'];
  /** True when the server asked for a token (this page holds one). */
  usesToken: boolean;
  /** Shows a short message at the bottom of the screen. */
  notify: (message: string, tone?: 'info' | 'error' | 'success') => void;
};

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside the SessionContext');
  return session;
}

/** What each scope allows, in the words the interface uses when a control is disabled. */
export const scopeNeeds: Record<Scope, string> = {
  READ: 'reading',
  OBSERVE: 'dropping shards',
  REFINE: 'changing traits and levelling up',
  ADMIN: 'creating, retiring and awakening souls',
};

/** Whether the caller's token may do what `scope` allows; the interface disables controls it may not use. */
export function useCan(scope: Scope): boolean {
  return useSession().caller.scopes.includes(scope);
}
