// The character sheet against a server that requires tokens: the app asks for one, keeps it in localStorage,
// sends it over HTTP and WebSocket, and disables what the token's scopes do not allow.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROWSER_TEST_MS, type Chromium, launchChromium, requireBuiltApp, screenshot, type SeededServer, startSeededServer, until, WAIT } from './support.ts';

const READER = 'dashboard-read-only-token-0001';
const OBSERVER = 'game-server-observe-token-0002';

let server: SeededServer;
let chrome: Chromium;
let page: Page;

beforeAll(async () => {
  requireBuiltApp();
  [server, chrome] = await Promise.all([
    startSeededServer({
      tokens: [
        { name: 'dashboard', token: READER, scopes: ['read'] },
        { name: 'game-server', token: OBSERVER, scopes: ['read', 'observe'] },
      ],
    }),
    launchChromium(),
  ]);
  page = chrome.page;
}, BROWSER_TEST_MS);

afterAll(async () => {
  await chrome?.close();
  await server?.stop();
});

describe('tokens in the character sheet', { timeout: BROWSER_TEST_MS }, () => {
  it('asks for a token, refuses a wrong one, keeps a good one and disables what its scopes do not allow', async () => {
    await page.goto(server.base);
    const prompt = page.getByRole('form', { name: 'A token, traveller' });
    await prompt.waitFor(WAIT);
    await screenshot(page, 'token-prompt');

    // A token the server does not know: the prompt stays, and says so.
    await page.getByLabel('Access token').fill('not-a-token-the-server-knows');
    await page.getByRole('button', { name: 'Enter' }).click();
    await page.getByText('The server did not accept that token').waitFor(WAIT);

    // The read-only token: the roster appears, the token is kept in the browser.
    const listening = server.subscriptions('shardDropped');
    await page.getByLabel('Access token').fill(READER);
    await page.getByRole('button', { name: 'Enter' }).click();
    await page.locator('.soul-card').first().waitFor(WAIT);
    await expect(page.evaluate('localStorage.getItem("souls.token")')).resolves.toBe(READER);
    await expect(page.locator('.who__name').innerText()).resolves.toBe('dashboard');

    // Admin operations are disabled, not merely refused, and say why.
    const newSoul = page.getByRole('button', { name: 'New soul' });
    await expect(newSoul.isDisabled()).resolves.toBe(true);
    await expect(newSoul.getAttribute('title')).resolves.toBe('Your token has no admin scope');
    await expect(page.getByRole('button', { name: 'Retire Mira' }).isDisabled()).resolves.toBe(true);
    await expect(page.getByRole('button', { name: 'Awaken Wenna' }).isDisabled()).resolves.toBe(true);
    await page.getByRole('note').getByText('has no admin scope').waitFor(WAIT);

    // The WebSocket carries the token too: a shard dropped by another client shows up live.
    await until(() => server.subscriptions('shardDropped') > listening, 'the page subscribed over the authenticated socket');
    await expect(page.locator('.live').innerText()).resolves.toBe('Live');
    await server.gql(`mutation ($input: DropShardInput!) { dropShard(input: $input) { __typename } }`, { input: { content: 'Counted the watchtowers of the southern ridge.', source: 'dialogue', soulIds: [String(server.demo.souls.Sela)] } }, OBSERVER);
    const sela = page.locator('.soul-card', { has: page.getByRole('heading', { name: 'Sela' }) });
    await sela.getByRole('img', { name: /^6 pending shards/ }).waitFor(WAIT);

    // On the sheet and in the refinement, observe and refine controls are disabled as well.
    await page.goto(`${server.base}#/soul/${server.demo.souls.Mira}`);
    await page.getByRole('heading', { name: 'Mira', level: 1 }).waitFor(WAIT);
    await expect(page.getByRole('button', { name: 'Drop a shard' }).isDisabled()).resolves.toBe(true);
    await expect(page.getByRole('button', { name: 'Revert this level-up' }).isDisabled()).resolves.toBe(true);
    await page.goto(`${server.base}#/soul/${server.demo.souls.Mira}/refine`);
    await page.getByRole('heading', { name: 'Refine Mira' }).waitFor(WAIT);
    await expect(page.getByRole('button', { name: 'Propose a trait from this cluster' }).first().isDisabled()).resolves.toBe(true);
    await expect(page.getByRole('button', { name: 'Done: stamp attunement' }).isDisabled()).resolves.toBe(true);

    // A reload keeps the token; forgetting it brings the prompt back.
    await page.reload();
    await page.getByRole('heading', { name: 'Refine Mira' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Forget token' }).click();
    await prompt.waitFor(WAIT);
    await expect(page.evaluate('localStorage.getItem("souls.token")')).resolves.toBeNull();
    expect(chrome.errors.filter((e) => !e.includes('401'))).toEqual([]);
  });
});
