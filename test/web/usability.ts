// The character sheet for people, at a laptop's size (1280×800) and a phone's (390×844), in headless Chromium over
// the demo world: nothing wider than the screen, a visible keyboard focus on every kind of button, numbers and words
// people can read (a glossary on every screen, labelled field errors), inputs bounded as the server bounds them, the
// rendered block as the agent receives it, and the refinement and workshop flows that used to leave people stranded.
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { manualClock } from '../../src/engine/index.ts';
import { BROWSER_TEST_MS, type Chromium, launchChromium, requireBuiltApp, screenshot, type SeededServer, startSeededServer, unexplainedDisabledButtons, until, WAIT } from './support.ts';

/** The focus ring's outer colour (--azure in web/src/styles.css). */
const RING = [40, 88, 122];

let chrome: Chromium;
let page: Page;


/** Waits until the screen has loaded what it shows (no "Loading …" left). */
async function settled(): Promise<void> {
  await page.locator('main h1, main .panel').first().waitFor(WAIT);
  await until(async () => (await page.locator('.loading').count()) === 0, 'the screen finished loading');
}

/** Loads `hash` afresh: a hash alone would keep the previous test's state in the same document. */
async function open(server: SeededServer, hash: string): Promise<void> {
  await page.goto('about:blank');
  await page.goto(`${server.base}${hash}`);
  await settled();
}

/** How many pixels around `target` (8 px margin) are the focus ring's colour, from a real screenshot. */
async function ringPixels(target: Locator): Promise<{ count: number; perimeter: number }> {
  const box = (await target.boundingBox())!;
  const margin = 8;
  const png = await page.screenshot({ clip: { x: box.x - margin, y: box.y - margin, width: box.width + 2 * margin, height: box.height + 2 * margin }, animations: 'disabled' });
  const count = await page.evaluate(
    async ([data, ring]) => {
      const image = new Image();
      image.src = `data:image/png;base64,${data}`;
      await image.decode();
      const canvas = document.createElement('canvas');
      canvas.width = image.width;
      canvas.height = image.height;
      const context = canvas.getContext('2d')!;
      context.drawImage(image, 0, 0);
      const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
      let n = 0;
      for (let i = 0; i < pixels.length; i += 4) if (Math.abs(pixels[i] - ring[0]) <= 10 && Math.abs(pixels[i + 1] - ring[1]) <= 10 && Math.abs(pixels[i + 2] - ring[2]) <= 10) n++;
      return n;
    },
    [png.toString('base64'), RING] as const,
  );
  return { count, perimeter: 2 * (box.width + box.height) };
}

/** Focuses `target` from the keyboard (Tab), then checks a ring of the focus colour appears around it, and goes when it loses focus. */
async function expectVisibleFocus(what: string, target: Locator): Promise<void> {
  await target.scrollIntoViewIfNeeded();
  await page.mouse.move(0, 0);
  await target.focus();
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Tab');
  expect(await target.evaluate((el) => el === document.activeElement && el.matches(':focus-visible')), `${what} has keyboard focus`).toBe(true);
  const focused = await ringPixels(target);
  await target.evaluate((el) => (el as HTMLElement).blur());
  const blurred = await ringPixels(target);
  // At least a third of a 3 px ring around the whole button: a ring, not a stray pixel of the same blue.
  expect(focused.count - blurred.count, `${what}: focus ring pixels (focused ${focused.count}, blurred ${blurred.count})`).toBeGreaterThan(focused.perimeter);
}

/** The page is no wider than the window, and the caller's name and scopes sit inside the header bar. */
async function expectFits(what: string): Promise<void> {
  const { scrollWidth, innerWidth, wide } = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    // The innermost elements reaching past the window, to name in a failure.
    wide: [...document.body.querySelectorAll('*')]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5 && ![...e.children].some((c) => c.getBoundingClientRect().right > window.innerWidth + 0.5))
      .filter((e) => {
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) if (getComputedStyle(a).overflowX !== 'visible') return false;
        return true;
      })
      .slice(0, 3)
      .map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')} (${Math.round(e.getBoundingClientRect().right)} px)`),
  }));
  expect(scrollWidth, `${what}: page width ${scrollWidth} in a window of ${innerWidth}; past its edge: ${wide.join(', ')}`).toBeLessThanOrEqual(innerWidth);
  const bar = await page.locator('.topbar').boundingBox();
  if (!bar) return; // the token prompt has no header
  for (const part of ['.who__name', '.who__scopes']) {
    const box = (await page.locator(part).boundingBox())!;
    expect(box.x >= bar.x && box.x + box.width <= bar.x + bar.width + 0.5 && box.y >= bar.y && box.y + box.height <= bar.y + bar.height + 0.5, `${what}: ${part} inside the header bar`).toBe(true);
  }
}

/** Every number in the page's text and labels, as people read it: at most two decimals and no trailing zeros. */
async function expectNumbersForPeople(what: string): Promise<void> {
  const text = await page.evaluate(() =>
    [document.body.innerText, ...Array.from(document.querySelectorAll('[aria-label], [title], [aria-valuetext]')).flatMap((el) => ['aria-label', 'title', 'aria-valuetext'].map((name) => el.getAttribute(name) ?? ''))].join('\n'),
  );
  expect(text.match(/\d+\.\d{3,}|\d\.\d*0(?!\d)/g) ?? [], `${what}: numbers with machine precision or trailing zeros`).toEqual([]);
}

const gql = {
  soul: `query ($id: ID!) { soul(id: $id) { id rendered level lastAttunedAt crystallization { unmet } } }`,
  drop: `mutation ($input: DropShardInput!) { dropShard(input: $input) { __typename } }`,
  create: `mutation ($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } } }`,
  dropped: `mutation ($input: DropShardInput!) { dropShard(input: $input) { __typename ... on DropShardPayload { shard { id } } } }`,
  addTrait: `mutation ($soulId: ID!, $input: AddTraitInput!) { addTrait(soulId: $soulId, input: $input) { __typename } }`,
  assign: `mutation ($soulId: ID!, $assignments: [ThemeAssignmentInput!]!) { assignThemes(soulId: $soulId, assignments: $assignments) { __typename } }`,
};

/** `word` repeated without a space, cut at `length` characters. */
const unbroken = (word: string, length: number) => word.repeat(Math.ceil(length / word.length)).slice(0, length);

/**
 * A soul whose every text is one long word at its bound: a 200-character name, a principle, sources, tags and a
 * theme name without a space, for the screens to wrap or ellipsize.
 */
async function seedLongWords(server: SeededServer): Promise<string> {
  const created = await server.gql(gql.create, { input: { name: unbroken('Unbreakablename', 200), description: unbroken('Description', 300), essence: `${unbroken('Essenceword', 400)} keeps going.` } });
  const soulId = created.createSoul.soul.id as string;
  const shardIds: string[] = [];
  for (let i = 0; i < 4; i++) {
    const dropped = await server.gql(gql.dropped, { input: { content: `${unbroken('Observation', 300)} ${i}`, source: `${unbroken('source', 127)}${i % 2}`, soulIds: [soulId], tags: [unbroken('tag', 64)] } });
    shardIds.push(dropped.dropShard.shard.id);
  }
  await server.gql(gql.addTrait, { soulId, input: { principle: unbroken('Principle', 300), provenance: unbroken('Provenance', 300), citeShardIds: [shardIds[0]] } });
  await server.gql(gql.assign, { soulId, assignments: [{ newThemeName: unbroken('Themename', 200), shardIds: shardIds.slice(1) }] });
  return soulId;
}

/**
 * The suite at one window size, in its own test file (usability-laptop.test.ts, usability-phone.test.ts) so the two
 * sizes run side by side in two vitest workers, each with its Chromium and server.
 */
export function usabilitySuite({ width, height }: { width: number; height: number }): void {
  beforeAll(async () => {
    requireBuiltApp();
    chrome = await launchChromium();
    page = chrome.page;
  }, BROWSER_TEST_MS);

  afterAll(async () => {
    await chrome?.close();
  });

  describe(`the character sheet at ${width}×${height}`, { timeout: BROWSER_TEST_MS }, () => {
    let server: SeededServer;
    const id = (name: string) => String(server.demo.souls[name]);
    const size = `${width}`;

    beforeAll(async () => {
      server = await startSeededServer();
      await page.setViewportSize({ width, height });
    }, BROWSER_TEST_MS);

    afterAll(async () => {
      // Off the page first: a page left on a stopped server retries its WebSocket, and the next size's tests count page errors.
      await page.goto('about:blank');
      await server?.stop();
    });

    it('fits the window on every route and open form, long words included; the caller stays inside the header bar; each disabled button says why', async () => {
      const awake = ['Mira', 'Brannoc', 'Relay', 'Sela'];
      const longWords = await seedLongWords(server);
      const souls = [...awake.map(id), longWords];
      const routes = ['#/', ...souls.flatMap((soul) => [`#/soul/${soul}`, `#/soul/${soul}/refine`, `#/soul/${soul}/workshop`]), `#/soul/${id('Wenna')}`, '#/nowhere'];
      const unexplained: string[] = [];
      for (const hash of routes) {
        await open(server, hash);
        await expectFits(hash);
        unexplained.push(...(await unexplainedDisabledButtons(page)).map((label) => `${hash}: “${label}”`));
        if (hash === '#/') await screenshot(page, `roster-${size}`);
      }

      await open(server, '#/');
      await page.getByRole('button', { name: 'New soul' }).click();
      await page.getByRole('textbox', { name: 'Essence' }).waitFor(WAIT);
      await expectFits('the roster with the new-soul form');

      await open(server, `#/soul/${id('Mira')}`);
      await page.getByRole('button', { name: 'Full (with provenance)' }).click();
      await page.getByRole('button', { name: 'Drop a shard' }).click();
      await page.getByRole('textbox', { name: 'Observation' }).waitFor(WAIT);
      await expectFits('the sheet, full block, drop form open');

      await open(server, `#/soul/${id('Mira')}/refine`);
      await page.getByRole('button', { name: 'Propose a trait from this cluster' }).first().click();
      await page.getByRole('form', { name: 'The proposed change' }).getByLabel('Principle').fill('Count the stores twice before a single sack leaves them.');
      await page.getByLabel('The rendered block after').waitFor(WAIT);
      await expectFits('refinement with a proposal previewed');

      await open(server, `#/soul/${id('Brannoc')}/workshop`);
      const menus = page.getByRole('combobox', { name: /^Place / });
      await menus.nth(0).selectOption({ label: 'Merge into a new consolidation' });
      await menus.nth(1).selectOption({ label: 'Merge into consolidation 1' });
      await menus.nth(2).selectOption({ label: 'Promote into the essence' });
      await page.getByLabel('The rendered block after').waitFor(WAIT);
      await expectFits('the workshop with a consolidation and a promotion');
      await screenshot(page, `workshop-${size}`, true);

      await page.getByRole('button', { name: 'Glossary' }).click();
      await page.getByRole('dialog', { name: 'Glossary' }).waitFor(WAIT);
      await expectFits('the glossary open');
      await page.keyboard.press('Escape');
      expect(unexplained, 'disabled buttons that do not say why').toEqual([]);
      expect(chrome.errors).toEqual([]);
    });

    it('puts After under Before below 600 px (and beside it on a wider screen), in refinement and the workshop', async () => {
      const expectLayout = async (where: string) => {
        const [before, after] = await Promise.all(['The rendered block before', 'The rendered block after'].map((label) => page.getByLabel(label).evaluate((block) => block.closest('.diff__side')!.getBoundingClientRect().toJSON() as DOMRect)));
        if (width < 600) {
          expect(after.top, `${where}: After starts below Before`).toBeGreaterThanOrEqual(before.bottom);
          // Each side has the panel's whole width, not half of it.
          expect(Math.min(before.width, after.width), `${where}: side width`).toBeGreaterThan(width * 0.7);
        } else expect(after.top, `${where}: After beside Before`).toBe(before.top);
      };
      await open(server, `#/soul/${id('Mira')}/refine`);
      await page.getByRole('button', { name: 'Propose a trait from this cluster' }).first().click();
      await page.getByRole('form', { name: 'The proposed change' }).getByLabel('Principle').fill('Count the stores twice before a single sack leaves them.');
      await page.getByLabel('The rendered block after').waitFor(WAIT);
      await expectLayout('refinement');
      await screenshot(page, `refine-preview-${size}`, true);

      await open(server, `#/soul/${id('Brannoc')}/workshop`);
      await page.getByRole('combobox', { name: /^Place / }).nth(0).selectOption({ label: 'Promote into the essence' });
      await page.getByLabel('The rendered block after').waitFor(WAIT);
      await expectLayout('workshop');
      expect(chrome.errors).toEqual([]);
    });

    it('shows a visible keyboard focus ring on every kind of button', async () => {
      await open(server, '#/');
      await expectVisibleFocus('primary button (New soul)', page.getByRole('button', { name: 'New soul' }));
      await expectVisibleFocus('link styled as a primary button (Refine)', page.locator('a.btn--primary').first());
      await expectVisibleFocus('link styled as a plain button (Sheet)', page.locator('a.btn--plain').first());
      await expectVisibleFocus('quiet button (Retire)', page.getByRole('button', { name: 'Retire Mira' }));
      await expectVisibleFocus('plain button (Awaken)', page.getByRole('button', { name: 'Awaken Wenna' }));
      await expectVisibleFocus('header button (Glossary)', page.getByRole('button', { name: 'Glossary' }));
      await expectVisibleFocus('a glossary term (priority)', page.locator('.term').first());
      await page.getByRole('button', { name: 'Retire Mira' }).click();
      await expectVisibleFocus('danger button (Retire Mira, confirming)', page.locator('.btn--danger', { hasText: 'Retire Mira' }));
      await page.getByRole('button', { name: 'Keep', exact: true }).click();
      await page.getByRole('button', { name: 'New soul' }).click();
      await page.getByRole('textbox', { name: 'Name' }).fill('Iona');
      await page.getByRole('textbox', { name: 'Essence' }).fill('Iona keeps the lighthouse log.');
      await expectVisibleFocus('submit button (Create soul)', page.getByRole('button', { name: 'Create soul' }));

      await open(server, `#/soul/${id('Mira')}`);
      await expectVisibleFocus('toggle option (Lean)', page.getByRole('button', { name: 'Lean' }));
      await expectVisibleFocus('toggle option (Full)', page.getByRole('button', { name: 'Full (with provenance)' }));
      await expectVisibleFocus('quiet button (Copy)', page.getByRole('button', { name: 'Copy the rendered block' }));

      // Relay has a cluster no trait covers (Mira's top clusters reinforce the trait her level-up merged, which carries its sources' citations).
      await open(server, `#/soul/${id('Relay')}/refine`);
      await expectVisibleFocus('primary button in a card (Propose a trait from this cluster)', page.locator('.btn--primary', { hasText: 'Propose a trait from this cluster' }).first());
      await expectVisibleFocus('plain button (Done: stamp attunement)', page.getByRole('button', { name: 'Done: stamp attunement' }));

      await open(server, `#/soul/${id('Brannoc')}/workshop`);
      // A plan that changes nothing leaves the button disabled: a new essence makes it a level-up.
      await page.getByRole('textbox', { name: 'Essence', exact: true }).fill('Brannoc forges for the village first.');
      await page.getByText('The plan is valid.').waitFor(WAIT);
      await expectVisibleFocus('big primary button (Level up to 1)', page.getByRole('button', { name: 'Level up to 1' }));
      expect(chrome.errors).toEqual([]);
    });

    const screens = () => ['#/', `#/soul/${id('Mira')}`, `#/soul/${id('Mira')}/refine`, `#/soul/${id('Brannoc')}/workshop`, `#/soul/${id('Relay')}/refine`];

    it('formats numbers for people: no machine precision, no trailing zeros', async () => {
      for (const hash of screens()) {
        await open(server, hash);
        await expectNumbersForPeople(hash);
      }
      expect(chrome.errors).toEqual([]);
    });

    it('explains the engine’s words from every screen: a glossary in the header, a tooltip on each word', async () => {
      for (const hash of screens()) {
        await open(server, hash);
        // The glossary is one click away from the header of every screen.
        await page.getByRole('banner').getByRole('button', { name: 'Glossary' }).click();
        const dialog = page.getByRole('dialog', { name: 'Glossary' });
        await dialog.waitFor(WAIT);
        const terms = await dialog.locator('dt').allInnerTexts();
        for (const word of ['Priority', 'Density', 'Redundancy', 'Gen', 'Freshness', 'Attunement', 'Crystallization']) expect(terms.some((t) => t.startsWith(word)), `${hash}: glossary explains ${word}`).toBe(true);
        await page.keyboard.press('Escape');
        await dialog.waitFor({ state: 'hidden', ...WAIT });
      }

      // Each word where it is used explains itself (a tooltip) and opens the glossary at its entry.
      await open(server, `#/soul/${id('Mira')}/refine`);
      for (const word of ['priority', 'density', 'redundancy', 'gen', 'freshness', 'weight']) {
        const term = page.locator('.term', { hasText: new RegExp(`^${word}$`) }).first();
        await expect(term.getAttribute('title'), `${word} has a tooltip`).resolves.toMatch(/\w{3,} \w{3,} \w{3,}/);
      }
      await page.locator('.term', { hasText: /^freshness$/ }).first().click();
      const entry = page.getByRole('dialog', { name: 'Glossary' }).locator('.glossary__entry--focus');
      await expect(entry.locator('dt').innerText()).resolves.toBe('Freshness');
      await screenshot(page, `glossary-${size}`);
      await page.keyboard.press('Escape');
      expect(chrome.errors).toEqual([]);
    });

    it('brings the proposal into view and focus when a trait is proposed from a cluster far down the page', async () => {
      await open(server, `#/soul/${id('Mira')}/refine`);
      // The lowest cluster is a single shard, folded with the others until opened.
      await page.locator('details.singles summary').click();
      const lowest = page.locator('.cluster').last();
      await lowest.scrollIntoViewIfNeeded();
      expect(await page.evaluate(() => window.scrollY)).toBeGreaterThan(0);
      await lowest.getByRole('button', { name: /^Propose a trait/ }).click();
      const panel = page.locator('.proposal');
      await until(async () => {
        const box = await panel.boundingBox();
        return box !== null && box.y >= -1 && box.y < height / 2;
      }, 'the proposal panel is in view');
      const focus = await page.evaluate(() => ({ inside: document.querySelector('.proposal')!.contains(document.activeElement), label: document.activeElement?.id ? document.querySelector(`label[for="${document.activeElement.id}"]`)?.textContent : null }));
      expect(focus).toEqual({ inside: true, label: expect.stringContaining('Principle') });
      await page.keyboard.type('Keep a tally of every sack.');
      await expect(panel.getByLabel('Principle').inputValue()).resolves.toBe('Keep a tally of every sack.');
      expect(chrome.errors).toEqual([]);
    });

    it('numbers clusters consecutively as they are listed', async () => {
      for (const name of ['Mira', 'Brannoc', 'Relay', 'Sela']) {
        await open(server, `#/soul/${id(name)}/refine`);
        const labels = await page.locator('.cluster').evaluateAll((items) => items.map((item) => Number(/^Cluster (\d+):/.exec(item.getAttribute('aria-label') ?? '')?.[1])));
        expect(labels, `${name}'s clusters, top to bottom`).toEqual(labels.map((_, i) => i + 1));
        const ranks = await page.locator('.cluster__rank').allInnerTexts();
        expect(ranks.map(Number), `${name}'s numbered clusters`).toEqual(ranks.map((_, i) => i + 1));
      }
      expect(chrome.errors).toEqual([]);
    });

    it('stamps attunement once per cycle: disabled after stamping until new evidence arrives', async () => {
      // Stamping closes the cycle: the button waits for new evidence, and a new shard opens it again, live.
      // The page says "just now" against the browser's clock: the server's, set at the start of the file, catches up first
      // (earlier tests may have taken minutes on a loaded machine).
      const clock = server.app.db.clock as ReturnType<typeof manualClock>;
      clock.set(Math.max(clock.now(), Date.now()));
      await open(server, `#/soul/${id('Mira')}/refine`);
      const stamp = page.getByRole('button', { name: 'Done: stamp attunement' });
      await expect(stamp.isEnabled()).resolves.toBe(true);
      await stamp.click();
      await page.getByText('Mira is attuned').waitFor(WAIT);
      await until(() => stamp.isDisabled(), 'the stamp is disabled after stamping');
      await page.getByText(/Last attuned just now: waiting for new evidence/).waitFor(WAIT);
      // The server's clock is the test's: a minute passes, then a shard arrives.
      clock.advance(60_000);
      await server.gql(gql.drop, { input: { content: 'Weighed the salt barrels before the thaw.', source: 'dialogue', soulIds: [id('Mira')] } });
      await until(() => stamp.isEnabled(), 'a new shard enables the stamp again');
      expect(chrome.errors).toEqual([]);
    });

    it('counts the trend in words that agree with the number: 1 shard, 2 shards', async () => {
      const created = await server.gql(gql.create, { input: { name: 'Odo', essence: 'Odo keeps the bridge toll.' } });
      const odo = created.createSoul.soul.id as string;
      await server.gql(gql.drop, { input: { content: 'Counted the toll coins twice before the ferry left.', source: 'dialogue', soulIds: [odo] } });
      await open(server, `#/soul/${odo}/refine`);
      await expect(page.locator('.trend').innerText()).resolves.toMatch(/^Trend: 1 shard in the last 14 days against 0 before/);
      await server.gql(gql.drop, { input: { content: 'Refused a forged pass at the bridge gate.', source: 'quest_turnin', soulIds: [odo] } });
      await until(async () => /^Trend: 2 shards in the last 14 days/.test(await page.locator('.trend').innerText()), 'the trend counts the new shard, live');
      expect(chrome.errors).toEqual([]);
    });

    it('does not tell a never-attuned soul it needs new evidence since attunement', async () => {
      // A soul never attuned (and without evidence yet) is not told it needs evidence "since attunement".
      const created = await server.gql(gql.create, { input: { name: 'Iona', essence: 'Iona keeps the lighthouse log.' } });
      const iona = created.createSoul.soul.id as string;
      // Never attuned: recency holds (SPEC §4), so it is not among the unmet conditions at all.
      expect((await server.gql(gql.soul, { id: iona })).soul.crystallization.unmet).not.toContain('RECENCY');
      await open(server, `#/soul/${iona}`);
      await expect(page.locator('.hero__status').innerText()).resolves.toMatch(/^Needs 3 more shards \(0 of the 3 needed\)/);
      await expect(page.locator('.hero').innerText()).resolves.not.toContain('attunement');
      await open(server, `#/soul/${iona}/refine`);
      await expect(page.locator('.verdict').innerText()).resolves.not.toContain('attunement');
      await open(server, '#/');
      await expect(page.locator(`.soul-card[data-soul-id="${iona}"]`).innerText()).resolves.not.toContain('attunement');
      expect(chrome.errors).toEqual([]);
    });

    it('keeps text longer than a bound whole, says how much is too much, and refuses to send it', async () => {
      const countOf = (field: Locator) => ({ innerText: async () => page.locator(`[id="${await field.getAttribute('id')}-count"]`).innerText(), getAttribute: async (name: string) => page.locator(`[id="${await field.getAttribute('id')}-count"]`).getAttribute(name) });
      const why = (field: Locator) => field.evaluate((el) => (el as HTMLInputElement).validationMessage);

      // A pasted 500-character name is kept, counted and refused: Create soul writes nothing.
      await open(server, '#/');
      const soulsBefore = (await server.gql('{ souls { id } }')).souls.length;
      await page.getByRole('button', { name: 'New soul' }).click();
      const name = page.getByRole('textbox', { name: 'Name' });
      await name.fill('N'.repeat(500));
      await expect(name.inputValue()).resolves.toHaveLength(500);
      await expect(countOf(name).innerText()).resolves.toBe('500 / 200 characters: 300 too many');
      await expect(why(name)).resolves.toBe('Name: 300 characters too many (at most 200 characters)');
      const essence = page.getByRole('textbox', { name: 'Essence' });
      await essence.fill('Café ☕');
      // 1 + 1 + 1 + 2 (é) + 1 + 3 (☕) bytes in UTF-8, as the server measures it.
      await expect(countOf(essence).innerText()).resolves.toBe('9 / 65,536 bytes');
      await page.getByRole('button', { name: 'Create soul' }).click();
      await expect(page.locator('#new-soul').evaluate((form) => (form as HTMLFormElement).checkValidity())).resolves.toBe(false);
      await name.fill('N'.repeat(200));
      await expect(countOf(name).innerText()).resolves.toBe('200 / 200 characters');
      await expect(why(name)).resolves.toBe('');
      expect((await server.gql('{ souls { id } }')).souls).toHaveLength(soulsBefore);

      // A 9,000-character observation is kept whole and refused, not cut to 8,192.
      await open(server, `#/soul/${id('Mira')}`);
      await page.getByRole('button', { name: 'Drop a shard' }).click();
      const observation = page.getByRole('textbox', { name: 'Observation' });
      await observation.fill('o'.repeat(9000));
      await expect(observation.inputValue()).resolves.toHaveLength(9000);
      await expect(countOf(observation).innerText()).resolves.toBe('9,000 / 8,192 bytes: 808 too many');
      await page.getByRole('combobox', { name: 'Source' }).fill('s'.repeat(130));
      await expect(why(page.getByRole('combobox', { name: 'Source' }))).resolves.toBe('Source: 2 characters too many (at most 128 characters)');
      const pendingCount = `query ($id: ID!) { soul(id: $id) { pendingShardCount } }`;
      const pending = (await server.gql(pendingCount, { id: id('Mira') })).soul;
      await page.getByRole('button', { name: 'Drop shard' }).click();
      await expect(page.locator('#drop-shard').evaluate((form) => (form as HTMLFormElement).checkValidity())).resolves.toBe(false);
      await expect(why(observation)).resolves.toBe('Observation: 808 bytes too many (at most 8,192 bytes)');
      expect((await server.gql(pendingCount, { id: id('Mira') })).soul).toEqual(pending);

      // A principle over its bytes: Confirm is disabled and says why.
      await open(server, `#/soul/${id('Mira')}/refine`);
      await page.getByRole('button', { name: 'Propose a trait from this cluster' }).first().click();
      const proposal = page.getByRole('form', { name: 'The proposed change' });
      const principle = proposal.getByLabel('Principle');
      await principle.fill('é'.repeat(1100));
      await expect(principle.inputValue()).resolves.toHaveLength(1100);
      await expect(countOf(principle).innerText()).resolves.toBe('2,200 / 2,048 bytes: 152 too many');
      await expect(countOf(principle).getAttribute('class')).resolves.toContain('field__count--over');
      const confirm = proposal.getByRole('button', { name: 'Confirm' });
      await expect(confirm.isDisabled()).resolves.toBe(true);
      await expect(confirm.getAttribute('title')).resolves.toBe('Principle: 152 bytes too many (at most 2,048 bytes)');

      // The import's name: kept, counted, refused by the plan's form.
      await open(server, '#/');
      await page.getByRole('button', { name: 'Import', exact: true }).click();
      const importName = page.locator('#import-soul').getByLabel('Name (when the text gives none)');
      await importName.fill('I'.repeat(250));
      await expect(countOf(importName).innerText()).resolves.toBe('250 / 200 characters: 50 too many');
      await expect(why(importName)).resolves.toBe('Name (when the text gives none): 50 characters too many (at most 200 characters)');
      expect(chrome.errors).toEqual([]);
    });

    it('shows the rendered block as the agent receives it: monospace Markdown, the same text as the API', async () => {
      await open(server, `#/soul/${id('Mira')}`);
      const block = page.getByLabel('Rendered identity block');
      const rendered = (await server.gql(gql.soul, { id: id('Mira') })).soul.rendered as string;
      await expect(block.innerText()).resolves.toBe(rendered);
      const styles = await block.locator('.block__line').evaluateAll((lines) => lines.map((line) => {
        const style = getComputedStyle(line);
        return `${style.fontFamily.split(',')[0]} ${style.textTransform} ${style.fontVariantCaps}`;
      }));
      expect(new Set(styles)).toEqual(new Set(['ui-monospace none normal']));
      await screenshot(page, `sheet-${size}`, true);
      expect(chrome.errors).toEqual([]);
    });

    it('labels a validation error by its field, not by its path', async () => {
      await open(server, `#/soul/${id('Sela')}`);
      await page.getByRole('button', { name: 'Drop a shard' }).click();
      await page.getByRole('textbox', { name: 'Observation' }).fill('!!!');
      await page.getByRole('button', { name: 'Drop shard' }).click();
      const note = page.locator('.drop .error-note');
      await note.waitFor(WAIT);
      await expect(note.innerText()).resolves.toMatch(/^Observation: \w/);
      await expect(note.innerText()).resolves.not.toMatch(/input\.|content:/);

      await open(server, `#/soul/${id('Brannoc')}/workshop`);
      await page.getByRole('combobox', { name: /^Place / }).nth(0).selectOption({ label: 'Merge into a new consolidation' });
      // The draft lands after the placement renders; a person clears the drafted text, so wait for it first.
      const merged = page.getByLabel('Merged principle of consolidation 1');
      await until(async () => (await merged.inputValue()) !== '', 'the merged principle is drafted');
      await merged.fill('');
      // The verdict before the preview catches up names the plan as it opened (one that changes nothing): wait for this one.
      const problem = page.locator('.verdict--invalid li', { hasText: 'consolidation 1' }).first();
      await problem.waitFor(WAIT);
      await expect(problem.innerText()).resolves.toMatch(/^Merged principle \(consolidation 1\): \w/);
      await expect(problem.innerText()).resolves.not.toMatch(/plan\.|consolidations\[|mergedPrinciple/);
      expect(chrome.errors).toEqual([]);
    });

    it('drafts the merged principle in the workshop until the person edits it', async () => {
      await open(server, `#/soul/${id('Brannoc')}/workshop`);
      const blade = 'Never sell a blade before the quench has cooled.';
      const axe = 'Never sell an axe before the quench has cooled.';
      await page.getByLabel(`Place “${blade}”`).selectOption({ label: 'Merge into a new consolidation' });
      await page.getByLabel(`Place “${axe}”`).selectOption({ label: 'Merge into consolidation 1' });
      const merged = page.getByLabel('Merged principle of consolidation 1');
      await until(async () => (await merged.inputValue()).includes(axe), 'the merged principle is drafted from both sources');
      await expect(merged.inputValue()).resolves.toBe(`${blade} ${axe}`);
      await page.getByText('The plan is valid.').waitFor(WAIT);
      // An edit is the person's: moving another trait in no longer redrafts it.
      await merged.fill('Never sell steel before the quench has cooled.');
      await page.getByLabel('Place “Help the village first when raiders come.”').selectOption({ label: 'Merge into consolidation 1' });
      await expect(merged.inputValue()).resolves.toBe('Never sell steel before the quench has cooled.');
      await page.getByText('The plan is valid.').waitFor(WAIT);
      expect(chrome.errors).toEqual([]);
    });

    it('no longer shows the level-up’s results after a revert in the workshop', async () => {
      await open(server, `#/soul/${id('Brannoc')}/workshop`);
      const menus = page.getByRole('combobox', { name: /^Place / });
      await menus.nth(0).selectOption({ label: 'Merge into a new consolidation' });
      await menus.nth(1).selectOption({ label: 'Merge into consolidation 1' });
      await page.getByLabel('Merged principle of consolidation 1').fill('Never sell steel before the quench has cooled.');
      await page.getByText('The plan is valid.').waitFor(WAIT);

      // The page's timers stand still from here, so the revert answers before the level-up's animation step, as on a loaded machine.
      // (Paused at the present: the page keeps this clock for the tests after this one, whose "just now" reads it.)
      // The installed clock flows until paused, and a pause must be ahead of it: ask the page its time, pause just after
      // it, and ask again if the clock got there first (a loaded machine takes longer than the margin between the calls).
      await page.clock.install();
      const pausedAtPresent = async () =>
        page.clock.pauseAt((await page.evaluate(() => Date.now())) + 50).then(
          () => true,
          (error: Error) => {
            if (/fast-forward to the past/i.test(error.message)) return false;
            throw error;
          },
        );
      await until(pausedAtPresent, 'the page clock paused at its present');
      await page.getByRole('button', { name: 'Level up to 1' }).click();
      await page.getByRole('heading', { name: 'Brannoc reached level 1' }).waitFor(WAIT);
      await expect(page.locator('.levelled').innerText()).resolves.toContain('became');
      await page.locator('.levelled').getByRole('button', { name: 'Revert this level-up' }).click();
      await page.getByRole('heading', { name: 'Brannoc is back at level 0' }).waitFor(WAIT);
      await page.clock.runFor(2_000);
      await page.clock.resume();
      await page.getByRole('heading', { name: 'Brannoc is back at level 0' }).waitFor(WAIT);
      const after = await page.locator('.levelled').innerText();
      expect(after).not.toContain('became');
      expect(after).not.toContain('Never sell steel before the quench has cooled.');
      await expect(page.locator('.levelled').getByRole('heading', { name: /^(Merged|Into the essence|Carried)$/ }).count()).resolves.toBe(0);
      await expect(page.locator('.levelled').getByRole('meter', { name: 'Traits: 10 of 10, at capacity' }).count()).resolves.toBe(1);
      expect((await server.gql(gql.soul, { id: id('Brannoc') })).soul.level).toBe(0);
      expect(chrome.errors).toEqual([]);
    });
  });
}
