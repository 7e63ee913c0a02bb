/**
 * OpenClaw's workspace: SOUL.md without frontmatter (`## Core Truths` as bold-lead paragraphs, `## Boundaries`,
 * `## Vibe`, …), IDENTITY.md (`- **Name:** …` lines) and daily memory files (memory/YYYY-MM-DD.md). Souls owns the
 * Core Truths (traits) and the Vibe (essence); IDENTITY.md gives the name and description and is never rewritten.
 */
import type { Convention, Files } from './document.ts';
import { isPlaceholder, lines, plainText } from './markdown.ts';
import { dailyMemory } from './memory.ts';

/** The single .md file given, or the workspace's SOUL.md. */
export function mainFileOf(files: Files): string {
  if (files.has('SOUL.md')) return 'SOUL.md';
  const single = [...files.keys()].filter((p) => !p.includes('/'));
  return single.length === 1 ? single[0] : 'SOUL.md';
}

const fieldKey = /^\s*(?:[-*+]\s+)?(?:\*\*|__)?([A-Za-z][A-Za-z ]{0,30}?)(?:\*\*|__)?\s*:/;

/**
 * A line's key (up to its first colon) by regex, its value by hand: one regex to the end of the line
 * (`:\s*(?:\*\*|__)?\s*(.*)$`) backtracks cubically over a long run of spaces before a line break.
 */
function identityField(line: string): { key: string; value: string } | null {
  const key = fieldKey.exec(line);
  if (!key) return null;
  let value = line.slice(key[0].length).trimStart();
  if (value.startsWith('**') || value.startsWith('__')) value = value.slice(2).trimStart();
  return /[\r\u2028\u2029]/.test(value) ? null : { key: key[1], value };
}

/** `- **Name:** Mira`, `**Name:** Mira` or `Name: Mira`: the fields of an identity card, placeholders left out. */
export function identityFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const { text: line } of lines(text)) {
    const m = identityField(line);
    if (!m) continue;
    const value = plainText(m.value);
    if (value !== '' && !isPlaceholder(value)) fields.set(m.key.trim().toLowerCase(), value);
  }
  return fields;
}

export const openclaw: Convention = {
  format: 'openclaw',
  mainFile: mainFileOf,
  essenceHeadings: ['Vibe', 'The Vibe'],
  traitHeadings: ['Core Truths'],
  traitStyle: 'bold-lead',
  bodyStart: () => 0,
  identity(files) {
    const card = files.get('IDENTITY.md');
    const notes: string[] = [];
    if (card === undefined) return { name: null, description: '', notes };
    const fields = identityFields(card);
    notes.push('IDENTITY.md: read for the name and description (Creature); Souls never rewrites it');
    return { name: fields.get('name') ?? null, description: fields.get('creature') ?? '', notes };
  },
  identityEdits: () => [],
  memory(files) {
    const { shards, notes } = dailyMemory(files);
    if (files.has('MEMORY.md')) notes.push('MEMORY.md: undated long-term memory, not imported (a shard needs the day it was observed)');
    return { shards, notes };
  },
  skeleton: (state, eol) => [`# SOUL.md - Who You Are`, ...(state.description ? [`_${state.description}_`] : []), '## Core Truths', '## Vibe'].join(eol + eol) + eol,
};

/** The identity card a new OpenClaw workspace gets beside its SOUL.md. */
export function identityCard(name: string, description: string): string {
  return `# IDENTITY.md - Who Am I?\n\n- **Name:** ${name}\n${description ? `- **Creature:** ${description}\n` : ''}`;
}
