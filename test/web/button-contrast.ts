// Button text contrast in each interactive state, measured in the page. The states are forced through the
// DevTools protocol (CSS.forcePseudoState), so :hover, :focus-visible and :active apply to one button at a time
// without clicking it: a real press would run the action (retire a soul, revert a level-up). Disabled is measured on
// buttons disabled by the page itself. Translucent buttons (a disabled one's opacity) are composited over what lies
// beneath, so the ratio is the one on screen.
import type { CDPSession, Page } from 'playwright-core';

export type ButtonState = 'rest' | 'hover' | 'focus' | 'active' | 'disabled';
export type ButtonContrast = { state: ButtonState; button: string; text: string; ratio: number; fg: string; bg: string };

const forced: Record<Exclude<ButtonState, 'rest' | 'disabled'>, string[]> = { hover: ['hover'], focus: ['focus', 'focus-visible'], active: ['hover', 'active'] };

/** The lowest contrast of each visible button's text (its own and its children's) in `state`, one entry per button. */
export async function buttonContrasts(page: Page, cdp: CDPSession, state: ButtonState): Promise<ButtonContrast[]> {
  const marked = await page.evaluate((state) => {
    const buttons = [...document.querySelectorAll<HTMLElement>('button, .btn, [role=button]')].filter((b) => {
      const rect = b.getBoundingClientRect();
      const disabled = b.matches(':disabled');
      return rect.width > 0 && rect.height > 0 && getComputedStyle(b).visibility !== 'hidden' && (state === 'disabled' ? disabled : !disabled) && !b.closest('[aria-hidden=true], .toasts');
    });
    buttons.forEach((b, i) => b.setAttribute('data-contrast-probe', String(i)));
    return buttons.length;
  }, state);
  // Every probed button is forced into the state at once and all are measured in one pass: the stylesheet's state
  // rules all style the button itself (no `:hover +`, `:has(:hover)` or `:hover .child`; test/web/stylesheet.test.ts
  // keeps it so), so a button's colours do not depend on its neighbours' states. One frame wait per state, not per button.
  const pseudo = state === 'rest' || state === 'disabled' ? null : forced[state];
  let nodeIds: number[] = [];
  if (pseudo && marked > 0) {
    const { root } = await cdp.send('DOM.getDocument', { depth: 0 });
    ({ nodeIds } = await cdp.send('DOM.querySelectorAll', { nodeId: root.nodeId, selector: '[data-contrast-probe]' }));
    if (nodeIds.length !== marked) throw new Error(`${nodeIds.length} probed buttons found of the ${marked} marked`);
    await Promise.all(nodeIds.map((nodeId) => cdp.send('CSS.forcePseudoState', { nodeId, forcedPseudoClasses: pseudo })));
  }
  // Two frames: transitions (shortened to nothing under reduced motion) settle before the colours are read.
  const measured = await page.evaluate(async ([count, state]) => {
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    return Array.from({ length: count }, (_, i) => measure(document.querySelector(`[data-contrast-probe="${i}"]`)!, state as string));

    function measure(button: Element, state: string) {
        type RGBA = [number, number, number, number];
        const parse = (value: string): RGBA | null => {
          const m = /rgba?\(([\d.]+)[ ,]+([\d.]+)[ ,]+([\d.]+)(?:[ ,/]+([\d.]+))?\)/.exec(value);
          return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])] : null;
        };
        const over = (top: RGBA, under: RGBA): RGBA => {
          const a = top[3] + under[3] * (1 - top[3]);
          if (a === 0) return [0, 0, 0, 0];
          const mix = (k: number) => (top[k] * top[3] + under[k] * under[3] * (1 - top[3])) / a;
          return [mix(0), mix(1), mix(2), a];
        };
        const fade = (top: RGBA, under: RGBA, opacity: number): RGBA => over([top[0], top[1], top[2], top[3] * opacity], under);
        const luminance = ([r, g, b]: RGBA) => {
          const lin = (c: number) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
          return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
        };
        const ratio = (a: RGBA, b: RGBA) => {
          const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
          return (hi + 0.05) / (lo + 0.05);
        };
        // Every stop of a gradient is a candidate background (the worst counts), as in contrast.ts.
        const layerStops = (images: string): RGBA[][] =>
          images === 'none' ? [] : images.split(/,(?![^(]*\))(?=\s*(?:linear|radial|repeating|conic))/).map((l) => [...l.matchAll(/rgba?\([^)]*\)/g)].map((m) => parse(m[0])!)).filter((s) => s.length > 0);
        const paint = (e: Element, under: RGBA[]): RGBA[] => {
          const style = getComputedStyle(e);
          const colour = parse(style.backgroundColor);
          let out = colour && colour[3] > 0 ? under.map((c) => over(colour, c)) : under;
          for (const stops of layerStops(style.backgroundImage).reverse()) out = stops.flatMap((stop) => out.map((c) => over(stop, c))).slice(0, 64);
          return out;
        };
        // Beneath the button: the page up to its parent. The button and what is inside it fade together by its opacity.
        const chain: Element[] = [];
        for (let e: Element | null = button.parentElement; e; e = e.parentElement) chain.unshift(e);
        let beneath: RGBA[] = [[255, 255, 255, 1]];
        for (const e of chain) beneath = paint(e, beneath);
        let opacity = 1;
        for (let e: Element | null = button; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
        const texts = [button, ...button.querySelectorAll('*')].filter((e) => [...e.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim()) && !e.closest('.visually-hidden, svg') && e.getBoundingClientRect().width > 0);
        let worst: { text: string; ratio: number; fg: string; bg: string } | null = null;
        for (const element of texts) {
          const inner: Element[] = [];
          for (let e: Element | null = element; e && e !== button; e = e.parentElement) inner.unshift(e);
          const fg = parse(getComputedStyle(element).color)!;
          for (const under of beneath) {
            let group: RGBA[] = paint(button, [under]);
            for (const e of inner) group = paint(e, group);
            for (const top of group) {
              const bg = fade(top, under, opacity);
              const text = fade(over(fg, top), under, opacity);
              const r = ratio(text, bg);
              if (!worst || r < worst.ratio) worst = { text: (element.textContent ?? '').trim().slice(0, 40), ratio: Math.round(r * 100) / 100, fg: `rgb(${text.slice(0, 3).map(Math.round).join(', ')})`, bg: `rgb(${bg.slice(0, 3).map(Math.round).join(', ')})` };
            }
          }
        }
        const label = button.getAttribute('aria-label') ?? (button.textContent ?? '').trim().slice(0, 40);
        return worst ? { state, button: `${button.tagName.toLowerCase()}.${[...button.classList].join('.')} “${label}”`, ...worst } : null;
      }
  }, [marked, state] as const);
  await Promise.all(nodeIds.map((nodeId) => cdp.send('CSS.forcePseudoState', { nodeId, forcedPseudoClasses: [] })));
  const out = measured.filter((m) => m !== null) as ButtonContrast[];
  await page.evaluate(() => document.querySelectorAll('[data-contrast-probe]').forEach((b) => b.removeAttribute('data-contrast-probe')));
  return out;
}

/** A DevTools session on `page` with the DOM and CSS domains on, for buttonContrasts. */
export async function stateSession(page: Page): Promise<CDPSession> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('DOM.enable');
  await cdp.send('CSS.enable');
  return cdp;
}
