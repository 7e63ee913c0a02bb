import { ValidationError, type CounterCitation } from './errors.ts';
import type { Citation, Soul, Theme, ThemeEvent } from './model.ts';
import { exceedsCodePoints, nameKey, requireId, requireIds, requireText } from './normalize.ts';
import { getCrystallization } from './crystallization.ts';
import type { SoulsDb } from './souls-db.ts';
import type { Awaitable, ThemeAssignmentWrite } from '../store/store.ts';

/** Exactly one of `themeId` (an existing theme of the soul) and `newThemeName` (a theme created by this call). */
/** `opposes`: traits the assignment's theme is then judged against (its members counter-evidence for them), in the same unit of work. */
export type ThemeAssignment = { shardIds: readonly (number | string)[]; themeId?: number | string | null; newThemeName?: string | null; opposes?: readonly (number | string)[] | null };

/** Who made the change: a token's name, 'local', or the refiner soul's slug; recorded with every theme event. */
export type ThemeActorOptions = { actor?: string | null };

/** `readySoulIds`: the soul, when this write made it ready (a theme counts as one cluster: judging can add or remove clusters). */
export type AssignThemesResult = { soul: Soul; themes: Theme[]; readySoulIds: number[] };

/** Recorded when the caller names no actor (the library used directly). */
export const DEFAULT_THEME_ACTOR = 'local';

/** A theme's name is normalized like a trait's principle and bounded like a soul's name. */
export function requireThemeName(db: SoulsDb, field: string, value: unknown): string {
  const name = requireText(field, value, db.settings.maxNameLength * 4);
  if (exceedsCodePoints(name, db.settings.maxNameLength)) throw new ValidationError(field, `must be at most ${db.settings.maxNameLength} characters`);
  return name;
}

function actorOf(options: ThemeActorOptions): string {
  const actor = options.actor?.trim();
  return actor ? actor : DEFAULT_THEME_ACTOR;
}

/** Shard ids, not empty, no repeats; `seen` spans a whole call so one shard is never sent to two themes at once. */
function requireShardIds(db: SoulsDb, field: string, value: unknown, seen: Set<number>): number[] {
  const ids = requireIds(field, value);
  if (ids.length === 0) throw new ValidationError(field, 'must name at least one shard');
  ids.forEach((id, i) => {
    if (seen.has(id)) throw new ValidationError(`${field}[${i}]`, `shard ${id} is named more than once in this call`);
    seen.add(id);
  });
  if (seen.size > db.settings.maxBatchSize) throw new ValidationError(field, `at most ${db.settings.maxBatchSize} shards per call`);
  return ids;
}

export function validThemeAssignments(db: SoulsDb, assignments: readonly ThemeAssignment[]): ThemeAssignmentWrite[] {
  if (!Array.isArray(assignments) || assignments.length === 0) throw new ValidationError('assignments', 'must hold at least one assignment');
  const seen = new Set<number>();
  const names = new Map<string, number>();
  return assignments.map((assignment, i) => {
    const field = `assignments[${i}]`;
    const hasId = assignment.themeId !== undefined && assignment.themeId !== null;
    const hasName = assignment.newThemeName !== undefined && assignment.newThemeName !== null;
    if (hasId === hasName) throw new ValidationError(field, 'give exactly one of themeId and newThemeName');
    const shardIds = requireShardIds(db, `${field}.shardIds`, assignment.shardIds, seen);
    if (hasId) return { shardIds, themeId: requireId(`${field}.themeId`, assignment.themeId), newThemeName: null };
    const newThemeName = requireThemeName(db, `${field}.newThemeName`, assignment.newThemeName);
    const key = nameKey(newThemeName);
    if (names.has(key)) throw new ValidationError(`${field}.newThemeName`, `assignments[${names.get(key)}] already creates a theme named "${newThemeName}"`);
    names.set(key, i);
    return { shardIds, themeId: null, newThemeName };
  });
}

/**
 * The judge's verb (SPEC §12): puts each assignment's shards in its theme, moving any that had another one in this
 * soul, in one unit of work with one recorded event per shard moved. Returns the soul and the assignments' themes,
 * in order. A call that moves no shard and creates no theme is an InvalidStateError; moving a shard a trait cites
 * into a theme opposing that trait is a ValidationError at the shard's field (SPEC §13).
 */
export async function assignThemes(db: SoulsDb, soulId: number | string, assignments: readonly ThemeAssignment[], options: ThemeActorOptions & { dryRun?: boolean } = {}): Promise<AssignThemesResult> {
  const id = requireId('soulId', soulId);
  const writes = validThemeAssignments(db, assignments);
  const opposes = assignments.map((a, i) => (a.opposes ?? []).map((traitId, j) => requireId(`assignments[${i}].opposes[${j}]`, traitId)));
  if (opposes.every((o) => o.length === 0) && !options.dryRun) {
    return judged(db, id, () => db.store.assignThemes(id, writes, actorOf(options), db.clock.now(), db.settings.maxThemesPerSoul));
  }
  const write = () => db.store.judgeThemes(id, writes, opposes, actorOf(options), db.clock.now(), db.settings.maxThemesPerSoul, options.dryRun === true);
  if (options.dryRun) return { soul: (await db.store.getSouls([id])).get(id)!, themes: await write(), readySoulIds: [] };
  return judged(db, id, write);
}

/** Returns the shards to the soul's unjudged pool; shards without a theme are left as they are (none with one: InvalidStateError). Returns the themes they left. */
export async function unassignShards(db: SoulsDb, soulId: number | string, shardIds: readonly (number | string)[], options: ThemeActorOptions = {}): Promise<AssignThemesResult> {
  const id = requireId('soulId', soulId);
  const ids = requireShardIds(db, 'shardIds', shardIds, new Set());
  return judged(db, id, () => db.store.unassignShards(id, ids, actorOf(options), db.clock.now()));
}

/** Runs a change of the soul's assignments and tells whether it made the soul ready (an edge, as a shard write does). */
async function judged(db: SoulsDb, soulId: number, write: () => Awaitable<Theme[]>): Promise<AssignThemesResult> {
  const wasReady = (await getCrystallization(db, [soulId])).get(soulId)?.ready ?? false;
  const themes = await write();
  const ready = !wasReady && (await getCrystallization(db, [soulId])).get(soulId)!.ready;
  return { soul: (await db.store.getSouls([soulId])).get(soulId)!, themes, readySoulIds: ready ? [soulId] : [] };
}

/** Renaming a theme to the name it has (after normalization) is an InvalidStateError: it would change nothing. */
export async function renameTheme(db: SoulsDb, themeId: number | string, name: string, options: ThemeActorOptions = {}): Promise<Theme> {
  const id = requireId('id', themeId);
  return await db.store.renameTheme(id, requireThemeName(db, 'name', name), actorOf(options), db.clock.now());
}

/**
 * The theme's members become counter-evidence for the trait (never reinforcement). Opposing it again is an
 * InvalidStateError (it would change nothing); a theme whose members the trait cites cannot oppose it (SPEC §13).
 */
export async function opposeTrait(db: SoulsDb, themeId: number | string, traitId: number | string, options: ThemeActorOptions = {}): Promise<Theme> {
  return await db.store.setThemeOpposition(requireId('themeId', themeId), requireId('traitId', traitId), true, actorOf(options), db.clock.now());
}

/** Unopposing what the theme does not oppose is an InvalidStateError: it would change nothing. */
export async function unopposeTrait(db: SoulsDb, themeId: number | string, traitId: number | string, options: ThemeActorOptions = {}): Promise<Theme> {
  return await db.store.setThemeOpposition(requireId('themeId', themeId), requireId('traitId', traitId), false, actorOf(options), db.clock.now());
}

export async function getTheme(db: SoulsDb, themeId: number): Promise<Theme | null> {
  return (await db.store.getThemes([themeId])).get(themeId) ?? null;
}

export async function getThemes(db: SoulsDb, themeIds: readonly number[]): Promise<Map<number, Theme>> {
  return await db.store.getThemes(themeIds);
}

/** A soul's themes, oldest first. */
export async function listThemes(db: SoulsDb, soulId: number): Promise<Theme[]> {
  return await db.store.listThemes([soulId]);
}

export async function listThemesOfSouls(db: SoulsDb, soulIds: readonly number[]): Promise<Theme[]> {
  return await db.store.listThemes(soulIds);
}

/** The theme id of each of the shards that is assigned one in that soul. */
export async function getShardThemes(db: SoulsDb, soulId: number, shardIds: readonly number[]): Promise<Map<number, number>> {
  return await db.store.themesOfShards(soulId, shardIds);
}

/** Per trait, the shards judged (through a theme opposing it) to contradict it, ascending. */
export async function getCounterEvidence(db: SoulsDb, traitIds: readonly number[]): Promise<Map<number, number[]>> {
  return await db.store.counterEvidence(traitIds);
}

/** Every recorded theme change of the souls, oldest first: who, when, and what each replaced. */
export async function getThemeHistory(db: SoulsDb, soulIds: readonly number[]): Promise<ThemeEvent[]> {
  return await db.store.themeHistory(soulIds);
}

/** The counter-citations opposing `traitId` with `theme` would make: the trait's citations of its members. */
export function oppositionCounterCitations(theme: Theme, traitId: number, citations: readonly Citation[]): CounterCitation[] {
  const members = new Set(theme.memberIds);
  return citations
    .filter((c) => c.traitId === traitId && members.has(c.shardId))
    .map((c) => ({ themeId: theme.id, themeName: theme.name, opposedTraitId: traitId, citingTraitId: traitId, shardId: c.shardId }));
}

/** The counter-citations moving `shardId` into `theme` would make: citations of it by traits the theme opposes. */
export function assignmentCounterCitations(theme: Theme, shardId: number, citations: readonly Citation[]): CounterCitation[] {
  const opposed = new Set(theme.opposes);
  return citations
    .filter((c) => c.shardId === shardId && opposed.has(c.traitId))
    .map((c) => ({ themeId: theme.id, themeName: theme.name, opposedTraitId: c.traitId, citingTraitId: c.traitId, shardId }));
}
