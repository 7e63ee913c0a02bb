// Reading a SOUL.md is linear in its size: each function that once backtracked or rescanned on a pathological shape
// (thousands of headings, a heading padded with spaces, unclosed comments, a key before a long run of spaces) reads a
// 1 MiB document of that shape and answers exactly what a short one of the same shape answers.
import { describe, expect, it } from 'vitest';
import { blocks, headingKey, sections, sectionsOf, stripComments, type Heading } from '../src/interop/markdown.ts';
import { identityFields } from '../src/interop/openclaw.ts';
import { soulmd } from '../src/interop/soulmd.ts';
import { frontmatter, MAX_FRONTMATTER_BYTES } from '../src/interop/frontmatter.ts';
import { readSoulMd } from '../src/interop/document.ts';

const MiB = 1024 * 1024;
const HEADING = '## Core Truths\n';

describe('sections', () => {
  it('splits 1 MiB of "## Core Truths" lines into one section per line, each ending where the next begins', () => {
    const count = Math.floor(MiB / HEADING.length);
    const all = sections(HEADING.repeat(count));
    expect(all).toHaveLength(count);
    for (const [i, section] of all.entries()) {
      const start = i * HEADING.length;
      expect(section).toEqual({ heading: 'Core Truths', line: { start, end: start + HEADING.length }, body: { start: start + HEADING.length, end: start + HEADING.length } });
    }
  });

  it('reads each heading once to find where the sections end (it once copied the rest of the list for every heading)', () => {
    const count = 50_000;
    const found: Heading[] = Array.from({ length: count }, (_, i) => ({ heading: 'Core Truths', line: { start: i * HEADING.length, end: (i + 1) * HEADING.length }, headingLevel: 2 }));
    let reads = 0;
    const counted = new Proxy(found, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const all = sectionsOf(counted, 2, count * HEADING.length);
    expect(all).toHaveLength(count);
    expect(all[count - 1].body).toEqual({ start: count * HEADING.length, end: count * HEADING.length });
    expect(reads).toBe(count);
  });

  it('ends a section at the next heading of its level or above, not at a deeper one, across many', () => {
    const unit = '## A\nx\n### a\ny\n# T\n## B\n';
    const repeats = 20_000;
    const text = unit.repeat(repeats);
    const all = sections(text);
    expect(all).toHaveLength(2 * repeats);
    for (let i = 0; i < repeats; i++) {
      const base = i * unit.length;
      // ## A runs over ### a up to # T; ## B runs to the next ## A (or the end).
      expect(all[2 * i]).toMatchObject({ heading: 'A', body: { start: base + 5, end: base + unit.indexOf('# T') } });
      expect(all[2 * i + 1]).toMatchObject({ heading: 'B', body: { start: base + unit.length, end: base + unit.length } });
    }
    expect(sections(text, 3)).toHaveLength(repeats);
  });

  it('reads a heading padded with 1 MiB of spaces as that heading, closing hashes removed', () => {
    const padding = ' '.repeat(MiB);
    expect(sections(`## Core${padding}Truths${padding}##${padding}\n`)).toMatchObject([{ heading: `Core${padding}Truths` }]);
    // A line break other than "\n" inside the text makes it no heading, as before.
    expect(sections(`## Core${padding}\rTruths\n`)).toEqual([]);
  });
});

describe('the other readers of a document', () => {
  it('compares a heading padded with 1 MiB of colons, dots and spaces loosely', () => {
    expect(headingKey(`**Core Truths**${':. '.repeat(MiB / 3)}`)).toBe('core truths');
    expect(headingKey(`Core${':. '.repeat(MiB / 3)}Truths`)).toBe(`core${':. '.repeat(MiB / 3)}truths`);
  });

  it('keeps 1 MiB of unclosed comment openers as text, and still strips the closed ones before them', () => {
    const openers = '<!--'.repeat(MiB / 4);
    expect(stripComments(openers)).toBe(openers);
    expect(stripComments(`a<!-- x -->b<!-- y -->${openers}`)).toBe(`ab${openers}`);
    expect(stripComments('<!-->a-->b<!--->c')).toBe('b<!--->c');
  });

  it('reads a list item whose text holds a carriage return after a long run as a paragraph', () => {
    const run = ' '.repeat(MiB / 2);
    const word = 'a'.repeat(MiB / 2);
    expect(blocks(`- ${run}${word}\rb`)).toEqual([{ kind: 'paragraph', text: `- ${run}${word}\rb` }]);
    expect(blocks(`- ${run}${word}`)).toEqual([{ kind: 'item', text: word }]);
  });

  it('reads an identity card field padded with 1 MiB of spaces, and none when its value holds a line break', () => {
    const run = ' '.repeat(MiB / 2);
    expect(identityFields(`- **Name**${run}:${run}Mira`)).toEqual(new Map([['name', 'Mira']]));
    expect(identityFields(`- **Name:**${run}Mira`)).toEqual(new Map([['name', 'Mira']]));
    expect(identityFields(`Name${run}:${run}Mira\rx`)).toEqual(new Map());
  });

  it('reads a soul.md title of words far apart, padded before its closing hashes', () => {
    const run = ' '.repeat(MiB / 4);
    const read = soulmd.identity(new Map([['SOUL.md', `# Relay${run}of the${run}Night${run}##${run}\n\nOn call.\n`]]), 'SOUL.md');
    expect(read.name).toBe(`Relay of the Night`);
    expect(soulmd.identity(new Map([['SOUL.md', `# C#${run}\n`]]), 'SOUL.md').name).toBe('C#');
  });
});

describe('frontmatter', () => {
  const file = (yaml: string) => new Map([['SOUL.md', `---\n${yaml}---\n\n## Who You Are\n\nA smith.\n`]]);
  const keys = (count: number) => Array.from({ length: count }, (_, i) => `k${i}: v\n`).join('');

  it('reads thousands of keys and finds a repeated one, naming it and its line', () => {
    const many = keys(3000);
    expect(readSoulMd(frontmatter, file(`name: Brannoc\n${many}`)).name).toBe('Brannoc');
    expect(() => readSoulMd(frontmatter, file(`name: Brannoc\n${many}k0: again\n`))).toThrow(expect.objectContaining({ field: 'SOUL.md frontmatter', message: 'Map keys must be unique: "k0" again at line 3002, column 1' }));
    expect(() => readSoulMd(frontmatter, file('name: B\nmeta:\n  a: 1\n  a: 2\n'))).toThrow(expect.objectContaining({ message: 'Map keys must be unique: "a" again at line 4, column 3' }));
  });

  it(`refuses a frontmatter over ${MAX_FRONTMATTER_BYTES} bytes before parsing it, naming it`, () => {
    const big = `name: Brannoc\nnotes: "${'x'.repeat(MAX_FRONTMATTER_BYTES)}"\n`;
    expect(() => readSoulMd(frontmatter, file(big))).toThrow(expect.objectContaining({ field: 'SOUL.md frontmatter', message: expect.stringMatching(/^must be at most 32768 bytes \(it has \d+\)/) }));
  });
});
