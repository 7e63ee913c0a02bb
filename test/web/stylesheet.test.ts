// The hand-written stylesheet's structure, without a browser. It uses no CSS nesting, so a rule left open (a brace
// lost in a merge) does not fail the build: the minifier reads everything after it as nested and scopes it under
// that rule's selector, and dark mode, the chart and the new screens' layout silently stop applying.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const source = readFileSync(new URL('../../web/src/styles.css', import.meta.url), 'utf8');

/** Each block's prelude (selector or at-rule) with the preludes of the blocks opened inside it, and the leftovers. */
function blocks(css: string): { nested: string[]; unclosed: string[]; strayClosing: number } {
  const text = css.replace(/\/\*[\s\S]*?\*\//g, '').replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""');
  const open: string[] = [];
  const nested: string[] = [];
  let strayClosing = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === ';') start = i + 1;
    else if (c === '{') {
      const prelude = text.slice(start, i).trim().replace(/\s+/g, ' ');
      const parent = open.at(-1);
      // Only an at-rule (@media, @keyframes) holds blocks; a style rule holds declarations.
      if (parent !== undefined && !parent.startsWith('@')) nested.push(`${prelude} inside ${parent}`);
      open.push(prelude);
      start = i + 1;
    } else if (c === '}') {
      if (open.pop() === undefined) strayClosing++;
      start = i + 1;
    }
  }
  return { nested, unclosed: open, strayClosing };
}

describe('web/src/styles.css', () => {
  it('closes every rule and opens no style rule inside another', () => {
    const { nested, unclosed, strayClosing } = blocks(source);
    expect(unclosed, 'rules left open at the end').toEqual([]);
    expect(nested.slice(0, 3), 'rules nested in a style rule').toEqual([]);
    expect(strayClosing, 'closing braces with nothing open').toBe(0);
  });

  it('styles a button’s states on the button itself, so test/web/button-contrast.ts may force every button’s state at once', () => {
    const selectors = [...source.replace(/\/\*[\s\S]*?\*\//g, '').matchAll(/([^{}]+)\{/g)].flatMap((m) => m[1].split(',').map((s) => s.trim())).filter((s) => !s.startsWith('@'));
    // A state followed by a combinator styles another element by this one's state; :has() and :focus-within do by a descendant's.
    const across = selectors.filter((s) => /:(hover|active|focus|focus-visible)\b[^\s>+~]*\s*[\s>+~]\s*\S/.test(s) || /:has\(|:focus-within/.test(s));
    expect(selectors.length).toBeGreaterThan(300);
    expect(across).toEqual([]);
  });

  it('finds an unclosed rule (the check itself)', () => {
    const broken = blocks('.a { color: red;\n\n:root { --x: 1; }\n@media (x) { .b { y: 1; } }\n');
    expect(broken.unclosed).toEqual(['.a']);
    expect(broken.nested).toEqual([':root inside .a', '@media (x) inside .a']);
    expect(blocks('@media (x) { .b { y: 1; } } .c { z: 2; }')).toEqual({ nested: [], unclosed: [], strayClosing: 0 });
  });
});
