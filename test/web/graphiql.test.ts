// GraphiQL at /graphql in a real headless Chromium: it needs no other host, opens the operation a link names, and on
// a server that requires tokens offers the Authorization header (the character sheet's stored token, else a
// placeholder) for requests and for subscriptions over graphql-ws.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROWSER_TEST_MS, type Chromium, launchChromium, requireBuiltApp, screenshot, type SeededServer, startSeededServer, until, WAIT } from './support.ts';

const READER = 'graphiql-reader-token-000001';
const REFINER = 'graphiql-refiner-token-00002';

let open: SeededServer;
let guarded: SeededServer;
let chrome: Chromium;
let page: Page;
/** Every request the page tried to send to a host other than this server's. */
const elsewhere: string[] = [];

beforeAll(async () => {
  requireBuiltApp();
  [open, guarded, chrome] = await Promise.all([
    startSeededServer(),
    startSeededServer({
      tokens: [
        { name: 'reader', token: READER, scopes: ['read'] },
        { name: 'refiner', token: REFINER, scopes: ['read', 'refine'] },
      ],
    }),
    launchChromium(),
  ]);
  page = chrome.page;
  // As if offline: nothing but the server under test answers.
  await chrome.context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === '127.0.0.1' || url.protocol === 'blob:' || url.protocol === 'data:') return route.continue();
    elsewhere.push(url.href);
    return route.abort();
  });
}, BROWSER_TEST_MS);

afterAll(async () => {
  await chrome?.close();
  await Promise.all([open?.stop(), guarded?.stop()]);
});

/** Opens GraphiQL at `path` (under /graphql) and waits until its editor is ready. */
async function openGraphiQL(server: SeededServer, search = ''): Promise<void> {
  await page.goto(`${server.base}graphql${search}`);
  await page.getByRole('button', { name: /^Execute query/ }).waitFor(WAIT);
  await page.locator('.graphiql-query-editor .view-lines').waitFor(WAIT);
}

/** Monaco shows spaces as no-break spaces. */
const text = async (selector: string) => (await page.locator(selector).first().innerText()).replace(/\u00a0/g, ' ');

/** Runs the editor's operation and resolves with the response pane's text once it shows `expected`. */
async function run(expected: string | RegExp): Promise<string> {
  await page.getByRole('button', { name: /^Execute query/ }).click();
  let shown = '';
  await until(async () => {
    shown = await text('.graphiql-response');
    return typeof expected === 'string' ? shown.includes(expected) : expected.test(shown);
  }, () => `the response shows ${expected}; it shows ${shown}`);
  return shown;
}

describe('GraphiQL', { timeout: BROWSER_TEST_MS }, () => {
  it('loads and answers with no request to another host, its icon served by this server', async () => {
    chrome.errors.length = 0;
    const icons: { url: string; status: number; type: string | undefined }[] = [];
    page.on('response', (response) => {
      if (/favicon|\.ico$|icon/.test(response.url())) icons.push({ url: response.url(), status: response.status(), type: response.headers()['content-type'] });
    });
    await openGraphiQL(open);
    await run('"souls"');
    await until(() => icons.length > 0, 'the page loads its icon');
    expect(elsewhere).toEqual([]);
    expect(icons).toEqual([{ url: `${open.base}graphiql-assets/favicon.svg`, status: 200, type: 'image/svg+xml' }]);
    expect(chrome.errors).toEqual([]);
  });

  it('fits a phone: laid out at the screen’s width, unscaled, the response under the editors', async () => {
    const phone = await launchChromium({ phone: true });
    try {
      await phone.page.goto(`${open.base}graphql?query=${encodeURIComponent('{ settings { traitLimit } }')}`);
      await phone.page.getByRole('button', { name: /^Execute query/ }).waitFor(WAIT);
      await phone.page.locator('.graphiql-query-editor .view-lines').waitFor(WAIT);
      const layout = await phone.page.evaluate(() => {
        const box = (selector: string) => document.querySelector(selector)!.getBoundingClientRect();
        return {
          layoutWidth: document.documentElement.clientWidth,
          scale: window.visualViewport?.scale,
          editorsBottom: box('.graphiql-editors').bottom,
          responseTop: box('.graphiql-response').top,
          responseWidth: box('.graphiql-response').width,
        };
      });
      // Without the viewport tag a phone lays the page out at 980 px and shows it at 40 %.
      expect(layout.layoutWidth).toBe(390);
      expect(layout.scale).toBe(1);
      expect(layout.responseTop).toBeGreaterThanOrEqual(layout.editorsBottom - 1);
      // Beside the editors it had 64 px; under them, the width beside GraphiQL's sidebar.
      expect(layout.responseWidth).toBeGreaterThan(250);
      await screenshot(phone.page, 'graphiql-390');
      expect(phone.errors).toEqual([]);
    } finally {
      await phone.close();
    }
  });

  it('opens the operation a link names: ?query=, variables and operationName', async () => {
    const query = 'query Limits { settings { traitLimit } }\nquery Level($name: String!) { soulByName(name: $name) { name level } }';
    await openGraphiQL(open, `?query=${encodeURIComponent(query)}&variables=${encodeURIComponent('{"name":"Brannoc"}')}&operationName=Level`);
    expect(await text('.graphiql-query-editor .view-lines')).toContain('query Level($name: String!)');
    const shown = await run('"soulByName"');
    expect(JSON.parse(shown)).toEqual({ data: { soulByName: { name: 'Brannoc', level: 0 } } });
    // Editing keeps the link in step: the address now names what the editor holds.
    expect(new URL(page.url()).searchParams.get('query')).toBe(query);
  });

  it('offers the Authorization header on a server with tokens: a placeholder to replace, else the token the character sheet stored', async () => {
    await openGraphiQL(guarded);
    await page.getByRole('button', { name: 'Headers' }).click();
    expect(await text('.graphiql-editor-tool .graphiql-editor:not(.hidden) .view-lines')).toContain('"Authorization": "Bearer <a token from the tokens file>"');
    expect(await run('UNAUTHENTICATED')).toContain('a valid bearer token is required');

    // The character sheet keeps its token under souls.token on the same origin.
    await page.evaluate((token) => localStorage.setItem('souls.token', token), READER);
    await openGraphiQL(guarded, `?query=${encodeURIComponent('{ caller { name scopes } }')}`);
    expect(JSON.parse(await run('"caller"'))).toEqual({ data: { caller: { name: 'reader', scopes: ['READ'] } } });
  });

  it('sends the token to subscriptions over graphql-ws as connectionParams', async () => {
    await page.evaluate((token) => localStorage.setItem('souls.token', token), REFINER);
    const mira = String(guarded.demo.souls.Mira);
    await openGraphiQL(guarded, `?query=${encodeURIComponent(`subscription { soulChanged(soulId: "${mira}") { kind soul { name lastAttunedAt } } }`)}`);
    const listening = guarded.subscriptions('soulChanged');
    await page.getByRole('button', { name: /^Execute query/ }).click();
    await until(() => guarded.subscriptions('soulChanged') > listening, 'GraphiQL subscribes');
    await guarded.gql(`mutation($id: ID!) { stampAttuned(soulId: $id) { __typename } }`, { id: mira }, REFINER);
    let shown = '';
    await until(async () => (shown = await text('.graphiql-response')).includes('"kind"'), () => `the event reaches GraphiQL; it shows ${shown}`);
    expect(shown).toContain('"name": "Mira"');
    expect(shown).not.toContain('UNAUTHENTICATED');
  });
});
