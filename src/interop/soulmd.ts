/**
 * The soul.md convention: SOUL.md with `# Name`, a one-line summary, `## Who I Am`, `## Worldview`, `## Opinions`
 * and more, beside STYLE.md and a MEMORY.md whose `## Log` holds dated entries. Souls owns the title (name), the
 * summary (description), Who I Am (essence) and Worldview (traits, one bullet each); the rest is kept as is.
 */
import { cleanText } from '../engine/index.ts';
import type { Convention, Edit, Files } from './document.ts';
import { isPlaceholder, lines, plainText, sections, withoutClosingHashes, type Span } from './markdown.ts';
import { datedLog } from './memory.ts';
import { mainFileOf } from './openclaw.ts';

const hr = /^ {0,3}([-*_])( *\1){2,} *$/;

/** A title without the closing `#`s that follow a space ("Relay ##" is "Relay", "C#" stays), and without trailing spaces. */
function titleName(rest: string): string {
  const bare = withoutClosingHashes(rest);
  return /\s/.test(rest[bare.length] ?? '') ? bare : rest.trimEnd();
}

/** The `# Name` line and the summary paragraph under it (before the first section), as spans of `text`. */
function titleAndSummary(text: string): { title: { span: Span; name: string } | null; summary: { span: Span; text: string } | null; afterTitle: number } {
  const firstSection = sections(text)[0]?.line.start ?? text.length;
  const all = lines(text, 0, firstSection);
  const titleIndex = all.findIndex((l) => /^ {0,3}#\s+\S/.test(l.text));
  if (titleIndex === -1) return { title: null, summary: null, afterTitle: 0 };
  const t = all[titleIndex];
  const title = { span: { start: t.start, end: t.start + t.text.length }, name: titleName(t.text.replace(/^ {0,3}#\s+/, '')) };
  let inComment = false;
  let first = -1;
  let last = -1;
  for (let i = titleIndex + 1; i < all.length; i++) {
    const line = all[i].text;
    if (inComment) {
      if (line.includes('-->')) inComment = false;
      continue;
    }
    if (first === -1 && line.trim().startsWith('<!--')) {
      inComment = !line.includes('-->');
      continue;
    }
    if (line.trim() === '' || hr.test(line)) {
      if (first !== -1) break;
      continue;
    }
    if (first === -1) first = i;
    last = i;
  }
  const summary = first === -1 ? null : { span: { start: all[first].start, end: all[last].start + all[last].text.length }, text: plainText(text.slice(all[first].start, all[last].start + all[last].text.length)) };
  return { title, summary, afterTitle: t.end };
}

export const soulmd: Convention = {
  format: 'soulmd',
  mainFile: mainFileOf,
  essenceHeadings: ['Who I Am'],
  traitHeadings: ['Worldview'],
  traitStyle: 'bullet',
  bodyStart: () => 0,
  identity(files: Files, main: string) {
    const { title, summary } = titleAndSummary(files.get(main) ?? '');
    const notes: string[] = [];
    if (files.has('STYLE.md')) notes.push('STYLE.md: voice and style, kept as is (Souls does not own it)');
    const name = title && !isPlaceholder(title.name) ? plainText(title.name) : null;
    return { name, description: summary && !isPlaceholder(summary.text) ? summary.text : '', notes };
  },
  identityEdits(text, state) {
    const { title, summary, afterTitle } = titleAndSummary(text);
    const edits: Edit[] = [];
    if (title && plainText(title.name) !== cleanText(state.name)) edits.push({ span: title.span, text: `# ${state.name}` });
    const description = cleanText(state.description).trim();
    if (summary && summary.text !== description && description !== '') edits.push({ span: summary.span, text: description });
    else if (!summary && title && description !== '') {
      const eol = text.includes('\r\n') ? '\r\n' : '\n';
      edits.push({ span: { start: afterTitle, end: afterTitle }, text: `${eol}${description}${eol}` });
    }
    return edits;
  },
  memory: (files) => datedLog(files, 'MEMORY.md'),
  skeleton: (state, eol) => [`# ${state.name}`, ...(state.description ? [state.description] : []), '---', '## Who I Am', '---', '## Worldview'].join(eol + eol) + eol,
};
