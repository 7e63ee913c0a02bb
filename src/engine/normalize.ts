import { ValidationError } from './errors.ts';

// Bullets, dashes, separators and stray sentence marks around a note carry no meaning.
const leadingNoise = /^[\s\p{Pd}\p{Pc}•·*>~=+|:;,.!?/\\]+/u;
const trailingNoise = /[\s\p{Pd}\p{Pc}•·*~=+|:;,/\\]+$/u;
const repeatedTerminators = /([.!?…])[.!?…]+$/u;

export function collapseWhitespace(text: string): string {
  return text.replace(/\s+/gu, ' ').trim();
}

/**
 * Shard content on write: trim, collapse whitespace, strip leading and trailing
 * punctuation noise ("-- • Skipped the tests!!!" becomes "Skipped the tests!"),
 * keeping one sentence terminator so "Did it work?" stays a question.
 */
export function normalizeContent(raw: string): string {
  let text = collapseWhitespace(stripControl(raw));
  let previous;
  do {
    previous = text;
    text = text.replace(leadingNoise, '').replace(trailingNoise, '').replace(repeatedTerminators, '$1');
  } while (text !== previous);
  return /^[.!?…]+$/u.test(text) ? '' : text;
}

/** Control characters other than whitespace carry no meaning in a text and break FTS and terminals. */
export function stripControl(text: string): string {
  return text.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/gu, '');
}

export function normalizeTags(raw: readonly string[] | undefined): string[] {
  if (!raw) return [];
  const seen = new Set<string>();
  for (const tag of raw) {
    const t = collapseWhitespace(stripControl(tag)).toLowerCase();
    if (t !== '') seen.add(t);
  }
  return [...seen];
}

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Trimmed, control-free, non-empty text of at most `maxBytes` UTF-8 bytes. */
export function requireText(field: string, value: unknown, maxBytes: number): string {
  if (typeof value !== 'string') throw new ValidationError(field, 'must be a string');
  const text = stripControl(value).trim();
  if (text === '') throw new ValidationError(field, 'must not be empty');
  if (utf8Bytes(text) > maxBytes) throw new ValidationError(field, `must be at most ${maxBytes} bytes`);
  return text;
}

export function optionalText(field: string, value: unknown, maxBytes: number): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ValidationError(field, 'must be a string');
  const text = stripControl(value).trim();
  if (utf8Bytes(text) > maxBytes) throw new ValidationError(field, `must be at most ${maxBytes} bytes`);
  return text;
}

export function requireId(field: string, value: unknown): number {
  const id = typeof value === 'string' && /^[0-9]{1,15}$/.test(value) ? Number(value) : value;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) {
    throw new ValidationError(field, `must be a positive row id, got ${JSON.stringify(value)}`);
  }
  return id;
}

export function requireIds(field: string, value: unknown): number[] {
  if (!Array.isArray(value)) throw new ValidationError(field, 'must be a list of ids');
  return value.map((v, i) => requireId(`${field}[${i}]`, v));
}
