import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { authenticate, isLoopback, loadTokens, scopes, tokensFileWarnings, tokenTable, type TokenEntry } from '../src/server/auth.ts';
import { ValidationError, describeError } from '../src/engine/index.ts';
import { cliRunner, expectNoStack, type Child, type Exit } from './support/cli.ts';

/** Bounds on waiting for a child: generous, they only fail a test when something hangs. */

const READ_TOKEN = 'unit-read-token-2f8a61c0d9';
const ADMIN_TOKEN = 'unit-admin-token-7be3904d15';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'souls-auth-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let written = 0;
/** Writes a tokens file (raw text, or JSON of a value) and returns its path. */
function tokensFile(content: unknown): string {
  const path = join(dir, `tokens-${++written}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

/** The ValidationError loadTokens throws for this file; fails when it throws anything else or nothing. */
function refusal(path: string): ValidationError {
  try {
    loadTokens(path);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error(`loadTokens(${path}) accepted the file`);
}

describe('loadTokens', () => {
  it('reads a valid file: names, tokens and scopes, repeated scopes once', () => {
    const path = tokensFile([
      { name: 'dashboard', token: READ_TOKEN, scopes: ['read'] },
      { name: 'ops', token: ADMIN_TOKEN, scopes: ['admin', 'read', 'observe', 'refine', 'admin'] },
    ]);
    expect(loadTokens(path)).toEqual<TokenEntry[]>([
      { name: 'dashboard', token: READ_TOKEN, scopes: ['read'] },
      { name: 'ops', token: ADMIN_TOKEN, scopes: ['admin', 'read', 'observe', 'refine'] },
    ]);
  });

  it('accepts a token of exactly 16 characters', () => {
    const token = 'a'.repeat(16);
    expect(loadTokens(tokensFile([{ name: 'edge', token, scopes: ['read'] }]))[0].token).toBe(token);
  });

  const good = { name: 'dashboard', token: READ_TOKEN, scopes: ['read'] };
  /** [what, file content, the field the error must name (after the path), the secret text it must not contain]. */
  const invalid: Array<[string, unknown, string, string]> = [
    ['not JSON', `[{ "name": "a", "token": ${ADMIN_TOKEN}, "scopes": ["read"] }]`, '', ADMIN_TOKEN],
    ['not JSON, a bare token', ADMIN_TOKEN, '', ADMIN_TOKEN],
    ['not an array', { name: 'a', token: ADMIN_TOKEN, scopes: ['read'] }, '', ADMIN_TOKEN],
    ['an empty array', [], '', ADMIN_TOKEN],
    ['an entry that is not an object', [good, ADMIN_TOKEN], '[1]', ADMIN_TOKEN],
    ['a missing name', [good, { token: ADMIN_TOKEN, scopes: ['admin'] }], '[1].name', ADMIN_TOKEN],
    ['a blank name', [good, { name: '  ', token: ADMIN_TOKEN, scopes: ['admin'] }], '[1].name', ADMIN_TOKEN],
    ['a missing token', [good, { name: 'ops', scopes: ['admin'] }], '[1].token', ADMIN_TOKEN],
    ['a token under 16 characters', [good, { name: 'ops', token: 'shortSecret15ch', scopes: ['admin'] }], '[1].token', 'shortSecret15ch'],
    ['a token that is not a string', [good, { name: 'ops', token: 12345678901234567890, scopes: ['admin'] }], '[1].token', '1234567890'],
    ['a duplicate token', [good, { name: 'copy', token: READ_TOKEN, scopes: ['admin'] }], '[1].token', READ_TOKEN],
    ['an unknown scope', [{ name: 'ops', token: ADMIN_TOKEN, scopes: ['read', 'write'] }], '[0].scopes', ADMIN_TOKEN],
    ['empty scopes', [{ name: 'ops', token: ADMIN_TOKEN, scopes: [] }], '[0].scopes', ADMIN_TOKEN],
    ['scopes that are not a list', [{ name: 'ops', token: ADMIN_TOKEN, scopes: 'read' }], '[0].scopes', ADMIN_TOKEN],
    ['a token with a space, which no header could carry', [good, { name: 'ops', token: 'admin secret 0123456', scopes: ['admin'] }], '[1].token', 'admin secret 0123456'],
    ['a token with a tab', [good, { name: 'ops', token: 'admin\tsecret\t0123456', scopes: ['admin'] }], '[1].token', 'admin\tsecret\t0123456'],
    ['a token with a non-ASCII letter', [good, { name: 'ops', token: 'admin-sécret-0123456', scopes: ['admin'] }], '[1].token', 'admin-sécret-0123456'],
    ['a duplicate name', [good, { name: 'dashboard', token: ADMIN_TOKEN, scopes: ['admin'] }], '[1].name', ADMIN_TOKEN],
  ];

  it.each(invalid)('refuses %s, naming the place and never the token', (_what, content, place, secret) => {
    const path = tokensFile(content);
    const error = refusal(path);
    expect(error.field).toBe(place === '' ? '--tokens-file' : `${path}${place}`);
    // What the command line prints: the place, then what is wrong there.
    const printed = describeError(error);
    expect(printed).toContain(place === '' ? path : `${path}${place}`);
    // Neither the token nor any 8-character piece of it.
    for (let i = 0; i + 8 <= secret.length; i++) expect(printed, `the message shows "${secret.slice(i, i + 8)}"`).not.toContain(secret.slice(i, i + 8));
    expect(printed).not.toMatch(/^\s+at /m);
  });

  it('refuses a file that does not exist, naming it', () => {
    const path = join(dir, 'no-such-tokens.json');
    const error = refusal(path);
    expect(error.field).toBe('--tokens-file');
    expect(error.message).toContain(path);
  });

  it('warns about a file other users can read or write, and about a symbolic link', () => {
    const path = tokensFile([good]);
    chmodSync(path, 0o600);
    expect(tokensFileWarnings(path)).toEqual([]);
    for (const mode of [0o644, 0o640, 0o666, 0o602]) {
      chmodSync(path, mode);
      expect(tokensFileWarnings(path), mode.toString(8)).toEqual([`the tokens file ${path} can be read or written by other users (mode 0${mode.toString(8)}): chmod 600 ${path}`]);
    }
    chmodSync(path, 0o600);
    const link = join(dir, `link-${written}.json`);
    symlinkSync(path, link);
    expect(tokensFileWarnings(link)).toEqual([`the tokens file ${link} is a symbolic link to ${path}: check who can change where it points`]);
    expect(loadTokens(link)).toHaveLength(1);
  });

  it('names scopes from the fixed list only', () => {
    expect([...scopes]).toEqual(['read', 'observe', 'refine', 'admin']);
  });
});

describe('authenticate', () => {
  const entries: TokenEntry[] = [
    { name: 'dashboard', token: READ_TOKEN, scopes: ['read'] },
    { name: 'ops', token: ADMIN_TOKEN, scopes: ['read', 'admin'] },
  ];

  it('finds the caller a bearer token names, with its scopes', () => {
    const caller = authenticate(`Bearer ${ADMIN_TOKEN}`, tokenTable(entries));
    expect(caller?.name).toBe('ops');
    expect([...caller!.scopes].sort()).toEqual(['admin', 'read']);
    expect(authenticate(`Bearer ${READ_TOKEN}`, tokenTable(entries))?.name).toBe('dashboard');
  });

  it.each([`bearer ${READ_TOKEN}`, `BEARER ${READ_TOKEN}`, `BeArEr ${READ_TOKEN}`, `Bearer    ${READ_TOKEN}`, `Bearer ${READ_TOKEN}   `, `Bearer\t${READ_TOKEN}`])(
    'takes the scheme in any case and extra spaces: %j',
    (header) => {
      expect(authenticate(header, tokenTable(entries))?.name).toBe('dashboard');
    },
  );

  it.each([
    ['a missing header', undefined],
    ['null', null],
    ['an empty header', ''],
    ['the scheme alone', 'Bearer'],
    ['the scheme and a space', 'Bearer '],
    ['a token without the scheme', READ_TOKEN],
    ['another scheme', `Basic ${READ_TOKEN}`],
    ['no space after the scheme', `Bearer${READ_TOKEN}`],
    ['a wrong token', 'Bearer unit-wrong-token-00000000'],
    ['a prefix of a token', `Bearer ${READ_TOKEN.slice(0, -1)}`],
    ['a token with a suffix', `Bearer ${READ_TOKEN}0`],
    ['a token in another case', `Bearer ${READ_TOKEN.toUpperCase()}`],
    ['two tokens', `Bearer ${READ_TOKEN} ${ADMIN_TOKEN}`],
  ])('refuses %s', (_what, header) => {
    expect(authenticate(header, tokenTable(entries))).toBeNull();
  });

  it('finds the caller among 20,000 tokens, each hashed once when the table is built', () => {
    const many: TokenEntry[] = Array.from({ length: 20_000 }, (_, i) => ({ name: `t${i}`, token: `unit-many-token-${i.toString().padStart(6, '0')}`, scopes: ['read'] }));
    const table = tokenTable(many);
    expect(table.size).toBe(20_000);
    expect(authenticate('Bearer unit-many-token-019999', table)?.name).toBe('t19999');
    expect(authenticate('Bearer unit-many-token-020000', table)).toBeNull();
  });

  it('finds nobody when there are no tokens', () => {
    expect(authenticate(`Bearer ${READ_TOKEN}`, tokenTable([]))).toBeNull();
  });
});

describe('isLoopback', () => {
  it.each(['127.0.0.1', '127.5.6.7', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1'])('%s is loopback', (host) => {
    expect(isLoopback(host)).toBe(true);
  });
  it.each(['0.0.0.0', '192.168.1.2', '::', '[::]', 'example.com', '', '128.0.0.1', '::ffff:192.168.1.2', '127.0.0.1.example.com'])('%j is not loopback', (host) => {
    expect(isLoopback(host)).toBe(false);
  });
});

// ---------------------------------------------------------------------------
// The CLI's policy: beyond loopback, tokens or an explicit --insecure.

const { cli, exited, printed, killAll } = cliRunner();
afterEach(killAll);

/** Resolves with the port once the server prints where it listens (and then `last`). */
async function listening(child: Child, last: RegExp): Promise<number> {
  await printed(child, last);
  return Number(/Souls API on http:\/\/\S+:(\d+)\/graphql/.exec(child.output().stdout)![1]);
}

async function stop(child: Child): Promise<Exit> {
  child.process.kill('SIGTERM');
  return exited(child);
}

describe('souls serve beyond loopback', { timeout: 30_000 }, () => {
  it.each(['0.0.0.0', '::', '192.168.1.2'])('refuses --host %s without tokens, naming --tokens-file and --insecure', async (host) => {
    const result = await exited(cli(['serve', '--host', host, '--port', '0', '--db', ':memory:']));
    expect(result.code, JSON.stringify(result)).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stderr).toContain('--tokens-file');
    expect(result.stderr).toContain('--insecure');
    expect(result.stdout).not.toContain('Souls API on');
    expectNoStack(result.stderr);
  });

  it('starts with --insecure and warns about it', async () => {
    const child = cli(['serve', '--host', '0.0.0.0', '--port', '0', '--db', ':memory:', '--insecure']);
    await listening(child, /^WARNING: .*$/m);
    expect(child.output().stdout).toMatch(/^WARNING: .*--insecure.*$/m);
    const result = await stop(child);
    expect(result.code).toBe(0);
  });

  it('starts with --tokens-file, printing the token names and never the tokens, and requires them', async () => {
    const path = tokensFile([
      { name: 'dashboard', token: READ_TOKEN, scopes: ['read'] },
      { name: 'ops', token: ADMIN_TOKEN, scopes: ['admin', 'read'] },
    ]);
    chmodSync(path, 0o644);
    const child = cli(['serve', '--host', '0.0.0.0', '--port', '0', '--db', ':memory:', '--tokens-file', path]);
    const port = await listening(child, /^Tokens: .*$/m);
    const { stdout, stderr } = child.output();
    expect(stdout).toContain('dashboard');
    expect(stdout).toContain('ops');
    expect(stdout).not.toMatch(/^WARNING/m);

    const url = `http://127.0.0.1:${port}/graphql`;
    const ask = (authorization?: string) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ query: '{ caller { name } }' }),
      });
    const anonymous = await ask();
    expect(anonymous.status).toBe(401);
    expect((await anonymous.json()).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const ops = await ask(`Bearer ${ADMIN_TOKEN}`);
    expect(await ops.json()).toEqual({ data: { caller: { name: 'ops' } } });

    const result = await stop(child);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`WARNING: the tokens file ${path} can be read or written by other users (mode 0644): chmod 600 ${path}`);
    for (const text of [stdout, stderr, result.stdout, result.stderr]) {
      expect(text).not.toContain(READ_TOKEN);
      expect(text).not.toContain(ADMIN_TOKEN);
    }
  });

  it.each<[string, unknown, string]>([
    ['a short token', [{ name: 'ops', token: 'tooShortSecret', scopes: ['admin'] }], '[0].token'],
    ['an unknown scope', [{ name: 'ops', token: ADMIN_TOKEN, scopes: ['everything'] }], '[0].scopes'],
    ['a file that is not JSON', `[{ "name": "ops", "token": ${ADMIN_TOKEN} }]`, ''],
  ])('refuses to start with %s in the tokens file, naming the problem', async (_what, content, place) => {
    const path = tokensFile(content);
    const result = await exited(cli(['serve', '--host', '0.0.0.0', '--port', '0', '--db', ':memory:', '--tokens-file', path]));
    expect(result.code, JSON.stringify(result)).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stdout).not.toContain('Souls API on');
    expect(result.stderr).toContain(`${path}${place}`);
    for (const secret of [ADMIN_TOKEN, 'tooShortSecret']) {
      for (let i = 0; i + 8 <= secret.length; i++) expect(result.stderr).not.toContain(secret.slice(i, i + 8));
    }
    expectNoStack(result.stderr);
  });
});
