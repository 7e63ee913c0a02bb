// The character sheet's words, in headless Chromium over the demo world: errors name the app's controls (not the
// CLI's flags), counts agree with their nouns, empty panels say why they are empty, one message at a time, a new
// soul's refusal beside its field and the new soul opened, shards observed on an earlier day (so a soul made in the
// app can become ready in one sitting), promoted principles offered as a draft to rewrite, the rendered block's order
// explained, and the roster following an attunement.
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { stampAttuned } from '../../src/engine/index.ts';
import { BROWSER_TEST_MS, browserFile, type Chromium, type SeededServer, until, WAIT } from './support.ts';


let server: SeededServer;
let chrome: Chromium;
let page: Page;

browserFile({ width: 1280, height: 800 }, (session) => ({ server, chrome, page } = session));

const id = (name: string) => String(server.demo.souls[name]);

async function open(hash: string): Promise<void> {
  await page.goto('about:blank');
  await page.goto(`${server.base}${hash}`);
  await page.locator('main h1').first().waitFor(WAIT);
}

/** YYYY-MM-DD, `days` before today in the browser's time zone (what a date input holds). */
const dayBefore = (days: number) =>
  page.evaluate((days) => {
    const when = new Date(Date.now() - days * 86_400_000);
    return `${when.getFullYear()}-${String(when.getMonth() + 1).padStart(2, '0')}-${String(when.getDate()).padStart(2, '0')}`;
  }, days);

/** `count` texts of random letters, alike to none of the others (so each is a cluster of one), from a fixed seed. */
function unrelatedTexts(count: number): string[] {
  let seed = 7;
  const letter = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return String.fromCharCode(97 + (seed % 26));
  };
  return Array.from({ length: count }, () => Array.from({ length: 6 }, () => Array.from({ length: 7 }, letter).join('')).join(' '));
}

describe('the words of the character sheet', { timeout: BROWSER_TEST_MS }, () => {
  it('counts the clusters once, as the report does, and says how many a paged list shows', async () => {
    const report = `query ($id: ID!) { soul(id: $id) { evidence { clusterCount clusters(first: 500) { memberCount } } } }`;
    const heading = async () => Number(/^Clusters \((\d+)\), heaviest first$/.exec((await page.locator('#clusters-title').textContent()) ?? '')?.[1]);
    // Mira's clusters fit one page: the heading, the report and the list agree.
    await open(`#/soul/${id('Mira')}/refine`);
    const mira = (await server.gql(report, { id: id('Mira') })).soul.evidence;
    expect(mira.clusters).toHaveLength(mira.clusterCount);
    await expect(heading()).resolves.toBe(mira.clusterCount);
    await expect(page.locator('li.cluster').count()).resolves.toBe(mira.clusterCount);
    await expect(page.locator('.clusters__paged').count()).resolves.toBe(0);

    // 25 shards alike to none: 25 clusters of one, of which the page lists the heaviest 20 (the report's page).
    const created = await server.gql(`mutation { createSoul(input: { name: "Tally", essence: "Tally writes down everything." }) { ... on SoulPayload { soul { id } } } }`);
    const tally = created.createSoul.soul.id as string;
    for (const content of unrelatedTexts(25)) await server.gql(`mutation ($input: DropShardInput!) { dropShard(input: $input) { __typename } }`, { input: { content, source: 'ledger', soulIds: [tally] } });
    await open(`#/soul/${tally}/refine`);
    await page.locator('#clusters-title').waitFor(WAIT);
    expect((await server.gql(report, { id: tally })).soul.evidence.clusterCount).toBe(25);
    await expect(heading()).resolves.toBe(25);
    await expect(page.locator('.clusters__paged').innerText()).resolves.toBe('Showing the heaviest 20 of 25.');
    await expect(page.locator('li.cluster').count()).resolves.toBe(20);
    await expect(page.locator('.singles-title').textContent()).resolves.toBe('20 of them resemble nothing else');
    // The report's hint counts what the heading counts, and never calls a cluster of one "no cluster".
    const text = await page.locator('main').innerText();
    expect(text).toContain('25 of 25 clustered shards resemble no other (each a cluster of one)');
    expect(text).not.toMatch(/in no cluster/);
    expect(chrome.errors).toEqual([]);
  });

  it('shows the essence an import will write, and names a trait by its principle in the workshop', async () => {
    await open('#/');
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const form = page.locator('#import-soul');
    const soulMd = readFileSync(new URL('../fixtures/soulmd/openclaw/SOUL.md', import.meta.url), 'utf8');
    await form.getByLabel('SOUL.md text').fill(soulMd);
    await form.getByLabel('Name (when the text gives none)').fill('Quill');
    await form.getByRole('button', { name: 'Show the plan' }).click();
    const essence = form.getByLabel('Import plan').getByLabel('The essence it will write');
    await essence.waitFor(WAIT);
    const plan = await server.gql(`mutation ($input: ImportSoulMdInput!) { importSoulMd(input: $input) { ... on SoulMdImportPlan { essence } } }`, { input: { text: soulMd, name: 'Quill', apply: false } });
    expect(plan.importSoulMd.essence.length).toBeGreaterThan(20);
    await expect(essence.innerText()).resolves.toBe(plan.importSoulMd.essence);

    // Promoting a trait the essence does not echo warns about it by its principle, not "trait 24".
    await open(`#/soul/${id('Brannoc')}/workshop`);
    const mother = 'Speak of his mother’s forge only to those who earned it.';
    await page.getByLabel(`Place “${mother}”`).selectOption({ label: 'Promote into the essence' });
    const warnings = page.locator('.verdict-line .warnings');
    await warnings.waitFor(WAIT);
    await expect(warnings.innerText()).resolves.toContain(`trait “${mother}” is promoted but the new essence barely echoes it`);
    await expect(warnings.innerText()).resolves.not.toMatch(/trait \d+/);
    expect(chrome.errors).toEqual([]);
  });

  it('names the import form’s controls where the server’s message names a CLI flag', async () => {
    await open('#/');
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const form = page.locator('#import-soul');
    await form.getByLabel('SOUL.md text').fill('Just a paragraph about somebody, with no headings at all.');
    await form.getByRole('button', { name: 'Show the plan' }).click();
    const alert = form.getByRole('alert');
    await alert.waitFor(WAIT);
    await expect(alert.innerText()).resolves.toMatch(/^Convention: cannot tell the convention .* choose one under “Convention”$/);

    const worldview = Array.from({ length: 11 }, (_, i) => `- Principle number ${i + 1} of the overfull file.`).join('\n');
    await form.getByLabel('SOUL.md text').fill(`# Overfull\n\n## Who I Am\n\nOverfull keeps too many rules.\n\n## Worldview\n\n${worldview}\n`);
    await form.getByRole('button', { name: 'Show the plan' }).click();
    await until(async () => (await alert.innerText()).includes('trait limit'), 'the plan is refused at the trait limit');
    await expect(alert.innerText()).resolves.toMatch(/^SOUL\.md text: .*ask whoever runs the server to raise its trait limit\)$/);
    const shown = await form.innerText();
    expect(shown).not.toMatch(/--[a-z]/);
    expect(chrome.errors).toEqual([]);
  });

  it('shows a new soul’s refusal under the field it is about, then opens the soul it creates', async () => {
    await open('#/');
    await page.getByRole('button', { name: 'New soul' }).click();
    const form = page.getByRole('form', { name: 'A new soul' });
    const name = form.getByRole('textbox', { name: 'Name' });
    await name.fill('Mira');
    await form.getByRole('textbox', { name: 'Essence' }).fill('Ysolde tends the orchard above the keep.');
    await form.getByRole('button', { name: 'Create soul' }).click();
    const field = form.locator('.field', { has: page.getByRole('textbox', { name: 'Name' }) });
    await expect(field.getByRole('alert').innerText()).resolves.toMatch(/^Name: \w/);
    await expect(name.getAttribute('aria-invalid')).resolves.toBe('true');
    // Under the field it names, not at the foot of the form.
    await expect(form.locator(':scope .panel__body > .error-note').count()).resolves.toBe(0);

    await name.fill('Ysolde');
    await form.getByRole('button', { name: 'Create soul' }).click();
    await page.getByRole('heading', { name: 'Ysolde', level: 1 }).waitFor(WAIT);
    expect(new URL(page.url()).hash).toMatch(/^#\/soul\/\d+$/);
    expect(chrome.errors).toEqual([]);
  });

  it('drops shards observed on earlier days, so a soul made in the app becomes ready in one sitting', async () => {
    const { createSoul } = await server.gql(`mutation { createSoul(input: { name: "Perrin", essence: "Perrin keeps the ferry across the cold river." }) { ... on SoulPayload { soul { id } } } }`);
    await open(`#/soul/${createSoul.soul.id}`);
    await page.getByRole('button', { name: 'Drop a shard' }).click();
    const form = page.getByRole('form', { name: 'Drop a shard' });
    const observed = form.getByLabel('Observed on');
    await expect(observed.getAttribute('type')).resolves.toBe('date');
    await expect(observed.getAttribute('max')).resolves.toBe(await dayBefore(0));
    const shards = [
      { content: 'Refused to cross while the ice floes ran thick.', source: 'dialogue', day: 3 },
      { content: 'Charged the widow nothing for the crossing.', source: 'session_observation', day: 2 },
      { content: 'Told the soldiers the ford was deeper than it was.', source: 'dialogue', day: 0 },
    ];
    for (const shard of shards) {
      await form.getByLabel('Observation').fill(shard.content);
      await form.getByRole('combobox', { name: 'Source' }).fill(shard.source);
      await observed.fill(shard.day === 0 ? '' : await dayBefore(shard.day));
      await form.getByRole('button', { name: 'Drop shard' }).click();
      await until(async () => (await form.getByLabel('Observation').inputValue()) === '', `“${shard.content}” is dropped`);
    }
    const stored = (await server.gql(`query ($id: ID!) { soul(id: $id) { crystallization { ready unmet } shards(first: 10) { edges { node { content createdAt } } } } }`, { id: createSoul.soul.id })).soul;
    const ages = Object.fromEntries(stored.shards.edges.map((e: { node: { content: string; createdAt: string } }) => [e.node.content, Math.round((Date.now() - Date.parse(e.node.createdAt)) / 86_400_000)]));
    expect(ages).toEqual({ [shards[0].content]: 3, [shards[1].content]: 2, [shards[2].content]: 0 });
    expect(stored.crystallization).toEqual({ ready: true, unmet: [] });
    await page.locator('.hero__status', { hasText: 'Ready to refine' }).waitFor(WAIT);
    expect(chrome.errors).toEqual([]);
  });

  it('counts in words that agree, says why a panel is empty, and shows one message at a time', async () => {
    // Sela holds two traits: both merged into one leave one active trait, none carried and none promoted.
    await open(`#/soul/${id('Sela')}/workshop`);
    const menus = page.getByRole('combobox', { name: /^Place / });
    // The carried column comes first: after the first move, the first menu is the other trait's.
    await menus.nth(0).selectOption({ label: 'Merge into a new consolidation' });
    await menus.nth(0).selectOption({ label: 'Merge into consolidation 1' });
    await page.getByLabel('Merged principle of consolidation 1').fill('Report only what you saw, and keep the beacon lit.');
    await page.getByText('The plan is valid.').waitFor(WAIT);
    await expect(page.locator('.verdict--ready').innerText()).resolves.toMatch(/2 → 1 active trait\.$/);
    await page.getByRole('button', { name: 'Level up to 1' }).click();
    const result = page.locator('.levelled');
    await page.getByRole('heading', { name: 'Sela reached level 1' }).waitFor(WAIT);
    await expect(result.innerText()).resolves.toContain('2 active traits became 1: 2 traits merged into 1, 0 promoted into the essence, 0 carried.');
    const panel = (title: string) => result.locator('.panel', { has: page.getByRole('heading', { name: title, exact: true }) });
    await expect(panel('Carried').locator('.panel__body').innerText()).resolves.toBe('No trait carried: every one was merged or promoted.');
    await expect(panel('Into the essence').innerText()).resolves.toContain('No trait promoted');

    // A second message replaces the first instead of piling on (and over) it; a message can be dismissed.
    await result.getByRole('button', { name: 'Revert this level-up' }).click();
    const toasts = page.locator('.toasts .toast');
    // Failing, it says what the page showed instead: its headings and messages (once, at load 15, this waited 60 s in vain).
    let shown = '';
    await until(async () => {
      shown = await page.evaluate(() => [...document.querySelectorAll('main h1, .toasts .toast')].map((e) => (e as HTMLElement).innerText).join(' | '));
      return shown.startsWith('Sela is back at level 0');
    }, () => `the revert shows “Sela is back at level 0”; the page shows ${shown}`);
    await result.getByRole('button', { name: 'Back to the roster' }).click();
    await page.getByRole('button', { name: 'Retire Relay' }).click();
    await page.locator('.btn--danger', { hasText: 'Retire Relay' }).click();
    await toasts.getByText('Relay is dormant now').waitFor(WAIT);
    await page.getByRole('button', { name: 'Awaken Relay' }).click();
    await toasts.getByText('Relay awakens').waitFor(WAIT);
    await expect(toasts.count()).resolves.toBe(1);
    await toasts.getByRole('button', { name: 'Dismiss the message' }).click();
    await expect(toasts.count()).resolves.toBe(0);
    expect(chrome.errors).toEqual([]);
  });

  it('offers promoted principles as a draft to rewrite in the essence’s voice, instead of appending the imperative', async () => {
    await open(`#/soul/${id('Brannoc')}/workshop`);
    const principle = 'Help the village first when raiders come.';
    await page.getByLabel(`Place “${principle}”`).selectOption({ label: 'Promote into the essence' });
    const essence = page.getByRole('textbox', { name: 'Essence', exact: true });
    const before = await essence.inputValue();
    await page.getByRole('button', { name: 'Weave promoted principles in' }).click();
    const draft = page.getByRole('textbox', { name: 'Draft for the essence' });
    await expect(draft.inputValue()).resolves.toBe(principle);
    await expect(essence.inputValue()).resolves.toBe(before);
    await draft.fill('He helps the village first when raiders come.');
    await page.getByRole('button', { name: 'Add to the essence' }).click();
    await expect(essence.inputValue()).resolves.toBe(`${before.trim()} He helps the village first when raiders come.`);
    await expect(draft.count()).resolves.toBe(0);
    expect(chrome.errors).toEqual([]);
  });

  it('says by the rendered block that traits are ordered by citation density', async () => {
    await open(`#/soul/${id('Mira')}`);
    const panel = page.locator('.panel', { has: page.getByRole('heading', { name: 'Rendered identity' }) });
    await expect(panel.locator('.rendered__note').innerText()).resolves.toBe('Traits are listed by citation density, the best evidenced first; ties, the oldest first.');
    await expect(panel.locator('.rendered__note .term').getAttribute('title')).resolves.toMatch(/\w+ \w+ \w+/);
    expect(chrome.errors).toEqual([]);
  });
});

describe('the roster after an attunement', { timeout: BROWSER_TEST_MS }, () => {
  it('drops the attuned soul’s priority and readiness: live, after the app’s own stamp, and on focus after another process’s', async () => {
    // The card says what would make the soul ready again, in the server's words (SPEC §13: a shard recorded after the stamp).
    const waitingForArrival = (text: string) => /^Gathering evidence: needs a shard recorded or revealed after the last attunement \(.+Z\): any shard recorded since counts, whatever its createdAt$/.test(text);
    const cards = `query { souls(orderBy: READINESS) { name crystallization { ready priority } } }`;
    const status = (name: string) => page.locator('.soul-card', { has: page.getByRole('heading', { name, exact: true }) }).locator('[data-testid=status]');
    await open('#/');
    await status('Brannoc').getByText(/priority \d/).waitFor(WAIT);
    await until(() => server.subscriptions('soulChanged') > 0, 'the roster listens');
    // Stamped elsewhere (another tab, an agent): the card follows live.
    await server.gql(`mutation ($id: ID!) { stampAttuned(soulId: $id) { __typename } }`, { id: id('Brannoc') });
    await until(async () => waitingForArrival(await status('Brannoc').innerText()), 'Brannoc’s card follows the attunement');
    const expected = (await server.gql(cards)).souls.map((s: { name: string }) => s.name);
    await until(async () => JSON.stringify(await page.locator('.soul-card__name').allInnerTexts()) === JSON.stringify(expected.slice(0, 12)), 'the cards follow the API’s order');

    // Stamped in the app, then back to the roster.
    await page.getByRole('link', { name: 'Refine Relay' }).click();
    await page.getByRole('button', { name: 'Done: stamp attunement' }).click();
    await page.getByText('Relay is attuned').waitFor(WAIT);
    await until(async () => /· needs a shard recorded or revealed after the last attunement \(.+Z\): any shard recorded since counts/.test(await page.locator('.verdict').innerText()), 'the refinement verdict says what would make Relay ready');
    await page.goBack();
    await until(async () => waitingForArrival(await status('Relay').innerText()), 'Relay’s card follows the attunement');
    const after = (await server.gql(cards)).souls;
    await expect(page.locator('.soul-card__name').allInnerTexts()).resolves.toEqual(after.map((s: { name: string }) => s.name).slice(0, 12));
    for (const soul of after.filter((s: { crystallization: { ready: boolean } }) => s.crystallization.ready)) {
      await expect(status(soul.name).innerText()).resolves.toContain(`priority ${soul.crystallization.priority.toLocaleString('en', { maximumFractionDigits: 0 })}`);
    }

    // Stamped by another process on the same database (an agent over MCP on stdio): no event reaches this server's
    // subscribers, so the roster catches up when its tab comes back into focus.
    await expect(status('Mira').innerText()).resolves.toMatch(/priority \d/);
    await stampAttuned(server.app.db, Number(id('Mira')));
    await page.evaluate(() => window.dispatchEvent(new Event('focus')));
    await until(async () => waitingForArrival(await status('Mira').innerText()), 'Mira’s card catches up on focus');
    const last = (await server.gql(cards)).souls.map((s: { name: string }) => s.name);
    await expect(page.locator('.soul-card__name').allInnerTexts()).resolves.toEqual(last.slice(0, 12));
    expect(chrome.errors).toEqual([]);
  });
});
