// SPEC §2 (turn 2): every stored text is NFC and free of invisible format characters before it is
// validated; names are unique by a folded key; every soul gets a slug.
import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  ValidationError,
  addTrait,
  createSoul,
  dropShard,
  dropShards,
  getShard,
  getSoul,
  getSoulByName,
  levelUp,
  listShards,
  renderSoul,
  retireSoul,
  reviseTrait,
  updateSoul,
  awakenSoul,
} from '../src/engine/index.ts';
import { cleanText, collapseWhitespace, nameKey, normalizeContent, slugBase } from '../src/engine/normalize.ts';
import { normalizeForSimilarity } from '../src/engine/similarity.ts';
import type { SqliteStore } from '../src/store/sqlite.ts';
import { freshDb, rejection } from './support/engine.ts';
import { createRng } from './support/fuzz.ts';

const T0 = Date.UTC(2026, 0, 1);
const ZWSP = '\u200b';
const RLO = '\u202e';

describe('text hygiene', () => {
  it('refuses a text that is nothing but invisible characters, in every field that must not be empty', async () => {
    const { db } = freshDb(T0);
    const invisible = `${ZWSP}\u200d\u2060\ufeff${RLO}\u2066`;
    expect((await rejection(createSoul(db, { name: invisible, essence: 'e' }), ValidationError)).field).toBe('name');
    expect((await rejection(createSoul(db, { name: 'Ada', essence: ZWSP }), ValidationError)).field).toBe('essence');
    const soul = await createSoul(db, { name: 'Ada', essence: 'e', description: ZWSP });
    expect(soul.description).toBe('');
    expect((await rejection(addTrait(db, soul.id, { principle: ZWSP, provenance: 'p' }), ValidationError)).field).toBe('principle');
    expect((await rejection(addTrait(db, soul.id, { principle: 'p', provenance: ZWSP }), ValidationError)).field).toBe('provenance');
    expect((await rejection(dropShard(db, ZWSP, 'chat', [soul.id]), ValidationError)).field).toBe('content');
    expect((await rejection(dropShard(db, 'Ran the tests', ZWSP, [soul.id]), ValidationError)).field).toBe('source');
    const tagged = await dropShard(db, 'Ran the tests', 'chat', [soul.id], { tags: [ZWSP, 'ci'] });
    expect((await getShard(db, tagged.shardId))!.tags).toEqual(['ci']);
    expect((await rejection(updateSoul(db, soul.id, { name: ZWSP }), ValidationError)).field).toBe('name');
  });

  it('strips bidi controls, so a principle cannot display reversed, and zero-width characters inside words', async () => {
    const { db } = freshDb(T0);
    const soul = await createSoul(db, { name: 'Ada', essence: `Calm${ZWSP} under pressure.` });
    const trait = await addTrait(db, soul.id, { principle: `Verify the ledger ${RLO}first`, provenance: `audit\u2067 notes\u2069` });
    expect([trait.principle, trait.provenance]).toEqual(['Verify the ledger first', 'audit notes']);
    const revised = await reviseTrait(db, trait.id, { principle: `\u202bTrust the record\u202c` });
    expect(revised.principle).toBe('Trust the record');
    await levelUp(db, soul.id, {
      newEssence: `Grown${ZWSP}.`,
      consolidations: [{ sourceTraitIds: [trait.id], mergedPrinciple: `Records${RLO} first`, mergedProvenance: 'both' }],
      promotedTraitIds: [],
      carriedTraitIds: [],
    });
    expect(await renderSoul(db, soul.id)).toBe('# Ada\n\nGrown.\n\n## Traits\n- Records first\n');
    const shard = await dropShard(db, `Checked the ledger${ZWSP}${RLO} twice`, `chat${ZWSP}`, [soul.id]);
    expect(await getShard(db, shard.shardId)).toMatchObject({ content: 'Checked the ledger twice', source: 'chat' });
  });

  it('stores every text NFC: composed and decomposed are one text, one tag, one source', async () => {
    const { db } = freshDb(T0);
    const composed = 'Caf\u00e9';
    const decomposed = 'Cafe\u0301';
    const soul = await createSoul(db, { name: decomposed, essence: `Runs a ${decomposed}.` });
    expect([soul.name, soul.essence]).toEqual([composed, `Runs a ${composed}.`]);
    const { shardIds } = await dropShards(db, [
      { content: `Opened the ${decomposed}`, source: decomposed, soulIds: [soul.id], tags: [composed, decomposed] },
      { content: `Closed the ${composed}`, source: composed, soulIds: [soul.id], tags: [decomposed] },
    ]);
    const shards = await Promise.all(shardIds.map((id) => getShard(db, id)));
    expect(shards.map((s) => [s!.content, s!.source, s!.tags])).toEqual([
      [`Opened the ${composed}`, composed, ['caf\u00e9']],
      [`Closed the ${composed}`, composed, ['caf\u00e9']],
    ]);
    expect((await listShards(db, { tags: [decomposed] })).totalCount).toBe(2);
    expect((await listShards(db, { source: decomposed })).totalCount).toBe(2);
  });

  it('bounds a tag after lowercasing: 64 × "İ" lowercases to 128 characters and is refused', async () => {
    const { db } = freshDb(T0);
    const soul = await createSoul(db, { name: 'Ada', essence: 'e' });
    expect('İ'.toLowerCase()).toHaveLength(2);
    const error = await rejection(dropShard(db, 'Ran the tests', 'chat', [soul.id], { tags: ['İ'.repeat(64)] }), ValidationError);
    expect([error.field, error.message]).toEqual(['tags[0]', 'must be at most 64 characters']);
    const fits = await dropShard(db, 'Ran the tests', 'chat', [soul.id], { tags: ['İ'.repeat(32)] });
    expect([...(await getShard(db, fits.shardId))!.tags[0]]).toHaveLength(64);
    const batch = await rejection(dropShards(db, [{ content: 'x', source: 'chat', soulIds: [soul.id], tags: ['İ'.repeat(33)] }]), ValidationError);
    expect(batch.field).toBe('shards[0].tags[0]');
  });
});

describe('names unique by a folded key', () => {
  it('folds case, width, compatibility forms, invisible characters and whitespace', () => {
    for (const look of ['Mira', 'mira', 'MIRA', `Mi${ZWSP}ra`, 'Ｍｉｒａ', ' Mira ']) expect(nameKey(look), look).toBe('mira');
    expect(nameKey('Mira  Vance')).toBe(nameKey('mira vance'));
    expect(nameKey('Straße')).toBe(nameKey('STRASSE'));
    expect(nameKey('Mira')).not.toBe(nameKey('Myra'));
  });

  it('refuses a look-alike of an awake soul, names the soul holding it, and keeps the spelling it was given', async () => {
    const { db } = freshDb(T0);
    const mira = await createSoul(db, { name: 'Mira', essence: 'e' });
    for (const look of ['mira', `Mi${ZWSP}ra`, 'ＭＩＲＡ', 'MIRA ']) {
      const error = await rejection(createSoul(db, { name: look, essence: 'e' }), ConflictError);
      expect([error.field, error.message]).toEqual(['name', 'an awake soul is already named "Mira"']);
    }
    const other = await createSoul(db, { name: 'Bram', essence: 'e' });
    expect((await rejection(updateSoul(db, other.id, { name: 'mIRA' }), ConflictError)).field).toBe('name');
    // A soul may change the case of its own name.
    expect((await updateSoul(db, mira.id, { name: 'MIRA' })).name).toBe('MIRA');
    // A dormant soul frees its name; awakening checks the folded key again.
    await retireSoul(db, mira.id);
    const second = await createSoul(db, { name: 'mira', essence: 'e' });
    expect(second.name).toBe('mira');
    expect((await rejection(awakenSoul(db, mira.id), ConflictError)).field).toBe('name');
    expect((await rejection(awakenSoul(db, mira.id, { rename: `Mi${ZWSP}RA` }), ConflictError)).field).toBe('name');
  });

  it('is enforced by the database too: a unique index on the stored key among awake souls', async () => {
    const { db } = freshDb(T0);
    await createSoul(db, { name: 'Mira', essence: 'e' });
    const raw = (db.store as SqliteStore).db;
    const insert = raw.prepare(
      `INSERT INTO souls (name, name_key, slug, essence, description, level, created_at, updated_at, ordered_at, deleted_at) VALUES (?, 'mira', ?, 'e', '', 0, 0, 0, 0, ?)`,
    );
    expect(() => insert.run('mira', 'other-slug', null)).toThrow(/UNIQUE constraint failed: souls.name_key/);
    expect(() => insert.run('mira', 'dormant-slug', 1)).not.toThrow();
  });

  it('looks names up by the folded key: the awake soul, else the most recently retired one', async () => {
    const { db, clock } = freshDb(T0);
    const first = await createSoul(db, { name: 'Mira', essence: 'first' });
    for (const look of ['mira', 'MIRA', `Mi${ZWSP}ra`, ' ｍｉｒａ ']) expect((await getSoulByName(db, look))?.id, look).toBe(first.id);
    expect(await getSoulByName(db, 'Myra')).toBeNull();
    clock.advance(1000);
    await retireSoul(db, first.id);
    const second = await createSoul(db, { name: 'MIRA', essence: 'second' });
    expect((await getSoulByName(db, 'mira'))!.id).toBe(second.id);
    clock.advance(1000);
    await retireSoul(db, second.id);
    expect((await getSoulByName(db, 'mira'))!.id).toBe(second.id);
  });
});

describe('slugs', () => {
  it('derives a slug from the name: ASCII, accents dropped, "soul" when nothing is left', () => {
    expect(slugBase('Mira Vance')).toBe('mira-vance');
    expect(slugBase('  Zoë  the Quartermaster! ')).toBe('zoe-the-quartermaster');
    expect(slugBase('Ａｄａ')).toBe('ada');
    expect(slugBase('ミラ')).toBe('soul');
    expect(slugBase('x'.repeat(100))).toHaveLength(58);
  });

  it('gives every created soul a unique slug: the name\'s, then -2, -3 … on collision; a chosen slug that is taken is refused', async () => {
    const { db } = freshDb(T0);
    const a = await createSoul(db, { name: 'Mira Vance', essence: 'e' });
    const b = await createSoul(db, { name: 'Mira vance!', essence: 'e' });
    const c = await createSoul(db, { name: 'Mira—Vance', essence: 'e' });
    expect([a.slug, b.slug, c.slug]).toEqual(['mira-vance', 'mira-vance-2', 'mira-vance-3']);
    const error = await rejection(createSoul(db, { name: 'Other', slug: 'mira-vance', essence: 'e' }), ConflictError);
    expect(error.field).toBe('slug');
    // A dormant soul's slug is free for others; the slug it keeps is checked when it awakens.
    await retireSoul(db, b.id);
    expect((await createSoul(db, { name: 'Mira-Vance 2', essence: 'e' })).slug).toBe('mira-vance-2');
    expect((await awakenSoul(db, b.id)).soul.slug).toBe('mira-vance-4');
    expect((await getSoul(db, b.id))!.name).toBe('Mira vance!');
  });

  it('is deterministic: the same writes give the same slugs in another database', async () => {
    const names = ['Ada', 'ada!', 'Ådá', 'ミラ', 'ラミ', 'Ada 2'];
    const slugs = async () => {
      const { db } = freshDb(T0);
      const out = [];
      for (const name of names) out.push((await createSoul(db, { name, essence: 'e' })).slug);
      return out;
    };
    const first = await slugs();
    expect(first).toEqual(['ada', 'ada-2', 'ada-3', 'soul', 'soul-2', 'ada-2-2']);
    expect(await slugs()).toEqual(first);
  });
});

describe('normalization shortcuts', () => {
  it('takes its shortcuts only where the full transformation would change nothing: the same text for random mixes of noise, whitespace, controls and Unicode', () => {
    // The transformations as SPEC §2 and the shard rules define them, each step applied in full.
    const clean = (t: string) => t.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/gu, '').replace(/[\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/gu, '').normalize('NFC');
    const collapse = (t: string) => t.replace(/\s+/gu, ' ').trim();
    const content = (raw: string) => {
      let text = collapse(clean(raw));
      let previous;
      do {
        previous = text;
        text = text.replace(/^[\s\p{Pd}\p{Pc}•·*>~=+|:;,.!?/\\]+/u, '').replace(/[\s\p{Pd}\p{Pc}•·*~=+|:;,/\\]+$/u, '').replace(/([.!?…])[.!?…]+$/u, '$1');
      } while (text !== previous);
      return /^[.!?…]+$/u.test(text) ? '' : text;
    };
    const pieces = ['a', 'Zed', 'note', ' ', '\u2009', '  ', '\t', '\n', '\u00a0', '\u3000', '-', '–', '_', '•', '·', '*', '>', '~', '=', '+', '|', ':', ';', ',', '.', '!', '?', '…', '/', '\\', '\u0007', '\u007f', '\u200b', '\u202e', 'e\u0301', 'É', '\u{10EAD}', '\u{1F600}', '\uD800', '\uDC00', 'İ'];
    const rng = createRng(2026);
    let shortcuts = 0;
    for (let i = 0; i < 20_000; i++) {
      const text = Array.from({ length: 1 + rng.int(8) }, () => pieces[rng.int(pieces.length)]).join('');
      expect(cleanText(text)).toBe(clean(text));
      expect(collapseWhitespace(text)).toBe(collapse(text));
      expect(normalizeForSimilarity(text)).toBe(collapse(text.toLowerCase()));
      expect(normalizeContent(text)).toBe(content(text));
      if (content(text) === collapse(clean(text))) shortcuts++;
    }
    // Both kinds of text came up: those the noise rules leave alone, and those they change.
    expect(shortcuts).toBeGreaterThan(1_000);
    expect(shortcuts).toBeLessThan(19_000);
  });
});
