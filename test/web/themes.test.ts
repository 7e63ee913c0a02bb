// Themes on the refinement screen in Chromium, over the demo world: a cluster put in a new theme, one shard taken
// out and its suggestion accepted, the theme renamed and marked as opposing a trait — with the keyboard alone at
// 1280 px, the server's state read back through GraphQL after each step — then the same screen at 390 px, in both
// colour schemes, with its errors beside the controls; and the dry-run warnings where a trait is proposed and in
// the workshop's preview.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CDPSession, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { buttonContrasts, stateSession, type ButtonState } from './button-contrast.ts';
import { contrastProblems } from './contrast.ts';
import { BROWSER_TEST_MS, browserFile, type Chromium, launchChromium, screenshot, type SeededServer, until, WAIT } from './support.ts';
import { closeSoulsDb, createSoul, dropShard, manualClock, openSoulsDb, reindexEmbeddings, type Embedder } from '../../src/engine/index.ts';
import { startServer } from '../support/server.ts';

const NEED: Record<ButtonState, number> = { rest: 4.5, hover: 4.5, focus: 4.5, active: 4.5, disabled: 3 };

let server: SeededServer;
let chrome: Chromium;
let page: Page;

browserFile({ width: 1280, height: 900 }, (session) => ({ server, chrome, page } = session));

const mira = () => String(server.demo.souls.Mira);

const themesQuery = `query ($id: ID!) { soul(id: $id) {
  themes { id name memberCount members { id content } opposes { id principle } }
  traits { id principle counterEvidence { id } }
  evidence { unjudgedCount } } }`;

async function themes(): Promise<{ themes: { id: string; name: string; memberCount: number; members: { id: string; content: string }[]; opposes: { id: string; principle: string }[] }[]; traits: { id: string; principle: string; counterEvidence: { id: string }[] }[]; evidence: { unjudgedCount: number } }> {
  return (await server.gql(themesQuery, { id: mira() })).soul;
}

async function openRefine(p: Page): Promise<void> {
  await p.goto('about:blank');
  await p.goto(`${server.base}#/soul/${mira()}/refine`);
  await p.getByRole('heading', { name: 'Refine Mira' }).waitFor(WAIT);
  await p.getByRole('heading', { name: /Clusters \(\d+\), heaviest first/ }).waitFor(WAIT);
  await p.locator('.live', { hasText: 'Live' }).waitFor(WAIT);
}

const matches = (text: string, want: string | RegExp) => (typeof want === 'string' ? text === want : want.test(text));

/** What has the keyboard focus: its accessible name as people hear it, and the card (cluster, theme) it sits in. */
async function focused(p: Page): Promise<{ name: string; within: string }> {
  return p.evaluate(() => {
    const el = document.activeElement as HTMLElement | null;
    if (!el || el === document.body) return { name: '', within: '' };
    const label = (el as HTMLInputElement).labels?.[0]?.textContent;
    const name = el.getAttribute('aria-label') ?? label ?? el.textContent ?? '';
    return { name: name.replace(/\s+/g, ' ').trim(), within: el.closest('li.cluster, li.theme, li.trait')?.getAttribute('aria-label') ?? el.closest('li.cluster, li.theme, li.trait')?.textContent ?? '' };
  });
}

/** Presses Tab (and only Tab) until the focus is on the control named `name` (inside a card matching `within`). */
async function tabTo(p: Page, name: string | RegExp, within?: string | RegExp): Promise<void> {
  const seen: string[] = [];
  for (let i = 0; i < 600; i++) {
    await p.keyboard.press('Tab');
    const now = await focused(p);
    if (matches(now.name, name) && (!within || matches(now.within, within))) return;
    seen.push(now.name);
  }
  throw new Error(`Tab never reached ${String(name)}${within ? ` in ${String(within)}` : ''}; it went through: ${seen.slice(0, 80).join(' | ')}`);
}

describe('themes on the refinement screen', { timeout: BROWSER_TEST_MS }, () => {
  it('with the keyboard alone at 1280 px: assigns a cluster to a new theme, unassigns a shard, accepts a suggestion, renames, opposes a trait', async () => {
    await openRefine(page);
    const before = await themes();
    expect(before.themes).toEqual([]);
    await page.getByText(`${before.evidence.unjudgedCount} shards not yet judged`).waitFor(WAIT);
    // Single shards fold under one line and open to be judged.
    const singles = page.locator('details.singles');
    await expect(singles.locator('summary').textContent()).resolves.toMatch(/^\d+ shards resemble nothing else$/);
    await expect(singles.evaluate((d) => (d as HTMLDetailsElement).open)).resolves.toBe(false);

    // The heaviest cluster (the ledger habit) into a new theme, all four shards.
    const heaviest = page.locator('.cluster').first();
    const members = await heaviest.locator('.cluster__members li').allInnerTexts();
    expect(members).toHaveLength(4);
    await tabTo(page, /^Assign to a theme: Checked the ledger twice/);
    await page.keyboard.press('Enter');
    await tabTo(page, /^New theme name/);
    await page.keyboard.type('Ledger care');
    await page.keyboard.press('Enter');
    await page.locator('.cluster__theme', { hasText: 'Theme: Ledger care' }).waitFor(WAIT);
    let state = await themes();
    expect(state.themes.map((t) => [t.name, t.memberCount])).toEqual([['Ledger care', 4]]);
    expect(state.evidence.unjudgedCount).toBe(before.evidence.unjudgedCount - 4);
    await page.getByText(`${state.evidence.unjudgedCount} shards not yet judged`).waitFor(WAIT);

    // One shard out of it again: it is unjudged, alone, and the report suggests the theme it came from.
    const out = state.themes[0].members[0];
    await tabTo(page, 'All 4 shards', /^Cluster 1 \(theme Ledger care\): /);
    await page.keyboard.press('Enter');
    await tabTo(page, `Unassign: ${out.content}`);
    await page.keyboard.press('Enter');
    await until(async () => (await themes()).themes[0].memberCount === 3, 'the shard has left the theme');
    state = await themes();
    expect(state.themes[0].members.map((m) => m.id)).not.toContain(out.id);
    const shardTheme = await server.gql(`query ($id: ID!, $soul: ID!) { shard(id: $id) { theme(soulId: $soul) { id } } }`, { id: out.id, soul: mira() });
    expect(shardTheme.shard.theme).toBeNull();

    // Accept the suggestion in one keystroke, from the folded single shards.
    await page.locator('.cluster', { hasText: out.content }).locator('button', { hasText: 'Resembles “Ledger care”: accept' }).waitFor({ state: 'attached', ...WAIT });
    await tabTo(page, /shards? resembles? nothing else$/);
    await page.keyboard.press('Enter');
    await tabTo(page, 'Resembles “Ledger care”: accept', new RegExp(out.content.slice(0, 20)));
    await page.keyboard.press('Enter');
    await until(async () => (await themes()).themes[0].memberCount === 4, 'the suggestion is accepted');

    // Rename it.
    await tabTo(page, 'Rename the theme Ledger care');
    await page.keyboard.press('Enter');
    await tabTo(page, /^Theme name/);
    await page.keyboard.press('Control+A');
    await page.keyboard.type('Careful counting');
    await page.keyboard.press('Enter');
    await page.getByRole('listitem', { name: 'Theme Careful counting', exact: true }).waitFor(WAIT);
    expect((await themes()).themes.map((t) => t.name)).toEqual(['Careful counting']);
    // The keyboard is back where it was, on the theme's Rename button.
    await until(async () => (await focused(page)).name === 'Rename the theme Careful counting', 'the focus is back on Rename');

    // Mark it as opposing a trait: its shards become that trait's counter-evidence, listed under it.
    const target = state.traits[1];
    await tabTo(page, /^Contradicts/, 'Theme Careful counting');
    await page.keyboard.press('ArrowDown');
    await until(async () => (await page.locator('li.theme select').inputValue()) === target.id, 'the second trait is chosen');
    await tabTo(page, 'Mark as opposing');
    await page.keyboard.press('Enter');
    await until(async () => (await themes()).themes[0].opposes.length === 1, 'the theme opposes the trait');
    state = await themes();
    expect(state.themes[0].opposes.map((t) => t.id)).toEqual([target.id]);
    expect(state.traits.find((t) => t.id === target.id)!.counterEvidence).toHaveLength(4);
    const underTrait = page.locator('.refine__soul li.trait', { hasText: target.principle }).locator('.counter');
    await underTrait.getByText('Counter-evidence (4)').waitFor(WAIT);
    await page.getByRole('listitem', { name: 'Theme Careful counting', exact: true }).getByText(`“${target.principle}”`).waitFor(WAIT);
    // Its cluster now contradicts the trait (SPEC §13): no longer novel, and offers no revision of the trait as support.
    const contradicting = page.locator('li.cluster--contradicting', { hasText: 'Theme: Careful counting' });
    await contradicting.locator('.cluster__align', { hasText: `Contradicts “${target.principle}”` }).waitFor(WAIT);
    expect(await contradicting.getByRole('button', { name: 'Revise the trait it reinforces' }).count()).toBe(0);
    await screenshot(page, 'themes-1280-light', true);
    expect(chrome.errors).toEqual([]);
  });

  it('says what the clusters were compared with: shards without vectors until souls reindex, then all with vectors', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-web-vectors-'));
    const path = join(dir, 'souls.db');
    const before = openSoulsDb({ path, clock: manualClock(Date.now()), settings: { similarity: 'lexical' } });
    const vela = await createSoul(before, { name: 'Vela', essence: 'Keeps the ledger.' });
    await dropShard(before, 'Counted the ledger twice before closing', 'chat', [vela.id]);
    await dropShard(before, 'Cooked a spicy curry for the whole crew', 'journal', [vela.id]);
    closeSoulsDb(before);
    const vector = (text: string) => new Uint8Array(new Float32Array([text.length, 1].map((x, _, v) => x / Math.hypot(...v))).buffer);
    const embedder: Embedder = { model: 'held-2', batchSize: 8, concurrency: 1, embed: async (texts) => texts.map(vector) };
    const own = await startServer({ path, start: Date.now(), settings: { similarity: 'semantic' }, embedder });
    try {
      const refine = async () => {
        await page.goto('about:blank');
        await page.goto(`${own.url.replace(/graphql$/, '')}#/soul/${vela.id}/refine`);
        await page.getByRole('heading', { name: 'Refine Vela' }).waitFor(WAIT);
      };
      await refine();
      await expect(page.locator('.vectors.vectors--missing').innerText()).resolves.toBe(
        'Vectors (similarity semantic): 0 of the 2 clustered shards have vectors of held-2; 2 are compared lexically and will get none until `souls reindex` (written before vectors were configured, or their embedding failed)',
      );
      await reindexEmbeddings(own.app.db);
      await refine();
      await expect(page.locator('.vectors').innerText()).resolves.toBe('Vectors (similarity semantic): 2 of the 2 clustered shards have vectors of held-2');
      expect(await page.locator('.vectors--missing').count()).toBe(0);
      expect(chrome.errors).toEqual([]);
    } finally {
      await own.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('shows possible counter-evidence under its trait, as a possibility with its reason', async () => {
    await openRefine(page);
    const { soul } = await server.gql(`query ($id: ID!) { soul(id: $id) { evidence { possibleCounterEvidence { reason trait { principle } shard { content } } } } }`, { id: mira() });
    const possible = soul.evidence.possibleCounterEvidence as { reason: string; trait: { principle: string }; shard: { content: string } }[];
    expect(possible.length).toBeGreaterThan(0);
    for (const p of possible) {
      const counter = page.locator('.refine__soul li.trait', { hasText: p.trait.principle }).locator('.counter');
      await expect(counter.innerText()).resolves.toContain('Possibly contradicts it');
      await expect(counter.innerText()).resolves.toContain(p.shard.content);
      await expect(counter.innerText()).resolves.toContain(`A possibility, not a judgement: ${p.reason}`);
    }
  });

  it('says why next to the control: a theme name already taken, and a server out of reach', async () => {
    await openRefine(page);
    const card = page.locator('.cluster').filter({ hasNot: page.locator('.cluster__theme') }).first();
    await card.getByRole('button', { name: /^Assign to a theme: / }).click();
    const form = card.getByRole('form', { name: 'Assign to a theme' });
    await form.getByRole('textbox', { name: 'New theme name' }).fill('Careful counting');
    await form.getByRole('button', { name: 'Assign' }).click();
    const problem = form.getByRole('alert');
    await problem.waitFor(WAIT);
    // In the form's words: the menu to choose it in, not the API's "assign to its themeId".
    await expect(problem.innerText()).resolves.toBe('New theme name: there is already a theme named “Careful counting”: choose it in the Theme menu above, or give the new theme another name.');
    expect((await themes()).themes).toHaveLength(1);

    await page.route('**/graphql', (route) => route.abort('connectionrefused'));
    try {
      await form.getByRole('textbox', { name: 'New theme name' }).fill('Tallies');
      await form.getByRole('button', { name: 'Assign' }).click();
      await until(async () => (await problem.innerText()).startsWith('Nothing was assigned. Cannot reach the Souls server.'), 'the form says the server is out of reach');
    } finally {
      await page.unroute('**/graphql');
    }
    expect((await themes()).themes).toHaveLength(1);
    chrome.errors.length = 0;
  });

  it('keeps every text and button state legible with the forms open, light and dark, at 1280 px', async () => {
    const cdp: CDPSession = await stateSession(page);
    const problems: string[] = [];
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await openRefine(page);
      await page.waitForFunction((dark) => matchMedia('(prefers-color-scheme: dark)').matches === dark, scheme === 'dark');
      await page.locator('details.singles summary').click();
      await page.getByRole('button', { name: /^Assign to a theme: / }).first().click();
      await page.getByRole('button', { name: 'Rename the theme Careful counting' }).click();
      await page.locator('.themes .field input').waitFor(WAIT);
      for (const p of await contrastProblems(page)) problems.push(`${scheme} text “${p.text}” ${p.fg} on ${p.bg} = ${p.ratio}:1 (needs ${p.need})`);
      for (const state of ['rest', 'hover', 'focus', 'active', 'disabled'] as const) {
        for (const r of await buttonContrasts(page, cdp, state)) if (r.ratio < NEED[state]) problems.push(`${scheme} ${r.button} ${state}: “${r.text}” ${r.fg} on ${r.bg} = ${r.ratio}:1`);
      }
      await screenshot(page, `themes-1280-${scheme}-forms`, true);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    expect(problems).toEqual([]);
    expect(chrome.errors).toEqual([]);
  });

  it('at 390 px, light and dark: fits the screen, and a single shard joins a theme and the opposition is taken back by touch', async () => {
    const phone = await launchChromium({ phone: true });
    try {
      const p = phone.page;
      for (const scheme of ['light', 'dark'] as const) {
        await p.emulateMedia({ colorScheme: scheme });
        await openRefine(p);
        await p.locator('details.singles summary').tap();
        await p.getByRole('button', { name: 'Rename the theme Careful counting' }).tap();
        await p.getByRole('button', { name: /^Assign to a theme: / }).first().tap();
        await p.getByRole('form', { name: 'Assign to a theme' }).waitFor(WAIT);
        const { scrollWidth, innerWidth } = await p.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
        expect(scrollWidth, `${scheme}: page width ${scrollWidth} in ${innerWidth}`).toBeLessThanOrEqual(innerWidth);
        // Nor does any control stick out of its panel (a panel clips what overflows it, so the page width alone would not tell).
        const outside = await p.evaluate(() =>
          [...document.querySelectorAll<HTMLElement>('.refine button, .refine select, .refine input')]
            .filter((el) => el.getBoundingClientRect().width > 0 && el.closest('.panel'))
            .filter((el) => el.getBoundingClientRect().right > el.closest('.panel')!.getBoundingClientRect().right + 0.5)
            .map((el) => el.getAttribute('aria-label') ?? el.id ?? el.textContent),
        );
        expect(outside, scheme).toEqual([]);
        expect(await contrastProblems(p), scheme).toEqual([]);
        await screenshot(p, `themes-390-${scheme}`, true);
      }
      await p.emulateMedia({ colorScheme: 'light' });
      await openRefine(p);

      // One single shard, one by one, into the existing theme.
      await p.locator('details.singles summary').tap();
      const single = p.locator('.cluster--single').filter({ hasNot: p.getByRole('button', { name: /^Resembles/ }) }).first();
      const content = await single.locator('.cluster__rep').innerText();
      await single.getByRole('button', { name: /^Assign to a theme: / }).tap();
      const form = single.getByRole('form', { name: 'Assign to a theme' });
      const theme = (await themes()).themes[0];
      await form.getByRole('combobox', { name: 'Theme' }).selectOption(theme.id);
      await form.getByRole('button', { name: 'Assign' }).tap();
      await until(async () => (await themes()).themes[0].members.some((m) => m.content === content), 'the single shard is in the theme');

      const opposed = theme.opposes[0];
      await p.getByRole('button', { name: `Stop opposing: ${opposed.principle}` }).tap();
      await until(async () => (await themes()).themes[0].opposes.length === 0, 'the theme no longer opposes the trait');
      expect((await themes()).traits.find((t) => t.id === opposed.id)!.counterEvidence).toEqual([]);
      expect(phone.errors).toEqual([]);
    } finally {
      await phone.close();
    }
  });
});

describe('dry-run warnings', { timeout: BROWSER_TEST_MS }, () => {
  it('shows a near duplicate and a possible contradiction next to the proposal’s preview', async () => {
    await openRefine(page);
    await page.getByRole('button', { name: 'Propose a trait from this cluster' }).first().click();
    const proposal = page.getByRole('form', { name: 'The proposed change' });
    await proposal.getByLabel('Principle').fill('Check the stores ledger before anything leaves the gate.');
    const warnings = proposal.getByRole('list', { name: 'Warnings about this change' });
    await warnings.getByText('near duplicate').waitFor(WAIT);
    // The trait named by its principle, as people know it, not by its id.
    await expect(warnings.innerText()).resolves.toMatch(/close to trait “Check the stores ledger before anything leaves the keep\.”/);
    await expect(warnings.innerText()).resolves.not.toMatch(/trait \d/);
    await proposal.getByLabel('Principle').fill('Never check the stores ledger before anything leaves the keep.');
    await warnings.getByText('possible contradiction').waitFor(WAIT);
    await expect(warnings.innerText()).resolves.toContain('negation "never" on one side only');
    expect(chrome.errors).toEqual([]);
  });

  it('names each kind of warning in the workshop’s preview', async () => {
    const brannoc = String(server.demo.souls.Brannoc);
    await page.goto('about:blank');
    await page.goto(`${server.base}#/soul/${brannoc}/workshop`);
    await page.locator('main h1').first().waitFor(WAIT);
    const menus = page.getByRole('combobox', { name: /^Place / });
    await menus.nth(0).selectOption({ label: 'Merge into a new consolidation' });
    await menus.nth(1).selectOption({ label: 'Merge into consolidation 1' });
    await page.getByLabel('Merged principle of consolidation 1').fill('Never help the village first when raiders come.');
    await page.getByText('The plan is valid.').waitFor(WAIT);
    const warnings = page.getByRole('list', { name: 'Warnings' });
    await warnings.getByText(/may contradict trait/).first().waitFor(WAIT);
    await expect(warnings.locator('.chip').allInnerTexts()).resolves.toContain('possible contradiction');
    await expect(warnings.locator('.chip').allInnerTexts()).resolves.not.toContain('premature promotion');
    await screenshot(page, 'themes-workshop-warnings', true);
    expect(chrome.errors).toEqual([]);
  });
});
