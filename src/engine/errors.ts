/** Domain errors. Each is data the API returns, never a crash. */
export class SoulsError extends Error {
  override name = 'SoulsError';
}

export class NotFoundError extends SoulsError {
  override name = 'NotFoundError';
  readonly entity: string;
  readonly id: string;
  constructor(entity: string, id: number | string) {
    super(`${entity} ${id} not found`);
    this.entity = entity;
    this.id = String(id);
  }
}

/**
 * `message` says what is wrong ("must not be empty") and never repeats the
 * path: `field` carries it, and clients show their own label for it.
 */
export class ValidationError extends SoulsError {
  override name = 'ValidationError';
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.field = field;
  }
  /** The same error with its field placed under a prefix, e.g. `inputs[2]`. */
  within(prefix: string): ValidationError {
    return new ValidationError(`${prefix}.${this.field}`, this.message);
  }
}

/** "field: message" for a person reading a log or a terminal, where no form shows the field. */
export function describeError(error: unknown): string {
  if (error instanceof ValidationError) return `${error.field}: ${error.message}`;
  if (error instanceof StorageError && error.detail) return `${error.message} (${error.detail})`;
  return error instanceof Error ? error.message : String(error);
}

export class ConflictError extends SoulsError {
  override name = 'ConflictError';
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.field = field;
  }
}

export class CapacityError extends SoulsError {
  override name = 'CapacityError';
  readonly limit: number;
  readonly activeCount: number;
  constructor(limit: number, activeCount: number) {
    super(`soul already has ${activeCount} active traits (limit ${limit}): revert or level up first`);
    this.limit = limit;
    this.activeCount = activeCount;
  }
}

export class InvalidStateError extends SoulsError {
  override name = 'InvalidStateError';
}

export type PlanProblem = { field: string; message: string };

export class LevelUpPlanError extends SoulsError {
  override name = 'LevelUpPlanError';
  readonly missing: number[];
  readonly duplicated: number[];
  readonly notActive: number[];
  readonly problems: PlanProblem[];
  constructor(diff: { missing: number[]; duplicated: number[]; notActive: number[]; problems: PlanProblem[] }) {
    const parts: string[] = [];
    if (diff.missing.length) parts.push(`missing ${diff.missing.join(', ')}`);
    if (diff.duplicated.length) parts.push(`duplicated ${diff.duplicated.join(', ')}`);
    if (diff.notActive.length) parts.push(`not active ${diff.notActive.join(', ')}`);
    for (const p of diff.problems) parts.push(`${p.field}: ${p.message}`);
    super(`invalid level-up plan: ${parts.join('; ')}`);
    this.missing = diff.missing;
    this.duplicated = diff.duplicated;
    this.notActive = diff.notActive;
    this.problems = diff.problems;
  }
}

/**
 * The database file cannot be opened or written: it is missing, damaged, a
 * directory, in a read-only location, its disk is full, or another writer
 * held it past the busy timeout. The message says why; nothing was written.
 */
export type StorageErrorCode = 'STORAGE_FULL' | 'STORAGE_UNAVAILABLE' | 'STORAGE_BUSY';

export class StorageError extends SoulsError {
  override name = 'StorageError';
  readonly code: StorageErrorCode;
  readonly path: string;
  /** For the operator's log only (a driver's message naming the server's address); clients get the message. */
  readonly detail: string | null;
  constructor(code: StorageErrorCode, path: string, message: string, detail: string | null = null) {
    super(message);
    this.code = code;
    this.path = path;
    this.detail = detail;
  }
}
