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

/** Lines with their offsets; `end` includes the newline. A trailing "\r" is not part of `text`. */
export function lines(text: string, from = 0, to = text.length): Line[] {
  const result: Line[] = [];
  let start = from;
  while (start < to) {
    const newline = text.indexOf('\n', start);
    const end = newline === -1 || newline >= to ? to : newline + 1;
    result.push({ text: text.slice(start, end).replace(/\r?\n$/, ''), start, end });
    start = end;
  }
  return result;
}

/** "\r\n" when the text uses it, so a rewritten region matches the file's line endings. */
export function eolOf(text: string): string {
  return text.includes('\r\n') ? '\r\n' : '\n';
}

const fence = /^ {0,3}(`{3,}|~{3,})/;

/** Headings of `level` (2 for "## "), outside fenced code, each with its body up to the next heading of that level or above. */
export function sections(text: string, level = 2, from = 0, to = text.length): Section[] {
  const found: { heading: string; line: Span; headingLevel: number }[] = [];
  let inFence: string | null = null;
  for (const line of lines(text, from, to)) {
    const f = fence.exec(line.text);
    if (f) {
      if (inFence === null) inFence = f[1][0];
      else if (f[1][0] === inFence) inFence = null;
      continue;
    }
    if (inFence !== null) continue;
    const h = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line.text);
    if (h) found.push({ heading: h[2], line: { start: line.start, end: line.end }, headingLevel: h[1].length });
  }
  const result: Section[] = [];
  found.forEach((h, i) => {
    if (h.headingLevel !== level) return;
    const next = found.slice(i + 1).find((other) => other.headingLevel <= level);
    result.push({ heading: h.heading, line: h.line, body: { start: h.line.end, end: next ? next.line.start : to } });
  });
  return result;
}

/** Heading text compared loosely: case, emphasis and trailing punctuation aside. */
export function headingKey(heading: string): string {
  return heading
    .replace(/[*_`]/g, '')
    .replace(/[:.\s]+$/, '')
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

/** Whether each line lies inside fenced code (the fence lines included): markers shown in a code block are examples, not regions. */
function fencedLines(all: readonly Line[]): boolean[] {
  let inFence: string | null = null;
  return all.map((line) => {
    const f = fence.exec(line.text);
    if (f) {
      if (inFence === null) inFence = f[1][0];
      else if (f[1][0] === inFence) inFence = null;
      return true;
    }
    return inFence !== null;
  });
}

export function markedRegion(text: string, name: RegionName): MarkedRegion | null {
  const all = lines(text);
  const fenced = fencedLines(all);
  const start = all.findIndex((l, i) => !fenced[i] && l.text.trim() === startMarker(name));
  if (start === -1) return null;
  for (let i = start + 1; i < all.length; i++) {
    const m = fenced[i] ? null : endMarker(name).exec(all[i].text);
    if (!m) continue;
    const innerEnd = i === start + 1 ? all[i].start : all[i - 1].start + all[i - 1].text.length;
    return { outer: { start: all[start].start, end: all[i].start + all[i].text.length }, inner: { start: all[start].end, end: Math.max(all[start].end, innerEnd) }, hash: m[1] ?? null };
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

export function stripComments(text: string): string {
  return text.replace(/<!--[\s\S]*?-->/g, '');
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

const listItem = /^ {0,3}(?:[-*+]|\d{1,9}[.)])\s+(.*)$/;

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
    const h = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      close();
      result.push({ kind: 'heading', text: h[2], level: h[1].length });
      continue;
    }
    const item = listItem.exec(line);
    if (item) {
      close();
      current = { kind: 'item', text: item[1] };
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
