// souls serve: the GraphQL API, GraphiQL and the character sheet on one port.
import { isLoopback } from '../server/auth.ts';
import { normalizeHost } from '../server/origin.ts';
import { closeSoulsDb, SoulsError, type ClusteringThresholdSource } from '../engine/index.ts';
import { parseArguments } from './arguments.ts';
import type { Command } from './command.ts';
import { openDb } from './database.ts';
import { describeDb, redactUrl } from '../store/postgres-pool.ts';
import { commandHelp } from './help.ts';
import { shownUrl } from '../embedder/endpoint.ts';

const thresholdSourceText: Record<ClusteringThresholdSource, string> = {
  setting: 'set',
  default: "the mode's default",
  calibrated: 'calibrated for this database by `souls calibrate`',
};

export const serveCommand: Command = {
  name: 'serve',
  summary: 'serve the GraphQL API, GraphiQL and the character sheet (the default command)',
  help: commandHelp({
    usage: ['serve [options]'],
    description:
      'Serves the GraphQL API on /graphql (GraphiQL in a browser; WebSocket and SSE subscriptions on the same path) and the\n' +
      'character sheet on /. Creates the database file and its folder if needed. SIGINT or SIGTERM closes connections,\n' +
      'checkpoints the database and exits 0.',
    groups: ['database', 'settings', 'server'],
    examples: [
      'souls serve                                   # http://127.0.0.1:4000/, database ./data/souls.db',
      'souls serve --port 0 --db /tmp/try.db         # a free port and a scratch database',
      'souls serve --db postgres://souls@db/souls     # PostgreSQL, shared by several replicas',
      'souls serve --host 0.0.0.0 --tokens-file tokens.json --trait-limit 12',
      'souls serve --db postgres://souls@db/souls --redis redis://cache:6379   # a replica: events reach every replica',
      'souls serve --embedder-url http://127.0.0.1:11434/v1 --embedder-model nomic-embed-text   # your own model (docs/embeddings.md)',
    ],
  }),
  async run(argv, io) {
    const config = parseArguments('serve', argv, { groups: ['database', 'settings', 'server'] }, io.env).config!;
    if (config.tokens === null && !isLoopback(config.host) && !config.insecure) {
      throw new SoulsError(`refusing to listen on ${config.host} without tokens: give --tokens-file, listen on a loopback host, or pass --insecure`);
    }
    const db = await openDb(config);
    // Loaded here so that the other commands start without the whole server.
    const { buildApp } = await import('../server/app.ts');
    const { createLogger } = await import('../server/log.ts');
    const logger = createLogger({ level: config.logLevel, format: config.logFormat, clock: db.clock });
    const redis = config.redis && { url: config.redis.url, channelPrefix: (await import('../server/redis-events.ts')).eventChannelPrefix(config.redis.prefix, config.db) };
    const app = buildApp({
      logger,
      db,
      tokens: config.tokens,
      limits: config.limits,
      introspection: config.introspection,
      corsOrigins: config.corsOrigins,
      persistedOperations: config.persistedOperations,
      redis,
      memoryRelease: config.releaseMemoryAfterMs > 0 ? { quietMs: config.releaseMemoryAfterMs } : null,
      allowedHosts: config.insecure && !isLoopback(config.host) ? [...config.allowedHosts, normalizeHost('--host', config.host)] : config.allowedHosts,
    });
    const { url } = await app.start(config.port, config.host).catch(async (error: NodeJS.ErrnoException) => {
      await closeSoulsDb(db);
      if (error.code === 'EADDRINUSE') throw new SoulsError(`port ${config.port} on ${config.host} is in use: stop what listens there, or give another --port (0 picks a free one)`);
      if (error.code === 'EACCES') throw new SoulsError(`port ${config.port} on ${config.host} is not allowed to this user: give a port above 1023`);
      throw error;
    });
    const say = (line: string) => io.stdout.write(`${line}\n`);
    const warn = (line: string) => io.stderr.write(`${line}\n`);
    // Handlers first: whoever waits for the lines below may signal at once (the first process.on installs Node's handler).
    let stopping = false;
    const shutdown = (signal: string) => {
      if (stopping) return;
      stopping = true;
      say(`${signal}: closing connections and checkpointing the database…`);
      logger.info({ signal }, 'stopping');
      app.stop().then(
        ({ checkpointDeferred }) => {
          logger.info({ signal, checkpointDeferred }, 'stopped');
          // Every commit is in the write-ahead log beside the file: SQLite applies it on the next open.
          if (checkpointDeferred) say(`Checkpoint deferred (${checkpointDeferred}): the -wal file beside ${config.db} keeps every write and is applied on the next start.`);
          process.exit(0);
        },
        (error: unknown) => {
          logger.error({ signal, error: error instanceof Error ? error.message : String(error) }, 'shutdown failed');
          warn(io.env.SOULS_DEBUG ? String((error as Error)?.stack ?? error) : `souls: shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
          process.exit(1);
        },
      );
    };
    // graphql-js abandons sibling resolvers when a non-null error nulls their parent; one that rejects later must not
    // take the server down with it.
    process.on('unhandledRejection', (reason) => warn(`souls: an abandoned operation failed: ${reason instanceof Error ? reason.message : String(reason)}`));
    process.on('SIGINT', () => shutdown('SIGINT'));
    process.on('SIGTERM', () => shutdown('SIGTERM'));
    logger.info({ url, host: config.host, port: Number(new URL(url).port), database: describeDb(config.db), tokens: config.tokens?.length ?? 0, logLevel: config.logLevel }, 'listening');
    say(`Character sheet on ${url.replace(/graphql$/, '')} (the web app)`);
    say(`Souls API on ${url} (open it in a browser for GraphiQL; WebSocket and SSE subscriptions on the same path)`);
    say(`MCP for agents on ${url.replace(/graphql$/, 'mcp')} (Streamable HTTP; \`souls mcp\` serves stdio)`);
    say(`Database: ${describeDb(config.db)}`);
    say(`Similarity ${db.settings.similarity}, clustering threshold ${db.settings.clusteringThreshold} (${thresholdSourceText[db.clusteringThresholdSource]})`);
    if (config.embedder) say(`Vectors (similarity semantic) from ${config.embedder.model} at ${shownUrl(new URL(config.embedder.url))}, off the request path`);
    if (redis) say(`Events through Redis ${redactUrl(config.redis!.url)}, channels ${redis.channelPrefix}* (subscribers on every replica hear every write)`);
    for (const warning of config.warnings) warn(`WARNING: ${warning}`);
    if (config.tokens === null) {
      say(
        isLoopback(config.host)
          ? 'No tokens file: every caller on this machine has every scope (read, observe, refine, admin).'
          : `WARNING: --insecure: anyone who can reach ${config.host} has every scope. Give --tokens-file to require tokens.`,
      );
      if (config.allowedHosts.length > 0) say(`Host names served besides loopback: ${config.allowedHosts.join(', ')}`);
    } else {
      say(`Tokens: ${config.tokens.map((t) => `${t.name} (${t.scopes.join(', ')})`).join('; ')}`);
    }
    const listed = config.persistedOperations?.size ?? 0;
    if (listed > 0) say(`Allow-list: only the ${listed === 1 ? 'operation' : `${listed} operations`} of the persisted operations file run.`);
    say(config.corsOrigins.length > 0 ? `Pages of these origins may call the API: ${config.corsOrigins.join(', ')}` : 'Cross-origin pages are refused (same origin only; --cors-origin allows one).');
    return 0;
  },
};
