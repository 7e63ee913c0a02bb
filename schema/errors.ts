import {
  CapacityError,
  ConflictError,
  InvalidStateError,
  LevelUpPlanError,
  NotFoundError,
  ValidationError,
} from '../src/engine/index.ts';
import { builder } from './builder.ts';

/**
 * graphql-js takes an Error returned as a field's value for a thrown one, so an
 * error object served by a plain (non-union) field goes out as a copy of its data.
 */
export function errorAsData<E extends Error>(error: E): E {
  return { ...error, message: error.message } as E;
}

/** Domain errors are data: every error type implements Error. */
export const ErrorInterface = builder.interfaceRef<Error>('Error').implement({
  fields: (t) => ({ message: t.exposeString('message') }),
});

builder.objectType(NotFoundError, {
  name: 'NotFoundError',
  interfaces: [ErrorInterface],
  fields: (t) => ({ entity: t.exposeString('entity'), id: t.exposeID('id') }),
});

builder.objectType(ValidationError, {
  name: 'ValidationError',
  description: 'The input named by `field` (a path such as inputs[3].content) is not acceptable; `message` says why, without repeating the path.',
  interfaces: [ErrorInterface],
  fields: (t) => ({ field: t.exposeString('field') }),
});

builder.objectType(ConflictError, {
  name: 'ConflictError',
  interfaces: [ErrorInterface],
  fields: (t) => ({ field: t.exposeString('field') }),
});

builder.objectType(CapacityError, {
  name: 'CapacityError',
  interfaces: [ErrorInterface],
  fields: (t) => ({ limit: t.exposeInt('limit'), activeCount: t.exposeInt('activeCount') }),
});

builder.objectType(InvalidStateError, {
  name: 'InvalidStateError',
  interfaces: [ErrorInterface],
});

builder.objectType(LevelUpPlanError, {
  name: 'LevelUpPlanError',
  description: 'The plan does not account for every active trait exactly once, or has empty texts; nothing was written.',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    missing: t.idList({ description: 'active traits the plan leaves out (at most traitLimit)', resolve: (e) => e.missing }),
    duplicated: t.idList({ description: 'traits listed more than once (at most one per id of the plan)', resolve: (e) => e.duplicated }),
    notActive: t.idList({ description: "unknown ids, another soul's traits, or traits that are not active (at most one per id of the plan)", resolve: (e) => e.notActive }),
    problems: t.field({
      type: [ValidationError],
      description: 'other problems (empty texts, empty groups) as field + message: at most one per item of the plan',
      resolve: (e) => e.problems.map((p) => errorAsData(new ValidationError(p.field, p.message))),
    }),
  }),
});
