// The screens added for issue 8 item 17, in headless Chromium over the demo world, each checked through the API:
// the roster's search, order and pages; editing a soul; set-aside traits reactivated; sealed shards revealed;
// a shard cited from the sheet and faded once exhausted; more than one page of shards; the evidence chart; the
// essence's word diff; the workshop's hints applied by a click; dark mode's contrast; and the scopes that disable
// each new control.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { contrastProblems } from './contrast.ts';
import { BROWSER_TEST_MS, browserFile, type Chromium, SCREENS, screenshot, type SeededServer, startSeededServer, until, WAIT } from './support.ts';

const LAPTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const DAY_MS = 86_400_000;

let server: SeededServer;
let chrome: Chromium;
let page: Page;

browserFile(LAPTOP, (session) => ({ server, chrome, page } = session));

const id = (name: string) => String(server.demo.souls[name]);

async function createSoul(name: string, description: string): Promise<string> {
  const { createSoul } = await server.gql(`mutation ($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } } }`, {
    input: { name, description, essence: `${name} is one of the extras of the roster test.` },
  });
  expect(createSoul.__typename).toBe('SoulPayload');
  return createSoul.soul.id;
}

async function dropShards(inputs: Record<string, unknown>[]): Promise<string[]> {
  const { dropShards } = await server.gql(`mutation ($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { shards { id } } ... on Error { message } } }`, { inputs });
  expect(dropShards.__typename).toBe('DropShardsPayload');
  return dropShards.shards.map((s: { id: string }) => s.id);
}

/** Every shard of a soul through the API's own paging (newest first). */
async function allShards(soulId: string, args = 'status: PENDING, sealed: false'): Promise<{ id: string; source: string; createdAt: string }[]> {
  const out: { id: string; source: string; createdAt: string }[] = [];
  let after: string | null = null;
  for (;;) {
    const { soul }: { soul: any } = await server.gql(`query ($id: ID!, $after: String) { soul(id: $id) { shards(${args}, first: 200, after: $after) { pageInfo { endCursor hasNextPage } edges { node { id source createdAt } } } } }`, { id: soulId, after });
    out.push(...soul.shards.edges.map((e: { node: { id: string; source: string; createdAt: string } }) => e.node));
    if (!soul.shards.pageInfo.hasNextPage) return out;
    after = soul.shards.pageInfo.endCursor;
  }
}

/**
 * The element can be as narrow as a phone's screen (its min-content width fits, page padding aside) and nothing
 * inside it sticks out of it. Measured on the element itself, so a wider neighbour elsewhere on the page does not
 * hide or cause a failure here.
 */
async function fitsWidth(selector: string): Promise<void> {
  const problems = await page.evaluate((selector) => {
    const room = window.innerWidth - 24;
    return [...document.querySelectorAll<HTMLElement>(selector)].flatMap((root) => {
      const width = root.style.width;
      root.style.width = 'min-content';
      const narrowest = root.getBoundingClientRect().width;
      root.style.width = width;
      const edge = root.getBoundingClientRect().right;
      const sticking = [...root.querySelectorAll('*')].filter((e) => e.getBoundingClientRect().right > edge + 0.5 && !e.closest('.chart__scroll, .visually-hidden'));
      return [...(narrowest > room ? [`${selector} needs ${Math.round(narrowest)} px of ${room}`] : []), ...sticking.map((e) => `${e.tagName}.${e.className} sticks out of ${selector}`)];
    });
  }, selector);
  expect(problems, `${selector} at ${await page.evaluate('innerWidth')} px`).toEqual([]);
}

/** A screenshot of one part of the screen, to test-results/screens/NAME.png (no toasts). */
async function shoot(part: Locator, name: string): Promise<void> {
  mkdirSync(SCREENS, { recursive: true });
  await part.screenshot({ path: join(SCREENS, `${name}.png`), animations: 'disabled', style: '.toasts { display: none }' });
}

async function openSheet(name: string) {
  await page.goto(`${server.base}#/soul/${id(name)}`);
  await page.getByRole('heading', { name, level: 1 }).waitFor(WAIT);
}

describe('the screens added to the character sheet, in Chromium', { timeout: BROWSER_TEST_MS }, () => {
  it('searches, sorts and pages the roster, keeping the choice in the address, at laptop and phone width', async () => {
    const extras = ['Aldric', 'Bryn', 'Corin', 'Dagny', 'Eira', 'Fenn', 'Gorm', 'Hale', 'Ilsa', 'Jory'];
    for (const name of extras) await createSoul(name, name === 'Gorm' ? 'Smith of the lower ward, a rival of Brannoc' : 'A face in the crowd of the northern keep');
    await page.goto(server.base);
    await page.locator('.soul-card').first().waitFor(WAIT);

    // 14 awake souls, 12 to a page: the first page holds 12 cards, not all of them.
    const cards = page.locator('.cards .soul-card');
    await expect(cards.count()).resolves.toBe(12);
    await expect(page.getByRole('navigation', { name: 'Roster pages' }).innerText()).resolves.toContain('Page 1 of 2');

    // Sort by name: the cards follow the API's NAME order, page by page.
    const byName = (await server.gql(`{ souls(orderBy: NAME) { name } }`)).souls.map((s: { name: string }) => s.name);
    await page.getByLabel('Sort by').selectOption('NAME');
    await until(async () => (await page.locator('.soul-card__name').allInnerTexts())[0] === byName[0], 'the roster is sorted by name');
    await expect(page.locator('.soul-card__name').allInnerTexts()).resolves.toEqual(byName.slice(0, 12));
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 2 of 2').waitFor(WAIT);
    await expect(page.locator('.soul-card__name').allInnerTexts()).resolves.toEqual(byName.slice(12));
    expect(page.url()).toMatch(/#\/\?sort=name&page=2$/);
    // Back turns the page back; a reload keeps the order.
    await page.goBack();
    await page.getByText('Page 1 of 2').waitFor(WAIT);
    await page.reload();
    await page.getByText('Page 1 of 2').waitFor(WAIT);
    await expect(page.getByLabel('Sort by').inputValue()).resolves.toBe('NAME');

    // Level and recency orders follow the API too.
    for (const order of ['LEVEL', 'UPDATED'] as const) {
      const expected = (await server.gql(`{ souls(orderBy: ${order}) { name } }`)).souls.map((s: { name: string }) => s.name).slice(0, 12);
      await page.getByLabel('Sort by').selectOption(order);
      await until(async () => JSON.stringify(await page.locator('.soul-card__name').allInnerTexts()) === JSON.stringify(expected), `the roster is sorted by ${order}`);
    }

    // Search by name or description, case and accents folded; paging follows the matches.
    await page.getByLabel('Find', { exact: true }).fill('SMITH');
    await page.getByText('2 of 14 awake souls match').waitFor(WAIT);
    await expect(page.locator('.soul-card__name').allInnerTexts()).resolves.toEqual(expect.arrayContaining(['Brannoc', 'Gorm']));
    await expect(page.getByRole('navigation', { name: 'Roster pages' }).count()).resolves.toBe(0);
    await page.getByLabel('Find', { exact: true }).fill('nobody by that name');
    await page.getByText('No awake soul matches').waitFor(WAIT);
    await screenshot(page, 'roster-search');

    // At phone width the search, the order and the pager fit the screen.
    await page.getByLabel('Find', { exact: true }).fill('');
    await page.getByLabel('Sort by').selectOption('READINESS');
    await page.setViewportSize(PHONE);
    await page.getByText('Page 1 of 2').waitFor(WAIT);
    await fitsWidth('.roster-tools');
    await fitsWidth('.pager');
    await page.setViewportSize(LAPTOP);
    for (const name of extras) await server.gql(`mutation ($id: ID!) { retireSoul(id: $id) { __typename } }`, { id: (await server.gql(`query ($n: String!) { soulByName(name: $n) { id } }`, { n: name })).soulByName.id });
    expect(chrome.errors).toEqual([]);
  });

  it('edits a soul’s name, description and essence (updateSoul), and shows a refused name in the form’s words', async () => {
    await openSheet('Sela');
    await page.getByRole('button', { name: 'Edit name, description and essence' }).click();
    const form = page.getByRole('form', { name: 'Edit Sela' });
    await form.waitFor(WAIT);
    // A taken name is refused by the server; the form says which field, and nothing is written.
    await form.getByLabel('Name').fill('Mira');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await form.getByRole('alert').getByText(/^Name: /).waitFor(WAIT);
    expect((await server.gql(`query ($id: ID!) { soul(id: $id) { name } }`, { id: id('Sela') })).soul.name).toBe('Sela');

    await form.getByLabel('Name').fill('Sela');
    await form.getByLabel('Description').fill('Scout of the eastern marches and keeper of the beacon');
    const essence = 'Sela maps the marches alone, keeps the beacon lit, and reports only what she has seen with her own eyes.';
    await form.getByLabel('Essence').fill(essence);
    await shoot(page.locator('.hero'), 'edit-soul');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await form.waitFor({ state: 'detached', ...WAIT });
    await page.locator('.hero__essence').getByText(essence).waitFor(WAIT);
    const saved = (await server.gql(`query ($id: ID!) { soul(id: $id) { name description essence rendered } }`, { id: id('Sela') })).soul;
    expect(saved).toMatchObject({ name: 'Sela', description: 'Scout of the eastern marches and keeper of the beacon', essence });
    await page.getByLabel('Rendered identity block').getByText('keeps the beacon lit').waitFor(WAIT);
    expect(chrome.errors).toEqual([]);
  });

  it('lists set-aside traits and reactivates one; at the trait limit reactivation is disabled with the reason', async () => {
    const mira = (await server.gql(`query ($id: ID!) { soul(id: $id) { traits { id principle } } }`, { id: id('Mira') })).soul;
    const reserve = mira.traits.find((t: { principle: string }) => t.principle.startsWith('Keep a reserve'));
    await server.gql(`mutation ($id: ID!) { revertTrait(id: $id) { __typename } }`, { id: reserve.id });
    await openSheet('Mira');
    const panel = page.getByRole('region', { name: /Set-aside traits/ });
    // Mira's level-up consolidated two traits and promoted one; the revert just now adds a fourth.
    await page.getByRole('heading', { name: 'Set-aside traits (4)' }).waitFor(WAIT);
    const row = panel.locator('.inactive__trait', { hasText: reserve.principle });
    await expect(row.getAttribute('data-status')).resolves.toBe('reverted');
    await expect(panel.locator('[data-status=consolidated]').first().innerText()).resolves.toContain('Merged into “Check the stores ledger before anything leaves the keep.”');
    await shoot(panel, 'set-aside-traits');
    await row.getByRole('button', { name: `Reactivate: ${reserve.principle}` }).click();
    await page.getByRole('heading', { name: 'Set-aside traits (3)' }).waitFor(WAIT);
    await page.locator('.traits .trait', { hasText: reserve.principle }).waitFor(WAIT);
    const trait = (await server.gql(`query ($id: ID!) { trait(id: $id) { status } }`, { id: reserve.id })).trait;
    expect(trait.status).toBe('ACTIVE');

    // Brannoc holds ten of ten: reverting one and adding another keeps him full, so the reverted one cannot return.
    const brannoc = (await server.gql(`query ($id: ID!) { soul(id: $id) { traits { id principle } } }`, { id: id('Brannoc') })).soul;
    const lit = brannoc.traits.find((t: { principle: string }) => t.principle.startsWith('Keep the forge lit'));
    await server.gql(`mutation ($id: ID!) { revertTrait(id: $id) { __typename } }`, { id: lit.id });
    const added = await server.gql(`mutation ($soulId: ID!) { addTrait(soulId: $soulId, input: { principle: "Quench in oil, never in the river.", provenance: "Forge log, session nine." }) { __typename ... on TraitPayload { trait { id } } } }`, { soulId: id('Brannoc') });
    await openSheet('Brannoc');
    const button = page.getByRole('button', { name: `Reactivate: ${lit.principle}` });
    await expect(button.isDisabled()).resolves.toBe(true);
    await page.getByText('At the trait limit (10): revert a trait or level up first.').waitFor(WAIT);
    // Restore Brannoc for the workshop test.
    await server.gql(`mutation ($id: ID!) { revertTrait(id: $id) { __typename } }`, { id: added.addTrait.trait.id });
    await server.gql(`mutation ($id: ID!) { reactivateTrait(id: $id) { __typename } }`, { id: lit.id });
    expect(chrome.errors).toEqual([]);
  });

  it('reveals a sealed shard, cites a shard to a trait from the sheet, and fades it once exhausted', async () => {
    const [sealedId] = await dropShards([{ content: 'Kept a second map hidden in the beacon tower.', source: 'session_observation', soulIds: [id('Sela')], sealed: true }]);
    await openSheet('Sela');
    await page.getByLabel('Show', { exact: true }).selectOption('sealed');
    const sealedRow = page.locator(`.shard[data-shard-id="${sealedId}"]`);
    await sealedRow.waitFor(WAIT);
    await expect(sealedRow.innerText()).resolves.toContain('sealed');
    await page.getByText('1 shard sealed').waitFor(WAIT);
    await sealedRow.getByRole('button', { name: 'Reveal', exact: true }).click();
    await page.getByText('0 shards sealed').waitFor(WAIT);
    const revealed = (await server.gql(`query ($id: ID!) { shard(id: $id) { sealed status } }`, { id: sealedId })).shard;
    expect(revealed).toEqual({ sealed: false, status: 'PENDING' });

    // Back on the pending list the shard is there; cite it for both of Sela's traits.
    await page.getByLabel('Show', { exact: true }).selectOption('pending');
    const row = page.locator(`.shard[data-shard-id="${sealedId}"]`);
    await row.waitFor(WAIT);
    const traits = (await server.gql(`query ($id: ID!) { soul(id: $id) { traits { id principle } } }`, { id: id('Sela') })).soul.traits as { id: string; principle: string }[];
    expect(traits).toHaveLength(2);
    for (const [n, trait] of traits.entries()) {
      await row.getByRole('button', { name: 'Cite as evidence' }).click();
      const form = row.getByRole('form', { name: 'Cite this shard' });
      await form.getByLabel('Evidence for the trait').selectOption({ label: trait.principle });
      if (n === 0) await shoot(row, 'cite-shard');
      await form.getByRole('button', { name: 'Cite', exact: true }).click();
      await form.waitFor({ state: 'detached', ...WAIT });
      await row.locator('.shard__cited').getByText(`✦ ${n + 1}`).waitFor(WAIT);
    }
    const cited = (await server.gql(`query ($id: ID!) { shard(id: $id) { citedBy { id } } }`, { id: sealedId })).shard.citedBy.map((t: { id: string }) => t.id);
    expect(cited.toSorted()).toEqual(traits.map((t) => t.id).toSorted());

    // Cited by two traits (shardFadeCitations): exhausted, and "Fade exhausted shards" fades it.
    await row.getByText('exhausted').waitFor(WAIT);
    await page.getByRole('button', { name: 'Fade exhausted shards' }).click();
    await row.waitFor({ state: 'detached', ...WAIT });
    expect((await server.gql(`query ($id: ID!) { shard(id: $id) { status } }`, { id: sealedId })).shard.status).toBe('FADED');
    await page.getByLabel('Show', { exact: true }).selectOption('faded');
    await page.locator(`.shard--faded[data-shard-id="${sealedId}"]`).waitFor(WAIT);
    expect(chrome.errors).toEqual([]);
  });

  it('pages past the newest 200 shards with the connection’s cursor, and charts the evidence by week and source', async () => {
    const soulId = await createSoul('Quill', 'Archivist of the river library');
    const sources = ['dialogue', 'quest_turnin', 'session_observation', 'manual_review', 'reader_feedback', 'playtest', 'forge_log'];
    const now = Date.now();
    // 230 shards over 70 days from seven sources, oldest first (createdAt may not lie in the future).
    await dropShards(
      Array.from({ length: 230 }, (_, i) => ({
        content: `Catalogued scroll number ${i} of the river library, shelf ${i % 17}.`,
        source: sources[(i * 5) % sources.length],
        soulIds: [soulId],
        createdAt: new Date(now - 70 * DAY_MS + i * 7 * 3_600_000).toISOString(),
      })),
    );
    await page.goto(`${server.base}#/soul/${soulId}`);
    await page.getByRole('heading', { name: 'Quill', level: 1 }).waitFor(WAIT);
    await page.getByText('230 shards pending (the newest 200 of 230 shown)').waitFor(WAIT);
    await expect(page.locator('.shard').count()).resolves.toBe(200);
    await page.getByRole('button', { name: 'Show 30 more' }).click();
    await until(async () => (await page.locator('.shard').count()) === 230, 'the second page is shown');
    const shown = await page.locator('.shard').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-shard-id')));
    const api = await allShards(soulId);
    expect(shown.toSorted()).toEqual(api.map((s) => s.id).toSorted());
    await expect(page.getByRole('button', { name: /^Show \d+ more$/ }).count()).resolves.toBe(0);

    // The chart's table holds exactly the API's shards per week and source (the two busiest sources by name).
    const chart = page.getByRole('region', { name: /Evidence over time/ });
    const svg = chart.getByRole('img', { name: 'Shards per week by source' });
    await svg.waitFor(WAIT);
    await chart.getByText('The numbers').click();
    const table = await chart.locator('table').evaluate((t: HTMLTableElement) => [...t.rows].map((r) => [...r.cells].map((c) => c.textContent ?? '')));
    const header = table[0];
    expect(header[0]).toBe('Week of');
    expect(header.at(-1)).toBe('All');
    expect(header).toContain('other sources');
    const rows = table.slice(1);
    expect(rows).toHaveLength(12);
    const chartNow = await page.evaluate('Date.now()');
    const inWindow = api.filter((s) => Date.parse(s.createdAt) > (chartNow as number) - 12 * 7 * DAY_MS);
    const allColumn = rows.map((r) => Number(r.at(-1)));
    expect(allColumn.reduce((a, b) => a + b, 0)).toBe(inWindow.length);
    for (const source of header.slice(1, -1).filter((s) => s !== 'other sources')) {
      const column = header.indexOf(source);
      expect(rows.reduce((sum, r) => sum + Number(r[column]), 0), source).toBe(inWindow.filter((s) => s.source === source).length);
    }
    // The newest week: the API's shards of the last 7 days.
    expect(allColumn.at(-1)).toBe(inWindow.filter((s) => Date.parse(s.createdAt) > (chartNow as number) - 7 * DAY_MS).length);
    await expect(svg.locator('desc').textContent()).resolves.toContain(`${inWindow.length} shards in 12 weeks`);
    await shoot(chart, 'evidence-chart');

    // A shard dropped now joins this week's bar, live.
    const before = allColumn.at(-1)!;
    await dropShards([{ content: 'Found the missing index of the river library.', source: 'dialogue', soulIds: [soulId] }]);
    await until(async () => Number((await chart.locator('tbody tr').last().locator('td').last().textContent()) ?? 0) === before + 1, 'the chart counted the new shard');

    // At phone width the chart and the shard list fit the screen.
    await page.setViewportSize(PHONE);
    await fitsWidth('.evidence-chart');
    await fitsWidth('.shard-tools');
    await fitsWidth('.filters--shards');
    await page.setViewportSize(LAPTOP);
    expect(chrome.errors).toEqual([]);
  });

  it('marks what changed in the essence at each level-up (a word diff)', async () => {
    const history = (await server.gql(`query ($id: ID!) { soul(id: $id) { levelHistory { essenceBefore essenceAfter } } }`, { id: id('Mira') })).soul.levelHistory;
    await openSheet('Mira');
    const event = page.locator('.timeline__event').first();
    await event.getByText('Essence before and after').click();
    const sides = event.locator('.essence-diff');
    await sides.waitFor(WAIT);
    // Each side, read without the marks, is the essence the API holds.
    const plain = (side: string) => sides.locator(`[data-side=${side}]`).textContent();
    await expect(plain('before')).resolves.toBe(history[0].essenceBefore);
    await expect(plain('after')).resolves.toBe(history[0].essenceAfter);
    const removed = (await sides.locator('del').allTextContents()).join(' | ');
    const added = (await sides.locator('ins').allTextContents()).join(' | ');
    expect(removed).toContain('speaks');
    expect(added).toContain('checks the stores before anything leaves them');
    expect(added).toContain('says the unwelcome thing');
    // Words kept on both sides are not marked.
    expect(removed + added).not.toContain('famine');
    expect(removed + added).not.toContain('even to captains');
    await shoot(event, 'essence-diff');
    await page.setViewportSize(PHONE);
    await fitsWidth('.essence-diff');
    await page.setViewportSize(LAPTOP);
    expect(chrome.errors).toEqual([]);
  });

  it('applies the workshop’s “merge?” and “promote?” hints with a click', async () => {
    const before = (await server.gql(`query ($id: ID!) { soul(id: $id) { rendered traits { id principle } } }`, { id: id('Brannoc') })).soul;
    await page.goto(`${server.base}#/soul/${id('Brannoc')}/workshop`);
    await page.getByRole('heading', { name: 'Level-up workshop: Brannoc' }).waitFor(WAIT);
    const blade = 'Never sell a blade before the quench has cooled.';
    const axe = 'Never sell an axe before the quench has cooled.';
    const hints = page.getByRole('complementary', { name: 'Hints from the evidence report' });
    await hints.getByRole('button', { name: `Merge “${blade}” and “${axe}” (75% alike)` }).click();
    const group = page.locator('[data-zone=group-1]');
    await expect(group.locator('.trait-card').allInnerTexts()).resolves.toEqual([expect.stringContaining(blade), expect.stringContaining(axe)]);
    await hints.getByRole('button', { name: `Merged: “${blade}” and “${axe}”` }).waitFor(WAIT);

    const promote = hints.getByRole('button', { name: /^Promote “/ }).first();
    const promotedPrinciple = /^Promote “(.*)” into the essence$/.exec((await promote.getAttribute('aria-label'))!)![1];
    await promote.click();
    await page.locator('[data-zone=promote] .trait-card', { hasText: promotedPrinciple }).waitFor(WAIT);
    await screenshot(page, 'workshop-hints');

    await page.getByLabel('Merged principle of consolidation 1').fill('Never sell steel before the quench has cooled.');
    await page.getByRole('button', { name: 'Weave promoted principles in' }).click();
    await page.getByRole('button', { name: 'Add to the essence' }).click();
    await page.getByText('The plan is valid.').waitFor(WAIT);
    await page.getByRole('button', { name: 'Level up to 1' }).click();
    await page.getByRole('heading', { name: 'Brannoc reached level 1' }).waitFor(WAIT);
    const traitQuery = `query ($id: ID!) { trait(id: $id) { status mergedInto { principle } } }`;
    const idOf = (principle: string) => before.traits.find((t: { principle: string }) => t.principle === principle).id;
    for (const principle of [blade, axe]) expect((await server.gql(traitQuery, { id: idOf(principle) })).trait).toEqual({ status: 'CONSOLIDATED', mergedInto: { principle: 'Never sell steel before the quench has cooled.' } });
    expect((await server.gql(traitQuery, { id: idOf(promotedPrinciple) })).trait.status).toBe('PROMOTED');
    await server.gql(`mutation ($id: ID!) { revertLevelUp(soulId: $id) { __typename } }`, { id: id('Brannoc') });
    expect((await server.gql(`query ($id: ID!) { soul(id: $id) { rendered } }`, { id: id('Brannoc') })).soul.rendered).toBe(before.rendered);
    expect(chrome.errors).toEqual([]);
  });

  it('follows prefers-color-scheme: dark, with text over 7:1 and chips over 4.5:1 on every screen (and in light)', async () => {
    const screens = [
      { hash: '#/', ready: () => page.locator('.soul-card').first().waitFor(WAIT), name: 'roster' },
      { hash: `#/soul/${id('Mira')}`, ready: () => page.getByRole('img', { name: 'Shards per week by source' }).waitFor(WAIT), name: 'sheet' },
      { hash: `#/soul/${id('Mira')}/refine`, ready: () => page.getByRole('heading', { name: 'Refine Mira' }).waitFor(WAIT), name: 'refinement' },
      // The plan as the workshop opens changes nothing: its verdict (and the disabled button) are part of the screen checked.
      { hash: `#/soul/${id('Relay')}/workshop`, ready: () => page.getByText('Not yet valid:').waitFor(WAIT), name: 'workshop' },
    ];
    for (const scheme of ['dark', 'light'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const screen of screens) {
        await page.goto(`${server.base}${screen.hash}`);
        await screen.ready();
        await page.locator('details:not([open]) > summary').evaluateAll((summaries) => summaries.forEach((s) => (s.parentElement as HTMLDetailsElement).open = true));
        // The emulated scheme reaches the page's media queries asynchronously under load: wait for it, bounded.
        await page.waitForFunction((dark) => matchMedia('(prefers-color-scheme: dark)').matches === dark, scheme === 'dark');
        // Two frames more, so every rule of the new scheme has been applied before colours are read (a run under load once read a half-applied one).
        await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
        const background = await page.evaluate('getComputedStyle(document.body).backgroundColor');
        if (scheme === 'dark') expect(background, screen.name).toMatch(/^rgb\((\d|[1-5]\d), /); // a dark page
        expect(await contrastProblems(page), `${scheme} ${screen.name}`).toEqual([]);
        if (scheme === 'dark') await screenshot(page, `dark-${screen.name}`, screen.name === 'sheet');
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
    expect(chrome.errors).toEqual([]);
  });
});

describe('the new controls under a token’s scopes', { timeout: BROWSER_TEST_MS }, () => {
  it('disables editing, reactivating, revealing, citing, fading and the hints for a read-only token, with the reason', async () => {
    const READER = 'dashboard-read-only-token-0001';
    const OBSERVER = 'game-server-observe-token-0002';
    const guarded = await startSeededServer({ tokens: [{ name: 'dashboard', token: READER, scopes: ['read'] }, { name: 'game-server', token: OBSERVER, scopes: ['read', 'observe'] }] });
    try {
      const mira = String(guarded.demo.souls.Mira);
      await guarded.gql(`mutation { dropShard(input: { content: "A sealed note in the stores ledger.", source: "dialogue", soulIds: ["${mira}"], sealed: true }) { __typename } }`, undefined, OBSERVER);
      // Another origin (another port): the page keeps no token for it yet.
      const guest = page;
      await guest.goto(`${guarded.base}#/soul/${mira}`);
      const enter = async (token: string) => {
        await guest.getByLabel('Access token').fill(token);
        await guest.getByRole('button', { name: 'Enter' }).click();
        await guest.getByRole('heading', { name: 'Mira', level: 1 }).waitFor(WAIT);
      };
      await enter(READER);
      const disabledWithReason = async (name: string | RegExp, scope: string) => {
        const button = guest.getByRole('button', { name }).first();
        await expect(button.isDisabled(), String(name)).resolves.toBe(true);
        await expect(button.getAttribute('title')).resolves.toBe(`Your token has no ${scope} scope`);
      };
      await disabledWithReason('Edit name, description and essence', 'admin');
      await disabledWithReason(/^Reactivate: /, 'refine');
      await disabledWithReason('Cite as evidence', 'refine');
      await disabledWithReason('Fade exhausted shards', 'refine');
      await guest.getByLabel('Show', { exact: true }).selectOption('sealed');
      await expect(guest.locator('.shard', { hasText: 'A sealed note' }).getByRole('button', { name: 'Reveal', exact: true }).getAttribute('title')).resolves.toBe('Your token has no observe scope');
      await expect(guest.locator('.shard', { hasText: 'A sealed note' }).getByRole('button', { name: 'Reveal', exact: true }).isDisabled()).resolves.toBe(true);
      await guest.locator('.shard-tools').getByRole('note').getByText('has no observe scope').waitFor(WAIT);
      await guest.goto(`${guarded.base}#/soul/${guarded.demo.souls.Brannoc}/workshop`);
      await guest.getByRole('heading', { name: 'Level-up workshop: Brannoc' }).waitFor(WAIT);
      await expect(guest.getByRole('button', { name: /^Merge “/ }).first().isDisabled()).resolves.toBe(true);

      // With observe, revealing is allowed (and works); citing still is not.
      await guest.getByRole('button', { name: 'Forget token' }).click();
      await guest.goto(`${guarded.base}#/soul/${mira}`);
      await enter(OBSERVER);
      await guest.getByLabel('Show', { exact: true }).selectOption('sealed');
      await guest.locator('.shard', { hasText: 'A sealed note' }).getByRole('button', { name: 'Reveal', exact: true }).click();
      await guest.getByText('0 shards sealed').waitFor(WAIT);
      expect((await guarded.gql(`{ shards(soulId: "${mira}", sealed: true) { totalCount } }`, undefined, READER)).shards.totalCount).toBe(0);
      await guest.getByLabel('Show', { exact: true }).selectOption('pending');
      await disabledWithReason('Cite as evidence', 'refine');
    } finally {
      // Off the page first: a page left on a stopped server retries its WebSocket, and those errors are the test's own.
      await page.goto('about:blank');
      await guarded.stop();
    }
    expect(chrome.errors.filter((e) => !e.includes('401'))).toEqual([]);
  });
});
