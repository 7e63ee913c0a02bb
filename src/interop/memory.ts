/**
 * Dated memory as shards: OpenClaw's daily files (memory/YYYY-MM-DD.md) and a soul.md MEMORY.md's `## Log`. Each
 * entry (a list item or a paragraph) is one shard, created on its date (and at its time when the entry or its
 * heading starts with one, "[14:30]" or "14:30:15"), with the file as its source.
 */
import { blocks, findSection, sections } from './markdown.ts';
import type { Files, ImportedShard } from './document.ts';

const isoDate = /(\d{4})-(\d{2})-(\d{2})/;
const leadingTime = /^\[?(\d{1,2}):(\d{2})(?::(\d{2}))?\]?\s*[-–—:]?\s*/;

/** Epoch ms of a calendar date (UTC midnight), or null when it is not a real date. */
export function dateMs(text: string): number | null {
  const m = isoDate.exec(text);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  return back.getUTCFullYear() === y && back.getUTCMonth() === mo - 1 && back.getUTCDate() === d ? ms : null;
}

function timeOf(text: string): { offset: number; rest: string } | null {
  const m = leadingTime.exec(text);
  if (!m) return null;
  const [h, min, s] = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
  if (h > 23 || min > 59 || s > 59) return null;
  return { offset: ((h * 60 + min) * 60 + s) * 1000, rest: text.slice(m[0].length) };
}

/** Entries of one day's text: headings set the time for what follows them, an entry's own time wins. */
function dayEntries(text: string, day: number, source: string): ImportedShard[] {
  const shards: ImportedShard[] = [];
  let headingTime = 0;
  for (const block of blocks(text)) {
    if (block.kind === 'heading') {
      headingTime = block.level === 1 ? 0 : (timeOf(block.text)?.offset ?? 0);
      continue;
    }
    const own = timeOf(block.text);
    const content = own ? own.rest : block.text;
    if (content.trim() === '') continue;
    shards.push({ content, source, createdAt: day + (own?.offset ?? headingTime) });
  }
  return shards;
}

/** memory/YYYY-MM-DD.md files, oldest first; a file named otherwise is noted and left alone. */
export function dailyMemory(files: Files, folder = 'memory/'): { shards: ImportedShard[]; notes: string[] } {
  const shards: ImportedShard[] = [];
  const notes: string[] = [];
  const paths = [...files.keys()].filter((p) => p.startsWith(folder) && p.endsWith('.md')).sort();
  for (const path of paths) {
    const name = path.slice(folder.length);
    const day = /^\d{4}-\d{2}-\d{2}\.md$/.test(name) ? dateMs(name) : null;
    if (day === null) {
      notes.push(`${path}: not a dated daily file (memory/YYYY-MM-DD.md), not imported`);
      continue;
    }
    shards.push(...dayEntries(files.get(path)!, day, path));
  }
  return { shards, notes };
}

/**
 * A MEMORY.md's `## Log`: dated subheadings (`### 2026-11-02`) over entries, or entries that start with their date
 * (`- 2026-11-02: …`). Undated entries are noted, not guessed.
 */
export function datedLog(files: Files, path = 'MEMORY.md'): { shards: ImportedShard[]; notes: string[] } {
  const text = files.get(path);
  if (text === undefined) return { shards: [], notes: [] };
  const log = findSection(sections(text), ['Log']);
  if (!log) return { shards: [], notes: [`${path}: no "## Log" section with dated entries, not imported`] };
  const shards: ImportedShard[] = [];
  let undated = 0;
  let day: number | null = null;
  let headingTime = 0;
  for (const block of blocks(text.slice(log.body.start, log.body.end))) {
    if (block.kind === 'heading') {
      day = dateMs(block.text) ?? day;
      const afterDate = block.text.replace(isoDate, '').trim();
      headingTime = timeOf(afterDate)?.offset ?? 0;
      continue;
    }
    const leadingDate = /^\**(\d{4}-\d{2}-\d{2})\**\s*(?:[-–—:]\s*)?/.exec(block.text);
    const entryDay = leadingDate ? dateMs(leadingDate[1]) : day;
    const rest = leadingDate ? block.text.slice(leadingDate[0].length) : block.text;
    if (entryDay === null) {
      undated++;
      continue;
    }
    const own = timeOf(rest);
    const content = own ? own.rest : rest;
    if (content.trim() !== '') shards.push({ content, source: path, createdAt: entryDay + (own?.offset ?? (leadingDate ? 0 : headingTime)) });
  }
  return { shards, notes: undated > 0 ? [`${path}: ${undated} log ${undated === 1 ? 'entry has' : 'entries have'} no date, not imported`] : [] };
}
