import { scopes, type Caller } from '../src/server/auth.ts';
import { builder } from './builder.ts';

export const Scope = builder.enumType('Scope', {
  description: 'read: queries and subscriptions; observe: shards; refine: traits and level-ups; admin: souls',
  values: Object.fromEntries(scopes.map((s) => [s.toUpperCase(), { value: s }])) as Record<Uppercase<(typeof scopes)[number]>, { value: (typeof scopes)[number] }>,
});

export const CallerType = builder.objectRef<Caller>('Caller').implement({
  description: 'The token a request runs as ("local" on a server without tokens) and its scopes.',
  fields: (t) => ({
    name: t.exposeString('name'),
    scopes: t.field({ type: [Scope], description: 'at most the four scopes', resolve: (caller) => scopes.filter((s) => caller.scopes.has(s)) }),
  }),
});
