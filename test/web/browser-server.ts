// vitest's globalSetup: one headless Chromium for the whole run, which every browser test file connects to for
// contexts of its own (fresh storage each), instead of each file launching a browser (seconds of CPU each on a busy
// machine). The browser starts when the first file asks the broker for it, so a run without browser files starts none.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type BrowserServer } from 'playwright-core';
import type { TestProject } from 'vitest/node';
import { requireBrowser } from '../../scripts/browser.ts';

declare module 'vitest' {
  interface ProvidedContext {
    /** GET it for the shared browser's WebSocket endpoint (test/web/support.ts launchChromium). */
    chromiumBroker: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let browser: Promise<BrowserServer> | null = null;
  const broker = createServer((_, response) => {
    browser ??= chromium.launchServer({
      executablePath: requireBrowser(),
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    browser.then(
      (server) => response.end(server.wsEndpoint()),
      (error: Error) => {
        browser = null;
        response.statusCode = 500;
        response.end(error.message);
      },
    );
  });
  await new Promise<void>((resolve) => broker.listen(0, '127.0.0.1', resolve));
  project.provide('chromiumBroker', `http://127.0.0.1:${(broker.address() as AddressInfo).port}/`);
  return async () => {
    broker.close();
    await (await browser?.catch(() => null))?.close();
  };
}
