import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cleanEnv } from './support/cli.ts';

const PROJECT = fileURLToPath(new URL('..', import.meta.url));
const scripts = JSON.parse(readFileSync(join(PROJECT, 'package.json'), 'utf8')).scripts as Record<string, string>;
/** `npm start`'s Node flags: the cache is filled with the same ones. */
const startFlags = /^node (.*) src\/cli\/souls\.js serve$/.exec(scripts.start)![1].split(' ');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'souls-compile-cache-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** What Node's compile cache reports (NODE_DEBUG_NATIVE) while `souls serve` starts and answers its first MCP request. */
async function serverStart(cache: string): Promise<string> {
  const env = cleanEnv({ NODE_COMPILE_CACHE: cache, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' });
  const server = spawn(process.execPath, [...startFlags, 'src/cli/souls.js', 'serve', '--port', '0', '--host', '127.0.0.1', '--db', join(dir, 'souls.db')], { cwd: PROJECT, env });
  let stdout = '';
  let stderr = '';
  server.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  server.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start within 20 s: ${stdout}`)), 20_000);
      server.stdout.on('data', () => {
        const match = /Souls API on (http:\/\/\S+)\/graphql/.exec(stdout);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
    });
    // The MCP endpoint loads its modules with its first request.
    await fetch(`${url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    return stderr;
  } finally {
    server.kill('SIGKILL');
  }
}

const uncompiled = (log: string) => [...log.matchAll(/no transpile cache for StrippedTypeScript (\S+)/g)].map((m) => m[1]);

describe('the compile cache npm install fills', { timeout: 60_000 }, () => {
  it('holds every TypeScript module a server loads, its MCP endpoint included: a first start after install compiles none', async () => {
    const cache = join(dir, 'cache');
    const warm = spawnSync(process.execPath, [...startFlags, 'scripts/warm-compile-cache.js'], { cwd: PROJECT, env: cleanEnv({ NODE_COMPILE_CACHE: cache }), encoding: 'utf8' });
    expect(warm.status).toBe(0);
    expect(warm.stdout).toMatch(/^Compile cache warmed: \d+ modules in /);
    const log = await serverStart(cache);
    expect(log).toMatch(/retrieving transpile cache for StrippedTypeScript \S+\/src\/mcp\/http\.ts\.\.\.success/);
    expect(uncompiled(log)).toEqual([]);
  });

  it('without it, a first start compiles them (what the warm-up saves)', async () => {
    const log = await serverStart(join(dir, 'empty'));
    expect(uncompiled(log).length).toBeGreaterThan(50);
  });

  it('is filled by npm install with the Node flags npm start runs with', () => {
    expect(scripts.prepare).toContain(`node ${startFlags.join(' ')} scripts/warm-compile-cache.js`);
  });

  it.each([
    ['turned off', { NODE_DISABLE_COMPILE_CACHE: '1' }, 'Disabled by NODE_DISABLE_COMPILE_CACHE'],
    ['in a folder that cannot be made', { NODE_COMPILE_CACHE: fileURLToPath(new URL('../package.json/cache', import.meta.url)) }, 'Cannot create cache directory'],
  ])('is skipped with the reason, and lets the install go on, when the cache is %s', (_, env, reason) => {
    const warm = spawnSync(process.execPath, ['scripts/warm-compile-cache.js'], { cwd: PROJECT, env: cleanEnv(env), encoding: 'utf8' });
    expect(warm.status).toBe(0);
    expect(warm.stdout).toContain(`Compile cache not warmed: ${reason}`);
  });
});
