// The server out of reach: every action of the character sheet says so where the person looks (the form, or a
// message), nothing fails silently into the console, and the header says the connection is offline or reconnecting.
// Requests to /graphql are refused by the browser (as when the server has stopped) while the page stays loaded;
// the last test stops the server for real.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { BROWSER_TEST_MS, browserFile, type Chromium, type SeededServer, until, WAIT } from './support.ts';

const UNREACHABLE = 'Cannot reach the Souls server. Check that it is running, then try again.';

let server: SeededServer;
let chrome: Chromium;
let page: Page;

browserFile({ width: 1280, height: 800 }, (session) => ({ server, chrome, page } = session));

const id = (name: string) => String(server.demo.souls[name]);

async function open(hash: string): Promise<void> {
  await page.unroute('**/graphql');
  await page.goto('about:blank');
  await page.goto(`${server.base}${hash}`);
  await page.locator('main h1').first().waitFor(WAIT);
  await page.locator('.live', { hasText: 'Live' }).waitFor(WAIT);
}

/** From here on the browser cannot reach /graphql over HTTP, as when the server is down. */
async function cutOff(): Promise<void> {
  await page.route('**/graphql', (route) => route.abort('connectionrefused'));
}

/** The error message at the bottom of the screen says what did not happen and why. */
async function expectToast(what: string): Promise<void> {
  const toast = page.locator('.toasts .toast--error');
  await until(async () => (await toast.count()) === 1 && (await toast.innerText()).includes(what), `a message says “${what}”`);
  await expect(toast.innerText()).resolves.toContain(UNREACHABLE);
}

async function expectOffline(): Promise<void> {
  await page.locator('.live', { hasText: /^Offline$/ }).waitFor(WAIT);
}

/** No uncaught error reached the console: every failure was handled and shown. */
function expectNoUncaught(): void {
  expect(chrome.errors.filter((e) => !/Failed to load resource|ERR_CONNECTION_REFUSED|WebSocket/.test(e))).toEqual([]);
  chrome.errors.length = 0;
}

describe('with the server out of reach', { timeout: BROWSER_TEST_MS }, () => {
  it('on the roster: creating a soul says why next to the form; retiring and awakening say why in a message', async () => {
    await open('#/');
    await page.getByRole('button', { name: 'New soul' }).click();
    await page.getByRole('textbox', { name: 'Name' }).fill('Iona');
    await page.getByRole('textbox', { name: 'Essence' }).fill('Iona keeps the lighthouse log.');
    await cutOff();
    await page.getByRole('button', { name: 'Create soul' }).click();
    const form = page.getByRole('form', { name: 'A new soul' });
    await expect(form.getByRole('alert').innerText()).resolves.toBe(`Nothing was created. ${UNREACHABLE}`);
    await expectOffline();

    await page.getByRole('button', { name: 'Retire Mira' }).click();
    await page.locator('.btn--danger', { hasText: 'Retire Mira' }).click();
    await expectToast('Mira was not retired.');
    await page.getByRole('button', { name: 'Awaken Wenna' }).click();
    await expectToast('Wenna still sleeps.');
    expectNoUncaught();

    // Back in reach, the next request says so: the header leaves "Offline".
    await page.unroute('**/graphql');
    await page.getByRole('button', { name: 'Create soul' }).click();
    await page.getByRole('heading', { name: 'Iona', level: 1 }).waitFor(WAIT);
    await until(async () => (await page.locator('.live').innerText()) !== 'Offline', 'the header is no longer offline');
    expectNoUncaught();
  });

  it('on the sheet: dropping a shard, reverting, exporting, reactivating, citing and fading say why', async () => {
    await open(`#/soul/${id('Mira')}`);
    await page.getByRole('button', { name: 'Drop a shard' }).click();
    await page.getByRole('textbox', { name: 'Observation' }).fill('Counted the grain sacks twice.');
    await page.getByRole('button', { name: 'Revert this level-up' }).click();
    await cutOff();
    await page.getByRole('button', { name: 'Drop shard' }).click();
    await expect(page.getByRole('form', { name: 'Drop a shard' }).getByRole('alert').innerText()).resolves.toBe(`The shard was not dropped. ${UNREACHABLE}`);
    await expectOffline();
    await page.locator('.btn--danger', { hasText: /^Revert to level/ }).click();
    await expectToast('The level-up was not reverted.');
    await page.getByRole('button', { name: 'Export SOUL.md' }).click();
    await expectToast('Nothing was exported.');
    await page.getByRole('button', { name: /^Reactivate: / }).first().click();
    await expectToast('The trait was not reactivated.');
    await page.getByRole('button', { name: 'Fade exhausted shards' }).click();
    await expectToast('Nothing was faded.');
    await page.getByRole('button', { name: 'Cite as evidence' }).first().click();
    await page.getByRole('form', { name: 'Cite this shard' }).getByRole('button', { name: 'Cite', exact: true }).click();
    await expectToast('The shard was not cited.');
    expectNoUncaught();
  });

  it('in refinement and the workshop: stamping, confirming a proposal and levelling up say why', async () => {
    await open(`#/soul/${id('Relay')}/refine`);
    await page.getByRole('button', { name: 'Propose a trait from this cluster' }).first().click();
    await page.getByRole('form', { name: 'The proposed change' }).getByLabel('Principle').fill('Answer the beacon within the hour.');
    await page.getByLabel('The rendered block after').waitFor(WAIT);
    const confirm = page.getByRole('button', { name: 'Confirm', exact: true });
    await until(() => confirm.isEnabled(), 'the preview is up to date');
    await cutOff();
    await confirm.click();
    await expectToast('The change was not made.');
    await expectOffline();
    await page.getByRole('button', { name: 'Done: stamp attunement' }).click();
    await expectToast('Attunement was not stamped.');

    await open(`#/soul/${id('Brannoc')}/workshop`);
    const menus = page.getByRole('combobox', { name: /^Place / });
    await menus.nth(0).selectOption({ label: 'Merge into a new consolidation' });
    await menus.nth(1).selectOption({ label: 'Merge into consolidation 1' });
    await page.getByLabel('Merged principle of consolidation 1').fill('Never sell steel before the quench has cooled.');
    await page.getByText('The plan is valid.').waitFor(WAIT);
    const levelUp = page.getByRole('button', { name: 'Level up to 1' });
    await until(() => levelUp.isEnabled(), 'the plan is previewed');
    await cutOff();
    await levelUp.click();
    await expectToast('Brannoc did not level up.');
    await expectOffline();
    expectNoUncaught();
  });

  it('says "Reconnecting" when the live connection drops, and "Offline" once a request cannot reach the server', async () => {
    await open('#/');
    await page.getByRole('button', { name: 'New soul' }).click();
    await page.getByRole('textbox', { name: 'Name' }).fill('Tamsin');
    await page.getByRole('textbox', { name: 'Essence' }).fill('Tamsin rings the harbour bell.');
    await server.app.stop();
    await page.locator('.live', { hasText: /^Reconnecting$/ }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Create soul' }).click();
    await expect(page.getByRole('form', { name: 'A new soul' }).getByRole('alert').innerText()).resolves.toBe(`Nothing was created. ${UNREACHABLE}`);
    await expectOffline();
    await page.goto('about:blank');
    expectNoUncaught();
  });
});
