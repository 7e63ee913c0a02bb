// Text contrast measured in the page: for every visible element with its own text, the colour against the
// background painted under it (background colours composited up the tree; for gradients, the worst of their
// stops, each over what lies beneath). Disabled and translucent controls are exempt (WCAG 1.4.3), as are
// decorations (aria-hidden) and text hidden from sight.
import type { Page } from 'playwright-core';

export type ContrastProblem = { text: string; selector: string; ratio: number; need: number; fg: string; bg: string };

/** Every text below its bar: 4.5:1 for chips and badges, `text` (7:1 by default) for the rest. */
export async function contrastProblems(page: Page, need = { text: 7, chip: 4.5 }): Promise<ContrastProblem[]> {
  return page.evaluate((need) => {
    type RGBA = [number, number, number, number];
    const parse = (value: string): RGBA | null => {
      const m = /rgba?\(([\d.]+)[ ,]+([\d.]+)[ ,]+([\d.]+)(?:[ ,/]+([\d.]+))?\)/.exec(value);
      return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])] : null;
    };
    const over = (top: RGBA, under: RGBA): RGBA => {
      const a = top[3] + under[3] * (1 - top[3]);
      if (a === 0) return [0, 0, 0, 0];
      const mix = (i: number) => (top[i] * top[3] + under[i] * under[3] * (1 - top[3])) / a;
      return [mix(0), mix(1), mix(2), a];
    };
    const luminance = ([r, g, b]: RGBA) => {
      const lin = (c: number) => {
        const s = c / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    };
    const ratio = (a: RGBA, b: RGBA) => {
      const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
      return (hi + 0.05) / (lo + 0.05);
    };
    const layers = (images: string): string[] => {
      const out: string[] = [];
      let depth = 0;
      let start = 0;
      for (let i = 0; i < images.length; i++) {
        if (images[i] === '(') depth++;
        else if (images[i] === ')') depth--;
        else if (images[i] === ',' && depth === 0) {
          out.push(images.slice(start, i));
          start = i + 1;
        }
      }
      out.push(images.slice(start));
      return out.filter((l) => l.includes('gradient'));
    };
    const backgrounds = (element: Element): RGBA[] => {
      const chain: Element[] = [];
      for (let e: Element | null = element; e; e = e.parentElement) chain.unshift(e);
      let candidates: RGBA[] = [[255, 255, 255, 1]];
      for (const e of chain) {
        const style = getComputedStyle(e);
        const colour = parse(style.backgroundColor);
        if (colour && colour[3] > 0) candidates = candidates.map((c) => over(colour, c));
        // Image layers paint last to first; a gradient covers its whole box, and a transparent stop leaves what is
        // under it (over() of alpha 0), so each stop over each candidate beneath is a candidate.
        for (const layer of layers(style.backgroundImage).reverse()) {
          const stops = [...layer.matchAll(/rgba?\([^)]*\)/g)].map((m) => parse(m[0])!);
          if (stops.length === 0) continue;
          candidates = stops.flatMap((stop) => candidates.map((c) => over(stop, c)));
          candidates = candidates.filter((c, i) => candidates.findIndex((d) => d.every((v, k) => Math.abs(v - c[k]) < 0.5)) === i).slice(0, 64);
        }
      }
      return candidates;
    };
    const hidden = (element: Element) => {
      for (let e: Element | null = element; e; e = e.parentElement) {
        const style = getComputedStyle(e);
        if (style.visibility === 'hidden' || style.display === 'none' || Number(style.opacity) < 1) return true;
        if (style.clip === 'rect(0px, 0px, 0px, 0px)' || e.classList.contains('visually-hidden')) return true;
        if (e.matches(':disabled') || e.closest('[aria-disabled=true], [aria-hidden=true], svg')) return true;
      }
      return false;
    };
    const problems: { text: string; selector: string; ratio: number; need: number; fg: string; bg: string }[] = [];
    for (const element of document.body.querySelectorAll('*')) {
      const own = [...element.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent ?? '').join('').trim();
      if (!own || hidden(element)) continue;
      const rect = element.getBoundingClientRect();
      if (rect.width === 0 || rect.height === 0) continue;
      const style = getComputedStyle(element);
      const fg = parse(style.color);
      if (!fg) continue;
      const isChip = Boolean(element.closest('.chip, .level-badge, .reverted-tag, .dormant-tag, .age, .marks__signal'));
      const bar = isChip ? need.chip : need.text;
      for (const bg of backgrounds(element)) {
        const r = ratio(over(fg, bg), bg);
        if (r < bar) {
          const cls = typeof element.className === 'string' && element.className ? `.${element.className.trim().split(/\s+/).join('.')}` : '';
          problems.push({ text: own.slice(0, 50), selector: `${element.tagName.toLowerCase()}${cls}`, ratio: Math.round(r * 100) / 100, need: bar, fg: style.color, bg: `rgb(${bg.slice(0, 3).map(Math.round).join(', ')})` });
          break;
        }
      }
    }
    return problems;
  }, need);
}
