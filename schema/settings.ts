import type { Bounds, ClusteringThresholdSource as ThresholdSource, Knobs } from '../src/engine/index.ts';
import { builder } from './builder.ts';

export const SimilarityMode = builder.enumType('SimilarityMode', {
  description: 'How shard and trait texts are compared.',
  values: {
    TRIGRAM: { value: 'trigram', description: 'character-trigram Jaccard, single linkage (the original method)' },
    LEXICAL: { value: 'lexical', description: 'TF-IDF cosine over stemmed words mixed with character 4-grams, average linkage' },
    PROVIDED: {
      value: 'provided',
      description: 'cosine of the embeddings callers supply with shards (DropShardInput.embedding) mixed with lexical, average linkage; shards without one, and traits, compare lexically',
    },
    SEMANTIC: {
      value: 'semantic',
      description:
        'cosine of sentence embeddings the server computes for each shard (Universal Sentence Encoder lite, shipped with Souls) mixed with lexical, complete linkage; a shard whose vector has not landed yet, and traits, compare lexically',
    },
  } as const,
});

export const ClusteringThresholdSource = builder.enumType('ClusteringThresholdSource', {
  description: 'Where the clustering threshold in force came from.',
  values: {
    SETTING: { value: 'setting', description: 'set at startup (--clustering-threshold, its variable or the config file)' },
    DEFAULT: { value: 'default', description: 'the similarity mode’s own default' },
    CALIBRATED: { value: 'calibrated', description: 'chosen by `souls calibrate` from labelled data and stored in the database, for this mode and vector dimension' },
  } as const,
});

/** The knobs, and where the clustering threshold came from. */
export type SettingsView = Knobs & Pick<Bounds, 'maxThemesPerSoul'> & { clusteringThresholdSource: ThresholdSource };

export const Settings = builder.objectRef<SettingsView>('Settings').implement({
  description: 'The engine’s knobs, set at startup; read-only here.',
  fields: (t) => ({
    similarity: t.field({ type: SimilarityMode, resolve: (k) => k.similarity }),
    traitLimit: t.exposeInt('traitLimit'),
    maxThemesPerSoul: t.exposeInt('maxThemesPerSoul', { description: 'themes a soul may hold: a judgement creating one more is refused' }),
    crystallizationThreshold: t.exposeInt('crystallizationThreshold'),
    shardExpiryDays: t.exposeInt('shardExpiryDays'),
    shardFadeCitations: t.exposeInt('shardFadeCitations'),
    shardRelevanceHalfLife: t.exposeFloat('shardRelevanceHalfLife'),
    clusteringThreshold: t.exposeFloat('clusteringThreshold', { description: 'the similarity mode’s own default unless set or calibrated (clusteringThresholdSource)' }),
    clusteringThresholdSource: t.field({ type: ClusteringThresholdSource, resolve: (k) => k.clusteringThresholdSource }),
    staleDays: t.exposeInt('staleDays'),
    redundancyThreshold: t.exposeFloat('redundancyThreshold'),
    consolidationThreshold: t.exposeFloat('consolidationThreshold'),
    promotionTenureDays: t.exposeFloat('promotionTenureDays', { description: 'a trait is a promotion candidate only once it is this many days old (surviving an attunement does not count)' }),
  }),
});
