import { ValidationError } from './errors.ts';

/** The engine's knobs (SPEC §10). Source diversity >= 2 and age spread > 1 day are fixed, not knobs. */
export type Knobs = {
  traitLimit: number;
  crystallizationThreshold: number;
  shardExpiryDays: number;
  shardFadeCitations: number;
  shardRelevanceHalfLife: number;
  clusteringThreshold: number;
  staleDays: number;
  redundancyThreshold: number;
  consolidationThreshold: number;
};

/** Input size bounds (SPEC §11). Texts are measured in UTF-8 bytes, tags in characters. */
export type Bounds = {
  maxShardContentBytes: number;
  maxTagLength: number;
  maxTagsPerShard: number;
  maxPrincipleBytes: number;
  maxProvenanceBytes: number;
  maxEssenceBytes: number;
  maxBatchSize: number;
  maxNameLength: number;
  maxDescriptionBytes: number;
  maxSourceLength: number;
};

export type Settings = Knobs & Bounds;

export const defaultKnobs: Knobs = {
  traitLimit: 10,
  crystallizationThreshold: 3,
  shardExpiryDays: 120,
  shardFadeCitations: 2,
  shardRelevanceHalfLife: 60,
  clusteringThreshold: 0.4,
  staleDays: 90,
  redundancyThreshold: 0.3,
  consolidationThreshold: 0.3,
};

export const defaultBounds: Bounds = {
  maxShardContentBytes: 8 * 1024,
  maxTagLength: 64,
  maxTagsPerShard: 32,
  maxPrincipleBytes: 2 * 1024,
  maxProvenanceBytes: 16 * 1024,
  maxEssenceBytes: 64 * 1024,
  maxBatchSize: 10_000,
  maxNameLength: 200,
  maxDescriptionBytes: 4 * 1024,
  maxSourceLength: 128,
};

export const defaultSettings: Settings = { ...defaultKnobs, ...defaultBounds };

type Rule = { kind: 'int' | 'number'; min: number; max: number; minExclusive?: boolean };

const positiveInt: Rule = { kind: 'int', min: 1, max: 1_000_000_000 };
const fraction: Rule = { kind: 'number', min: 0, max: 1 };

const rules: Record<keyof Settings, Rule> = {
  traitLimit: { kind: 'int', min: 1, max: 1000 },
  crystallizationThreshold: positiveInt,
  shardExpiryDays: positiveInt,
  shardFadeCitations: positiveInt,
  shardRelevanceHalfLife: { kind: 'number', min: 0, max: 1_000_000, minExclusive: true },
  clusteringThreshold: { kind: 'number', min: 0, max: 1, minExclusive: true },
  staleDays: positiveInt,
  redundancyThreshold: fraction,
  consolidationThreshold: fraction,
  maxShardContentBytes: positiveInt,
  maxTagLength: positiveInt,
  maxTagsPerShard: positiveInt,
  maxPrincipleBytes: positiveInt,
  maxProvenanceBytes: positiveInt,
  maxEssenceBytes: positiveInt,
  maxBatchSize: positiveInt,
  maxNameLength: positiveInt,
  maxDescriptionBytes: positiveInt,
  maxSourceLength: positiveInt,
};

export const settingNames = Object.keys(rules) as (keyof Settings)[];

function checkSetting(name: keyof Settings, value: unknown): number {
  const rule = rules[name];
  const range = `${rule.minExclusive ? '>' : '>='} ${rule.min} and <= ${rule.max}`;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ValidationError(name, `must be a number ${range}, got ${JSON.stringify(value)}`);
  }
  if (rule.kind === 'int' && !Number.isInteger(value)) {
    throw new ValidationError(name, `must be a whole number, got ${value}`);
  }
  const tooLow = rule.minExclusive ? value <= rule.min : value < rule.min;
  if (tooLow || value > rule.max) throw new ValidationError(name, `must be ${range}, got ${value}`);
  return value;
}

/** Defaults overlaid with `overrides`, every value checked; a bad or unknown one throws naming the knob. */
export function resolveSettings(overrides: Partial<Record<string, unknown>> = {}): Settings {
  const settings: Settings = { ...defaultSettings };
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    if (!Object.hasOwn(rules, name)) throw new ValidationError(name, `unknown setting (known: ${settingNames.join(', ')})`);
    settings[name as keyof Settings] = checkSetting(name as keyof Settings, value);
  }
  return Object.freeze(settings);
}
