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

export class ValidationError extends SoulsError {
  override name = 'ValidationError';
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
  /** The same error with its field placed under a prefix, e.g. `inputs[2]`. */
  within(prefix: string): ValidationError {
    return new ValidationError(`${prefix}.${this.field}`, this.message.slice(this.field.length + 2));
  }
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
