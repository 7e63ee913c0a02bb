// souls serve | render | backup | seed-demo — the command line around the engine and the API.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { isLoopback } from './auth.ts';
import { loadConfig, usage } from './config.ts';
import { closeSoulsDb, getSoul, getSoulByName, openSoulsDb, renderSoul, SoulsError } from './engine/index.ts';

function openDb(path: string, settings: ReturnType<typeof loadConfig>['settings']) {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  return openSoulsDb({ path, settings });
}

async function serve(argv: string[]): Promise<void> {
  const config = loadConfig(argv, process.env);
  if (config.tokens === null && !isLoopback(config.host) && !config.insecure) {
    throw new SoulsError(`refusing to listen on ${config.host} without tokens: give --tokens-file, listen on a loopback host, or pass --insecure`);
  }
  const db = openDb(config.db, config.settings);
  // Loaded here so that render and backup start without the whole server.
  const { buildApp } = await import('./app.ts');
  const app = buildApp({ db, tokens: config.tokens, limits: config.limits, introspection: config.introspection });
  const { url } = await app.start(config.port, config.host);
  // Handlers first: whoever waits for the lines below may signal at once (the first process.on installs Node's handler).
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: closing connections and checkpointing the database…`);
    app.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  console.log(`Souls API on ${url} (open it in a browser for GraphiQL; WebSocket and SSE subscriptions on the same path)`);
  console.log(`Database: ${config.db}`);
  if (config.tokens === null) {
    console.log(
      isLoopback(config.host)
        ? 'No tokens file: every caller on this machine has every scope (read, observe, refine, admin).'
        : `WARNING: --insecure: anyone who can reach ${config.host} has every scope. Give --tokens-file to require tokens.`,
    );
  } else {
    console.log(`Tokens: ${config.tokens.map((t) => `${t.name} (${t.scopes.join(', ')})`).join('; ')}`);
  }
}

async function render(argv: string[]): Promise<void> {
  const full = argv.includes('--full');
  const rest = argv.filter((a) => a !== '--full');
  const [target, ...options] = rest;
  if (!target) throw new SoulsError('render needs a soul id or name');
  const config = loadConfig(options, process.env);
  const db = openDb(config.db, config.settings);
  try {
    const soul = /^\d+$/.test(target) ? await getSoul(db, Number(target)) : await getSoulByName(db, target);
    if (!soul) throw new SoulsError(`no soul ${target}`);
    process.stdout.write(await renderSoul(db, soul.id, { includeProvenance: full }));
  } finally {
    closeSoulsDb(db);
  }
}

async function backup(argv: string[]): Promise<void> {
  const [target, ...options] = argv;
  if (!target) throw new SoulsError('backup needs a target file');
  // VACUUM INTO refuses an existing file; say so plainly instead of dumping the SQLite error.
  if (existsSync(target)) throw new SoulsError(`backup target ${target} already exists: choose a new file`);
  const config = loadConfig(options, process.env);
  const db = openDb(config.db, config.settings);
  try {
    db.store.backup(target);
    console.log(`Backed up ${config.db} to ${target}`);
  } finally {
    closeSoulsDb(db);
  }
}

/** The demo world (scripts/demo.ts), so every screen of the character sheet has content. */
async function seedDemo(argv: string[]): Promise<void> {
  const { runDemo } = await import('../scripts/demo.ts');
  await runDemo(argv);
}

const [command, ...args] = process.argv.slice(2);
const commands: Record<string, (argv: string[]) => Promise<void>> = { serve, render, backup, 'seed-demo': seedDemo };
const run = command === undefined || command.startsWith('--') ? () => serve(process.argv.slice(2)) : commands[command];

if (command === 'help' || command === '--help' || command === '-h') {
  console.log(usage());
} else if (!run) {
  console.error(`Unknown command "${command}".\n\n${usage()}`);
  process.exit(2);
} else {
  run(args).catch((error: unknown) => {
    // A message for people; the whole error with SOULS_DEBUG=1.
    console.error(process.env.SOULS_DEBUG ? error : `souls: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
