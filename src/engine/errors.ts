/** Domain errors, and the refusals the rules give in their words. Each is data the API returns, never a crash. */
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

// Refusals of judgements (SPEC §13), checked by the stores inside each write and by the dry runs, in the same words.

/** `citingTraitId` cites `shardId`, a member of theme `themeId`, which opposes `opposedTraitId`. */
export type CounterCitation = { themeId: number; themeName: string; opposedTraitId: number; citingTraitId: number; shardId: number };

type CounterGroup = { themeId: number; themeName: string; opposedTraitId: number; citingTraitId: number; shardIds: number[] };

/** The rows by theme, opposed trait and citing trait (in that order, ascending), each with its shards ascending. */
function grouped(rows: readonly CounterCitation[]): CounterGroup[] {
  const groups = new Map<string, CounterGroup>();
  const sorted = [...rows].sort((a, b) => a.themeId - b.themeId || a.opposedTraitId - b.opposedTraitId || a.citingTraitId - b.citingTraitId || a.shardId - b.shardId);
  for (const { shardId, ...row } of sorted) {
    const key = `${row.themeId}:${row.opposedTraitId}:${row.citingTraitId}`;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { ...row, shardIds: [shardId] });
    else if (group.shardIds.at(-1) !== shardId) group.shardIds.push(shardId);
  }
  return [...groups.values()];
}

const shardList = (ids: readonly number[]) => (ids.length === 1 ? `shard ${ids[0]}` : `shards ${ids.join(', ')}`);
const themeLabel = (g: { themeId: number; themeName: string }) => `theme "${g.themeName}" (#${g.themeId})`;

/** Citing shards of a theme that opposes the citing trait (citeShard, citeShards). */
export function citedCounterEvidence(field: string, rows: readonly CounterCitation[]): ValidationError {
  const what = grouped(rows).map((g) => `${shardList(g.shardIds)} ${g.shardIds.length === 1 ? 'is a member' : 'are members'} of ${themeLabel(g)}, which opposes trait ${g.opposedTraitId}`);
  return new ValidationError(field, `${what.join('; ')}: judged counter-evidence is never support (cite other shards, or unoppose the theme first)`);
}

/** Opposing a trait with a theme whose members it cites (a wrong id, most likely). */
export function opposedSupport(field: string, rows: readonly CounterCitation[]): ValidationError {
  const what = grouped(rows).map((g) => `trait ${g.citingTraitId} cites ${shardList(g.shardIds)} of ${themeLabel(g)}`);
  return new ValidationError(field, `${what.join('; ')}: a theme whose members a trait cites cannot oppose it (check the trait id, or take those citations back first)`);
}

/** Moving a shard a trait cites into a theme that opposes that trait. */
export function assignedSupport(field: string, rows: readonly CounterCitation[]): ValidationError {
  const what = grouped(rows).map((g) => `trait ${g.citingTraitId} cites ${shardList(g.shardIds)}, and ${themeLabel(g)} opposes it`);
  return new ValidationError(field, `${what.join('; ')}: judged counter-evidence is never support (take the citation back or unoppose the theme first, or choose another theme)`);
}

/**
 * Consolidations whose merged trait would cite counter-evidence: it starts with its sources' citations and with the
 * themes opposing any of them, so one source citing members of a theme that opposes another is refused. `rows` are
 * counter-citations among the plan's source traits (opposed and citing both sources).
 */
export function consolidationConflicts(consolidations: ReadonlyArray<{ sourceTraitIds: readonly number[] }>, rows: readonly CounterCitation[]): PlanProblem[] {
  return consolidations.flatMap((group, i) => {
    const sources = new Set(group.sourceTraitIds);
    const within = grouped(rows.filter((r) => sources.has(r.opposedTraitId) && sources.has(r.citingTraitId)));
    if (within.length === 0) return [];
    const what = within.map((g) => `${themeLabel(g)} opposes trait ${g.opposedTraitId}, and trait ${g.citingTraitId} cites its ${g.shardIds.length === 1 ? 'member' : 'members'} ${g.shardIds.join(', ')}`);
    return [{ field: `consolidations[${i}].sourceTraitIds`, message: `${what.join('; ')}: the merged trait would cite judged counter-evidence (consolidate them apart, or take those citations back first)` }];
  });
}

// A write that changes nothing is refused (SPEC §13), as a level-up plan that changes nothing is (§12).

export function alreadyOpposed(themeId: number, traitId: number): InvalidStateError {
  return new InvalidStateError(`theme ${themeId} already opposes trait ${traitId}: nothing to change`);
}

export function notOpposed(themeId: number, traitId: number): InvalidStateError {
  return new InvalidStateError(`theme ${themeId} does not oppose trait ${traitId}: nothing to take back`);
}

export function alreadyNamed(themeId: number, name: string): InvalidStateError {
  return new InvalidStateError(`theme ${themeId} is already named "${name}": nothing to change`);
}

/** Every shard an assignment names is in that theme already (`placed`: shard ids by theme id). */
export function alreadyAssigned(placed: ReadonlyMap<number, readonly number[]>): InvalidStateError {
  const where = [...placed].sort((a, b) => a[0] - b[0]).map(([themeId, ids]) => `${shardList([...ids].sort((a, b) => a - b))} ${ids.length === 1 ? 'is' : 'are'} in theme ${themeId} already`);
  return new InvalidStateError(`${where.join('; ')}: nothing to change`);
}

export function nothingToUnassign(soulId: number, shardIds: readonly number[]): InvalidStateError {
  return new InvalidStateError(`${shardList(shardIds)} ${shardIds.length === 1 ? 'has' : 'have'} no theme in soul ${soulId}: nothing to unassign`);
}

/**
 * Like the trait limit: a judgement that would give the soul more than `limit` themes writes nothing. Checked inside
 * the store's unit of work, after the soul is locked, so two judgements at once cannot pass it together.
 */
export function refuseThemesPastLimit(held: number, limit: number, newThemeNames: ReadonlyArray<string | null>): void {
  let count = held;
  for (const [i, name] of newThemeNames.entries()) {
    if (name === null || ++count <= limit) continue;
    throw new ValidationError(
      `assignments[${i}].newThemeName`,
      `the soul has ${held} themes and may hold at most ${limit} (maxThemesPerSoul): assign to an existing theme (themeId) or rename one, or raise maxThemesPerSoul`,
    );
  }
}
