import SchemaBuilder from '@pothos/core';
import ErrorsPlugin from '@pothos/plugin-errors';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import { GraphQLError } from 'graphql';
import { mayReadSouls } from '../src/server/auth.ts';
import type { Context } from '../src/server/context.ts';

export const builder = new SchemaBuilder<{
  Context: Context;
  AuthScopes: { read: boolean; observe: boolean; refine: boolean; admin: boolean };
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: number; Output: number };
    ID: { Input: string; Output: string | number };
  };
}>({
  plugins: [ScopeAuthPlugin, ErrorsPlugin],
  defaultFieldNullability: false,
  errors: { defaultTypes: [] },
  scopeAuth: {
    authorizeOnSubscribe: true,
    authScopes: (context) => ({
      read: mayReadSouls(context.caller),
      observe: context.caller.scopes.has('observe'),
      refine: context.caller.scopes.has('refine'),
      admin: context.caller.scopes.has('admin'),
    }),
    unauthorizedError: (_parent, context, info) =>
      new GraphQLError(`the token "${context.caller.name}" may not use ${info.parentType.name}.${info.fieldName}`, { extensions: { code: 'FORBIDDEN' } }),
  },
});

/**
 * For the types that hold what a soul is made of (Soul, Trait, Shard,
 * LevelEvent, EvidenceReport): every field but `id` needs `read`, wherever
 * the object turns up, so a write-only token gets ids from a mutation's
 * payload and nothing it could not read with a query.
 */
export const readBeyondId = { authScopes: { read: true } } as const;
