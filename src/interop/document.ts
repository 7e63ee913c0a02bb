/**
 * A SOUL.md convention and the two things Souls does with one: read a workspace into a soul, and write a soul
 * into a file while keeping every byte it does not own. Souls owns two regions of the main file (the essence and
 * the traits, found by their markers or, in a file Souls never wrote, by the convention's headings) and the few
 * identity lines a convention names (a title, a summary, frontmatter keys).
 */
import { cleanText } from '../engine/index.ts';
import {
  blocks,
  contentHash,
  contentSpan,
  eolOf,
  findSection,
  isPlaceholder,
  markedBlock,
  markedRegion,
  plainText,
  sections,
  splice,
  stripComments,
  type MarkedRegion,
  type RegionName,
  type Section,
  type Span,
} from './markdown.ts';

export const soulMdFormats = ['openclaw', 'soulmd', 'frontmatter'] as const;
export type SoulMdFormat = (typeof soulMdFormats)[number];

/** A workspace as read: paths relative to it ("SOUL.md", "memory/2026-11-02.md") to their text. */
export type Files = ReadonlyMap<string, string>;

export type ImportedTrait = { principle: string; provenance: string };
export type ImportedShard = { content: string; source: string; createdAt: number };

export type ImportedSoul = {
  format: SoulMdFormat;
  mainFile: string;
  name: string | null;
  description: string;
  essence: string;
  traits: ImportedTrait[];
  shards: ImportedShard[];
  /** What was read but not imported, and why; for the plan. */
  notes: string[];
};

/** What a SOUL.md shows of a soul: the owned fields, traits in render order. */
export type SoulState = { name: string; description: string; essence: string; principles: string[] };

export type Edit = { span: Span; text: string };

export type Convention = {
  format: SoulMdFormat;
  /** The file Souls writes; for a folder, the path inside it. */
  mainFile(files: Files): string;
  essenceHeadings: readonly string[];
  traitHeadings: readonly string[];
  traitStyle: 'bold-lead' | 'bullet';
  /** Where the markdown body starts (after a frontmatter block). */
  bodyStart(text: string): number;
  identity(files: Files, main: string): { name: string | null; description: string; notes: string[] };
  /** The identity lines of `text` that must change to show `state` (none when they already do). */
  identityEdits(text: string, state: SoulState): Edit[];
  memory(files: Files): { shards: ImportedShard[]; notes: string[] };
  /** A new main file with no owned content yet: `writeSoulMd` fills it. */
  skeleton(state: SoulState, eol: string): string;
};

type Located = { name: RegionName; section: Section | undefined; marked: MarkedRegion | null; span: Span | null; content: string };

const regionHeadings = (convention: Convention, name: RegionName) => (name === 'essence' ? convention.essenceHeadings : convention.traitHeadings);

/** Both owned regions of `text`: by their markers, else by the convention's headings (the sections read once for both). */
function locate(convention: Convention, text: string): Record<RegionName, Located> {
  let all: Section[] | undefined;
  const one = (name: RegionName): Located => {
    const marked = markedRegion(text, name);
    if (marked) return { name, section: undefined, marked, span: marked.outer, content: text.slice(marked.inner.start, marked.inner.end) };
    all ??= sections(text, 2, convention.bodyStart(text));
    const section = findSection(all, regionHeadings(convention, name));
    const span = section ? contentSpan(text, section.body) : null;
    return { name, section, marked: null, span, content: span ? text.slice(span.start, span.end) : '' };
  };
  return { essence: one('essence'), traits: one('traits') };
}

export function essenceOf(content: string): string {
  return cleanText(stripComments(content)).trim();
}

export function principlesOf(content: string): string[] {
  return blocks(content)
    .filter((b) => b.kind !== 'heading' && !isPlaceholder(b.text))
    .map((b) => plainText(cleanText(b.text)))
    .filter((p) => p !== '');
}

const samePrinciples = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((p, i) => plainText(p) === plainText(b[i]));

/** "**Lead sentence.** The rest." — OpenClaw's bold-lead paragraph; the whole principle when it is one sentence. */
function boldLead(principle: string): string {
  const m = /^(.+?[.!?])(\s+)(\S[\s\S]*)$/.exec(principle);
  return m ? `**${m[1]}**${m[2]}${m[3]}` : `**${principle}**`;
}

function renderTraits(convention: Convention, principles: readonly string[], eol: string): string {
  if (principles.length === 0) return '';
  return convention.traitStyle === 'bold-lead' ? principles.map(boldLead).join(eol + eol) : principles.map((p) => `- ${p}`).join(eol);
}

/** Reads a workspace (or one file) in this convention. The name may be null: then the caller must give one. */
export function readSoulMd(convention: Convention, files: Files): ImportedSoul {
  const main = convention.mainFile(files);
  const text = files.get(main) ?? '';
  const { name, description, notes } = convention.identity(files, main);
  const { essence, traits } = locate(convention, text);
  const heading = (l: Located) => l.section?.heading ?? `souls:${l.name}`;
  const memory = convention.memory(files);
  if (!essence.section && !essence.marked) notes.push(`${main}: no ${convention.essenceHeadings.map((h) => `"## ${h}"`).join(' or ')} section, so no essence`);
  if (!traits.section && !traits.marked) notes.push(`${main}: no ${convention.traitHeadings.map((h) => `"## ${h}"`).join(' or ')} section, so no traits`);
  return {
    format: convention.format,
    mainFile: main,
    name,
    description,
    essence: essenceOf(essence.content),
    traits: principlesOf(traits.content).map((principle) => ({ principle, provenance: `imported from ${main}:${heading(traits)}` })),
    shards: memory.shards,
    notes: [...notes, ...memory.notes],
  };
}

/** Regions whose text is not what Souls last wrote there: a person edited inside the markers. */
export function editedRegions(convention: Convention, text: string): RegionName[] {
  return (['essence', 'traits'] as const).filter((name) => {
    const marked = markedRegion(text, name);
    return marked !== null && marked.hash !== null && contentHash(text.slice(marked.inner.start, marked.inner.end)) !== marked.hash;
  });
}

/**
 * `base` showing `state`: each owned region whose meaning differs is rewritten between markers, identity lines
 * are updated, and every other byte is kept. A region that already shows the state keeps its bytes, so writing
 * an untouched import back gives the same file. With no base, a new file in the convention's layout.
 */
export function writeSoulMd(convention: Convention, base: string | null, state: SoulState): string {
  const eol = base === null ? '\n' : eolOf(base);
  let text = base ?? convention.skeleton(state, eol);
  const edits: Edit[] = [...convention.identityEdits(text, state)];
  const appended: string[] = [];
  const regions = locate(convention, text);
  for (const name of ['essence', 'traits'] as const) {
    const here = regions[name];
    const unchanged = name === 'essence' ? essenceOf(here.content) === cleanText(state.essence).trim() : samePrinciples(principlesOf(here.content), state.principles);
    const intact = here.marked === null || here.marked.hash === null || contentHash(here.content) === here.marked.hash;
    if (unchanged && intact && (here.span !== null || (name === 'traits' && state.principles.length === 0))) continue;
    const block = markedBlock(name, name === 'essence' ? state.essence.trim() : renderTraits(convention, state.principles, eol), eol);
    if (here.span) edits.push({ span: here.span, text: block });
    else if (here.section) edits.push({ span: { start: here.section.line.end, end: here.section.line.end }, text: `${eol}${block}${eol}` });
    else appended.push(`## ${regionHeadings(convention, name)[0]}${eol}${eol}${block}${eol}`);
  }
  text = splice(text, edits);
  if (appended.length > 0) text = `${text}${text.endsWith('\n') || text === '' ? '' : eol}${eol}${appended.join(eol)}`;
  return text;
}
