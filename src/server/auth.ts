import { createHash, timingSafeEqual } from 'node:crypto';
import { lstatSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { ValidationError } from '../engine/index.ts';

export const scopes = ['read', 'observe', 'refine', 'admin'] as const;
export type Scope = (typeof scopes)[number];

export type TokenEntry = { name: string; token: string; scopes: Scope[] };

/** Who is calling: a named token's scopes, or everyone's when the server runs without tokens. */
export type Caller = { name: string; scopes: ReadonlySet<Scope> };

/**
 * The object-level read rule of both APIs: what a soul is made of (its name and texts, its traits, shards, level
 * events, evidence, and when it changes) is shown only to a caller with `read`; without it a write answers ids only.
 */
export function mayReadSouls(caller: Caller): boolean {
  return caller.scopes.has('read');
}

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
  const names = new Set<string>();
  return parsed.map((entry, i) => {
    const where = `${path}[${i}]`;
    if (typeof entry !== 'object' || entry === null) throw new ValidationError(where, 'must be an object with name, token and scopes');
    const { name, token, scopes: granted } = entry as Record<string, unknown>;
    if (typeof name !== 'string' || name.trim() === '') throw new ValidationError(`${where}.name`, 'must be a non-empty string');
    if (names.has(name)) throw new ValidationError(`${where}.name`, `is the same as an earlier token's name (${JSON.stringify(name)}): names tell callers apart in logs`);
    names.add(name);
    if (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH) throw new ValidationError(`${where}.token`, `must be a string of at least ${MIN_TOKEN_LENGTH} characters`);
    // An Authorization header carries one run of visible ASCII: any other token could never be presented.
    if (!/^[\x21-\x7e]+$/.test(token)) throw new ValidationError(`${where}.token`, 'may hold only visible ASCII characters (no spaces, control or non-ASCII characters)');
    if (seen.has(token)) throw new ValidationError(`${where}.token`, 'is the same as an earlier token');
    seen.add(token);
    if (!Array.isArray(granted) || granted.length === 0 || !granted.every((s): s is Scope => scopes.includes(s))) {
      throw new ValidationError(`${where}.scopes`, `must be a non-empty list of ${scopes.join(', ')}`);
    }
    return { name, token, scopes: [...new Set(granted)] };
  });
}

/** What a server should say about a tokens file it accepted: a link, or a mode that lets other users read it. */
export function tokensFileWarnings(path: string): string[] {
  const warnings: string[] = [];
  if (lstatSync(path).isSymbolicLink()) warnings.push(`the tokens file ${path} is a symbolic link to ${realpathSync(path)}: check who can change where it points`);
  const mode = statSync(path).mode & 0o777;
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
    warnings.push(`the tokens file ${path} can be read or written by other users (mode ${mode.toString(8).padStart(4, '0')}): chmod 600 ${path}`);
  }
  return warnings;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Tokens by the SHA-256 of their value, hashed once when the server starts. */
export type TokenTable = ReadonlyMap<string, { entry: TokenEntry; digest: Buffer }>;

export function tokenTable(tokens: readonly TokenEntry[]): TokenTable {
  return new Map(tokens.map((entry) => {
    const hashed = digest(entry.token);
    return [hashed.toString('hex'), { entry, digest: hashed }];
  }));
}

/**
 * The caller a bearer credential names, or null. The presented token is hashed once and looked up by its
 * hash, so the cost does not grow with the file, and timing shows only a hash, never a token's prefix.
 */
export function authenticate(authorization: string | null | undefined, tokens: TokenTable): Caller | null {
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
  if (!presented) return null;
  const candidate = digest(presented);
  const found = tokens.get(candidate.toString('hex'));
  return found && timingSafeEqual(candidate, found.digest) ? { name: found.entry.name, scopes: new Set(found.entry.scopes) } : null;
}

/** Who a request's credential names: with tokens, a token's caller or null; without, the local caller, whatever it says. */
export type Callers = {
  /** Whether requests need a token (a tokens file was given). */
  readonly required: boolean;
  of(authorization: unknown): Caller | null;
};

export function callersOf(tokens: readonly TokenEntry[] | null | undefined): Callers {
  const table = tokens && tokens.length > 0 ? tokenTable(tokens) : null;
  return {
    required: table !== null,
    of: (authorization) => (table === null ? localCaller : authenticate(typeof authorization === 'string' ? authorization : null, table)),
  };
}

/** What a request without a valid token is told, by every transport. */
export const TOKEN_REQUIRED = 'a valid bearer token is required (Authorization: Bearer <token>)';

/** The realm every challenge names: the one protection space of this server. */
export const REALM = 'souls';

/**
 * The `WWW-Authenticate` value of a 401 (RFC 6750 §3): a bare challenge when the request brought no bearer
 * credentials, `invalid_request` for a malformed Bearer header, `invalid_token` for a well-formed one no token matches.
 */
export function bearerChallenge(authorization: string | null | undefined): string {
  const challenge = `Bearer realm="${REALM}"`;
  if (!authorization || !/^Bearer(\s|$)/i.test(authorization)) return challenge;
  if (!/^Bearer\s+\S+\s*$/i.test(authorization)) {
    return `${challenge}, error="invalid_request", error_description="the Authorization header must be Bearer followed by one token"`;
  }
  return `${challenge}, error="invalid_token", error_description="the bearer token is not known to this server"`;
}

/** 127.0.0.0/8, ::1 and localhost: the hosts a server without tokens may listen on. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1' || /^::ffff:127\./i.test(bare);
  return false;
}
