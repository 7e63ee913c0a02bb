import { afterEach, describe, expect, it, vi } from 'vitest';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/server/app.ts';
import { closeSoulsDb, manualClock, openSoulsDb } from '../src/engine/index.ts';
import { loadTokens } from '../src/server/auth.ts';
import { serverPerTest } from './support/server.ts';

const start = serverPerTest(afterEach);
const base = (url: string) => url.replace(/\/graphql$/, '');

afterEach(() => {
  vi.restoreAllMocks();
});

describe('/health and /ready', () => {
  it('answer 200 {"status":"ok"} without a token, even when the server requires tokens', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-health-'));
    const file = join(dir, 'tokens.json');
    writeFileSync(file, JSON.stringify([{ name: 'ops', token: 'a-secret-token-of-some-length', scopes: ['read'] }]), { mode: 0o600 });
    const server = await start({ app: { tokens: loadTokens(file) } });
    // The API itself refuses the same caller.
    expect((await server.request('{ souls { id } }')).status).toBe(401);
    for (const path of ['/health', '/ready']) {
      const response = await fetch(`${base(server.url)}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(await response.json()).toEqual({ status: 'ok' });
    }
  });

  it('answer probes whatever Host they send (a load balancer calls by address)', async () => {
    const server = await start();
    const { port } = new URL(server.url);
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/ready', headers: { host: '10.1.2.3:4000' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      }).on('error', reject).end();
    });
    expect(status).toBe(200);
    // The API keeps its Host policy.
    const api = await new Promise<number>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/graphql?query=%7B__typename%7D', headers: { host: 'evil.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      }).on('error', reject).end();
    });
    expect(api).toBe(403);
  });

  it('send headers and no body on HEAD, and refuse other methods with 405', async () => {
    const server = await start();
    for (const path of ['/health', '/ready']) {
      const head = await fetch(`${base(server.url)}${path}`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(await head.text()).toBe('');
      const post = await fetch(`${base(server.url)}${path}`, { method: 'POST', body: '{}' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD');
    }
  });

  it('/ready answers 503 with a reason once the database is closed, while /health still answers 200', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const server = await start();
    closeSoulsDb(server.app.db);
    const ready = await fetch(`${base(server.url)}/ready`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'unavailable', reason: 'the database does not answer a query' });
    expect((await fetch(`${base(server.url)}/ready`, { method: 'HEAD' })).status).toBe(503);
    expect((await fetch(`${base(server.url)}/health`)).status).toBe(200);
    expect(errors.mock.calls.flat().join(' ')).toMatch(/\/ready: the database does not answer: .*not open/i);
  });

  it('/ready answers 503 when the database fails a query, and 200 again once it answers', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const db = openSoulsDb({ clock: manualClock(Date.UTC(2026, 0, 1)) });
    let failing = true;
    const store = new Proxy(db.store, {
      get(target, key) {
        if (key === 'ping' && failing) return () => { throw Object.assign(new Error('disk I/O error'), { code: 'ERR_SQLITE_ERROR' }); };
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const app = buildApp({ db: openSoulsDb({ store, clock: db.clock }) });
    try {
      const { url } = await app.start(0, '127.0.0.1');
      const failed = await fetch(`${base(url)}/ready`);
      expect(failed.status).toBe(503);
      expect((await failed.json()).reason).toBe('the database does not answer a query');
      expect(errors.mock.calls.flat().join(' ')).toMatch(/disk I\/O error/);
      failing = false;
      expect((await fetch(`${base(url)}/ready`)).status).toBe(200);
    } finally {
      await app.stop();
    }
  });
});
