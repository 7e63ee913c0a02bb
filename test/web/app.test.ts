// The whole loop of the character sheet in headless Chromium, over the demo world: the roster, a shard arriving
// live, a refinement with preview and confirm, and a level-up in the workshop followed by its revert.
// Screenshots of each screen go to test-results/screens/ (docs/screens/ holds committed copies for the README and docs/web.md).
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { BROWSER_TEST_MS, browserFile, type Chromium, screenshot, type SeededServer, until, WAIT } from './support.ts';


let server: SeededServer;
let chrome: Chromium;
let page: Page;

browserFile(null, (session) => ({ server, chrome, page } = session));

const soulQuery = `query ($id: ID!) { soul(id: $id) { level activeTraitCount rendered essence
  traits { id principle citations { id } }
  levelHistory { level revertedAt } } }`;

async function soul(name: string) {
  return (await server.gql(soulQuery, { id: String(server.demo.souls[name]) })).soul;
}

/** The names on the roster's cards, top to bottom. */
async function cardNames(): Promise<string[]> {
  return page.locator('.soul-card .soul-card__name').allInnerTexts();
}

/** Records, at every change of the page, a Level up button that disagrees with the verdict under it (read back as window.__disagreements). */
async function watchLevelUpAgreement(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen: string[] = [];
    Object.assign(window, { __disagreements: seen });
    const check = () => {
      const button = [...document.querySelectorAll('button')].find((b) => (b.textContent ?? '').startsWith('Level up to'));
      const line = document.querySelector('.verdict-line');
      if (!button || !line) return;
      const valid = (line.textContent ?? '').includes('The plan is valid.');
      const said = `"${(line.textContent ?? '').slice(0, 60)}"`;
      if (valid && button.disabled) seen.push(`${said} over a disabled button`);
      if (!valid && !button.disabled) seen.push(`${said} over an enabled button`);
      if (button.disabled && !button.title) seen.push(`${said}: disabled with no reason`);
    };
    check();
    new MutationObserver(check).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  });
}

describe('the character sheet in Chromium', { timeout: BROWSER_TEST_MS }, () => {
  it('shows the seeded souls on the roster, most ready first, and the dormant one apart', async () => {
    await page.goto(server.base);
    await page.getByRole('heading', { name: 'Roster', level: 1 }).waitFor(WAIT);
    await page.locator('.soul-card').first().waitFor(WAIT);

    const names = await cardNames();
    expect(names.toSorted()).toEqual(['Brannoc', 'Mira', 'Relay', 'Sela']);
    // Ready souls float to the top: Sela (one source only) comes last.
    expect(server.demo.readySouls.toSorted()).toEqual(['Brannoc', 'Mira', 'Relay']);
    expect(names.at(-1)).toBe('Sela');
    expect(names.slice(0, 3).toSorted()).toEqual(['Brannoc', 'Mira', 'Relay']);

    // Level badge, XP bar (pulsing at capacity) and readiness signal per card.
    const brannoc = page.locator('.soul-card', { has: page.getByRole('heading', { name: 'Brannoc' }) });
    await expect(brannoc.getByRole('meter', { name: 'Traits: 10 of 10, at capacity' }).count()).resolves.toBe(1);
    await expect(brannoc.locator('.xp--full').count()).resolves.toBe(1);
    await expect(brannoc.getByRole('img', { name: /pending shards: ready to refine/ }).count()).resolves.toBe(1);
    const mira = page.locator('.soul-card', { has: page.getByRole('heading', { name: 'Mira' }) });
    await expect(mira.getByRole('img', { name: 'Level 1' }).count()).resolves.toBe(1);
    const sela = page.locator('.soul-card', { has: page.getByRole('heading', { name: 'Sela' }) });
    await expect(sela.locator('[data-testid=status]').innerText()).resolves.toContain('needs shards from 1 more source (1 of the 2 needed)');

    // The dormant list, with an Awaken control.
    const dormant = page.locator('.dormant');
    await expect(dormant.innerText()).resolves.toContain('Wenna');
    await expect(dormant.getByRole('button', { name: 'Awaken Wenna' }).isEnabled()).resolves.toBe(true);
    await screenshot(page, 'roster');
    expect(chrome.errors).toEqual([]);
  });

  it('shows a shard dropped through the API live, on the roster and on the sheet, without a reload', async () => {
    const selaId = String(server.demo.souls.Sela);
    const listening = server.subscriptions('shardDropped');
    await page.goto(server.base);
    await page.locator('.soul-card').first().waitFor(WAIT);
    await until(() => server.subscriptions('shardDropped') > listening, 'the roster subscribed to shardDropped');
    await page.evaluate('window.__sameDocument = true');
    const sela = page.locator('.soul-card', { has: page.getByRole('heading', { name: 'Sela' }) });
    await sela.getByRole('img', { name: /^5 pending shards/ }).waitFor(WAIT);

    // A second source makes Sela ready: the card updates, gets the readiness signal and moves up.
    const dropped = await server.gql(
      `mutation ($input: DropShardInput!) { dropShard(input: $input) { __typename ... on DropShardPayload { readySouls { name } } } }`,
      { input: { content: 'Told the captain she saw six riders, not the sixty in the tavern tale.', source: 'dialogue', soulIds: [selaId], tags: ['marches'] } },
    );
    expect(dropped.dropShard.readySouls).toEqual([{ name: 'Sela' }]);
    await sela.getByRole('img', { name: '6 pending shards: ready to refine' }).waitFor(WAIT);
    await until(async () => (await cardNames()).at(-1) !== 'Sela', 'Sela moved up the roster');
    await expect(page.evaluate('window.__sameDocument')).resolves.toBe(true);

    // On the sheet, the next shard joins the pending list, grouped under its source.
    const listeningBefore = server.subscriptions('shardDropped');
    await sela.getByRole('link', { name: "Open Sela's sheet" }).click();
    await page.getByRole('heading', { name: 'Sela', level: 1 }).waitFor(WAIT);
    await page.getByText('Told the captain she saw six riders').waitFor(WAIT);
    await until(() => server.subscriptions('shardDropped') > listeningBefore, 'the sheet subscribed to shardDropped');
    await server.gql(`mutation ($input: DropShardInput!) { dropShard(input: $input) { __typename } }`, {
      input: { content: 'Marked a new ford below the mill on the map of the marches.', source: 'quest_turnin', soulIds: [selaId], tags: ['maps'] },
    });
    const group = page.getByRole('region', { name: 'Source quest_turnin' });
    await group.getByText('Marked a new ford below the mill').waitFor(WAIT);
    await expect(group.locator('.age').first().innerText()).resolves.toBe('just now');
    await page.getByRole('heading', { name: 'Pending shards (7)' }).waitFor(WAIT);
    await expect(page.evaluate('window.__sameDocument')).resolves.toBe(true);

    // Filter by tag and search, on the same list.
    await page.getByLabel('Tag').selectOption('maps');
    await page.getByText('3 shards match').waitFor(WAIT);
    await page.getByLabel('Tag').selectOption('');
    await page.getByLabel('Search').fill('riders');
    await page.getByText('1 shard match').waitFor(WAIT);
    await expect(page.locator('.shard').count()).resolves.toBe(1);
    expect(chrome.errors).toEqual([]);
  });

  it('refines a soul: a trait proposed from a cluster, previewed, then confirmed, changes the sheet', async () => {
    const miraId = String(server.demo.souls.Mira);
    const before = await soul('Mira');
    await page.goto(`${server.base}#/soul/${miraId}/refine`);
    await page.getByRole('heading', { name: 'Refine Mira' }).waitFor(WAIT);
    await page.getByRole('heading', { name: /Clusters \(\d+\), heaviest first/ }).waitFor(WAIT);

    // The heaviest cluster is the ledger habit: propose a trait from it, citing its shards.
    const heaviest = page.locator('.cluster').first();
    await expect(heaviest.innerText()).resolves.toContain('Checked the ledger twice');
    await heaviest.getByRole('button', { name: 'Propose a trait from this cluster' }).click();
    const proposal = page.getByRole('form', { name: 'The proposed change' });
    await proposal.waitFor(WAIT);
    await expect(proposal.getByRole('group', { name: /Cite these shards \(4\)/ }).count()).resolves.toBe(1);
    await expect(proposal.getByLabel('Provenance').inputValue()).resolves.toContain('4 shards from');
    // Nothing to preview until there is a principle; Confirm waits for it.
    await expect(proposal.getByRole('button', { name: 'Confirm' }).isDisabled()).resolves.toBe(true);
    const principle = 'Count the stores twice before a single sack leaves them.';
    await proposal.getByLabel('Principle').fill(principle);

    // The before/after preview of the rendered block (previewTraitChanges): the new line is only after.
    const after = proposal.getByLabel('The rendered block after');
    await after.getByText(`- ${principle}`).waitFor(WAIT);
    await expect(proposal.getByLabel('The rendered block before').innerText()).resolves.not.toContain(principle);
    await expect(after.locator('.diff--added').innerText()).resolves.toContain(principle);
    await screenshot(page, 'refinement', true);
    // A preview writes nothing.
    expect((await soul('Mira')).traits).toHaveLength(before.traits.length);

    await proposal.getByRole('button', { name: 'Confirm' }).click();
    await page.getByText(`New trait: ${principle}`).waitFor(WAIT);
    await page.getByRole('form', { name: 'The proposed change' }).waitFor({ state: 'detached', ...WAIT });

    const changed = await soul('Mira');
    const trait = changed.traits.find((t: { principle: string }) => t.principle === principle);
    expect(trait).toBeDefined();
    expect(trait.citations).toHaveLength(4);
    expect(changed.rendered).toContain(`- ${principle}`);

    // Stamp attunement when done: the soul waits for new evidence.
    await page.getByRole('button', { name: 'Done: stamp attunement' }).click();
    await page.getByText('Mira is attuned').waitFor(WAIT);

    // The sheet shows the new trait, in the block and in the list with its citations.
    await page.getByRole('link', { name: 'Mira' }).first().click();
    await page.getByRole('heading', { name: 'Mira', level: 1 }).waitFor(WAIT);
    await page.getByLabel('Rendered identity block').getByText(`- ${principle}`).waitFor(WAIT);
    const entry = page.locator('.trait', { hasText: principle });
    await expect(entry.innerText()).resolves.toContain('4 citations');
    await expect(page.locator('.hero__status').innerText()).resolves.toMatch(/^Needs a shard recorded or revealed after the last attunement \(.+Z\): any shard recorded since counts, whatever its createdAt$/);
    expect(chrome.errors).toEqual([]);
  });

  it('shows the sheet: rendered block lean and full, traits with provenance, level history with the before/after essence', async () => {
    // Relay's level-up was reverted: the history keeps it, marked, and offers no revert.
    await page.goto(`${server.base}#/soul/${server.demo.souls.Relay}`);
    await page.getByRole('heading', { name: 'Relay', level: 1 }).waitFor(WAIT);
    await expect(page.locator('.timeline__event').first().innerText()).resolves.toMatch(/reverted/i);
    await expect(page.locator('.timeline__event--reverted').count()).resolves.toBe(1);
    await expect(page.getByRole('button', { name: 'Revert this level-up' }).count()).resolves.toBe(0);

    // Mira: the lean block, then the full one with provenance.
    await page.goto(`${server.base}#/soul/${server.demo.souls.Mira}`);
    await page.getByRole('heading', { name: 'Mira', level: 1 }).waitFor(WAIT);
    const block = page.getByLabel('Rendered identity block');
    const provenance = 'Design brief, confirmed in two playtests when nobles asked for extra rations.';
    await expect(block.innerText()).resolves.not.toContain(provenance);
    await page.getByRole('button', { name: 'Full (with provenance)' }).click();
    await block.getByText(provenance, { exact: false }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Lean' }).click();
    await block.getByText(provenance, { exact: false }).waitFor({ state: 'detached', ...WAIT });

    // Traits: provenance and citations collapse; signals beside each principle.
    const trait = page.locator('.trait', { hasText: 'Trust a count made twice over a rumour heard once.' });
    await expect(trait.innerText()).resolves.toMatch(/1 citation[\s\S]*density[\s\S]*redundancy/);
    await trait.getByText('Provenance and citations').click();
    await trait.getByText('Asked for proof before believing the rumour of a raid on the granary.').waitFor(WAIT);

    // The level history: one level-up, the essence before and after, and the revert offered on the latest.
    const event = page.locator('.timeline__event').first();
    await expect(event.innerText()).resolves.toContain('Check the stores ledger before anything leaves the keep.');
    await event.getByText('Essence before and after').click();
    await event.getByText('She trusts ledgers over rumours and speaks plainly, even to captains.').waitFor(WAIT);
    await expect(event.getByRole('button', { name: 'Revert this level-up' }).isEnabled()).resolves.toBe(true);
    await screenshot(page, 'sheet', true);
    expect(chrome.errors).toEqual([]);
  });

  it('levels a soul up in the workshop (drag and drop, the keyboard menu, live preview), then reverts it from the history', async () => {
    const brannocId = String(server.demo.souls.Brannoc);
    const before = await soul('Brannoc');
    expect(before.activeTraitCount).toBe(10);
    await page.goto(`${server.base}#/soul/${brannocId}/workshop`);
    await page.getByRole('heading', { name: 'Level-up workshop: Brannoc' }).waitFor(WAIT);
    const card = (principle: string) => page.locator('.trait-card', { hasText: principle });
    const blade = 'Never sell a blade before the quench has cooled.';
    const axe = 'Never sell an axe before the quench has cooled.';
    const village = 'Help the village first when raiders come.';
    const villageToo = 'Help the village first, before any paying customer.';
    const mother = 'Speak of his mother’s forge only to those who earned it.';

    // Every trait starts carried with the same essence: that plan changes nothing (SPEC §12), so the button is disabled and says why.
    const levelUpButton = page.getByRole('button', { name: 'Level up to 1' });
    // From here on, every state the page shows is checked: "The plan is valid." exactly when Level up is enabled, and a
    // disabled Level up always says why (the plan is previewed after a pause, so an older verdict must never be shown as current).
    await watchLevelUpAgreement(page);
    await page.locator('#plan-verdict').getByText('the plan changes nothing').waitFor(WAIT);
    await expect(levelUpButton.isDisabled()).resolves.toBe(true);
    await expect(levelUpButton.getAttribute('title')).resolves.toContain('the plan changes nothing (no consolidation, no promotion, the same essence)');
    await expect(levelUpButton.getAttribute('aria-describedby')).resolves.toBe('plan-verdict');

    // Drag and drop (native HTML5): the blade trait starts a consolidation, the axe trait joins it.
    await card(blade).dragTo(page.locator('[data-zone=new]'));
    await page.getByRole('group', { name: /Consolidation 1/ }).waitFor(WAIT);
    await card(axe).dragTo(page.locator('[data-zone=group-1]'));
    await expect(page.locator('[data-zone=group-1] .trait-card').count()).resolves.toBe(2);

    // The alternative to dragging: each card's labelled "Place" menu, usable from the keyboard alone.
    await page.getByLabel(`Place “${village}”`).selectOption({ label: 'Merge into a new consolidation' });
    await page.getByRole('group', { name: /Consolidation 2/ }).waitFor(WAIT);
    await page.getByLabel(`Place “${villageToo}”`).selectOption({ label: 'Merge into consolidation 2' });
    const motherMenu = page.getByLabel(`Place “${mother}”`);
    await motherMenu.focus();
    await page.keyboard.press('End'); // the last choice: promote into the essence
    await page.getByRole('heading', { name: 'Promoted into the essence (1)' }).waitFor(WAIT);
    await expect(page.locator('[data-zone=promote] .trait-card').innerText()).resolves.toContain(mother);

    // The merged principles are drafted from their sources; the person writes each as one.
    await expect(page.getByLabel('Merged principle of consolidation 1').inputValue()).resolves.toBe(`${blade} ${axe}`);
    await page.getByLabel('Merged principle of consolidation 1').fill('Never sell steel before the quench has cooled.');
    await page.getByLabel('Merged principle of consolidation 2').fill('The village comes before any paying customer.');
    await expect(page.getByLabel('Merged provenance of consolidation 1').inputValue()).resolves.toContain('Consolidated at level 1');

    // The new essence, with the promoted principle woven in; the preview follows.
    await page.getByRole('button', { name: 'Weave promoted principles in' }).click();
    await page.getByRole('button', { name: 'Add to the essence' }).click();
    await expect(page.getByRole('textbox', { name: 'Essence', exact: true }).inputValue()).resolves.toContain(mother);
    await page.getByText('The plan is valid.').waitFor(WAIT);
    await expect(levelUpButton.isDisabled()).resolves.toBe(false);
    await expect(levelUpButton.getAttribute('title')).resolves.toBeFalsy();
    const after = page.getByLabel('The rendered block after');
    await after.getByText('- Never sell steel before the quench has cooled.').waitFor(WAIT);
    await after.getByText('- The village comes before any paying customer.').waitFor(WAIT);
    await expect(after.innerText()).resolves.not.toContain(`- ${blade}`);
    await expect(page.locator('.verdict--ready').innerText()).resolves.toContain('10 → 7 active traits');
    await screenshot(page, 'workshop', true);
    expect((await soul('Brannoc')).level).toBe(0); // the preview wrote nothing

    await expect(page.evaluate('window.__disagreements')).resolves.toEqual([]);

    // Execute: the card animates to the new level, the bar resets to what remains.
    await page.getByRole('button', { name: 'Level up to 1' }).click();
    await page.getByRole('heading', { name: 'Brannoc reached level 1' }).waitFor(WAIT);
    const result = page.locator('.levelled');
    await result.getByRole('img', { name: 'Level 1' }).waitFor(WAIT);
    await result.getByRole('meter', { name: 'Traits: 7 of 10' }).waitFor(WAIT);
    await expect(result.locator('.merge-list').innerText()).resolves.toContain('Never sell steel before the quench has cooled.');
    await screenshot(page, 'level-up');
    const levelled = await soul('Brannoc');
    expect(levelled.level).toBe(1);
    expect(levelled.activeTraitCount).toBe(7);
    expect(levelled.essence).toContain(mother);

    // Revert the last level-up from the history on the sheet.
    await page.getByRole('link', { name: 'Open the sheet' }).click();
    await page.getByRole('heading', { name: 'Brannoc', level: 1 }).waitFor(WAIT);
    await page.locator('.hero').getByRole('img', { name: 'Level 1' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Revert this level-up' }).click();
    await page.getByRole('button', { name: 'Revert to level 0' }).click();
    await page.locator('.hero').getByRole('img', { name: 'Level 0' }).waitFor(WAIT);
    await page.locator('.timeline__event--reverted').waitFor(WAIT);
    await page.getByRole('heading', { name: 'Traits (10 / 10)' }).waitFor(WAIT);
    const reverted = await soul('Brannoc');
    expect(reverted.level).toBe(0);
    expect(reverted.activeTraitCount).toBe(10);
    expect(reverted.rendered).toBe(before.rendered);
    expect(reverted.levelHistory).toEqual([{ level: 1, revertedAt: expect.any(String) }]);
    expect(chrome.errors).toEqual([]);
  });
  it('imports a SOUL.md on the roster (a chosen file, the plan, then apply) and exports it from the sheet', async () => {
    await page.goto(server.base);
    await page.getByRole('heading', { name: 'Roster', level: 1 }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const form = page.locator('#import-soul');
    await form.waitFor(WAIT);
    const soulMd = readFileSync(new URL('../fixtures/soulmd/openclaw/SOUL.md', import.meta.url), 'utf8');
    await form.getByLabel('Choose a file').setInputFiles({ name: 'SOUL.md', mimeType: 'text/markdown', buffer: Buffer.from(soulMd) });
    await until(async () => (await form.getByLabel('SOUL.md text').inputValue()) === soulMd, 'the chosen file fills the text');

    // An OpenClaw SOUL.md keeps no name (IDENTITY.md does): the plan asks for one, and nothing is written.
    await form.getByRole('button', { name: 'Show the plan' }).click();
    await expect(form.getByRole('alert').innerText()).resolves.toMatch(/^Name: /);
    await form.getByLabel('Name (when the text gives none)').fill('Odo');
    await form.getByRole('button', { name: 'Show the plan' }).click();
    const plan = form.getByLabel('Import plan');
    await plan.waitFor(WAIT);
    await expect(plan.innerText()).resolves.toContain('Creates Odo');
    await expect(plan.innerText()).resolves.toContain('3 traits to add');
    await expect(plan.innerText()).resolves.toContain('Count twice, hand out once. (imported from SOUL.md:Core Truths)');
    expect((await server.gql('{ soulByName(name: "Odo") { id } }')).soulByName).toBeNull();

    await form.getByRole('button', { name: 'Import Odo' }).click();
    await page.getByRole('heading', { name: 'Odo' }).waitFor(WAIT);
    const odo = (await server.gql('{ soulByName(name: "Odo") { id traits { provenance } } }')).soulByName;
    expect(odo.traits).toEqual(Array.from({ length: 3 }, () => ({ provenance: 'imported from SOUL.md:Core Truths' })));

    // The sheet's export, in the convention it came from: the imported document, byte for byte (SPEC §12).
    await page.goto(`${server.base}#/soul/${odo.id}`);
    await page.getByRole('heading', { name: 'Odo', level: 1 }).waitFor(WAIT);
    const panel = page.locator('.panel', { has: page.getByRole('heading', { name: 'SOUL.md' }) });
    await panel.getByLabel('Convention').selectOption('OPENCLAW');
    await panel.getByRole('button', { name: 'Export SOUL.md' }).click();
    const exported = panel.getByLabel('Exported SOUL.md');
    await exported.waitFor(WAIT);
    const text = await exported.innerText();
    expect(text.trimEnd()).toBe(soulMd.trimEnd());
    expect(text).toContain('## Boundaries\n\n- The garrison');
    await expect(panel.getByRole('link', { name: 'Download SOUL.md' }).getAttribute('download')).resolves.toBe('SOUL.md');
    expect(chrome.errors).toEqual([]);
  });
});
