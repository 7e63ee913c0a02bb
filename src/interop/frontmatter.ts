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
import { eachLine, plainText } from './markdown.ts';
import { mainFileOf } from './openclaw.ts';

const require = createRequire(import.meta.url);
let yamlModule: typeof import('yaml') | undefined;
/** yaml (about 13 MiB resident) is loaded by the first frontmatter read or written, not by every program importing this file (the server does). */
const yaml = () => (yamlModule ??= require('yaml') as typeof import('yaml'));

type Frontmatter = { source: string; start: number; end: number; closeEnd: number };

/** The YAML between a first line `---` and the next `---` line: its text, where it lies, and where the body starts. */
export function frontmatterOf(text: string): Frontmatter | null {
  const all = eachLine(text);
  const open = all.next();
  if (open.done || open.value.text !== '---') return null;
  for (const line of all) {
    if (line.text === '---' || line.text === '...') return { source: text.slice(open.value.end, line.start), start: open.value.end, end: line.start, closeEnd: line.end };
  }
  return null;
}

/** The first key that repeats in one of the document's mappings (compared as yaml does: the same node, or scalars of equal value). */
function repeatedKey(doc: Document): { key: string; at: number } | null {
  let repeated: { key: string; at: number } | null = null;
  yaml().visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        const key = yaml().isScalar(pair.key) ? pair.key.value : pair.key;
        if (seen.has(key)) {
          const node = (pair.key ?? pair.value) as { range?: [number, number, number] } | null;
          repeated = { key: String(key), at: node?.range?.[0] ?? 0 };
          return yaml().visit.BREAK;
        }
        seen.add(key);
      }
      return undefined;
    },
  });
  return repeated;
}

function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  return `line ${before.split('\n').length}, column ${offset - before.lastIndexOf('\n')}`;
}

/** A frontmatter is an identity card: bounded, so parsing the YAML stays quick (yaml reads a few thousand keys in a few tens of ms). */
export const MAX_FRONTMATTER_BYTES = 32 * 1024;

function parsed(text: string, file: string): { fm: Frontmatter; doc: Document } | null {
  const fm = frontmatterOf(text);
  if (!fm) return null;
  const size = Buffer.byteLength(fm.source, 'utf8');
  if (size > MAX_FRONTMATTER_BYTES) throw new ValidationError(`${file} frontmatter`, `must be at most ${MAX_FRONTMATTER_BYTES} bytes (it has ${size}): keep long prose in the body`);
  // yaml's own unique-key check compares each key with every earlier one (quadratic in the keys); ours is a set.
  const doc = yaml().parseDocument(fm.source, { keepSourceTokens: false, uniqueKeys: false });
  if (doc.errors.length > 0) throw new ValidationError(`${file} frontmatter`, doc.errors[0].message.split('\n')[0]);
  const repeated = repeatedKey(doc);
  if (repeated) throw new ValidationError(`${file} frontmatter`, `Map keys must be unique: ${JSON.stringify(repeated.key)} again at ${lineAndColumn(fm.source, repeated.at)}`);
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
