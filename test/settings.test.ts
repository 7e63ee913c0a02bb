import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ValidationError,
  addTrait,
  closeSoulsDb,
  createSoul,
  defaultClusteringThresholds,
  defaultKnobs,
  defaultSettings,
  getSoul,
  listSouls,
  listTraits,
  manualClock,
  openSoulsDb,
  resolveSettings,
  reviseTrait,
  settingNames,
  updateSoul,
} from '../src/engine/index.ts';
import { rejection } from './support/engine.ts';

const T0 = Date.UTC(2026, 0, 1);

function thrown(work: () => unknown): unknown {
  try {
    work();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw, but the call succeeded');
}


describe('runtime', () => {
  it('runs on Node 24 or newer (the npm scripts rely on native TypeScript and node:sqlite)', () => {
    const major = Number(process.versions.node.split('.')[0]);
    expect(major).toBeGreaterThanOrEqual(24);
  });
});

describe('knob defaults', () => {
  it('equal SPEC §10 exactly', () => {
    const spec = {
      similarity: 'trigram',
      traitLimit: 10,
      crystallizationThreshold: 3,
      shardExpiryDays: 120,
      shardFadeCitations: 2,
      shardRelevanceHalfLife: 60,
      clusteringThreshold: 0.4,
      staleDays: 90,
      redundancyThreshold: 0.3,
      consolidationThreshold: 0.3,
      promotionTenureDays: 7,
    };
    expect(defaultKnobs).toEqual(spec);
    expect(resolveSettings()).toMatchObject(spec);
    const db = openSoulsDb();
    expect(db.settings).toMatchObject(spec);
    closeSoulsDb(db);
  });

  it('bounds default to SPEC §11 sizes', () => {
    expect(resolveSettings()).toMatchObject({
      maxShardContentBytes: 8 * 1024,
      maxTagLength: 64,
      maxTagsPerShard: 32,
      maxPrincipleBytes: 2 * 1024,
      maxProvenanceBytes: 16 * 1024,
      maxEssenceBytes: 64 * 1024,
      maxBatchSize: 10_000,
    });
    expect(resolveSettings()).toEqual(defaultSettings);
  });

  it('source diversity and age spread are not knobs', () => {
    const knobs = (settingNames as string[]).filter((n) => !n.startsWith('max'));
    expect(knobs.sort()).toEqual(Object.keys(defaultKnobs).sort());
    for (const name of knobs) expect(name).not.toMatch(/source|spread|diversity|age/i);
  });

  it('applies valid overrides, skips undefined, and is read-only', () => {
    const settings = resolveSettings({ traitLimit: 3, clusteringThreshold: 1, redundancyThreshold: 0, shardRelevanceHalfLife: 0.5, staleDays: undefined });
    expect(settings).toEqual({ ...defaultSettings, traitLimit: 3, clusteringThreshold: 1, redundancyThreshold: 0, shardRelevanceHalfLife: 0.5 });
    expect(Object.isFrozen(settings)).toBe(true);
    expect(() => {
      (settings as { traitLimit: number }).traitLimit = 99;
    }).toThrow(TypeError);
    const db = openSoulsDb({ settings: { traitLimit: 3 } });
    expect(db.settings.traitLimit).toBe(3);
    closeSoulsDb(db);
  });
});

const notNumbers: unknown[] = [Number.NaN, Number.POSITIVE_INFINITY, '3', null, true, [3], {}];
const wholeCountBad: unknown[] = [0, -1, 1.5, ...notNumbers];
const fractionBad: unknown[] = [-0.1, 1.01, 2, ...notNumbers];

/** Every setting's refused values; the table must cover every setting, so a new knob without tests fails here. */
const badValues: Record<string, unknown[]> = {
  similarity: ['Lexical', 'TRIGRAM', 'PROVIDED', 'SEMANTIC', 'neural', '', 0, null, true, ['lexical']],
  traitLimit: [...wholeCountBad, 1001],
  crystallizationThreshold: wholeCountBad,
  shardExpiryDays: wholeCountBad,
  shardFadeCitations: wholeCountBad,
  shardRelevanceHalfLife: [0, -1, ...notNumbers],
  clusteringThreshold: [0, ...fractionBad],
  staleDays: wholeCountBad,
  redundancyThreshold: fractionBad,
  consolidationThreshold: fractionBad,
  promotionTenureDays: [-1, 1_000_001, ...notNumbers],
  maxShardContentBytes: wholeCountBad,
  maxTagLength: wholeCountBad,
  maxTagsPerShard: wholeCountBad,
  maxThemesPerSoul: [...wholeCountBad, 100_001],
  maxPrincipleBytes: wholeCountBad,
  maxProvenanceBytes: wholeCountBad,
  maxEssenceBytes: wholeCountBad,
  maxBatchSize: wholeCountBad,
  maxNameLength: wholeCountBad,
  maxDescriptionBytes: wholeCountBad,
  maxSourceLength: wholeCountBad,
  maxClusteredShards: [1, 1_000_001, ...wholeCountBad],
  maxEmbeddingDimension: [16_385, ...wholeCountBad],
  maxCacheMegabytes: [1_000_001, ...wholeCountBad],
};

describe('knob validation', () => {
  it('has refused values listed for every setting', () => {
    expect(Object.keys(badValues).sort()).toEqual([...settingNames].sort());
  });

  it.each(Object.entries(badValues).flatMap(([name, values]) => values.map((value) => [name, value] as const)))(
    '%s = %j is a ValidationError naming the knob',
    (name, value) => {
      const error = thrown(() => resolveSettings({ [name]: value }));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe(name);
    },
  );

  it('accepts the edges that are allowed', () => {
    expect(resolveSettings({ traitLimit: 1, redundancyThreshold: 1, consolidationThreshold: 0, clusteringThreshold: 0.01 })).toMatchObject({
      traitLimit: 1,
      redundancyThreshold: 1,
      consolidationThreshold: 0,
      clusteringThreshold: 0.01,
    });
  });

  it('gives each similarity mode its own clustering threshold unless clusteringThreshold is set', () => {
    expect(resolveSettings()).toMatchObject({ similarity: 'trigram', clusteringThreshold: 0.4 });
    expect(defaultClusteringThresholds.lexical).not.toBe(defaultClusteringThresholds.trigram);
    expect(resolveSettings({ similarity: 'lexical' })).toMatchObject({ similarity: 'lexical', clusteringThreshold: defaultClusteringThresholds.lexical });
    expect(resolveSettings({ similarity: 'lexical', clusteringThreshold: 0.4 })).toMatchObject({ similarity: 'lexical', clusteringThreshold: 0.4 });
    expect(resolveSettings({ similarity: 'trigram', clusteringThreshold: 0.25 })).toMatchObject({ clusteringThreshold: 0.25 });
    expect(resolveSettings({ similarity: 'semantic' })).toMatchObject({ similarity: 'semantic', clusteringThreshold: defaultClusteringThresholds.semantic });
    const error = thrown(() => resolveSettings({ similarity: 'neural' }));
    expect((error as ValidationError).message).toMatch(/trigram, lexical, provided, semantic/);
  });

  it('refuses an unknown knob, naming it', () => {
    // Names inherited from Object.prototype are unknown knobs too.
    for (const name of ['traitlimit', 'sourceDiversity', 'bogus', 'toString', 'constructor', 'hasOwnProperty']) {
      const error = thrown(() => resolveSettings({ [name]: 3 }));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe(name);
    }
  });

  describe('openSoulsDb with a bad knob', () => {
    let dir: string | null = null;
    afterEach(() => {
      if (dir) rmSync(dir, { recursive: true, force: true });
      dir = null;
    });

    it('throws before anything is opened', () => {
      dir = mkdtempSync(join(tmpdir(), 'souls-settings-'));
      const path = join(dir, 'souls.db');
      const error = thrown(() => openSoulsDb({ path, settings: { traitLimit: 0 } }));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe('traitLimit');
      expect(existsSync(path)).toBe(false);

      // The same path opens fine with good settings, so the check above is not vacuous.
      const db = openSoulsDb({ path, settings: { traitLimit: 2 } });
      expect(existsSync(path)).toBe(true);
      closeSoulsDb(db);
    });
  });
});

describe('size bounds (SPEC §11)', () => {
  const small = { maxEssenceBytes: 16, maxPrincipleBytes: 8, maxProvenanceBytes: 12 };

  it('essence over maxEssenceBytes is refused (bytes, not characters), on create and update', async () => {
    const db = openSoulsDb({ clock: manualClock(T0), settings: small });
    // 'é' is two UTF-8 bytes: 8 of them fill 16 bytes exactly.
    const soul = await createSoul(db, { name: 'Ada', essence: 'é'.repeat(8) });
    const error = await rejection(createSoul(db, { name: 'Bob', essence: `${'é'.repeat(8)}x` }), ValidationError);
    expect(error.field).toBe('essence');
    expect((await rejection(updateSoul(db, soul.id, { essence: 'x'.repeat(17) }), ValidationError)).field).toBe('essence');
    expect((await listSouls(db)).map((s) => s.name)).toEqual(['Ada']);
    expect(await getSoul(db, soul.id)).toEqual(soul);
  });

  it('principle over maxPrincipleBytes and provenance over maxProvenanceBytes are refused, on add and revise', async () => {
    const db = openSoulsDb({ clock: manualClock(T0), settings: small });
    const soul = await createSoul(db, { name: 'Ada', essence: 'e' });
    const t = await addTrait(db, soul.id, { principle: 'p'.repeat(8), provenance: 'v'.repeat(12) });
    expect((await rejection(addTrait(db, soul.id, { principle: 'p'.repeat(9), provenance: 'v' }), ValidationError)).field).toBe('principle');
    expect((await rejection(addTrait(db, soul.id, { principle: 'p', provenance: 'v'.repeat(13) }), ValidationError)).field).toBe('provenance');
    expect((await rejection(reviseTrait(db, t.id, { principle: 'ü'.repeat(5) }), ValidationError)).field).toBe('principle');
    expect((await rejection(reviseTrait(db, t.id, { provenance: 'v'.repeat(13) }), ValidationError)).field).toBe('provenance');
    expect(await listTraits(db, soul.id)).toEqual([t]);
  });

  it('surrounding whitespace does not count against a bound', async () => {
    const db = openSoulsDb({ clock: manualClock(T0), settings: small });
    const soul = await createSoul(db, { name: 'Ada', essence: `   ${'e'.repeat(16)}   ` });
    expect(soul.essence).toBe('e'.repeat(16));
  });

  it('with the default bounds, a principle of 2 KiB is accepted and one byte more refused', async () => {
    const db = openSoulsDb({ clock: manualClock(T0) });
    const soul = await createSoul(db, { name: 'Ada', essence: 'e' });
    const t = await addTrait(db, soul.id, { principle: 'p'.repeat(2048), provenance: 'v' });
    expect(t.principle).toHaveLength(2048);
    const error = await rejection(addTrait(db, soul.id, { principle: 'p'.repeat(2049), provenance: 'v' }), ValidationError);
    expect(error.field).toBe('principle');
    expect(await listTraits(db, soul.id)).toEqual([t]);
  });
});
