import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { ValidationError } from './engine/index.ts';

export const scopes = ['read', 'observe', 'refine', 'admin'] as const;
export type Scope = (typeof scopes)[number];

export type TokenEntry = { name: string; token: string; scopes: Scope[] };

/** Who is calling: a named token's scopes, or everyone's when the server runs without tokens. */
export type Caller = { name: string; scopes: ReadonlySet<Scope> };

/** The caller of a server without tokens: loopback only, every scope. */
export const localCaller: Caller = { name: 'local', scopes: new Set(scopes) };

const MIN_TOKEN_LENGTH = 16;

/** Reads and checks a tokens file: `[{ "name", "token", "scopes": ["read", …] }]`. Never echoes a token. */
export function loadTokens(path: string): TokenEntry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    // JSON.parse quotes the text around a syntax error, which may be a token: say where, never what.
    const message = (error as Error).message;
    const where = /\(line \d+ column \d+\)/.exec(message)?.[0];
    const reason = error instanceof SyntaxError ? `not valid JSON${where ? ` ${where}` : ''}` : message;
    throw new ValidationError('--tokens-file', `cannot read ${path}: ${reason}`);
  }
  if (!Array.isArray(parsed) || parsed.length === 0) throw new ValidationError('--tokens-file', `${path} must hold a non-empty JSON array of tokens`);
  const seen = new Set<string>();
  return parsed.map((entry, i) => {
    const where = `${path}[${i}]`;
    if (typeof entry !== 'object' || entry === null) throw new ValidationError(where, 'must be an object with name, token and scopes');
    const { name, token, scopes: granted } = entry as Record<string, unknown>;
    if (typeof name !== 'string' || name.trim() === '') throw new ValidationError(`${where}.name`, 'must be a non-empty string');
    if (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH) throw new ValidationError(`${where}.token`, `must be a string of at least ${MIN_TOKEN_LENGTH} characters`);
    if (seen.has(token)) throw new ValidationError(`${where}.token`, 'is the same as an earlier token');
    seen.add(token);
    if (!Array.isArray(granted) || granted.length === 0 || !granted.every((s): s is Scope => scopes.includes(s))) {
      throw new ValidationError(`${where}.scopes`, `must be a non-empty list of ${scopes.join(', ')}`);
    }
    return { name, token, scopes: [...new Set(granted)] };
  });
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * The caller a bearer credential names, or null. Every token is compared, in
 * constant time, whatever matches: timing tells nothing about any of them.
 */
export function authenticate(authorization: string | null | undefined, tokens: readonly TokenEntry[]): Caller | null {
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
  if (!presented) return null;
  const candidate = digest(presented);
  let found: TokenEntry | null = null;
  for (const entry of tokens) {
    if (timingSafeEqual(candidate, digest(entry.token)) && found === null) found = entry;
  }
  return found ? { name: found.name, scopes: new Set(found.scopes) } : null;
}

/** 127.0.0.0/8, ::1 and localhost: the hosts a server without tokens may listen on. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1' || /^::ffff:127\./i.test(bare);
  return false;
}
