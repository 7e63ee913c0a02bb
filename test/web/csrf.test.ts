// GET without the CSRF header, in a real headless Chromium (SPEC §13): a page of this origin reads the API over GET
// and follows a subscription with a plain EventSource, neither able to add a header; a page of another site can
// neither read nor write, whatever it tries; and a browser holding cookies for the host must add the header.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/server/log.ts';
import { startServer, type LiveServer } from '../support/server.ts';
import { BROWSER_TEST_MS, type Chromium, launchChromium, requireBuiltApp, until } from './support.ts';

const QUERY = '{ souls { name } }';
const CREATE = 'mutation { createSoul(input: { name: "Forged", essence: "Written by another site." }) { __typename } }';

let server: LiveServer;
let hostile: Server;
/** The other site: the same machine by another name (localhost is another site than 127.0.0.1). */
let hostileBase: string;
let chrome: Chromium;
/** The status of every request the API answered, by request id. */
const statuses: Array<{ method: string; path: string; status: number }> = [];

beforeAll(async () => {
  requireBuiltApp();
  const destination = { write: (line: string) => void statuses.push(JSON.parse(line)) };
  server = await startServer({ app: { logger: createLogger({ level: 'info', format: 'json', destination, clock: { now: () => 0 } }) } });
  await server.data('mutation { createSoul(input: { name: "Mira", essence: "Reads the room." }) { __typename } }');
  hostile = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>another site</title>'));
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  hostileBase = `http://localhost:${(hostile.address() as { port: number }).port}/`;
  chrome = await launchChromium();
}, BROWSER_TEST_MS);

afterAll(async () => {
  await chrome?.close();
  await new Promise((resolve) => hostile?.close(resolve));
  await server?.stop();
});

const apiGet = () => `${server.url}?query=${encodeURIComponent(QUERY)}`;
const soulNames = async () => (await server.data('{ souls { name } }')).souls.map((s: { name: string }) => s.name);
const answered = (path: string) => statuses.filter((line) => line.path === path && line.status === 200).length;

describe('a page of this origin, without the CSRF header', () => {
  it('reads the API over GET', async () => {
    await chrome.page.goto(server.url.replace(/graphql$/, ''));
    const read = await chrome.page.evaluate(async (url) => {
      const response = await fetch(url);
      return { status: response.status, body: await response.json() };
    }, apiGet());
    expect(read).toEqual({ status: 200, body: { data: { souls: [{ name: 'Mira' }] } } });
  });

  it('follows a subscription with a plain EventSource', async () => {
    await chrome.page.goto(server.url.replace(/graphql$/, ''));
    const subscription = `/graphql?query=${encodeURIComponent('subscription { soulChanged { kind soul { name } } }')}`;
    await chrome.page.evaluate((path) => {
      const events: string[] = [];
      (window as unknown as { events: string[] }).events = events;
      const source = new EventSource(path);
      source.addEventListener('next', (event) => events.push((event as MessageEvent).data));
      source.onerror = () => events.push('error');
    }, subscription);
    const received = () => chrome.page.evaluate(() => (window as unknown as { events: string[] }).events);
    // Writes until the stream, once open, carries one: the page cannot say when the server has subscribed.
    let writes = 0;
    await until(async () => {
      if ((await received()).length > 0) return true;
      await server.data('mutation($essence: String!) { updateSoul(id: "1", input: { essence: $essence }) { __typename } }', { essence: `Reads the room (${++writes}).` });
      return (await received()).length > 0;
    }, 'the EventSource receives an event');
    const [first] = await received();
    expect(JSON.parse(first)).toEqual({ data: { soulChanged: { kind: 'UPDATED', soul: { name: 'Mira' } } } });
  });

  it('must add the header once the browser holds a cookie for the host', async () => {
    await chrome.context.addCookies([{ name: 'elsewhere', value: '1', url: server.url }]);
    try {
      await chrome.page.goto(server.url.replace(/graphql$/, ''));
      const statusesSeen = await chrome.page.evaluate(async (url) => [
        (await fetch(url)).status,
        (await fetch(url, { headers: { 'x-graphql-yoga-csrf': '1' } })).status,
      ], apiGet());
      expect(statusesSeen).toEqual([403, 200]);
    } finally {
      await chrome.context.clearCookies();
    }
  });
});

describe('a page of another site', () => {
  it('cannot read the API: its fetch is refused, and its no-cors GET and image are never answered', async () => {
    await chrome.page.goto(hostileBase);
    const before = answered('/graphql');
    const linesBefore = statuses.filter((line) => line.path === '/graphql').length;
    const attempts = await chrome.page.evaluate(async (url) => {
      const cors = await fetch(url).then((r) => `status ${r.status}`, (error: Error) => error.name);
      const opaque = await fetch(url, { mode: 'no-cors' }).then((r) => r.type);
      const image = await new Promise<string>((resolve) => {
        const img = new Image();
        img.onload = () => resolve('load');
        img.onerror = () => resolve('error');
        img.src = url;
      });
      return { cors, opaque, image };
    }, apiGet());
    expect(attempts).toEqual({ cors: 'TypeError', opaque: 'opaque', image: 'error' });
    await until(() => statuses.filter((line) => line.path === '/graphql').length >= linesBefore + 3, 'the server has answered the three requests');
    expect(answered('/graphql')).toBe(before);
  });

  it('cannot write: its form post and its JSON fetch are refused, and no soul is created', async () => {
    await chrome.page.goto(hostileBase);
    await chrome.page.evaluate(async ({ url, query }) => {
      await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) }).catch(() => null);
      await fetch(url, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ query }) }).catch(() => null);
      const form = document.createElement('form');
      form.method = 'POST';
      form.action = url;
      const field = document.createElement('input');
      field.name = 'query';
      field.value = query;
      form.append(field);
      document.body.append(form);
      form.submit();
    }, { url: server.url, query: CREATE });
    await chrome.page.waitForURL(server.url);
    expect(await chrome.page.locator('body').innerText()).toContain('FORBIDDEN_ORIGIN');
    expect(await soulNames()).toEqual(['Mira']);
  });
});
