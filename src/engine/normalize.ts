import { ValidationError } from './errors.ts';

// Bullets, dashes, separators and stray sentence marks around a note carry no meaning.
const leadingNoise = /^[\s\p{Pd}\p{Pc}•·*>~=+|:;,.!?/\\]+/u;
const trailingNoise = /[\s\p{Pd}\p{Pc}•·*~=+|:;,/\\]+$/u;
const repeatedTerminators = /([.!?…])[.!?…]+$/u;

/** Whitespace other than single spaces: where collapsing changes something. */
const unevenWhitespace = /[^\S ]| {2}/u;

export function collapseWhitespace(text: string): string {
  return (unevenWhitespace.test(text) ? text.replace(/\s+/gu, ' ') : text).trim();
}

/**
 * Whether the noise patterns could change the text. Each one is anchored at an end, so its last two code
 * units (the whole last code point) decide the trailing ones: most texts need no replacing at all.
 */
function hasNoise(text: string): boolean {
  const tail = text.slice(-2);
  return leadingNoise.test(text) || trailingNoise.test(tail) || repeatedTerminators.test(tail);
}

/**
 * Shard content on write: trim, collapse whitespace, strip leading and trailing
 * punctuation noise ("-- • Skipped the tests!!!" becomes "Skipped the tests!"),
 * keeping one sentence terminator so "Did it work?" stays a question.
 */
export function normalizeContent(raw: string): string {
  let text = collapseWhitespace(cleanText(raw));
  if (hasNoise(text)) {
    let previous;
    do {
      previous = text;
      text = text.replace(leadingNoise, '').replace(trailingNoise, '').replace(repeatedTerminators, '$1');
    } while (text !== previous);
  }
  return /^[.!?…]+$/u.test(text) ? '' : text;
}

/** Control characters other than whitespace carry no meaning in a text and break FTS and terminals. */
export function stripControl(text: string): string {
  return text.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/gu, '');
}

/**
 * Invisible format characters: soft hyphen, Arabic letter mark, Mongolian vowel separator, zero-width
 * space, joiners and marks, bidi embeddings, overrides and isolates, word joiner and invisible
 * operators, BOM. They make "\u200b" look like text, two equal names look different, and a
 * principle display reversed.
 */
const invisibleFormat = /[\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/gu;

/** Printable ASCII only: already NFC, with no control or format character. */
const plainAscii = /^[\x20-\x7E]*$/;

/** Every stored text passes here before validation (SPEC §2): NFC, no control or invisible format characters. */
export function cleanText(text: string): string {
  if (plainAscii.test(text)) return text;
  return stripControl(text).replace(invisibleFormat, '').normalize('NFC');
}

/** A tag as stored: clean, one line, lowercase (then NFC again: lowercasing can decompose). */
export function normalizeTag(tag: string): string {
  return collapseWhitespace(cleanText(tag)).toLowerCase().normalize('NFC');
}

export function normalizeTags(raw: readonly string[] | undefined): string[] {
  if (!raw) return [];
  const seen = new Set<string>();
  for (const tag of raw) {
    const t = normalizeTag(tag);
    if (t !== '') seen.add(t);
  }
  return [...seen];
}

/**
 * The key names are unique by (SPEC §2): NFKC, case-folded, whitespace collapsed, so "Mira",
 * "mira", "ＭＩＲＡ" and "Mi\u200bra" are one name. Upper- then lower-casing folds what lower-casing
 * alone keeps apart ("Straße" and "STRASSE").
 */
export function nameKey(name: string): string {
  return collapseWhitespace(cleanText(name).normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC'));
}

export const MAX_SLUG_LENGTH = 64;
const slugSuffixRoom = 6;

/** The slug a name suggests: ASCII letters and digits joined by "-", accents dropped; "soul" when nothing is left. */
export function slugBase(name: string): string {
  const ascii = cleanText(name).normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
  const slug = ascii.replace(/[^a-z0-9]+/g, '-').slice(0, MAX_SLUG_LENGTH - slugSuffixRoom).replace(/^-+|-+$/g, '');
  return slug === '' ? 'soul' : slug;
}

/** The first of base, base-2, base-3 … that `taken` does not hold. */
export function freeSlug(base: string, taken: (slug: string) => boolean): string {
  if (!taken(base)) return base;
  for (let n = 2; ; n++) if (!taken(`${base}-${n}`)) return `${base}-${n}`;
}

/** Whether the text's UTF-8 encoding is longer than `maxBytes`; counted only when it could be: a UTF-16 unit encodes to at most 3 bytes. */
export function exceedsUtf8Bytes(text: string, maxBytes: number): boolean {
  return text.length * 3 > maxBytes && Buffer.byteLength(text, 'utf8') > maxBytes;
}

/** Whether the text has more than `max` code points; counted only when it could: it has at least as many UTF-16 units. */
export function exceedsCodePoints(text: string, max: number): boolean {
  return text.length > max && [...text].length > max;
}

/** Trimmed, control-free, non-empty text of at most `maxBytes` UTF-8 bytes. */
export function requireText(field: string, value: unknown, maxBytes: number): string {
  if (typeof value !== 'string') throw new ValidationError(field, 'must be a string');
  const text = cleanText(value).trim();
  if (text === '') throw new ValidationError(field, 'must not be empty');
  if (exceedsUtf8Bytes(text, maxBytes)) throw new ValidationError(field, `must be at most ${maxBytes} bytes`);
  return text;
}

export function optionalText(field: string, value: unknown, maxBytes: number): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ValidationError(field, 'must be a string');
  const text = cleanText(value).trim();
  if (exceedsUtf8Bytes(text, maxBytes)) throw new ValidationError(field, `must be at most ${maxBytes} bytes`);
  return text;
}

/** A row id from a decimal string in canonical form ("7", never "07" or "7.0") or a number; else the value itself. */
export function asRowId(value: unknown): unknown {
  return typeof value === 'string' && /^[1-9][0-9]{0,14}$/.test(value) ? Number(value) : value;
}

const isRowId = (id: unknown): id is number => typeof id === 'number' && Number.isSafeInteger(id) && id >= 1;

export function requireId(field: string, value: unknown): number {
  const id = asRowId(value);
  if (!isRowId(id)) {
    throw new ValidationError(field, `must be a positive row id, got ${JSON.stringify(value)}`);
  }
  return id;
}

export function requireIds(field: string, value: unknown): number[] {
  if (!Array.isArray(value)) throw new ValidationError(field, 'must be a list of ids');
  // The item's field name is built only for the error: this runs for every shard written.
  return value.map((v, i) => {
    const id = asRowId(v);
    return isRowId(id) ? id : requireId(`${field}[${i}]`, v);
  });
}

/** Edit distance, for "did you mean": names are short, so the quadratic table is nothing. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length];
}
