/**
 * A markdown file under YAML frontmatter (AgentOS style: name, role, hexaco, moods, hardLimits, metadata …). Souls
 * owns the keys `name` and `description` (or `role` when the file has no description), the body's `## Who You Are`
 * (essence) and a `## Traits` list; every other key and section is kept byte for byte: the frontmatter is never
 * re-serialized, only the owned values are replaced in place.
 */
import { createRequire } from 'node:module';
import type { Document } from 'yaml';
import { cleanText, ValidationError } from '../engine/index.ts';
import type { Convention, Edit } from './document.ts';
import { lines, plainText } from './markdown.ts';
import { mainFileOf } from './openclaw.ts';

const require = createRequire(import.meta.url);
let yamlModule: typeof import('yaml') | undefined;
/** yaml (about 13 MiB resident) is loaded by the first frontmatter read or written, not by every program importing this file (the server does). */
const yaml = () => (yamlModule ??= require('yaml') as typeof import('yaml'));

type Frontmatter = { source: string; start: number; end: number; closeEnd: number };

/** The YAML between a first line `---` and the next `---` line: its text, where it lies, and where the body starts. */
export function frontmatterOf(text: string): Frontmatter | null {
  const all = lines(text);
  if (all.length === 0 || all[0].text !== '---') return null;
  const close = all.findIndex((l, i) => i > 0 && (l.text === '---' || l.text === '...'));
  if (close === -1) return null;
  return { source: text.slice(all[0].end, all[close].start), start: all[0].end, end: all[close].start, closeEnd: all[close].end };
}

function parsed(text: string, file: string): { fm: Frontmatter; doc: Document } | null {
  const fm = frontmatterOf(text);
  if (!fm) return null;
  const doc = yaml().parseDocument(fm.source, { keepSourceTokens: false });
  if (doc.errors.length > 0) throw new ValidationError(`${file} frontmatter`, doc.errors[0].message.split('\n')[0]);
  if (doc.contents !== null && !yaml().isMap(doc.contents)) throw new ValidationError(`${file} frontmatter`, 'must be a mapping of keys to values');
  return { fm, doc };
}

const owned = ['name', 'description', 'role'];

function stringValue(doc: Document, key: string): string | null {
  const value = doc.get(key);
  return typeof value === 'string' ? plainText(value) : typeof value === 'number' ? String(value) : null;
}

/** The key that holds the description: `description`, else `role` when only that is there. */
const descriptionKey = (doc: Document) => (doc.has('description') || !doc.has('role') ? 'description' : 'role');

const scalar = (value: string) => yaml().stringify(value, { lineWidth: 0 }).trimEnd();

export const frontmatter: Convention = {
  format: 'frontmatter',
  mainFile: mainFileOf,
  essenceHeadings: ['Who You Are', 'Who I Am'],
  traitHeadings: ['Traits', 'Principles', 'Core Truths'],
  traitStyle: 'bullet',
  bodyStart: (text) => frontmatterOf(text)?.closeEnd ?? 0,
  identity(files, main) {
    const p = parsed(files.get(main) ?? '', main);
    if (!p) return { name: null, description: '', notes: [`${main}: no YAML frontmatter`] };
    const kept = yaml().isMap(p.doc.contents) ? p.doc.contents.items.map((pair) => String(yaml().isScalar(pair.key) ? pair.key.value : pair.key)).filter((k) => !owned.includes(k)) : [];
    return {
      name: stringValue(p.doc, 'name'),
      description: stringValue(p.doc, descriptionKey(p.doc)) ?? '',
      notes: kept.length > 0 ? [`${main}: frontmatter keys ${kept.join(', ')} kept byte for byte (Souls owns name and ${descriptionKey(p.doc)})`] : [],
    };
  },
  identityEdits(text, state) {
    const p = parsed(text, 'frontmatter');
    if (!p || !yaml().isMap(p.doc.contents)) return [];
    const edits: Edit[] = [];
    const map = p.doc.contents;
    const want = [
      ['name', cleanText(state.name)],
      [descriptionKey(p.doc), cleanText(state.description).trim()],
    ] as const;
    for (const [key, value] of want) {
      if ((stringValue(p.doc, key) ?? '') === value) continue;
      const pair = map.items.find((item) => yaml().isScalar(item.key) && item.key.value === key);
      const range = pair && (pair.value as { range?: [number, number, number] } | null)?.range;
      if (range) edits.push({ span: { start: p.fm.start + range[0], end: p.fm.start + range[1] }, text: scalar(value) });
      else if (!pair && value !== '') {
        const eol = text.includes('\r\n') ? '\r\n' : '\n';
        edits.push({ span: { start: p.fm.end, end: p.fm.end }, text: `${key}: ${scalar(value)}${eol}` });
      }
    }
    return edits;
  },
  memory: () => ({ shards: [], notes: [] }),
  skeleton: (state, eol) =>
    ['---', `name: ${scalar(state.name)}`, ...(state.description ? [`description: ${scalar(state.description)}`] : []), '---', '', '## Who You Are', '', '## Traits', ''].join(eol),
};
