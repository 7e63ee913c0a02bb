import { NoSchemaIntrospectionCustomRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * Without introspection, no answer may show the schema, whatever the transport:
 * the introspection rule for every validation (useDisableIntrospection keys on
 * the HTTP request, so graphql-ws operations escaped it), and no "Did you mean …?"
 * in any error (graphql-armor's mask misses enum values and variable errors).
 */
export function hidingTheSchema(): Plugin {
  const hide = (errors: readonly unknown[] | undefined) => {
    for (const error of errors ?? []) {
      const e = error as { message?: unknown };
      if (typeof e.message === 'string') e.message = e.message.replace(/\s*Did you mean [^?]*\?/g, ' [Suggestion hidden]');
    }
  };
  const done = ({ result }: { result: unknown }) => {
    if (result && typeof result === 'object' && 'errors' in result) hide((result as { errors?: readonly unknown[] }).errors);
  };
  return {
    onValidate: ({ addValidationRule }) => {
      addValidationRule(NoSchemaIntrospectionCustomRule);
      return ({ result }) => hide(result);
    },
    onExecute: () => ({ onExecuteDone: done }),
    onSubscribe: () => ({ onSubscribeResult: done }),
  };
}
