import { requireId } from '../src/engine/normalize.ts';
import { NotFoundError } from '../src/engine/errors.ts';

/** A GraphQL ID argument as a row id; anything else is a ValidationError naming the argument. */
export function rowId(field: string, value: string | number): number {
  return requireId(field, value);
}

export function rowIds(field: string, values: readonly (string | number)[]): number[] {
  return values.map((v, i) => requireId(`${field}[${i}]`, v));
}

/** For results that have no ValidationError: a value that cannot be a row id names no row. */
export function existingId(entity: string, value: string | number): number {
  try {
    return requireId('id', value);
  } catch {
    throw new NotFoundError(entity, String(value));
  }
}

/** For nullable lookups: a value that cannot be a row id finds nothing. */
export function lookupId(value: string | number): number | null {
  try {
    return requireId('id', value);
  } catch {
    return null;
  }
}
