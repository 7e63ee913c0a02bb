// Docs that cannot rot: the commands and operations README.md and docs/*.md show, run as written.
//
// Marking a block. A fenced block whose info string is `sh runnable` or `graphql runnable` runs here, in document
// order, against a fresh database per file (other blocks are only shown):
// - `sh runnable`: every line (blank lines and `# comments` skipped) is a souls command, as a reader types it:
//   `npm run souls -- ARGS`, `npm run --silent souls -- ARGS` or `souls ARGS` run the `souls` program
//   (src/cli/souls.js); `npm run demo [-- ARGS]` runs scripts/demo.ts. SOULS_DB names the file's database, and a
//   path under /tmp/ is moved into this test's folder. Each must exit 0. Anything else on a line (a pipe, `&&`, a
//   variable assignment, another program) fails: leave such a block unmarked.
// - `graphql runnable`: each operation runs, in order, through a real server (LiveServer) over the same database.
//   A variable `$xId` takes the id of the last `x { id }` an earlier answer in the file held, `$xIds` the ids of the
//   last list `xs`; a document with one anonymous operation runs as it is. An answer must be HTTP 200 without
//   errors and without a `__typename` ending in `Error`; in a `graphql runnable error` block each operation must
//   answer such a typename instead (an error as data).
// - A block whose info string has `file=PATH` (`ts file=examples/clients/apollo.ts`) shows that file of the project
//   whole, and must be identical to it: the code a test runs (test/clients/ runs examples/clients/*.ts) is the code
//   the reader copies.
// Every relative link and image in README.md, CHANGELOG.md and docs/*.md must name a file that exists, and a
// `#anchor` a heading (GitHub's slug) or an `<a id>` of the file it points into.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Kind, parse, print, type OperationDefinitionNode } from 'graphql';
import { cleanEnv } from './support/cli.ts';
import { startServer, type LiveServer } from './support/server.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SOULS = join(ROOT, 'src/cli/souls.js');
const DEMO = join(ROOT, 'scripts/demo.ts');
const DOCS = ['README.md', 'CHANGELOG.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
/** The server's clock: the dates the docs' examples give are near it. */
const NOW = Date.UTC(2026, 10, 26, 12);

type Block = { lang: string; words: string[]; body: string; line: number };

/** Fenced blocks at the start of a line, with their info string split into words. */
function fencedBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)(.*)$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    while (++i < lines.length && !/^```\s*$/.test(lines[i])) body.push(lines[i]);
    blocks.push({ lang: open[1], words: open[2].trim().split(/\s+/).filter(Boolean), body: body.join('\n'), line: start + 1 });
  }
  return blocks;
}

/** A shell line as words: quotes and backslashes as sh reads them, an unquoted `#` starting a word begins a comment. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      if (end < 0) throw new Error(`an unclosed ${c}`);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '\\') {
      word = (word ?? '') + (line[++i] ?? '');
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else if (c === '#' && word === null) {
      break;
    } else if ('|&;<>`$('.includes(c)) {
      throw new Error(`"${c}" is shell syntax, not a souls command: leave the block unmarked`);
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/** The program and arguments a documented line runs, or why it is not a souls command. */
function souls(words: string[]): { program: string; args: string[] } {
  const afterDashes = (from: number) => (words[from] === undefined ? [] : words[from] === '--' ? words.slice(from + 1) : null);
  if (words[0] === 'souls') return { program: SOULS, args: words.slice(1) };
  if (words[0] === 'npm' && words[1] === 'run') {
    const silent = words[2] === '--silent' ? 1 : 0;
    const script = words[2 + silent];
    const args = afterDashes(3 + silent);
    if (script === 'souls' && args) return { program: SOULS, args };
    if (script === 'demo' && args) return { program: DEMO, args };
  }
  throw new Error('not a souls command (npm run souls -- …, souls …, npm run demo)');
}

function run(program: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [program, ...args], { cwd: ROOT, env: cleanEnv(env), timeout: 20_000 }, (error, stdout, stderr) => {
      done({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

function typenames(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) typenames(item, found);
  else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (key === '__typename' && typeof inner === 'string') found.push(inner);
      else typenames(inner, found);
    }
  }
  return found;
}

/** Records `x { id }` as $xId and a list `xs: [{ id }]` as $xIds (and its first as $xId), depth first. */
function bindIds(value: unknown, bound: Map<string, unknown>): void {
  if (Array.isArray(value)) {
    for (const item of value) bindIds(item, bound);
    return;
  }
  if (!value || typeof value !== 'object') return;
  for (const [key, inner] of Object.entries(value)) {
    if (Array.isArray(inner) && inner.length > 0 && inner.every((item) => item && typeof item === 'object' && typeof item.id === 'string')) {
      const singular = key.replace(/s$/, '');
      bound.set(`${singular}Ids`, inner.map((item) => item.id));
      bound.set(`${singular}Id`, inner[0].id);
    } else if (inner && typeof inner === 'object' && !Array.isArray(inner) && typeof (inner as { id?: unknown }).id === 'string') {
      bound.set(`${key}Id`, (inner as { id: string }).id);
    }
    bindIds(inner, bound);
  }
}

/** One documented file's runnable blocks, in order, on one database; throws naming the file, line and what failed. */
async function runDocument(file: string): Promise<number> {
  const blocks = fencedBlocks(readFileSync(join(ROOT, file), 'utf8')).filter((b) => b.words[0] === 'runnable');
  const folder = mkdtempSync(join(tmpdir(), 'souls-docs-'));
  const env = { SOULS_DB: join(folder, 'souls.db') };
  const bound = new Map<string, unknown>();
  let server: LiveServer | null = null;
  let ran = 0;
  try {
    for (const block of blocks) {
      const where = `${file}:${block.line}`;
      if (block.lang === 'sh') {
        for (const line of block.body.split('\n')) {
          let command;
          try {
            const words = shellWords(line);
            if (words.length === 0) continue;
            command = souls(words);
          } catch (error) {
            throw new Error(`${where}: ${line}\n${(error as Error).message}`);
          }
          const args = command.args.map((arg) => arg.replace(/(^|=)\/tmp\//, (_, head: string) => `${head}${folder}/`));
          const result = await run(command.program, args, env);
          if (result.code !== 0) throw new Error(`${where}: ${line}\nexited ${result.code}\n${result.stderr}${result.stdout}`);
          ran++;
        }
      } else if (block.lang === 'graphql') {
        server ??= await startServer({ start: NOW, path: env.SOULS_DB });
        const document = parse(block.body);
        const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
        for (const operation of operations) {
          const name = operation.name?.value ?? '(anonymous)';
          const variables: Record<string, unknown> = {};
          for (const definition of operation.variableDefinitions ?? []) {
            const variable = definition.variable.name.value;
            if (bound.has(variable)) variables[variable] = bound.get(variable);
            else if (definition.type.kind === Kind.NON_NULL_TYPE && !definition.defaultValue) {
              throw new Error(`${where} ${name}: no value for $${variable}: an earlier operation in ${file} must answer ${variable.replace(/Ids?$/, '')} { id }`);
            }
          }
          const { status, body } = await server.request(print(operation), variables);
          const answer = JSON.stringify(body);
          if (status !== 200 || body?.errors) throw new Error(`${where} ${name}: HTTP ${status} ${answer}`);
          const errorsAsData = typenames(body.data).filter((t) => t.endsWith('Error'));
          if (block.words.includes('error') ? errorsAsData.length === 0 : errorsAsData.length > 0) {
            throw new Error(`${where} ${name}: ${block.words.includes('error') ? 'expected an error as data' : 'answered an error'}: ${answer}`);
          }
          bindIds(body.data, bound);
          ran++;
        }
      } else {
        throw new Error(`${where}: only sh and graphql blocks can be runnable, not "${block.lang}"`);
      }
    }
  } finally {
    await server?.stop();
    rmSync(folder, { recursive: true, force: true });
  }
  return ran;
}

/** GitHub's anchor for a heading: lowercased, punctuation dropped, spaces to hyphens; repeats get -1, -2 … */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const slug = heading[1]
        .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-');
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const match of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]);
  }
  return anchors;
}

/** Relative links and images outside code, as `target` with the line they are on. */
function relativeLinks(text: string): Array<{ target: string; line: number }> {
  const links: Array<{ target: string; line: number }> = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) return;
    const prose = line.replace(/`[^`]*`/g, '');
    for (const match of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (!/^[a-z][a-z+.-]*:/i.test(match[1])) links.push({ target: match[1], line: i + 1 });
    }
  });
  return links;
}

function brokenLinks(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const broken: string[] = [];
  for (const { target, line } of relativeLinks(text)) {
    const [path, anchor] = target.split('#', 2) as [string, string | undefined];
    const resolved = path === '' ? join(ROOT, file) : resolve(dirname(join(ROOT, file)), decodeURI(path));
    if (!existsSync(resolved)) {
      broken.push(`${file}:${line}: ${target} (no ${relative(ROOT, resolved)})`);
    } else if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(readFileSync(resolved, 'utf8')).has(anchor)) {
      broken.push(`${file}:${line}: ${target} (no heading #${anchor} in ${relative(ROOT, resolved)})`);
    }
  }
  return broken;
}

const runnable = DOCS.filter((file) => fencedBlocks(readFileSync(join(ROOT, file), 'utf8')).some((b) => b.words[0] === 'runnable'));

describe('runnable blocks in the docs', { timeout: 120_000 }, () => {
  it('README.md and the topic docs have some', () => {
    for (const file of ['README.md', 'docs/api.md', 'docs/cli.md', 'docs/evidence.md', 'docs/soulmd.md']) expect(runnable, file).toContain(file);
  });

  for (const file of runnable) {
    it.concurrent(`${file} runs as written on a fresh database`, async () => {
      expect(await runDocument(file)).toBeGreaterThan(0);
    });
  }
});

/** Blocks that name the file they show (`file=PATH`), and how each differs from it: what it lacks, or that it is missing. */
function staleFileBlocks(file: string): string[] {
  const stale: string[] = [];
  for (const block of fencedBlocks(readFileSync(join(ROOT, file), 'utf8'))) {
    const shown = block.words.find((word) => word.startsWith('file='))?.slice('file='.length);
    if (shown === undefined) continue;
    const path = join(ROOT, shown);
    if (!existsSync(path)) stale.push(`${file}:${block.line}: ${shown} does not exist`);
    else if (readFileSync(path, 'utf8').trimEnd() !== block.body.trimEnd()) stale.push(`${file}:${block.line}: the block differs from ${shown}: copy the file into it`);
  }
  return stale;
}

describe('blocks that show a file of the project', () => {
  it('docs/api.md shows every client of examples/clients/ (test/clients/ runs them)', () => {
    const shown = fencedBlocks(readFileSync(join(ROOT, 'docs/api.md'), 'utf8')).flatMap((b) => b.words.filter((w) => w.startsWith('file=')).map((w) => w.slice('file='.length)));
    const clients = readdirSync(join(ROOT, 'examples/clients')).map((name) => `examples/clients/${name}`);
    expect(clients.filter((client) => !shown.includes(client))).toEqual([]);
  });

  it('each is identical to the file it names', () => {
    expect(DOCS.flatMap(staleFileBlocks)).toEqual([]);
  });
});

describe('links in the docs', () => {
  it('every relative link and #anchor resolves', () => {
    expect(DOCS.flatMap(brokenLinks)).toEqual([]);
  });
});
