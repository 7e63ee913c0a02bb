// Importing a SOUL.md into a database that already has the soul, in headless Chromium: the plan says it merges into
// the soul found by name, lists beside each new principle the existing one it nearly repeats, and shows the trait
// limit's problem with the plan (in the app's words) while the apply button stays disabled and says why.
import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { BROWSER_TEST_MS, browserFile, type Chromium, screenshot, type SeededServer, until, WAIT } from './support.ts';


let server: SeededServer;
let chrome: Chromium;
let page: Page;

browserFile({ width: 1280, height: 800 }, (session) => ({ server, chrome, page } = session));

const near = 'Judge a tool by how it fails, not by how it shines at the fair.';
const SOUL_MD = `# Hedda

## Who I Am

Hedda keeps the lighthouse on the northern cape.

## Worldview

- Judge a tool by how it fails, not by how it shines.
- Quote the real delivery date, even when the customer frowns.
`;

/** Hedda with `near` and seven more active traits, made through the API. */
async function seedHedda(): Promise<{ soulId: string; traitIds: string[] }> {
  const { createSoul } = await server.gql(`mutation { createSoul(input: { name: "Hedda", essence: "Hedda keeps the lighthouse." }) { ... on SoulPayload { soul { id } } } }`);
  const soulId: string = createSoul.soul.id;
  const traitIds: string[] = [];
  for (const principle of [near, ...Array.from({ length: 8 }, (_, i) => `Keep lamp rule number ${i + 1} without exception.`)]) {
    const { addTrait } = await server.gql(`mutation($id: ID!, $p: String!) { addTrait(soulId: $id, input: { principle: $p, provenance: "a test" }) { ... on TraitPayload { trait { id } } } }`, { id: soulId, p: principle });
    traitIds.push(addTrait.trait.id);
  }
  return { soulId, traitIds };
}

async function showPlan(form: Locator): Promise<Locator> {
  const button = form.getByRole('button', { name: 'Show the plan' });
  // By keyboard: the button focused and Enter pressed.
  await button.focus();
  await page.keyboard.press('Enter');
  const plan = form.getByLabel('Import plan');
  await plan.waitFor(WAIT);
  return plan;
}

describe('importing a SOUL.md into a soul the database already has', { timeout: BROWSER_TEST_MS }, () => {
  it('says it merges by name, lists near-duplicates beside the new principles, and holds apply back at the trait limit', async () => {
    const { soulId, traitIds } = await seedHedda();
    await page.goto(server.base);
    await page.getByRole('heading', { name: 'Roster', level: 1 }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const form = page.locator('#import-soul');
    await form.getByLabel('SOUL.md text').fill(SOUL_MD);
    const plan = await showPlan(form);

    await expect(plan.locator('.soulmd-plan__merge').innerText()).resolves.toBe(
      `This import merges into the existing soul "Hedda" (id ${soulId}), found by name: it keeps its name, description and essence and its 9 active traits; only the traits and shards it does not have are added.`,
    );
    const judged = plan.getByRole('listitem').filter({ hasText: 'Judge a tool by how it fails, not by how it shines. (' });
    const repeats = judged.getByRole('list', { name: 'Existing traits “Judge a tool by how it fails, not by how it shines.” nearly repeats' });
    await expect(repeats.innerText()).resolves.toMatch(new RegExp(`^nearly repeats “${near}” \\(\\d+% alike, already a trait of Hedda\\)$`));
    const quoted = plan.getByRole('listitem').filter({ hasText: 'Quote the real delivery date' });
    await expect(quoted.getByRole('list').count()).resolves.toBe(0);

    const problem = plan.getByRole('alert');
    await expect(problem.innerText()).resolves.toBe(
      'SOUL.md text: "Hedda" already has 9 active traits and SOUL.md adds 2 new ones: 11 in all, over the trait limit of 10 (a soul keeps few principles: merge or drop some in the file, level up "Hedda" first, or ask whoever runs the server to raise its trait limit)',
    );
    await expect(plan.getByRole('listitem').filter({ hasText: 'the essence of "Hedda" differs' }).innerText()).resolves.toBe(
      `the essence of "Hedda" differs from SOUL.md; the soul's is kept (a level-up or “Edit name, description and essence” on the sheet changes it)`,
    );
    expect(await form.innerText()).not.toMatch(/--[a-z]|updateSoul/);

    const add = form.getByRole('button', { name: 'Add to Hedda' });
    await expect(add.isDisabled()).resolves.toBe(true);
    const reasonId = await add.getAttribute('aria-describedby');
    expect(reasonId).toBeTruthy();
    await expect(page.locator(`[id="${reasonId}"]`).innerText()).resolves.toBe('Nothing can be imported until the problem above is fixed: change the text and show the plan again.');

    for (const [width, height, phone] of [[1280, 800, 'laptop'], [390, 844, 'phone']] as const) {
      await page.setViewportSize({ width, height });
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        await plan.scrollIntoViewIfNeeded();
        // Nothing of the plan is wider than the page.
        await expect(page.evaluate(() => document.documentElement.scrollWidth)).resolves.toBeLessThanOrEqual(width);
        await screenshot(page, `import-merge-${phone}-${scheme}`);
        await add.scrollIntoViewIfNeeded();
        await screenshot(page, `import-merge-${phone}-${scheme}-apply`);
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 800 });
    expect((await server.gql(`{ soul(id: "${soulId}") { activeTraitCount } }`)).soul.activeTraitCount).toBe(9);

    // One trait reverted: the plan fits, and the near-duplicate is added all the same.
    await server.gql(`mutation($id: ID!) { revertTrait(id: $id) { __typename } }`, { id: traitIds[8] });
    await form.getByLabel('SOUL.md text').fill(`${SOUL_MD}\n`);
    const fits = await showPlan(form);
    await until(async () => (await fits.getByRole('alert').count()) === 0, 'the plan has no problem');
    await expect(fits.locator('.soulmd-plan__merge').innerText()).resolves.toContain('its 8 active traits');
    await expect(add.isEnabled()).resolves.toBe(true);
    await expect(add.getAttribute('aria-describedby')).resolves.toBeNull();
    await add.focus();
    await page.keyboard.press('Enter');
    await until(async () => (await server.gql(`{ soul(id: "${soulId}") { activeTraitCount } }`)).soul.activeTraitCount === 10, 'the import adds both traits');
    expect(chrome.errors).toEqual([]);
  });
});
