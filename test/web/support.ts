// The character-sheet app in a real headless Chromium (found by scripts/browser.ts: SOULS_CHROMIUM, CHROME_PATH,
// PATH, the usual places), driven by playwright-core, which never downloads a browser. The run shares one browser;
// each test file has its own contexts in it and one live server whose in-memory database holds the demo world
// (scripts/demo.ts), seeded through the engine with a hand-moved clock.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { buildApp, type App } from '../../src/server/app.ts';
import type { TokenEntry } from '../../src/server/auth.ts';
import { manualClock, openSoulsDbAsync } from '../../src/engine/index.ts';
import { requireBrowser } from '../../scripts/browser.ts';
import { testDatabase } from '../support/replica.ts';
import { seedDemo, type DemoSummary } from '../../scripts/demo.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const SCREENS = join(ROOT, 'test-results', 'screens');
const BUILT = join(ROOT, 'web', 'dist', 'index.html');

/** The app must be built (npm install runs `prepare` → build:web); say so plainly instead of testing a 503 page. */
export function requireBuiltApp(): void {
  if (!existsSync(BUILT)) throw new Error(`web/dist/index.html is missing: run \`npm run build:web\` (npm install and npm ci run it) before the browser tests`);
  requireBrowser();
}

/**
 * How long a state on the page may take to come: a bound for a hang, never a speed check (a machine at load 6+ on two
 * cores loads GraphiQL's editor in well over 8 s). Every action and wait in the browser files uses it.
 */
export const WAIT = { timeout: 60_000 };
/** A browser test's own bound: many page loads and waits, each as slow as a loaded machine makes it. */
export const BROWSER_TEST_MS = 300_000;

export type SeededServer = {
  app: App;
  /** http://127.0.0.1:PORT/ (the app); the API is at `${base}graphql` */
  base: string;
  demo: DemoSummary;
  /** POSTs one operation to the API (with a token when given); throws on GraphQL errors. */
  gql<T = any>(query: string, variables?: Record<string, unknown>, token?: string): Promise<T>;
  /** How many subscriptions of each topic the server has opened (the page's live queries). */
  subscriptions(topic: string): number;
  stop(): Promise<void>;
};

/** A live server on a free loopback port over the demo world, ending at the real now (so the page's ages read true). */
export async function startSeededServer(options: { tokens?: TokenEntry[] } = {}): Promise<SeededServer> {
  const now = Date.now();
  const clock = manualClock(now);
  const database = await testDatabase();
  const db = await openSoulsDbAsync({ clock, path: database.path });
  const demo = await seedDemo(db, clock, { now });
  const app = buildApp({ db, tokens: options.tokens ?? null, redis: database.redis });
  // Count the topics the subscriptions open, so a test can wait until the page listens before it writes.
  const opened = new Map<string, number>();
  const subscribe = app.pubsub.subscribe.bind(app.pubsub);
  app.pubsub.subscribe = ((topic: string, ...rest: unknown[]) => {
    opened.set(topic, (opened.get(topic) ?? 0) + 1);
    return (subscribe as (...args: unknown[]) => unknown)(topic, ...rest);
  }) as typeof app.pubsub.subscribe;
  const { url } = await app.start(0, '127.0.0.1');
  return {
    app,
    base: url.replace(/graphql$/, ''),
    demo,
    async gql(query, variables, token) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await response.json()) as { data?: any; errors?: { message: string }[] };
      if (body.errors?.length) throw new Error(`GraphQL errors: ${body.errors.map((e) => e.message).join('; ')}`);
      return body.data;
    },
    subscriptions: (topic) => opened.get(topic) ?? 0,
    stop: async () => {
      await app.stop();
      await database.drop();
    },
  };
}

export type Chromium = { context: BrowserContext; page: Page; errors: string[]; close(): Promise<void> };

/**
 * A fresh context (its own storage, as a new profile) in the run's shared headless Chromium (test/web/browser-server.ts),
 * with one page at a laptop's size (or, with `phone`, a phone's: 390 px, honouring the page's viewport tag as a phone
 * does); page errors are collected for the tests.
 */
export async function launchChromium(options: { phone?: boolean } = {}): Promise<Chromium> {
  requireBrowser();
  const answer = await fetch(inject('chromiumBroker'));
  if (!answer.ok) throw new Error(`the shared Chromium did not start: ${await answer.text()}`);
  const browser = await chromium.connect(await answer.text(), WAIT);
  const context = await browser.newContext({
    viewport: options.phone ? { width: 390, height: 844 } : { width: 1440, height: 900 },
    ...(options.phone ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
    // The app honours prefers-reduced-motion: cards do not move, so clicks need not wait for animations to settle.
    reducedMotion: 'reduce',
  });
  // Every action and wait is bounded: a missing element fails the test with Playwright's message instead of hanging.
  context.setDefaultTimeout(WAIT.timeout);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  return {
    context,
    page,
    errors,
    async close() {
      await context.close();
      // A connected browser's close() only disconnects this file: the browser stays for the others.
      await browser.close();
    },
  };
}

/** Saves a screenshot of the current screen to test-results/screens/NAME.png (animations run to their end, no toasts). */
export async function screenshot(page: Page, name: string, fullPage = false): Promise<void> {
  mkdirSync(SCREENS, { recursive: true });
  await page.screenshot({ path: join(SCREENS, `${name}.png`), fullPage, animations: 'disabled', style: '.toasts { display: none }' });
}

/** Waits, bounded, until `check` holds; fails with `what` (a function: read when it fails, to say what the page showed) instead of hanging. */
export async function until(check: () => boolean | Promise<boolean>, what: string | (() => string), timeoutMs = WAIT.timeout): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${typeof what === 'string' ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The app built, a seeded server and a browser, started together: the usual start of a browser test file. */
export async function openBrowserSession(options: { tokens?: TokenEntry[] } = {}): Promise<{ server: SeededServer; chrome: Chromium }> {
  requireBuiltApp();
  const [server, chrome] = await Promise.all([startSeededServer(options), launchChromium()]);
  return { server, chrome };
}

/** Closes what openBrowserSession opened, whatever of it started. */
export async function closeBrowserSession(session: { server?: SeededServer; chrome?: Chromium }): Promise<void> {
  await session.chrome?.close();
  await session.server?.stop();
}

/**
 * The usual start and end of a browser test file: before its tests a seeded server and Chromium (at `viewport`, or
 * Chromium's own size when null), handed to `use`; after them, both closed.
 */
export function browserFile(
  viewport: { width: number; height: number } | null,
  use: (session: { server: SeededServer; chrome: Chromium; page: Page }) => unknown,
): void {
  let session: { server?: SeededServer; chrome?: Chromium } = {};
  beforeAll(async () => {
    const opened = await openBrowserSession();
    session = opened;
    if (viewport) await opened.chrome.page.setViewportSize(viewport);
    await use({ ...opened, page: opened.chrome.page });
  }, BROWSER_TEST_MS);
  afterAll(() => closeBrowserSession(session));
}

/**
 * The visible disabled buttons that do not say why: no title, and no aria-describedby naming text on the page. Each
 * entry names the button by its label.
 */
export async function unexplainedDisabledButtons(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll<HTMLButtonElement>('button:disabled')]
      .filter((b) => b.getBoundingClientRect().width > 0 && !b.closest('[aria-hidden=true]'))
      .filter((b) => {
        if (b.title.trim()) return false;
        const described = (b.getAttribute('aria-describedby') ?? '').split(/\s+/).filter(Boolean);
        return !described.some((id) => (document.getElementById(id)?.textContent ?? '').trim() !== '');
      })
      .map((b) => (b.getAttribute('aria-label') ?? b.textContent ?? '').trim().slice(0, 80)),
  );
}
