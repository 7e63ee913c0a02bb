/** The conventions by name, telling them apart, and reading a workspace folder or a single file from disk. */
import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, isAbsolute, join, relative, sep } from 'node:path';
import { ValidationError } from '../engine/index.ts';
import { soulMdFormats, type Convention, type Files, type SoulMdFormat } from './document.ts';
import { frontmatter, frontmatterOf } from './frontmatter.ts';
import { findSection, sections } from './markdown.ts';
import { mainFileOf, openclaw } from './openclaw.ts';
import { soulmd } from './soulmd.ts';

export const conventions: Record<SoulMdFormat, Convention> = { openclaw, soulmd, frontmatter };

export const formatChoices = [...soulMdFormats, 'auto'] as const;
export type FormatChoice = (typeof formatChoices)[number];

export function parseFormat(field: string, value: unknown): FormatChoice {
  const format = typeof value === 'string' ? value.toLowerCase() : value;
  if (!formatChoices.includes(format as FormatChoice)) throw new ValidationError(field, `must be one of ${formatChoices.join(', ')}, got ${JSON.stringify(value)}`);
  return format as FormatChoice;
}

/**
 * Which convention a workspace follows: frontmatter when its main file opens with YAML; OpenClaw when it has
 * IDENTITY.md, a memory/ folder or `## Core Truths`; soul.md when it has STYLE.md, `## Who I Am` or `## Worldview`.
 */
export function detectFormat(files: Files): SoulMdFormat {
  const main = mainFileOf(files);
  const text = files.get(main);
  if (text === undefined) throw new ValidationError('path', 'holds no SOUL.md: give a workspace folder with a SOUL.md, or a markdown file');
  if (frontmatterOf(text)) return 'frontmatter';
  const all = sections(text);
  if (files.has('IDENTITY.md') || [...files.keys()].some((p) => p.startsWith('memory/')) || findSection(all, openclaw.traitHeadings)) return 'openclaw';
  if (files.has('STYLE.md') || findSection(all, [...soulmd.essenceHeadings, ...soulmd.traitHeadings])) return 'soulmd';
  throw new ValidationError('format', `cannot tell the convention of ${main} (no frontmatter, no "## Core Truths", no "## Who I Am"): give --format openclaw, soulmd or frontmatter`);
}

/** The files a convention reads; a memory folder only for its dated .md files. Other files (data/, examples/) are left alone. */
const workspaceFiles = ['SOUL.md', 'IDENTITY.md', 'STYLE.md', 'MEMORY.md'];

/**
 * A path of the workspace, as long as it stays inside it: a symbolic link (the file, or the memory folder) that
 * leads out of the workspace is refused, so an import reads only what the workspace holds.
 */
function insideWorkspace(root: string, path: string, shown: string): string {
  const real = realpathSync(path);
  const within = relative(root, real);
  if (within === '' || within.startsWith(`..${sep}`) || within === '..' || isAbsolute(within)) {
    throw new ValidationError('path', `${shown} is a symbolic link that leads outside the workspace: Souls imports only what the workspace holds (copy the file in, or remove the link)`);
  }
  return real;
}

/** A folder's SOUL.md and companions, or one file under its own name. Missing paths and unreadable files name themselves. */
export function readWorkspace(path: string): { files: Map<string, string>; folder: boolean } {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) throw new ValidationError('path', `${path} does not exist`);
  const files = new Map<string, string>();
  if (stat.isFile()) {
    files.set(basename(path), readFileSync(path, 'utf8'));
    return { files, folder: false };
  }
  if (!stat.isDirectory()) throw new ValidationError('path', `${path} is neither a file nor a folder`);
  const root = realpathSync(path);
  for (const name of workspaceFiles) {
    const file = join(path, name);
    if (statSync(file, { throwIfNoEntry: false })?.isFile()) files.set(name, readFileSync(insideWorkspace(root, file, join(path, name)), 'utf8'));
  }
  const memory = join(path, 'memory');
  if (statSync(memory, { throwIfNoEntry: false })?.isDirectory()) {
    const memoryReal = insideWorkspace(root, memory, memory);
    for (const entry of readdirSync(memoryReal, { withFileTypes: true })) {
      if (!entry.name.endsWith('.md')) continue;
      const file = join(memoryReal, entry.name);
      if (!(entry.isFile() || (entry.isSymbolicLink() && statSync(file, { throwIfNoEntry: false })?.isFile()))) continue;
      files.set(`memory/${entry.name}`, readFileSync(insideWorkspace(root, file, join(memory, entry.name)), 'utf8'));
    }
  }
  if (!files.has('SOUL.md')) throw new ValidationError('path', `${path} holds no SOUL.md`);
  return { files, folder: true };
}
