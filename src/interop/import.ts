/**
 * Importing a SOUL.md workspace: a plan first (what would be created, what is already there), then, when asked,
 * the writes through the engine's public functions. Re-importing the same files finds the soul by name, its
 * traits by principle and its shards by (source, day, content), so nothing is created twice. The main file itself
 * is stored with the soul (per convention, replacing the one an earlier import stored), so an export anywhere
 * keeps the sections Souls does not own (SPEC §12).
 */
import {
  addTrait,
  cleanText,
  createSoul,
  dropShards,
  getSoulByName,
  listShards,
  listTraits,
  MAX_DOCUMENT_BYTES,
  normalizeContent,
  storeSoulDocument,
  textSimilarity,
  ValidationError,
  type Soul,
  type SoulsDb,
} from '../engine/index.ts';
import { readSoulMd, type Files, type ImportedShard, type ImportedTrait, type SoulMdFormat } from './document.ts';
import { conventions, detectFormat, type FormatChoice } from './formats.ts';
import { plainText } from './markdown.ts';
import { mainFileOf } from './openclaw.ts';

/** An active trait of the existing soul that a new principle nearly repeats (the similarity level-up consolidation uses). */
export type NearDuplicate = { traitId: number; principle: string; similarity: number };
export type PlannedTrait = ImportedTrait & { present: boolean; nearDuplicates: NearDuplicate[] };
export type PlannedShard = ImportedShard & { present: boolean };

export type ImportPlan = {
  format: SoulMdFormat;
  mainFile: string;
  name: string;
  description: string;
  essence: string;
  /** The soul of that name already in the database, or null: then the import creates it. */
  existingSoulId: number | null;
  /** How the import merges into the existing soul, in words; null when it creates the soul. */
  merge: string | null;
  traits: PlannedTrait[];
  shards: PlannedShard[];
  notes: string[];
  /** What stops the plan from being applied (the trait limit); applying throws the first. */
  problems: ValidationError[];
  /** The main file as read: stored with the soul when the plan is applied. */
  document: { file: string; text: string };
};

export type ImportResult = { soul: Soul; created: boolean; traitIds: number[]; shardIds: number[]; readySoulIds: number[] };

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

function bounded(field: string, text: string, max: number): void {
  if (bytes(text) > max) throw new ValidationError(field, `must be at most ${max} bytes (it has ${bytes(text)})`);
}

const shardKey = (s: { source: string; createdAt: number; content: string }) => `${cleanText(s.source).trim()}\u0000${s.createdAt}\u0000${normalizeContent(s.content)}`;

/** Every shard of the soul, whatever its status or age: what a re-import compares against. */
async function existingShardKeys(db: SoulsDb, soulId: number): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const status of ['pending', 'faded'] as const) {
    let after: string | null = null;
    do {
      const page = await listShards(db, { soulId, status, includeExpired: true, first: 500, after });
      for (const shard of page.items) counts.set(shardKey(shard), (counts.get(shardKey(shard)) ?? 0) + 1);
      after = page.hasNextPage ? page.endCursor : null;
    } while (after !== null);
  }
  return counts;
}

/**
 * What importing these files would do. Every text is checked against the engine's bounds here, before anything is
 * written, so an import that passes its plan does not stop half-way; errors name the file and heading.
 */
export async function planImport(db: SoulsDb, files: Files, options: { format?: FormatChoice; name?: string | null } = {}): Promise<ImportPlan> {
  // Before anything reads it: a main file over the bound is refused without being parsed.
  const mainFile = mainFileOf(files);
  const document = { file: mainFile, text: files.get(mainFile) ?? '' };
  bounded(mainFile, document.text, MAX_DOCUMENT_BYTES);
  if (document.text.includes('\0')) throw new ValidationError(mainFile, 'holds NUL characters: not a text file');
  const format = !options.format || options.format === 'auto' ? detectFormat(files) : options.format;
  const read = readSoulMd(conventions[format], files);
  const name = cleanText(options.name ?? read.name ?? '').trim();
  if (name === '') throw new ValidationError('name', `${read.mainFile} names no soul (${format === 'openclaw' ? 'IDENTITY.md has no Name' : format === 'soulmd' ? 'no "# Name" title' : 'no name key'}): give one with --name`);
  if ([...name].length > db.settings.maxNameLength) throw new ValidationError('name', `must be at most ${db.settings.maxNameLength} characters`);
  if (/[\r\n]/.test(name)) throw new ValidationError('name', 'must be one line');
  const settings = db.settings;
  bounded(`${read.mainFile}: description`, read.description, settings.maxDescriptionBytes);
  bounded(`${read.mainFile}: essence`, read.essence, settings.maxEssenceBytes);

  const existing = await getSoulByName(db, name);
  if (existing && existing.deletedAt !== null) throw new ValidationError('name', `the soul "${existing.name}" is dormant: awaken it before importing into it`);
  if (!existing && read.essence === '') throw new ValidationError('essence', `${read.mainFile} has no essence (the "${conventions[format].essenceHeadings[0]}" section is missing or empty)`);

  const notes = [...read.notes];
  const known = existing ? await listTraits(db, existing.id, { status: null }) : [];
  const knownPrinciples = new Set(known.map((t) => plainText(t.principle)));
  const seen = new Set<string>();
  const traits: PlannedTrait[] = [];
  for (const trait of read.traits) {
    const key = plainText(trait.principle);
    if (seen.has(key)) {
      notes.push(`${trait.provenance.replace(/^imported from /, '')}: "${key.slice(0, 60)}" appears twice, imported once`);
      continue;
    }
    seen.add(key);
    bounded(`${trait.provenance.replace(/^imported from /, '')}: principle "${key.slice(0, 40)}…"`, trait.principle, settings.maxPrincipleBytes);
    traits.push({ ...trait, present: knownPrinciples.has(key), nearDuplicates: [] });
  }
  const activeTraits = known.filter((t) => t.status === 'active');
  const adding = traits.filter((t) => !t.present).length;
  // Each new principle is compared with each active trait: only while the file's new ones fit the limit, so the
  // work stays bounded by the settings, not by the file (a file over the limit must be cut first: its problem says so).
  const compared = adding <= settings.traitLimit ? traits : [];
  if (existing && compared.length === 0 && adding > 0) notes.push(`${read.mainFile} adds ${adding} new traits, more than the trait limit of ${settings.traitLimit} alone: near-duplicates of the existing traits are looked for once it adds at most ${settings.traitLimit}`);
  for (const trait of compared) {
    if (trait.present) continue;
    trait.nearDuplicates = activeTraits
      .map((t) => ({ traitId: t.id, principle: t.principle, similarity: textSimilarity(settings.similarity, trait.principle, t.principle) }))
      .filter((d) => d.similarity >= settings.consolidationThreshold)
      .sort((a, b) => b.similarity - a.similarity || a.traitId - b.traitId);
  }
  const active = activeTraits.length;
  const problems: ValidationError[] = [];
  if (active + adding > settings.traitLimit) {
    const advice = `a soul keeps few principles: merge or drop some in the file${existing ? `, level up "${existing.name}" first` : ''}, or raise --trait-limit`;
    problems.push(
      new ValidationError(
        'traits',
        existing
          ? `"${existing.name}" already has ${active} active trait${active === 1 ? '' : 's'} and ${read.mainFile} adds ${adding} new one${adding === 1 ? '' : 's'}: ${active + adding} in all, over the trait limit of ${settings.traitLimit} (${advice})`
          : `${read.mainFile} has ${adding} traits, over the trait limit of ${settings.traitLimit} (${advice})`,
      ),
    );
  }

  const now = db.clock.now();
  const present = existing ? await existingShardKeys(db, existing.id) : new Map<string, number>();
  const shards: PlannedShard[] = [];
  for (const shard of read.shards) {
    const content = normalizeContent(shard.content);
    if (content === '') continue;
    bounded(`${shard.source}: entry "${content.slice(0, 40)}…"`, content, settings.maxShardContentBytes);
    if (shard.createdAt > now) throw new ValidationError(`${shard.source}`, `is dated ${new Date(shard.createdAt).toISOString().slice(0, 10)}, in the future`);
    const key = shardKey(shard);
    const left = present.get(key) ?? 0;
    if (left > 0) present.set(key, left - 1);
    shards.push({ ...shard, content, present: left > 0 });
  }
  if (existing && cleanText(existing.essence).trim() !== read.essence && read.essence !== '') notes.push(`the essence of "${existing.name}" differs from ${read.mainFile}; the soul's is kept (a level-up or updateSoul changes it)`);
  const merge = existing
    ? `merges into the existing soul "${existing.name}" (id ${existing.id}), found by name: it keeps its name, description and essence and its ${active} active trait${active === 1 ? '' : 's'}; only the traits and shards it does not have are added`
    : null;
  return { format, mainFile: read.mainFile, name, description: read.description, essence: read.essence, existingSoulId: existing?.id ?? null, merge, traits, shards, notes, problems, document };
}

/** Writes what the plan marks new. `onShards` reports progress through the shards, which can be many. */
export async function applyImport(db: SoulsDb, plan: ImportPlan, onShards?: (done: number, total: number) => void): Promise<ImportResult> {
  if (plan.problems.length > 0) throw plan.problems[0];
  const created = plan.existingSoulId === null;
  const soul = created ? await createSoul(db, { name: plan.name, essence: plan.essence, description: plan.description }) : (await getSoulByName(db, plan.name))!;
  const traitIds: number[] = [];
  for (const trait of plan.traits.filter((t) => !t.present)) traitIds.push((await addTrait(db, soul.id, { principle: trait.principle, provenance: trait.provenance })).id);
  await storeSoulDocument(db, soul.id, { format: plan.format, file: plan.document.file, text: plan.document.text });
  const fresh = plan.shards.filter((s) => !s.present);
  const shardIds: number[] = [];
  const ready = new Set<number>();
  // Batches of a few hundred: each is one transaction, and progress moves between them.
  const batch = Math.min(db.settings.maxBatchSize, 500);
  onShards?.(0, fresh.length);
  for (let i = 0; i < fresh.length; i += batch) {
    const chunk = fresh.slice(i, i + batch).map((s) => ({ content: s.content, source: s.source, soulIds: [soul.id], createdAt: s.createdAt }));
    const written = await dropShards(db, chunk);
    shardIds.push(...written.shardIds);
    for (const id of written.readySoulIds) ready.add(id);
    onShards?.(Math.min(fresh.length, i + batch), fresh.length);
  }
  return { soul, created, traitIds, shardIds, readySoulIds: [...ready] };
}
