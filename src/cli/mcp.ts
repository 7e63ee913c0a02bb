// souls mcp --db FILE — the MCP tools over stdio, for desktop agents and IDEs that start the server themselves.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from './command.ts';
import { closeSoulsDb, openSoulsDb, SoulsError } from '../engine/index.ts';
import { localCaller, scopes as allScopes, type Caller, type Scope } from '../server/auth.ts';
import { loadConfig } from '../server/config.ts';

const help = `Usage: souls mcp [--db PATH] [--scopes LIST] [--refiner [NAME]] [knob flags]

Serves the Souls MCP tools, resources and skill prompts over stdio (JSON-RPC on stdin and stdout; messages for
people go to stderr). An MCP client starts it as a child process; see "Use it from an agent" in the README.

Options:
  --db PATH          the database (SOULS_DB; default ./data/souls.db); created if missing
  --scopes LIST      comma-separated scopes the session gets (read, observe, refine, admin; default all):
                     tools outside them are not listed and are refused
  --refiner [NAME]   act as the refiner (created with \`souls refiner init\`): every change applied through
                     the tools deposits a refinement_outcome shard on it
  Knob flags (--trait-limit N, --similarity MODE, …) and --config FILE as for \`souls serve\`.

Example:
  souls mcp --db ./data/souls.db --refiner`;

/** Our own flags out of argv; the rest (--db, knobs, --config) is the server's configuration. */
export function mcpFlags(argv: readonly string[]): { scopes: Scope[] | null; refiner: string | null | undefined; rest: string[] } {
  const rest: string[] = [];
  let scopes: Scope[] | null = null;
  let refiner: string | null | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--scopes' || arg.startsWith('--scopes=')) {
      const raw = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      if (raw === undefined) throw new SoulsError('--scopes needs a comma-separated list of read, observe, refine, admin');
      const list = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
      const unknown = list.find((s) => !(allScopes as readonly string[]).includes(s));
      if (unknown !== undefined || list.length === 0) throw new SoulsError(`--scopes: ${unknown === undefined ? 'give at least one scope' : `unknown scope "${unknown}"`} (known: ${allScopes.join(', ')})`);
      scopes = [...new Set(list)] as Scope[];
    } else if (arg === '--refiner') {
      const next = argv[i + 1];
      refiner = next !== undefined && !next.startsWith('--') ? argv[++i] : null;
    } else rest.push(arg);
  }
  return { scopes, refiner, rest };
}

export const mcpCommand: Command = {
  name: 'mcp',
  summary: 'serve the MCP tools over stdio for an agent',
  help,
  run: async (argv, io) => {
    if (argv.includes('--help') || argv.includes('-h')) {
      io.stdout.write(`${help}\n`);
      return 0;
    }
    const flags = mcpFlags(argv);
    const config = loadConfig(flags.rest, io.env);
    if (config.db !== ':memory:') mkdirSync(dirname(config.db), { recursive: true });
    const db = openSoulsDb({ path: config.db, settings: config.settings });
    // Loaded after the database opens, so a bad --db fails fast with its own message.
    const [{ serveStdio }, { createSoulsMcpServer }, { loadSkillSet }, { findRefiner }, { createSoulsPubSub }] = await Promise.all([
      import('@modelcontextprotocol/server/stdio'),
      import('../mcp/server.ts'),
      import('../mcp/skills.ts'),
      import('../mcp/refiner.ts'),
      import('../server/pubsub.ts'),
    ]);
    let refinerId: number | null = null;
    if (flags.refiner !== undefined) {
      const refiner = await findRefiner(db, flags.refiner);
      if (!refiner) {
        closeSoulsDb(db);
        throw new SoulsError(`no refiner${flags.refiner ? ` named ${JSON.stringify(flags.refiner)}` : ''} in ${config.db}: create it with \`souls refiner init --db ${config.db}${flags.refiner ? ` --name ${flags.refiner}` : ''}\``);
      }
      refinerId = refiner.id;
    }
    const caller: Caller = flags.scopes === null ? localCaller : { name: 'stdio', scopes: new Set(flags.scopes) };
    const skills = await loadSkillSet();
    const pubsub = createSoulsPubSub();
    const handle = serveStdio(
      ({ era }) => createSoulsMcpServer({ db, pubsub, caller, refinerId, skills, updates: era === 'modern' ? 'all' : 'subscribed' }),
      { onerror: (error) => io.stderr.write(`souls mcp: ${error.message}\n`) },
    );
    io.stderr.write(`souls mcp: serving ${config.db} over stdio (scopes: ${[...caller.scopes].join(', ')}${refinerId !== null ? `; acting as refiner soul ${refinerId}` : ''})\n`);
    // The client closing stdin ends the session (the MCP stdio binding); so do SIGINT and SIGTERM.
    await new Promise<void>((resolve) => {
      process.stdin.once('end', resolve);
      process.stdin.once('close', resolve);
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await handle.close().catch(() => undefined);
    closeSoulsDb(db);
    return 0;
  },
};
