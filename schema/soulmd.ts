import type { ImportPlan } from '../src/interop/import.ts';
import type { Soul as SoulRecord } from '../src/engine/index.ts';
import { ConflictError, ValidationError } from '../src/engine/index.ts';
import { builder } from './builder.ts';
import { errorAsData } from './errors.ts';
import { Soul } from './soul.ts';
import { Trait } from './trait.ts';

type Named<N extends string, T> = T & { __typename: N };

export const SoulMdFormat = builder.enumType('SoulMdFormat', {
  description: 'A SOUL.md convention: OpenClaw (Core Truths, Vibe), soul.md (Who I Am, Worldview) or YAML frontmatter over prose',
  values: ['OPENCLAW', 'SOULMD', 'FRONTMATTER'] as const,
});

export const ImportSoulMdInput = builder.inputType('ImportSoulMdInput', {
  fields: (t) => ({
    text: t.string({ required: true, description: 'the SOUL.md (or frontmatter file) itself' }),
    format: t.field({ type: SoulMdFormat, description: 'null: told apart by frontmatter and headings' }),
    name: t.string({ description: "the soul's name when the text gives none (an OpenClaw SOUL.md keeps it in IDENTITY.md)" }),
    fileName: t.string({ description: 'the file the text came from, for provenance ("imported from SOUL.md:Core Truths"); default SOUL.md' }),
    apply: t.boolean({ defaultValue: false, description: 'false: only the plan; true: create or extend the soul' }),
  }),
});

const NearDuplicate = builder.objectRef<ImportPlan['traits'][number]['nearDuplicates'][number]>('SoulMdNearDuplicate').implement({
  description: "An active trait of the existing soul that a new principle nearly repeats: a warning, the principle is added all the same.",
  fields: (t) => ({
    trait: t.field({ type: Trait, resolve: async (d, _, ctx) => (await ctx.loaders.trait.load(d.traitId))! }),
    principle: t.exposeString('principle', { description: "the existing trait's principle" }),
    similarity: t.exposeFloat('similarity', { description: 'at least the consolidationThreshold, the similarity a level-up consolidation is judged by' }),
  }),
});

const PlannedTrait = builder.objectRef<ImportPlan['traits'][number]>('SoulMdPlannedTrait').implement({
  fields: (t) => ({
    principle: t.exposeString('principle'),
    provenance: t.exposeString('provenance'),
    present: t.exposeBoolean('present', { description: 'the soul already has a trait with this principle: not added again' }),
    nearDuplicates: t.field({
      type: [NearDuplicate],
      description: "the existing soul's active traits this principle nearly repeats, most similar first (empty when it is new or present): at most traitLimit",
      resolve: (p) => p.nearDuplicates,
    }),
  }),
});

const PlannedShard = builder.objectRef<ImportPlan['shards'][number]>('SoulMdPlannedShard').implement({
  fields: (t) => ({
    content: t.exposeString('content'),
    source: t.exposeString('source'),
    createdAt: t.field({ type: 'DateTime', resolve: (s) => s.createdAt }),
    present: t.exposeBoolean('present', { description: 'the soul already has this shard (same source, time and content): not added again' }),
  }),
});

const formatName = (format: ImportPlan['format']) => format.toUpperCase() as 'OPENCLAW' | 'SOULMD' | 'FRONTMATTER';

/** Problems of the files belong to the input field they came from: the text, or the name. */
export function underInputField(field: string): string {
  return field === 'name' || field === 'format' ? `input.${field}` : 'input.text';
}

export const SoulMdImportPlan = builder.objectRef<Named<'SoulMdImportPlan', ImportPlan>>('SoulMdImportPlan').implement({
  description: 'What importing the text would do; nothing was written.',
  fields: (t) => ({
    format: t.field({ type: SoulMdFormat, resolve: (p) => formatName(p.format) }),
    name: t.exposeString('name'),
    description: t.exposeString('description'),
    essence: t.exposeString('essence'),
    existingSoul: t.field({
      type: Soul,
      nullable: true,
      description: 'the soul of that name, which the import would extend; null: it would create one',
      resolve: async (p, _, ctx) => (p.existingSoulId === null ? null : ctx.loaders.soul.load(p.existingSoulId)),
    }),
    merge: t.string({
      nullable: true,
      description: 'null: the import creates the soul; else, in words, how it merges into the existing soul of that name (found by name, what is kept)',
      resolve: (p) => p.merge,
    }),
    problems: t.field({
      type: [ValidationError],
      description: 'what stops the plan from being applied (the trait limit, saying how many traits the soul already has); apply answers the first as a ValidationError. At most one per section of the text',
      resolve: (p) => p.problems.map((e) => errorAsData(new ValidationError(underInputField(e.field), e.message))),
    }),
    traits: t.field({ type: [PlannedTrait], description: 'one per principle of the text (at most one per line)', resolve: (p) => p.traits }),
    shards: t.field({ type: [PlannedShard], description: 'one per observation of the text (at most one per line)', resolve: (p) => p.shards }),
    notes: t.exposeStringList('notes', { description: 'what was read but not imported, and why: at most one per section of the text' }),
  }),
});

export const SoulMdImportPayload = builder
  .objectRef<Named<'SoulMdImportPayload', { plan: Named<'SoulMdImportPlan', ImportPlan>; soul: SoulRecord; created: boolean; traitsAdded: number; shardsAdded: number; readySouls: SoulRecord[] }>>('SoulMdImportPayload')
  .implement({
    description: 'The import was applied.',
    fields: (t) => ({
      plan: t.field({ type: SoulMdImportPlan, resolve: (p) => p.plan }),
      soul: t.field({ type: Soul, resolve: (p) => p.soul }),
      created: t.exposeBoolean('created', { description: 'false: an existing soul of that name was extended' }),
      traitsAdded: t.exposeInt('traitsAdded'),
      shardsAdded: t.exposeInt('shardsAdded'),
      readySouls: t.field({ type: [Soul], description: 'souls this write moved from not-ready to ready: at most the one it wrote', resolve: (p) => p.readySouls }),
    }),
  });

export const ImportSoulMdResult = builder.errorUnion('ImportSoulMdResult', { types: [SoulMdImportPlan, SoulMdImportPayload, ValidationError, ConflictError] });
