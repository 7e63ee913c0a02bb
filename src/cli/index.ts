// souls serve | render | backup | seed-demo — the command line around the engine and the API.
import { lstatSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { isLoopback } from '../server/auth.ts';
import { loadConfig, usage } from '../server/config.ts';
import { normalizeHost } from '../server/origin.ts';
import type { Command, CommandIo } from './command.ts';
import { exportCommand } from './export.ts';
import { importCommand } from './import.ts';
import { syncCommand } from './sync.ts';
import { closeSoulsDb, describeError, getSoul, getSoulByName, openSoulsDb, renderSoul, SoulsError } from '../engine/index.ts';

function openDb(path: string, settings: ReturnType<typeof loadConfig>['settings']) {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  return openSoulsDb({ path, settings });
}

/** For the commands that only read: the database must exist already, so a mistyped path creates nothing. */
function openExistingDb(config: ReturnType<typeof loadConfig>, command: string) {
  if (config.db !== ':memory:' && !statSync(config.db, { throwIfNoEntry: false })?.isFile()) {
    throw new SoulsError(`no database at ${config.db} (${config.dbFrom}): ${command} only reads an existing one; \`souls serve\` or \`souls seed-demo\` creates it`);
  }
  // Read-only: never created, never migrated, writes refused.
  return openSoulsDb({ path: config.db, settings: config.settings, mode: 'read-only' });
}

function version(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

async function serve(argv: string[]): Promise<void> {
  const config = loadConfig(argv, process.env);
  if (config.tokens === null && !isLoopback(config.host) && !config.insecure) {
    throw new SoulsError(`refusing to listen on ${config.host} without tokens: give --tokens-file, listen on a loopback host, or pass --insecure`);
  }
  const db = openDb(config.db, config.settings);
  // Loaded here so that render and backup start without the whole server.
  const { buildApp } = await import('../server/app.ts');
  const app = buildApp({
    db,
    tokens: config.tokens,
    limits: config.limits,
    introspection: config.introspection,
    corsOrigins: config.corsOrigins,
    allowedHosts: config.insecure && !isLoopback(config.host) ? [...config.allowedHosts, normalizeHost('--host', config.host)] : config.allowedHosts,
  });
  const { url } = await app.start(config.port, config.host);
  // Handlers first: whoever waits for the lines below may signal at once (the first process.on installs Node's handler).
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: closing connections and checkpointing the database…`);
    app.stop().then(
      ({ checkpointDeferred }) => {
        // Every commit is in the write-ahead log beside the file: SQLite applies it on the next open.
        if (checkpointDeferred) console.log(`Checkpoint deferred (${checkpointDeferred}): the -wal file beside ${config.db} keeps every write and is applied on the next start.`);
        process.exit(0);
      },
      (error: unknown) => {
        console.error(process.env.SOULS_DEBUG ? error : `souls: shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
        process.exit(1);
      },
    );
  };
  // graphql-js abandons sibling resolvers when a non-null error nulls their parent; one that rejects later must not
  // take the server down with it.
  process.on('unhandledRejection', (reason) => console.error(`souls: an abandoned operation failed: ${reason instanceof Error ? reason.message : String(reason)}`));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  console.log(`Character sheet on ${url.replace(/graphql$/, '')} (the web app)`);
  console.log(`Souls API on ${url} (open it in a browser for GraphiQL; WebSocket and SSE subscriptions on the same path)`);
  console.log(`Database: ${config.db}`);
  for (const warning of config.warnings) console.warn(`WARNING: ${warning}`);
  if (config.tokens === null) {
    console.log(
      isLoopback(config.host)
        ? 'No tokens file: every caller on this machine has every scope (read, observe, refine, admin).'
        : `WARNING: --insecure: anyone who can reach ${config.host} has every scope. Give --tokens-file to require tokens.`,
    );
    if (config.allowedHosts.length > 0) console.log(`Host names served besides loopback: ${config.allowedHosts.join(', ')}`);
  } else {
    console.log(`Tokens: ${config.tokens.map((t) => `${t.name} (${t.scopes.join(', ')})`).join('; ')}`);
  }
  console.log(config.corsOrigins.length > 0 ? `Pages of these origins may call the API: ${config.corsOrigins.join(', ')}` : 'Cross-origin pages are refused (same origin only; --cors-origin allows one).');
}

async function render(argv: string[]): Promise<void> {
  const full = argv.includes('--full');
  const rest = argv.filter((a) => a !== '--full');
  const [target, ...options] = rest;
  if (!target) throw new SoulsError('render needs a soul id or name');
  const config = loadConfig(options, process.env);
  const db = openExistingDb(config, 'render');
  try {
    const soul = /^[1-9][0-9]{0,14}$/.test(target) ? await getSoul(db, Number(target)) : await getSoulByName(db, target);
    if (!soul) throw new SoulsError(`no soul ${target}`);
    process.stdout.write(await renderSoul(db, soul.id, { includeProvenance: full }));
  } finally {
    closeSoulsDb(db);
  }
}

/** Where a backup may be written: a new plain file in an existing folder, never through a symbolic link. */
function checkBackupTarget(target: string): void {
  if (target === ':memory:') throw new SoulsError('backup target :memory: is not a file: name a file to write the copy to');
  const existing = lstatOrNull(target);
  // VACUUM INTO would write through a link, even a dangling one, to wherever it points.
  if (existing?.isSymbolicLink()) throw new SoulsError(`backup target ${target} is a symbolic link: name a new file`);
  if (existing) throw new SoulsError(`backup target ${target} already exists: choose a new file`);
  const folder = dirname(resolve(target));
  if (!lstatOrNull(folder)?.isDirectory()) throw new SoulsError(`backup target folder ${folder} does not exist: create it first`);
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

async function backup(argv: string[]): Promise<void> {
  const [target, ...options] = argv;
  if (!target) throw new SoulsError('backup needs a target file');
  checkBackupTarget(target);
  const config = loadConfig(options, process.env);
  if (config.db === ':memory:') throw new SoulsError('an in-memory database (:memory:) has nothing to back up: give --db FILE');
  const db = openExistingDb(config, 'backup');
  try {
    db.store.backup(target);
    console.log(`Backed up ${config.db} to ${target}`);
  } finally {
    closeSoulsDb(db);
  }
}

/** The demo world (scripts/demo.ts), so every screen of the character sheet has content. */
async function seedDemo(argv: string[]): Promise<void> {
  const { runDemo } = await import('../../scripts/demo.ts');
  await runDemo(argv);
}

const builtIn = (name: string, summary: string, body: (argv: string[]) => Promise<void>): Command => ({
  name,
  summary,
  help: usage(),
  run: async (argv) => {
    await body(argv);
    return 0;
  },
});

const commands: Command[] = [
  builtIn('serve', 'serve the API, GraphiQL and the character sheet', serve),
  builtIn('render', 'print a soul\'s rendered block', render),
  builtIn('backup', 'copy the database to a new file', backup),
  builtIn('seed-demo', 'fill a database with the demo world', seedDemo),
  importCommand,
  exportCommand,
  syncCommand,
];

const [command, ...args] = process.argv.slice(2);
const found = command === undefined || command.startsWith('--') ? commands[0] : commands.find((c) => c.name === command);
const io: CommandIo = { stdout: process.stdout, stderr: process.stderr, env: process.env };

if (command === 'help' || command === '--help' || command === '-h') {
  console.log(usage());
} else if (command === 'version' || command === '--version' || command === '-v') {
  console.log(`souls ${version()}`);
} else if (!found) {
  console.error(`Unknown command "${command}".\n\n${usage()}`);
  process.exit(2);
} else {
  found.run(command === undefined || command.startsWith('--') ? process.argv.slice(2) : args, io).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      // A message for people; the whole error with SOULS_DEBUG=1.
      console.error(process.env.SOULS_DEBUG ? error : `souls: ${describeError(error)}`);
      process.exit(1);
    },
  );
}
