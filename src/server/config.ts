import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadTokens, tokensFileWarnings, type TokenEntry } from './auth.ts';
import { defaultSettings, resolveSettings, settingNames, similarityModes, ValidationError, type Settings } from '../engine/index.ts';
import { defaultLimits, limitNames, type Limits } from './limits.ts';
import { normalizeHost, normalizeOrigin } from './origin.ts';
import { loadKnownOperations, type KnownOperations } from './operations-file.ts';
import { embeddingsUrl, endpointDefaults, MAX_ANSWER_BYTES } from '../embedder/endpoint.ts';

export type ServerConfig = {
  host: string;
  port: number;
  /** SQLite file path, ':memory:', or a postgres:// URL. */
  db: string;
  /** Where `db` came from, for messages: '--db', 'SOULS_DB', the config file's key, or the default. */
  dbFrom: string;
  /** PostgreSQL only: how long one store call may take before it fails with STORAGE_UNAVAILABLE. */
  dbTimeoutMs: number;
  /** PostgreSQL only: how long a new connection may take to answer, and how long a call runs before the server is checked. */
  dbConnectTimeoutMs: number;
  /** PostgreSQL only: how many connections the replica's pool opens at most (units of work in flight at once). */
  dbPoolSize: number;
  settings: Settings;
  /** Similarity semantic through the user's own model behind an OpenAI-compatible endpoint; null: the built-in encoder. */
  embedder: EmbedderConfig | null;
  /** null: no tokens file, so loopback only and every caller has every scope. */
  tokens: TokenEntry[] | null;
  /** The only operations the server runs, by id (an allow-list deployment); null: any operation. */
  persistedOperations: KnownOperations | null;
  /** Listen beyond loopback without tokens (refused unless given). */
  insecure: boolean;
  introspection: boolean;
  limits: Limits;
  /** Origins besides the server's own whose pages may call the API. */
  corsOrigins: string[];
  /** Host names served besides loopback ones when there are no tokens. */
  allowedHosts: string[];
  logLevel: LogLevel;
  logFormat: LogFormat;
  /** Events through Redis (every replica's subscribers hear every replica's writes); null: in memory, this process only. */
  redis: { url: string; prefix: string } | null;
  /** Give memory back to the operating system after this many ms without work (requests, connections, operations, events sent); 0: never. */
  releaseMemoryAfterMs: number;
  /** Things the operator should fix that do not stop the server (a tokens file others can read). */
  warnings: string[];
};

/** The endpoint's settings; the key is behind a function so that printing or serializing the config never shows it. */
export type EmbedderConfig = {
  url: string;
  model: string;
  key: () => string | null;
  batchSize: number;
  concurrency: number;
  timeoutMs: number;
  /** The most bytes one answer may take; null: derived per call from its texts and the vectors' dimension. */
  maxAnswerBytes: number | null;
};

/** The embedder's flags beside the engine settings: every command that opens a database may need its model. */
const embedderFlags = ['embedder-url', 'embedder-model', 'embedder-key-file', 'embedder-batch', 'embedder-concurrency', 'embedder-timeout', 'embedder-max-answer-bytes'];
const embedderKeys = ['embedderUrl', 'embedderModel', 'embedderKeyFile', 'embedderBatch', 'embedderConcurrency', 'embedderTimeout', 'embedderMaxAnswerBytes'];

export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof logLevels)[number];
export const logFormats = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof logFormats)[number];

export const defaults = { host: '127.0.0.1', port: 4000, db: './data/souls.db', dbTimeoutMs: 30_000, dbConnectTimeoutMs: 5_000, dbPoolSize: 10, logLevel: 'info' as LogLevel, logFormat: 'auto' as LogFormat, redisPrefix: 'souls:', releaseMemoryAfterSeconds: 10 };

const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const envName = (name: string) => `SOULS_${name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;

function number(where: string, raw: unknown): number {
  const value = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new ValidationError(where, `must be a number, got ${JSON.stringify(raw)}`);
  return value;
}

function redisUrl(where: string, raw: unknown): string {
  const text = typeof raw === 'string' ? raw.trim() : '';
  let url: URL | null = null;
  try {
    url = new URL(text);
  } catch {
    // Reported below.
  }
  if (!url || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '') {
    throw new ValidationError(where, `must be a redis:// or rediss:// URL with a host (redis://127.0.0.1:6379), got ${JSON.stringify(raw)}`);
  }
  return text;
}

function redisPrefix(where: string, raw: unknown): string {
  if (typeof raw !== 'string' || !/^[\w:.@/+-]{1,64}$/.test(raw)) throw new ValidationError(where, `must be 1 to 64 letters, digits or _:.@/+-, got ${JSON.stringify(raw)}`);
  return raw;
}

function port(where: string, raw: unknown): number {
  const value = number(where, raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) throw new ValidationError(where, `must be a port number from 0 to 65535, got ${JSON.stringify(raw)}`);
  return value;
}

/**
 * `--trait-limit -1` as `--trait-limit=-1`: parseArgs takes a value that starts with a dash for a forgotten
 * argument ("ambiguous"), so negative numbers would never reach the validation that names the flag and its bounds.
 */
export function attachNegativeNumbers(argv: readonly string[], valued: ReadonlySet<string>): string[] {
  const joined: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const next = argv[i + 1];
    if (valued.has(argv[i]) && next !== undefined && /^-\.?\d/.test(next)) {
      joined.push(`${argv[i]}=${next}`);
      i++;
    } else joined.push(argv[i]);
  }
  return joined;
}

type OptionSpec = { type: 'string' | 'boolean'; multiple?: boolean };
const valuedOptions = (names: readonly string[]): Record<string, OptionSpec> => Object.fromEntries(names.map((name) => [name, { type: 'string' as const }]));

/**
 * The flags loadConfig reads, in the groups commands share: every command that opens a database takes `database`
 * and `settings`; only `serve` takes `server`.
 */
export const optionGroups = {
  database: valuedOptions(['db', 'db-timeout', 'db-connect-timeout', 'db-pool-size', 'config']),
  settings: valuedOptions([...settingNames.map(kebab), ...embedderFlags]),
  server: {
    ...valuedOptions(['host', 'port', 'tokens-file', 'persisted-operations', 'log-level', 'log-format', 'redis', 'redis-prefix', 'release-memory-after', ...limitNames.map(kebab)]),
    insecure: { type: 'boolean' },
    introspection: { type: 'boolean' },
    'cors-origin': { type: 'string', multiple: true },
    'allowed-host': { type: 'string', multiple: true },
  },
} satisfies Record<string, Record<string, OptionSpec>>;
export type OptionGroup = keyof typeof optionGroups;

/**
 * Server settings and knobs from, in rising precedence: defaults, a JSON
 * config file (--config or SOULS_CONFIG), the environment (SOULS_PORT,
 * SOULS_TRAIT_LIMIT, …) and flags (--port, --trait-limit, …). Every value is
 * validated; a bad one throws a ValidationError naming where it came from.
 */
export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ServerConfig {
  const options = { ...optionGroups.database, ...optionGroups.settings, ...optionGroups.server };
  const valued = Object.keys(options).filter((name) => options[name as keyof typeof options].type === 'string');
  const { values } = parseArgs({
    args: attachNegativeNumbers(argv, new Set(valued.map((name) => `--${name}`))),
    options,
    strict: true,
    allowPositionals: false,
    allowNegative: true,
  });
  return configFromFlags(values, env);
}

/**
 * loadConfig over flags already parsed (by a command's own parser): `values` keyed by flag name without dashes.
 * Without `server`, the server's settings keep their defaults unread, so a bad SOULS_PORT cannot stop `souls list`.
 */
export function configFromFlags(values: Readonly<Record<string, unknown>>, env: NodeJS.ProcessEnv, options: { server?: boolean } = {}): ServerConfig {
  const server = options.server ?? true;
  const flags = values as Record<string, string | undefined>;
  const switches = values as Record<string, boolean | undefined>;
  const configPath = flags.config ?? env.SOULS_CONFIG;
  let file: Record<string, unknown> = {};
  if (configPath) {
    try {
      file = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
    } catch (error) {
      throw new ValidationError('--config', `cannot read ${configPath}: ${(error as Error).message}`);
    }
    if (typeof file !== 'object' || file === null || Array.isArray(file)) throw new ValidationError('--config', `${configPath} must hold a JSON object`);
    const known = new Set(['host', 'port', 'db', 'dbTimeout', 'dbConnectTimeout', 'dbPoolSize', 'tokensFile', 'persistedOperations', 'insecure', 'introspection', 'corsOrigins', 'allowedHosts', 'logLevel', 'logFormat', 'redis', 'redisPrefix', 'releaseMemoryAfter', ...settingNames, ...embedderKeys, ...limitNames]);
    const unknown = Object.keys(file).find((key) => !known.has(key));
    if (unknown) throw new ValidationError(`--config ${unknown}`, `unknown setting (known: ${[...known].join(', ')})`);
  }

  const pick = (name: string, flag: string, variable: string): { where: string; raw: unknown } | undefined => {
    if (flags[flag] !== undefined) return { where: `--${flag}`, raw: flags[flag] };
    if (env[variable] !== undefined && env[variable] !== '') return { where: variable, raw: env[variable] };
    if (file[name] !== undefined) return { where: `${configPath} ${name}`, raw: file[name] };
    return undefined;
  };

  const overrides: Record<string, unknown> = {};
  for (const name of settingNames) {
    const found = pick(name, kebab(name), envName(name));
    if (!found) continue;
    try {
      overrides[name] = name === 'similarity' ? found.raw : number(found.where, found.raw);
      resolveSettings({ [name]: overrides[name] });
    } catch (error) {
      if (error instanceof ValidationError) throw new ValidationError(found.where, error.message);
      throw error;
    }
  }
  const embedder = embedderConfig(pick, env);
  if (embedder && overrides.similarity === undefined) overrides.similarity = 'semantic';
  if (embedder && overrides.similarity !== 'semantic') {
    throw new ValidationError(pick('embedderUrl', 'embedder-url', 'SOULS_EMBEDDER_URL')!.where, `an embeddings endpoint computes the vectors of similarity semantic, but --similarity is ${String(overrides.similarity)}`);
  }
  const limits: Limits = { ...defaultLimits };
  for (const name of server ? limitNames : []) {
    const found = pick(name, kebab(name), envName(name));
    if (!found) continue;
    const value = number(found.where, found.raw);
    if (!Number.isInteger(value) || value < 1) throw new ValidationError(found.where, `must be a whole number of at least 1, got ${JSON.stringify(found.raw)}`);
    limits[name] = value;
  }
  const flag = (name: string, variable: string): boolean | undefined => {
    if (switches[name] !== undefined) return switches[name];
    const raw = env[variable];
    if (raw !== undefined && raw !== '') {
      if (!/^(1|0|true|false)$/i.test(raw)) throw new ValidationError(variable, `must be true or false, got ${JSON.stringify(raw)}`);
      return /^(1|true)$/i.test(raw);
    }
    const fromFile = file[name];
    if (fromFile === undefined) return undefined;
    if (typeof fromFile !== 'boolean') throw new ValidationError(`${configPath} ${name}`, 'must be true or false');
    return fromFile;
  };
  /** A list from repeated flags, a comma-separated variable, or the file's array (or comma-separated string). */
  const list = (name: string, flag: string, variable: string, normalize: (where: string, raw: string) => string): string[] => {
    const repeated = (values as Record<string, string[] | undefined>)[flag];
    const [where, items]: [string, unknown] = repeated
      ? [`--${flag}`, repeated]
      : env[variable]
        ? [variable, env[variable].split(',')]
        : file[name] !== undefined
          ? [`${configPath} ${name}`, typeof file[name] === 'string' ? file[name].split(',') : file[name]]
          : ['', []];
    if (!Array.isArray(items)) throw new ValidationError(where, 'must be a list of strings');
    return [...new Set(items.filter((item) => typeof item !== 'string' || item.trim() !== '').map((item) => {
      if (typeof item !== 'string') throw new ValidationError(where, 'must be a list of strings');
      return normalize(where, item);
    }))];
  };
  const dbPick = pick('db', 'db', 'SOULS_DB');
  const milliseconds = (name: string, flag: string, variable: string, fallback: number): number => {
    const found = pick(name, flag, variable);
    const value = found ? number(found.where, found.raw) : fallback;
    if (!Number.isInteger(value) || value < 1) throw new ValidationError(found!.where, `must be a whole number of milliseconds, at least 1, got ${JSON.stringify(found!.raw)}`);
    return value;
  };
  const dbTimeoutMs = milliseconds('dbTimeout', 'db-timeout', 'SOULS_DB_TIMEOUT', defaults.dbTimeoutMs);
  const dbConnectTimeoutMs = milliseconds('dbConnectTimeout', 'db-connect-timeout', 'SOULS_DB_CONNECT_TIMEOUT', defaults.dbConnectTimeoutMs);
  const poolPick = pick('dbPoolSize', 'db-pool-size', 'SOULS_DB_POOL_SIZE');
  const dbPoolSize = poolPick ? number(poolPick.where, poolPick.raw) : defaults.dbPoolSize;
  if (!Number.isInteger(dbPoolSize) || dbPoolSize < 1 || dbPoolSize > 1000) {
    throw new ValidationError(poolPick!.where, `must be a whole number of connections from 1 to 1000, got ${JSON.stringify(poolPick!.raw)}`);
  }
  const database = {
    db: dbPick ? String(dbPick.raw) : defaults.db,
    dbFrom: dbPick ? dbPick.where : 'the default of --db',
    dbTimeoutMs,
    dbConnectTimeoutMs,
    dbPoolSize,
    settings: resolveSettings(overrides),
    embedder,
    limits,
  };
  if (!server) {
    return { ...database, host: defaults.host, port: defaults.port, tokens: null, persistedOperations: null, warnings: [], insecure: false, introspection: true, corsOrigins: [], allowedHosts: [], logLevel: defaults.logLevel, logFormat: defaults.logFormat, redis: null, releaseMemoryAfterMs: 0 };
  }
  /** One of `choices`, as given (case aside). */
  const choice = <T extends string>(name: string, flag: string, variable: string, choices: readonly T[], fallback: T): T => {
    const found = pick(name, flag, variable);
    if (!found) return fallback;
    const value = typeof found.raw === 'string' ? found.raw.trim().toLowerCase() : found.raw;
    if (!choices.includes(value as T)) throw new ValidationError(found.where, `must be one of ${choices.join(', ')}, got ${JSON.stringify(found.raw)}`);
    return value as T;
  };
  const tokensPick = pick('tokensFile', 'tokens-file', 'SOULS_TOKENS_FILE');
  const operationsPick = pick('persistedOperations', 'persisted-operations', 'SOULS_PERSISTED_OPERATIONS');
  const hostPick = pick('host', 'host', 'SOULS_HOST');
  const portPick = pick('port', 'port', 'SOULS_PORT');
  const redisPick = pick('redis', 'redis', 'SOULS_REDIS_URL');
  const redisPrefixPick = pick('redisPrefix', 'redis-prefix', 'SOULS_REDIS_PREFIX');
  const prefix = redisPrefixPick ? redisPrefix(redisPrefixPick.where, redisPrefixPick.raw) : defaults.redisPrefix;
  const releasePick = pick('releaseMemoryAfter', 'release-memory-after', 'SOULS_RELEASE_MEMORY_AFTER');
  const releaseSeconds = releasePick ? number(releasePick.where, releasePick.raw) : defaults.releaseMemoryAfterSeconds;
  if (releaseSeconds < 0 || releaseSeconds > 86_400) throw new ValidationError(releasePick!.where, `must be a number of seconds from 0 (never) to 86400, got ${JSON.stringify(releasePick!.raw)}`);
  return {
    ...database,
    host: hostPick ? String(hostPick.raw) : defaults.host,
    port: portPick ? port(portPick.where, portPick.raw) : defaults.port,
    tokens: tokensPick ? loadTokens(String(tokensPick.raw)) : null,
    persistedOperations: operationsPick ? loadKnownOperations(String(operationsPick.raw), operationsPick.where) : null,
    warnings: tokensPick ? tokensFileWarnings(String(tokensPick.raw)) : [],
    insecure: flag('insecure', 'SOULS_INSECURE') ?? false,
    introspection: flag('introspection', 'SOULS_INTROSPECTION') ?? true,
    corsOrigins: list('corsOrigins', 'cors-origin', 'SOULS_CORS_ORIGINS', normalizeOrigin),
    allowedHosts: list('allowedHosts', 'allowed-host', 'SOULS_ALLOWED_HOSTS', normalizeHost),
    logLevel: choice('logLevel', 'log-level', 'SOULS_LOG_LEVEL', logLevels, defaults.logLevel),
    logFormat: choice('logFormat', 'log-format', 'SOULS_LOG_FORMAT', logFormats, defaults.logFormat),
    redis: redisPick ? { url: redisUrl(redisPick.where, redisPick.raw), prefix } : null,
    releaseMemoryAfterMs: Math.round(releaseSeconds * 1000),
  };
}

type Pick = (name: string, flag: string, variable: string) => { where: string; raw: unknown } | undefined;

/** The embeddings endpoint from --embedder-url and --embedder-model (both or neither), its key from SOULS_EMBEDDER_KEY or --embedder-key-file. */
function embedderConfig(pick: Pick, env: NodeJS.ProcessEnv): EmbedderConfig | null {
  const urlPick = pick('embedderUrl', 'embedder-url', 'SOULS_EMBEDDER_URL');
  const modelPick = pick('embedderModel', 'embedder-model', 'SOULS_EMBEDDER_MODEL');
  if (!urlPick && !modelPick) return null;
  if (!urlPick) throw new ValidationError(modelPick!.where, 'names the model of an embeddings endpoint: give its URL too (--embedder-url or SOULS_EMBEDDER_URL)');
  if (!modelPick) throw new ValidationError(urlPick.where, 'needs the model to ask for: give --embedder-model (or SOULS_EMBEDDER_MODEL), e.g. nomic-embed-text');
  let url: string;
  try {
    url = embeddingsUrl(String(urlPick.raw)).href;
  } catch (error) {
    throw new ValidationError(urlPick.where, (error as Error).message);
  }
  const model = String(modelPick.raw).trim();
  if (model === '' || model.length > 256 || /[\u0000-\u001f]/.test(model)) throw new ValidationError(modelPick.where, 'must be a model name of 1 to 256 characters, e.g. nomic-embed-text');
  const keyFilePick = pick('embedderKeyFile', 'embedder-key-file', 'SOULS_EMBEDDER_KEY_FILE');
  let key: string | null = null;
  if (keyFilePick) {
    const path = String(keyFilePick.raw);
    try {
      key = readFileSync(path, 'utf8').trim();
    } catch (error) {
      throw new ValidationError(keyFilePick.where, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`);
    }
    if (key === '' || /\s/.test(key)) throw new ValidationError(keyFilePick.where, `${path} must hold the key alone, on one line`);
  } else if (env.SOULS_EMBEDDER_KEY) {
    key = env.SOULS_EMBEDDER_KEY.trim();
    if (/\s/.test(key)) throw new ValidationError('SOULS_EMBEDDER_KEY', 'must be the key alone, without spaces or line breaks');
  }
  const whole = <T extends number | null>(name: string, flag: string, min: number, max: number, fallback: T, unit = ''): number | T => {
    const found = pick(name, flag, envName(name));
    if (!found) return fallback;
    const value = number(found.where, found.raw);
    if (!Number.isInteger(value) || value < min || value > max) throw new ValidationError(found.where, `must be a whole number${unit} from ${min} to ${max}, got ${JSON.stringify(found.raw)}`);
    return value;
  };
  const secret = key || null;
  return {
    url,
    model,
    key: () => secret,
    batchSize: whole('embedderBatch', 'embedder-batch', 1, 2048, endpointDefaults.batchSize),
    concurrency: whole('embedderConcurrency', 'embedder-concurrency', 1, 16, endpointDefaults.concurrency),
    timeoutMs: whole('embedderTimeout', 'embedder-timeout', 1, 600_000, endpointDefaults.timeoutMs, ' of milliseconds'),
    maxAnswerBytes: whole('embedderMaxAnswerBytes', 'embedder-max-answer-bytes', 1_024, MAX_ANSWER_BYTES, null, ' of bytes'),
  };
}

/** Pads to a column, or leaves one space when the text is wider. */
const column = (text: string, width: number) => (text.length < width ? text.padEnd(width) : `${text} `);

/** The option lines of `souls <command> --help` for these groups: flag, environment variable, what it does. */
export function optionsHelp(groups: readonly OptionGroup[]): string {
  const line = (flag: string, variable: string, text = '') => column(`  ${flag}`, 34) + (text ? column(variable, 33) + text : variable);
  const sections: Record<OptionGroup, () => string[]> = {
    database: () => [
      line('--db PATH|URL', 'SOULS_DB', `(SQLite file, default ${defaults.db}; ':memory:' for none; postgres://… for PostgreSQL)`),
      line('--db-timeout MS', 'SOULS_DB_TIMEOUT', `(PostgreSQL: longest wait for one database call; default ${defaults.dbTimeoutMs})`),
      line('--db-connect-timeout MS', 'SOULS_DB_CONNECT_TIMEOUT', `(PostgreSQL: longest wait for a new connection; a call running longer has the server checked, and a server that does not answer fails calls at once until it does; default ${defaults.dbConnectTimeoutMs})`),
      line('--db-pool-size N', 'SOULS_DB_POOL_SIZE', `(PostgreSQL: connections this process opens at most, its database calls in flight at once; default ${defaults.dbPoolSize})`),
      line('--config FILE', 'SOULS_CONFIG', '(JSON object of any of these settings)'),
    ],
    settings: () =>
      settingNames.map((name) =>
        name === 'similarity'
          ? line('--similarity MODE', envName(name), `(${similarityModes.join(' or ')}; default ${defaultSettings.similarity})`)
          : name === 'clusteringThreshold'
            ? line(`--${kebab(name)} N`, envName(name), `(default: the one \`souls calibrate\` stored in the database for the mode, else the mode's own, ${defaultSettings[name]} for ${defaultSettings.similarity})`)
            : line(`--${kebab(name)} N`, envName(name), `(default ${defaultSettings[name]})`),
      ).concat([
        line('--embedder-url URL', 'SOULS_EMBEDDER_URL', '(an OpenAI-compatible embeddings endpoint for similarity semantic: a base such as http://127.0.0.1:11434/v1, or the full …/embeddings URL; implies --similarity semantic)'),
        line('--embedder-model NAME', 'SOULS_EMBEDDER_MODEL', "(the endpoint's model, e.g. nomic-embed-text; recorded with the database's vectors)"),
        line('--embedder-key-file FILE', 'SOULS_EMBEDDER_KEY_FILE', '(a file holding the key sent as Authorization: Bearer; or the key itself in SOULS_EMBEDDER_KEY)'),
        line('--embedder-batch N', 'SOULS_EMBEDDER_BATCH', `(texts per call; default ${endpointDefaults.batchSize})`),
        line('--embedder-concurrency N', 'SOULS_EMBEDDER_CONCURRENCY', `(calls at once; default ${endpointDefaults.concurrency})`),
        line('--embedder-timeout MS', 'SOULS_EMBEDDER_TIMEOUT', `(longest wait for one call; default ${endpointDefaults.timeoutMs})`),
        line('--embedder-max-answer-bytes N', 'SOULS_EMBEDDER_MAX_ANSWER_BYTES', "(most bytes one answer may take, read or decompressed; default: 64 KiB + per text 1 KiB + 48 a number of its vector, up to 256 MiB)"),
      ]),
    server: () => [
      line('--host HOST', 'SOULS_HOST', `(default ${defaults.host})`),
      line('--port PORT', 'SOULS_PORT', `(default ${defaults.port}; 0 picks a free port)`),
      line('--tokens-file FILE', 'SOULS_TOKENS_FILE', '([{ "name", "token", "scopes": ["read", "observe", "refine", "admin"] }])'),
      line('--persisted-operations FILE', 'SOULS_PERSISTED_OPERATIONS', '(run only these operations: { "<sha256>": "<document>" } or an Apollo persisted query manifest)'),
      line('--insecure', 'SOULS_INSECURE', '(listen beyond loopback without tokens)'),
      line('--no-introspection', 'SOULS_INTROSPECTION=false', '(hide the schema and field suggestions)'),
      line('--cors-origin ORIGIN', 'SOULS_CORS_ORIGINS', '(comma-separated; pages of these origins may call the API; repeatable)'),
      line('--allowed-host NAME', 'SOULS_ALLOWED_HOSTS', '(comma-separated; Host names served without tokens besides loopback)'),
      line('--log-level LEVEL', 'SOULS_LOG_LEVEL', `(${logLevels.join(', ')}; default ${defaults.logLevel})`),
      line('--redis URL', 'SOULS_REDIS_URL', '(redis://host:6379: events through Redis, so subscribers on every replica hear every write)'),
      line('--redis-prefix PREFIX', 'SOULS_REDIS_PREFIX', `(start of the Redis channel names, before the database's; default ${defaults.redisPrefix})`),
      line('--release-memory-after S', 'SOULS_RELEASE_MEMORY_AFTER', `(seconds without work before the server gives its spare memory back to the system; 0: never; default ${defaults.releaseMemoryAfterSeconds})`),
      line('--log-format FORMAT', 'SOULS_LOG_FORMAT', `(json: one JSON object a line; pretty: one human line; auto, the default: pretty on a terminal, else json; on standard output)`),
      ...limitNames.map((name) => line(`--${kebab(name)} N`, envName(name), `(default ${defaultLimits[name]})`)),
    ],
  };
  const titles: Record<OptionGroup, string> = {
    database: 'Database (flag, then environment variable):',
    settings: 'Engine settings (flag, then environment variable; see docs/configuration.md):',
    server: 'Server (flag, then environment variable):',
  };
  return groups.map((group) => `${titles[group]}\n${sections[group]().join('\n')}`).join('\n\n');
}
