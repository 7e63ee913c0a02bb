import { builder } from './builder.ts';

export const CreateSoulInput = builder.inputType('CreateSoulInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    slug: t.string(),
    essence: t.string({ required: true, description: 'the narrative identity core, as prose' }),
    description: t.string({ description: 'a short summary for listings and cards' }),
  }),
});

export const UpdateSoulInput = builder.inputType('UpdateSoulInput', {
  description: 'Administrative escape hatch: overwrites fields directly, bypassing evolution.',
  fields: (t) => ({ name: t.string(), slug: t.string(), essence: t.string(), description: t.string() }),
});

export const AddTraitInput = builder.inputType('AddTraitInput', {
  fields: (t) => ({
    principle: t.string({ required: true }),
    provenance: t.string({ required: true, description: 'how the trait was earned: no provenance, no trait' }),
    citeShardIds: t.idList({ description: 'shards to cite as evidence, in the same write' }),
  }),
});

export const ReviseTraitInput = builder.inputType('ReviseTraitInput', {
  fields: (t) => ({ principle: t.string(), provenance: t.string() }),
});

export const TraitRevisionInput = builder.inputType('TraitRevisionInput', {
  fields: (t) => ({ traitId: t.id({ required: true }), principle: t.string(), provenance: t.string() }),
});

export const ConsolidationInput = builder.inputType('ConsolidationInput', {
  fields: (t) => ({
    sourceTraitIds: t.idList({ required: true }),
    mergedPrinciple: t.string({ required: true }),
    mergedProvenance: t.string({ required: true }),
  }),
});

export const LevelUpPlanInput = builder.inputType('LevelUpPlanInput', {
  description: 'Every active trait must appear exactly once across consolidations, promotions and carries.',
  fields: (t) => ({
    newEssence: t.string({ required: true }),
    consolidations: t.field({ type: [ConsolidationInput], required: true }),
    promotedTraitIds: t.idList({ required: true }),
    carriedTraitIds: t.idList({ required: true }),
  }),
});

export const ThemeAssignmentInput = builder.inputType('ThemeAssignmentInput', {
  description: 'exactly one of themeId and newThemeName',
  fields: (t) => ({
    shardIds: t.idList({ required: true }),
    themeId: t.id({ description: 'an existing theme of the soul' }),
    newThemeName: t.string({ description: 'creates a theme of that name (refused when the soul already has one)' }),
  }),
});
