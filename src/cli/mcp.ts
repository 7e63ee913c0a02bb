// souls mcp --db FILE — the MCP tools over stdio, for desktop agents and IDEs that start the server themselves.
import type { Command } from './command.ts';
import { closeSoulsDb, SoulsError } from '../engine/index.ts';
import { localCaller, scopes as allScopes, type Caller, type Scope } from '../server/auth.ts';
import { parseArguments, UsageError } from './arguments.ts';
import { openDb } from './database.ts';
import { commandHelp } from './help.ts';

const help = commandHelp({
  usage: ['mcp [--scopes LIST] [--refiner [NAME]] [options]'],
  description:
    'Serves the Souls MCP tools, resources and skill prompts over stdio (JSON-RPC on stdin and stdout; messages for\n' +
    'people go to stderr). An MCP client starts it as a child process; see docs/agents.md.\n' +
    'The database is created if missing.',
  options: [
    ['--scopes LIST', 'comma-separated scopes of the session (read, observe, refine, admin; default all): tools outside them are not listed and are refused'],
    ['--refiner [NAME]', 'act as the refiner (created with `souls refiner init`): every change applied through the tools deposits a refinement_outcome shard on it'],
  ],
  groups: ['database', 'settings'],
  examples: ['souls mcp --db ./data/souls.db', 'souls mcp --db ./data/souls.db --scopes read   # a read-only session', 'souls mcp --db ./data/souls.db --refiner'],
});

/** `--refiner` takes an optional name: a bare one becomes `--refiner=` so the parser sees one value either way. */
function attachRefinerName(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] !== '--refiner') out.push(argv[i]);
    else if (argv[i + 1] !== undefined && !argv[i + 1].startsWith('-')) out.push(`--refiner=${argv[++i]}`);
    else out.push('--refiner=');
  }
  return out;
}

function parseScopes(raw: string): Scope[] {
  const list = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = list.find((s) => !(allScopes as readonly string[]).includes(s));
  if (unknown !== undefined || list.length === 0) throw new UsageError(`--scopes: ${unknown === undefined ? 'give at least one scope' : `unknown scope "${unknown}"`} (known: ${allScopes.join(', ')})`);
  return [...new Set(list)] as Scope[];
}

export const mcpCommand: Command = {
  name: 'mcp',
  summary: 'serve the MCP tools over stdio for an agent',
  help,
  run: async (argv, io) => {
    const { values, config } = parseArguments('mcp', attachRefinerName(argv), { options: { scopes: { type: 'string' }, refiner: { type: 'string' } }, groups: ['database', 'settings'] }, io.env);
    const scopes = typeof values.scopes === 'string' ? parseScopes(values.scopes) : null;
    const refinerName = typeof values.refiner === 'string' ? values.refiner || null : undefined;
    const db = await openDb(config!);
    // Loaded after the database opens, so a bad --db fails fast with its own message.
    const [{ serveStdio }, { createSoulsMcpServer }, { loadSkillSet }, { findRefiner }, { createSoulsPubSub }] = await Promise.all([
      import('@modelcontextprotocol/server/stdio'),
      import('../mcp/server.ts'),
      import('../mcp/skills.ts'),
      import('../mcp/refiner.ts'),
      import('../server/pubsub.ts'),
    ]);
    let refinerId: number | null = null;
    if (refinerName !== undefined) {
      const refiner = await findRefiner(db, refinerName);
      if (!refiner) {
        await closeSoulsDb(db);
        throw new SoulsError(`no refiner${refinerName ? ` named ${JSON.stringify(refinerName)}` : ''} in ${config!.db}: create it with \`souls refiner init --db ${config!.db}${refinerName ? ` --name ${refinerName}` : ''}\``);
      }
      refinerId = refiner.id;
    }
    const caller: Caller = scopes === null ? localCaller : { name: 'stdio', scopes: new Set(scopes) };
    const skills = await loadSkillSet();
    const pubsub = createSoulsPubSub();
    const handle = serveStdio(
      ({ era }) => createSoulsMcpServer({ db, pubsub, caller, refinerId, skills, updates: era === 'modern' ? 'all' : 'subscribed' }),
      { onerror: (error) => io.stderr.write(`souls mcp: ${error.message}\n`) },
    );
    io.stderr.write(`souls mcp: serving ${config!.db} over stdio (scopes: ${[...caller.scopes].join(', ')}${refinerId !== null ? `; acting as refiner soul ${refinerId}` : ''})\n`);
    // The client closing stdin ends the session (the MCP stdio binding); so do SIGINT and SIGTERM.
    await new Promise<void>((resolve) => {
      process.stdin.once('end', resolve);
      process.stdin.once('close', resolve);
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await handle.close().catch(() => undefined);
    await closeSoulsDb(db);
    return 0;
  },
};
