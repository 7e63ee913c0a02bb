// Every button's text against its own background in each state (rest, hover, keyboard focus, pressed, disabled), in
// the light and the dark theme, over the screens where the buttons appear: destructive confirmations included, since
// they appear under the pointer.
import type { CDPSession, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { buttonContrasts, stateSession, type ButtonContrast, type ButtonState } from './button-contrast.ts';
import { BROWSER_TEST_MS, browserFile, type Chromium, type SeededServer, unexplainedDisabledButtons, WAIT } from './support.ts';

/** Enabled buttons keep text at 4.5:1 (WCAG AA for text this size); a disabled one stays legible at 3:1, dimmed. */
const NEED: Record<ButtonState, number> = { rest: 4.5, hover: 4.5, focus: 4.5, active: 4.5, disabled: 3 };

let server: SeededServer;
let chrome: Chromium;
let page: Page;
let cdp: CDPSession;

browserFile({ width: 1280, height: 800 }, async (session) => {
  ({ server, chrome, page } = session);
  cdp = await stateSession(page);
});

/** One line per problem, so a failure lists them readably. */
const line = (r: ButtonContrast, where: string) => `${where}: ${r.button} ${r.state}: “${r.text}” ${r.fg} on ${r.bg} = ${r.ratio}:1 (needs ${NEED[r.state]})`;

const id = (name: string) => String(server.demo.souls[name]);

// Bounds for a loaded machine (eight screens, each loaded afresh), not speed checks.
describe('button contrast in every state, light and dark', { timeout: BROWSER_TEST_MS }, () => {
  it('keeps every button legible at rest, on hover, focused, pressed and disabled', async () => {
    const screens: { name: string; hash: string; open: () => Promise<void> }[] = [
      {
        name: 'roster, retire confirming, new-soul form open',
        hash: '#/',
        open: async () => {
          await page.getByRole('button', { name: 'Retire Mira' }).click();
          await page.locator('.btn--danger', { hasText: 'Retire Mira' }).waitFor(WAIT);
          await page.getByRole('button', { name: 'New soul' }).click();
        },
      },
      {
        name: 'sheet, revert confirming, drop form open',
        hash: `#/soul/${id('Mira')}`,
        open: async () => {
          await page.getByRole('button', { name: 'Revert this level-up' }).click();
          await page.locator('.btn--danger', { hasText: /^Revert to level \d/ }).waitFor(WAIT);
          await page.getByRole('button', { name: 'Drop a shard' }).click();
        },
      },
      {
        name: 'refinement with a proposal',
        hash: `#/soul/${id('Mira')}/refine`,
        open: async () => {
          await page.getByRole('button', { name: 'Propose a trait from this cluster' }).first().click();
        },
      },
      {
        name: 'workshop',
        hash: `#/soul/${id('Brannoc')}/workshop`,
        // A plan that changes something (a consolidation), so the level-up button is measured enabled too.
        open: async () => {
          const menus = page.getByRole('combobox', { name: /^Place / });
          await menus.nth(0).selectOption({ label: 'Merge into a new consolidation' });
          await menus.nth(1).selectOption({ label: 'Merge into consolidation 1' });
          await page.getByLabel('Merged principle of consolidation 1').fill('Never sell steel before the quench has cooled.');
          await page.getByText('The plan is valid.').waitFor(WAIT);
        },
      },
    ];
    const problems: string[] = [];
    const unexplained: string[] = [];
    let measured = 0;
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const screen of screens) {
        await page.goto('about:blank');
        await page.goto(`${server.base}${screen.hash}`);
        await page.locator('main h1').first().waitFor(WAIT);
        await page.waitForFunction((dark) => matchMedia('(prefers-color-scheme: dark)').matches === dark, scheme === 'dark');
        await screen.open();
        // Each disabled button says why (a title, or text it is described by), on every screen measured.
        unexplained.push(...(await unexplainedDisabledButtons(page)).map((label) => `${scheme} ${screen.name}: “${label}” is disabled without a reason`));
        for (const state of ['rest', 'hover', 'focus', 'active', 'disabled'] as const) {
          const results = await buttonContrasts(page, cdp, state);
          measured += results.length;
          problems.push(...results.filter((r) => r.ratio < NEED[state]).map((r) => line(r, `${scheme} ${screen.name}`)));
        }
      }
    }
    expect(measured).toBeGreaterThan(100);
    expect(problems).toEqual([]);
    expect(unexplained).toEqual([]);
    await page.emulateMedia({ colorScheme: 'light' });
    expect(chrome.errors).toEqual([]);
  });

  it('measures the light theme’s destructive confirmations on hover as pale text on maroon', async () => {
    await page.emulateMedia({ colorScheme: 'light' });
    await page.goto('about:blank');
    await page.goto(`${server.base}#/`);
    await page.getByRole('button', { name: 'Retire Mira' }).click();
    const danger = page.locator('.btn--danger', { hasText: 'Retire Mira' });
    // A real pointer over it, as a person confirming.
    await danger.hover();
    const colours = await danger.evaluate((b) => ({ color: getComputedStyle(b).color, background: getComputedStyle(b).backgroundColor }));
    expect(colours.color).toBe('rgb(255, 247, 227)');
    const hovered = (await buttonContrasts(page, cdp, 'hover')).find((r) => r.button.includes('btn--danger'))!;
    expect(hovered.ratio).toBeGreaterThan(7);
    expect(chrome.errors).toEqual([]);
  });
});
