/**
 * What the three SOUL.md conventions share: sections by heading, the owned regions between
 * `<!-- souls:NAME:start -->` and `<!-- souls:NAME:end … -->`, list items and paragraphs. Everything works on
 * character offsets into the original text, so whatever lies outside an owned region is kept byte for byte.
 */
import { createHash } from 'node:crypto';

export type Span = { start: number; end: number };

export type Section = {
  heading: string;
  /** The heading line, newline included. */
  line: Span;
  /** From after the heading line to the next heading of the same or a higher level (or the end). */
  body: Span;
};

export type Line = { text: string; start: number; end: number };

/** Where the line starting at `start` ends (after its "\n", or at `to`). */
function lineEnd(text: string, start: number, to: number): number {
  const newline = text.indexOf('\n', start);
  return newline === -1 || newline >= to ? to : newline + 1;
}

/** Where the line's text ends: before its "\n" or "\r\n". */
function lineTextEnd(text: string, start: number, end: number): number {
  if (text.charCodeAt(end - 1) !== 10) return end;
  return end - 1 > start && text.charCodeAt(end - 2) === 13 ? end - 2 : end - 1;
}

const lineText = (text: string, start: number, end: number) => text.slice(start, lineTextEnd(text, start, end));

/** The lines one at a time, for a reader that stops early. */
export function* eachLine(text: string, from = 0, to = text.length): Generator<Line> {
  for (let start = from, end = 0; start < to; start = end) {
    end = lineEnd(text, start, to);
    yield { text: lineText(text, start, end), start, end };
  }
}

/** Lines with their offsets; `end` includes the newline. A trailing "\r" is not part of `text`. */
export function lines(text: string, from = 0, to = text.length): Line[] {
  const result: Line[] = [];
  for (let start = from, end = 0; start < to; start = end) {
    end = lineEnd(text, start, to);
    result.push({ text: lineText(text, start, end), start, end });
  }
  return result;
}

/** "\r\n" when the text uses it, so a rewritten region matches the file's line endings. */
export function eolOf(text: string): string {
  return text.includes('\r\n') ? '\r\n' : '\n';
}

const fence = /^ {0,3}(`{3,}|~{3,})/;

/** Whitespace as `\s` and `trim()` know it. */
const isSpace = (char: string) => /\s/.test(char);

/** Where `text` ends once trailing characters matching `drop` are removed (a scan, not a `[…]+$` regex: those are quadratic on long runs). */
function endWithout(text: string, drop: (char: string) => boolean, end = text.length): number {
  while (end > 0 && drop(text[end - 1])) end--;
  return end;
}

/** `text` without a closing sequence of `#`s and the whitespace around it: "Core Truths ##  " is "Core Truths". */
export function withoutClosingHashes(text: string): string {
  return text.slice(0, endWithout(text, isSpace, endWithout(text, (c) => c === '#', endWithout(text, isSpace))));
}

/** A line break other than "\n": a heading or list item that holds one is read as text (as a `.` regex never crosses one). */
const innerBreak = /[\r\u2028\u2029]/;
const headingOpen = /^ {0,3}(#{1,6})\s+/;

/**
 * An ATX heading line ("## Core Truths ##") as its level and text, or null. Parsed in one pass: the obvious regex
 * (`\s+(.*?)\s*#*\s*$`) backtracks cubically on a heading padded with thousands of spaces.
 */
function atxHeading(line: string): { level: number; text: string } | null {
  const open = headingOpen.exec(line);
  if (!open) return null;
  const text = withoutClosingHashes(line.slice(open[0].length));
  return innerBreak.test(text) ? null : { level: open[1].length, text };
}

export type Heading = { heading: string; line: Span; headingLevel: number };

/** Every ATX heading between `from` and `to`, outside fenced code, in order. */
export function headings(text: string, from = 0, to = text.length): Heading[] {
  const found: Heading[] = [];
  let inFence: string | null = null;
  for (let start = from, end = 0; start < to; start = end) {
    end = lineEnd(text, start, to);
    // Only a line opening with "#", "`" or "~" (after up to 3 spaces) can be a heading or a fence: the rest are not cut out.
    if (!'#`~'.includes(text[start + leadingSpaces(text, start, end)] ?? '-')) continue;
    const line = lineText(text, start, end);
    const f = fence.exec(line);
    if (f) {
      if (inFence === null) inFence = f[1][0];
      else if (f[1][0] === inFence) inFence = null;
      continue;
    }
    if (inFence !== null) continue;
    const h = atxHeading(line);
    if (h) found.push({ heading: h.text, line: { start, end }, headingLevel: h.level });
  }
  return found;
}

/** The spaces (at most 3) that open the line at `start`. */
function leadingSpaces(text: string, start: number, end: number): number {
  let n = 0;
  while (n < 3 && start + n < end && text.charCodeAt(start + n) === 32) n++;
  return n;
}

/**
 * The sections of `level` among `found` (a document's headings in order, the document ending at `to`). One pass
 * from the last heading back, reading each heading once: each section's end, the next heading of its level or above,
 * is known by then.
 */
export function sectionsOf(found: readonly Heading[], level: number, to: number): Section[] {
  const result: Section[] = [];
  let next = to;
  for (let i = found.length - 1; i >= 0; i--) {
    const h = found[i];
    if (h.headingLevel === level) result.push({ heading: h.heading, line: h.line, body: { start: h.line.end, end: next } });
    if (h.headingLevel <= level) next = h.line.start;
  }
  return result.reverse();
}

/** Headings of `level` (2 for "## "), outside fenced code, each with its body up to the next heading of that level or above. */
export function sections(text: string, level = 2, from = 0, to = text.length): Section[] {
  return sectionsOf(headings(text, from, to), level, to);
}

/** Heading text compared loosely: case, emphasis and trailing punctuation aside. */
export function headingKey(heading: string): string {
  const bare = heading.replace(/[*_`]/g, '');
  return bare
    .slice(0, endWithout(bare, (c) => c === ':' || c === '.' || isSpace(c)))
    .trim()
    .toLowerCase();
}

export function findSection(all: readonly Section[], headings: readonly string[]): Section | undefined {
  const wanted = new Set(headings.map(headingKey));
  return all.find((s) => wanted.has(headingKey(s.heading)));
}

const horizontalRule = /^ {0,3}([-*_])( *\1){2,} *$/;

/** The text of a section without the blank lines around it and without the rules (`---`) that close it. */
export function contentSpan(text: string, body: Span): Span | null {
  const all = lines(text, body.start, body.end);
  let first = 0;
  while (first < all.length && all[first].text.trim() === '') first++;
  let last = all.length - 1;
  while (last >= first && (all[last].text.trim() === '' || horizontalRule.test(all[last].text))) last--;
  if (first > last) return null;
  const end = all[last].start + all[last].text.length;
  return { start: all[first].start, end };
}

export type RegionName = 'essence' | 'traits';

export type MarkedRegion = {
  /** From the start marker's first character to the end marker's last (newline excluded). */
  outer: Span;
  /** The owned text between the marker lines. */
  inner: Span;
  /** The hash the end marker carries: what Souls last wrote there; null for markers a person typed. */
  hash: string | null;
};

const startMarker = (name: RegionName) => `<!-- souls:${name}:start -->`;
const endMarker = (name: RegionName) => new RegExp(`^\\s*<!-- souls:${name}:end(?: sha256=([0-9a-f]{12}))? -->\\s*$`);

/**
 * The region between `<!-- souls:NAME:start -->` and its end marker, each alone on its line and outside fenced code
 * (markers shown in a code block are examples, not regions). One pass; only lines that open a fence or hold a "<"
 * are cut out of the text.
 */
export function markedRegion(text: string, name: RegionName): MarkedRegion | null {
  const open = startMarker(name);
  const close = endMarker(name);
  let inFence: string | null = null;
  let opened: Span | null = null;
  let previous: Span | null = null;
  let nextLt = -1;
  for (let start = 0, end = 0; start < text.length; previous = { start, end }, start = end) {
    end = lineEnd(text, start, text.length);
    if (nextLt < start) {
      const found = text.indexOf('<', start);
      nextLt = found === -1 ? Infinity : found;
    }
    const fenceLike = '`~'.includes(text[start + leadingSpaces(text, start, end)] ?? '-');
    if (!fenceLike && (inFence !== null || nextLt >= end)) continue;
    const line = lineText(text, start, end);
    const f = fenceLike ? fence.exec(line) : null;
    if (f) {
      if (inFence === null) inFence = f[1][0];
      else if (f[1][0] === inFence) inFence = null;
      continue;
    }
    if (inFence !== null) continue;
    if (opened === null) {
      if (line.trim() === open) opened = { start, end };
      continue;
    }
    const m = close.exec(line);
    if (!m) continue;
    const innerEnd = previous!.start === opened.start ? start : lineTextEnd(text, previous!.start, previous!.end);
    return { outer: { start: opened.start, end: start + line.length }, inner: { start: opened.end, end: Math.max(opened.end, innerEnd) }, hash: m[1] ?? null };
  }
  return null;
}

export function contentHash(content: string): string {
  return createHash('sha256').update(content.replace(/\r\n/g, '\n')).digest('hex').slice(0, 12);
}

/** An owned region as written: markers around the content, the end marker carrying the content's hash. */
export function markedBlock(name: RegionName, content: string, eol: string): string {
  const body = content.replace(/\r?\n/g, eol);
  return `${startMarker(name)}${eol}${body}${eol}<!-- souls:${name}:end sha256=${contentHash(content)} -->`;
}

/** HTML comments removed; an unclosed one is kept as text. A scan: the regex `<!--[\s\S]*?-->` is quadratic on many unclosed openers. */
export function stripComments(text: string): string {
  let out = '';
  let at = 0;
  for (let open = text.indexOf('<!--'); open !== -1; open = text.indexOf('<!--', at)) {
    const close = text.indexOf('-->', open + 4);
    // No closer after this opener means none after any later one either.
    if (close === -1) break;
    out += text.slice(at, open);
    at = close + 3;
  }
  return out + text.slice(at);
}

/** Bold and underscore emphasis markers dropped, whitespace collapsed: the text of a principle. */
export function plainText(text: string): string {
  return text
    .replace(/\*\*(.+?)\*\*/g, '$1')
    .replace(/__(.+?)__/g, '$1')
    .replace(/\s+/g, ' ')
    .trim();
}

/** A template's placeholder ("[Belief 1]", "_(pick something you like)_") is not content. */
export function isPlaceholder(text: string): boolean {
  const t = text.trim();
  return /^\[[^\]]*\]$/.test(t) || /^_?\([^)]*\)_?$/.test(t) || t === '...' || t === '…';
}

export type Block = { kind: 'item' | 'paragraph' | 'heading'; text: string; level?: number };

const listMarker = /^ {0,3}(?:[-*+]|\d{1,9}[.)])\s+/;

/** A list item's text, or null. The marker by regex, the rest as it is: `\s+(.*)$` backtracks quadratically on a line break inside. */
function listItem(line: string): string | null {
  const marker = listMarker.exec(line);
  if (!marker) return null;
  const text = line.slice(marker[0].length);
  return innerBreak.test(text) ? null : text;
}

/**
 * A section's content as blocks: headings, list items (continuation lines joined) and paragraphs.
 * Comments and fenced code are skipped; a rule (`---`) ends a paragraph.
 */
export function blocks(text: string): Block[] {
  const result: Block[] = [];
  let current: Block | null = null;
  let inFence: string | null = null;
  const close = () => {
    if (current && current.text.trim() !== '') result.push({ ...current, text: current.text.trim() });
    current = null;
  };
  for (const { text: line } of lines(stripComments(text))) {
    const f = fence.exec(line);
    if (f || inFence !== null) {
      if (f) inFence = inFence === null ? f[1][0] : f[1][0] === inFence ? null : inFence;
      close();
      continue;
    }
    if (line.trim() === '' || horizontalRule.test(line)) {
      close();
      continue;
    }
    const h = atxHeading(line);
    if (h) {
      close();
      result.push({ kind: 'heading', text: h.text, level: h.level });
      continue;
    }
    const item = listItem(line);
    if (item !== null) {
      close();
      current = { kind: 'item', text: item };
      continue;
    }
    if (current) current.text += ` ${line.trim()}`;
    else current = { kind: 'paragraph', text: line.trim() };
  }
  close();
  return result;
}

/** Replaces spans (non-overlapping) in one pass, keeping every other byte. */
export function splice(text: string, edits: readonly { span: Span; text: string }[]): string {
  let out = '';
  let at = 0;
  for (const edit of [...edits].sort((a, b) => a.span.start - b.span.start)) {
    out += text.slice(at, edit.span.start) + edit.text;
    at = edit.span.end;
  }
  return out + text.slice(at);
}
