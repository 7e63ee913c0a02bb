// souls sync <soul> <file>: keeps a SOUL.md current as the soul changes, from the database or from a running server.
import { existsSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Client } from 'graphql-ws';
import { closeSoulsDb, getSoul, SoulsError, type SoulsDb } from '../engine/index.ts';
import type { SoulMdFormat, SoulState } from '../interop/document.ts';
import { importedFormat, soulState, stateOfDocument, storedDocument } from '../interop/export.ts';
import { detectFormat, formatChoices, parseFormat } from '../interop/formats.ts';
import { syncFile } from '../interop/sync.ts';
import type { Command, CommandIo } from './command.ts';
import { findSoul, openExistingDb } from './database.ts';
import { commandHelp } from './help.ts';
import { splitOptions } from './interop-options.ts';
import { colours } from './terminal.ts';

const help = commandHelp({
  usage: [`sync <soul> <file> [--format ${formatChoices.filter((f) => f !== 'auto').join('|')}] [--url URL [--token T]] [--once] [--force] [options]`],
  description:
    'Keeps a SOUL.md current: writes the soul into FILE now, then again each time the soul changes (a trait added,\n' +
    'revised or reverted, a level-up or its revert, an update), rewriting only the regions Souls owns (see\n' +
    '`souls export --help`). Each write is atomic: a temporary file beside FILE, flushed, then renamed over it, so\n' +
    'FILE is always the old version or the new one; the old one is kept as FILE.bak, both with FILE\'s mode (a FILE that\n' +
    'is a symbolic link is written through; the link stays). A FILE not there yet is written over the SOUL.md the soul\n' +
    'was imported from in that convention, when there is one. When a person has edited the\n' +
    'text inside an owned region since Souls wrote it, sync refuses (nothing is written, the message says where)\n' +
    'and stops; move the edit outside the markers or make it in the soul, then start sync again. Changes are followed\n' +
    'from the database (--db, read only, checked every --interval-ms) or, with --url, from a running server\'s\n' +
    'soulChanged subscription over graphql-ws (a token with the read scope: --token or SOULS_TOKEN). It runs until\n' +
    'Ctrl-C or SIGTERM (exit 0), or once with --once.',
  options: [
    ['--format F', "openclaw, soulmd or frontmatter (default: FILE's convention, else soulmd)"],
    ['--url URL', "a server's API, e.g. http://127.0.0.1:4000/graphql (the WebSocket uses the same path)"],
    ['--token T', 'the bearer token for --url (SOULS_TOKEN)'],
    ['--interval-ms N', 'how often --db is checked (default 200)'],
    ['--once', 'write once and exit'],
    ['--force', 'overwrite edits inside the owned regions (FILE.bak keeps them)'],
  ],
  groups: ['database', 'settings'],
  examples: ['souls sync Mira ~/.openclaw/workspace/SOUL.md --db data/souls.db', 'souls sync Mira SOUL.md --url http://127.0.0.1:4000/graphql --token "$SOULS_TOKEN"'],
});

/** `stored()`: what a missing FILE is written over (the imported document, or the server's export that carries it). */
type Follow = { initial: SoulState; name: string; stored(): string | null; next(onState: (state: SoulState) => void, onError: (error: unknown) => void): () => Promise<void> };

/** From the database: the soul's updated_at and render reference time move with every write that changes its block. */
async function followDb(db: SoulsDb, target: string, requested: string | undefined, file: string, intervalMs: number): Promise<Follow & { format: SoulMdFormat }> {
  const soul = await findSoul(db, target);
  const format = formatOf(requested, file) ?? (await importedFormat(db, soul.id)) ?? 'soulmd';
  const keyOf = (s: { updatedAt: number; orderedAt: number; deletedAt: number | null }) => `${s.updatedAt}:${s.orderedAt}:${s.deletedAt}`;
  let last = keyOf(soul);
  const document = await storedDocument(db, soul.id, format);
  return {
    format,
    initial: await soulState(db, soul.id),
    name: soul.name,
    stored: () => document,
    next(onState, onError) {
      let stopped = false;
      let timer: NodeJS.Timeout;
      const tick = async () => {
        try {
          const now = await getSoul(db, soul.id);
          if (now && keyOf(now) !== last) {
            last = keyOf(now);
            onState(await soulState(db, soul.id));
          }
        } catch (error) {
          onError(error);
          return;
        }
        if (!stopped) timer = setTimeout(tick, intervalMs);
      };
      timer = setTimeout(tick, intervalMs);
      return async () => {
        stopped = true;
        clearTimeout(timer);
        await closeSoulsDb(db);
      };
    },
  };
}

const FORBIDDEN = 4403;

function describeWsError(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (Array.isArray(error)) return error.map((e: { message?: string }) => e.message ?? String(e)).join('; ');
  const event = Object(error) as { code?: unknown; reason?: string; message?: unknown };
  if (event.code === FORBIDDEN) return 'the server refused the connection (4403): it needs a valid token (--token or SOULS_TOKEN)';
  if (typeof event.code === 'number') return `connection closed (${event.code}${event.reason ? ` ${event.reason}` : ''})`;
  if (typeof event.message === 'string') return `connection failed: ${event.message}`;
  return String(error);
}

function firstResult<T>(client: Client, query: string, variables: Record<string, unknown>): Promise<T> {
  return new Promise((resolve, reject) => {
    let done = false;
    client.subscribe<T>(
      { query, variables },
      {
        next: (result) => {
          done = true;
          if (result.errors?.length) reject(new SoulsError(result.errors.map((e) => e.message).join('; ')));
          else resolve(result.data as T);
        },
        error: (error) => reject(new SoulsError(describeWsError(error))),
        complete: () => {
          if (!done) reject(new SoulsError('the server answered nothing'));
        },
      },
    );
  });
}

const soulFields = 'id name soulMd(format: $format)';

/** From a running server: the soul read once, then every soulChanged event, each carrying the server's export. */
async function followUrl(url: string, token: string | null, target: string, format: SoulMdFormat): Promise<Follow> {
  // Imported here: every command is loaded by every run of `souls` (the server's among them), and only this one needs them.
  const [{ createClient }, { default: WebSocket }] = await Promise.all([import('graphql-ws'), import('ws')]);
  const client = createClient({
    url: url.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    retryAttempts: 3,
    connectionParams: token ? { authorization: `Bearer ${token}` } : undefined,
    shouldRetry: (event) => (event as { code?: unknown }).code !== FORBIDDEN,
  });
  const formatArg = format.toUpperCase();
  type Found = { id: string; name: string; soulMd: string } | null;
  const byId = /^[1-9][0-9]{0,14}$/.test(target);
  const data = await firstResult<{ soul?: Found; soulByName?: Found }>(
    client,
    byId ? `query($id: ID!, $format: SoulMdFormat!) { soul(id: $id) { ${soulFields} } }` : `query($name: String!, $format: SoulMdFormat!) { soulByName(name: $name) { ${soulFields} } }`,
    byId ? { id: target, format: formatArg } : { name: target, format: formatArg },
  ).catch(async (error: unknown) => {
    await client.dispose();
    throw error;
  });
  const found = data.soul ?? data.soulByName ?? null;
  if (!found) {
    await client.dispose();
    throw new SoulsError(`no soul ${JSON.stringify(target)} on ${url}`);
  }
  // Subscribed before the state is read again, so a change in between is either in that read or an event.
  let onState: ((state: SoulState) => void) | null = null;
  let onError: ((error: unknown) => void) | null = null;
  let early: SoulState | null = null;
  let latest: string | null = null;
  let earlyError: unknown = null;
  const unsubscribe = client.subscribe<{ soulChanged: { soul: { id: string; name: string; soulMd: string } } }>(
    { query: `subscription($id: ID!, $format: SoulMdFormat!) { soulChanged(soulId: $id) { soul { ${soulFields} } } }`, variables: { id: found.id, format: formatArg } },
    {
      next: (result) => {
        if (result.errors?.length) {
          const error = new SoulsError(result.errors.map((e) => e.message).join('; '));
          if (onError) onError(error);
          else earlyError = error;
        } else if (result.data) {
          latest = result.data.soulChanged.soul.soulMd;
          const state = stateOfDocument(format, latest, result.data.soulChanged.soul.name);
          if (onState) onState(state);
          else early = state;
        }
      },
      error: (error) => {
        const wrapped = new SoulsError(describeWsError(error));
        if (onError) onError(wrapped);
        else earlyError = wrapped;
      },
      complete: () => {},
    },
  );
  const again = await firstResult<{ soul: Found }>(client, `query($id: ID!, $format: SoulMdFormat!) { soul(id: $id) { ${soulFields} } }`, { id: found.id, format: formatArg }).catch(async (error: unknown) => {
    unsubscribe();
    await client.dispose();
    throw error;
  });
  const soul = again.soul ?? found;
  latest ??= soul.soulMd;
  return {
    initial: stateOfDocument(format, soul.soulMd, soul.name),
    name: soul.name,
    stored: () => latest,
    next(stateHandler, errorHandler) {
      onState = stateHandler;
      onError = errorHandler;
      if (earlyError !== null) errorHandler(earlyError);
      else if (early !== null) stateHandler(early);
      return async () => {
        unsubscribe();
        await client.dispose();
      };
    },
  };
}

/** --format, else FILE's convention; null when neither tells (then the soul's imported one, else soulmd). */
function formatOf(requested: string | undefined, file: string): SoulMdFormat | null {
  const choice = parseFormat('--format', requested ?? 'auto');
  if (choice !== 'auto') return choice;
  return existsSync(file) ? detectFormat(new Map([[basename(file), readFileSync(file, 'utf8')]])) : null;
}

function positiveInt(flag: string, raw: string | boolean | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 10 || n > 60_000) throw new SoulsError(`${flag} must be a whole number of milliseconds from 10 to 60000, got ${JSON.stringify(raw)}`);
  return n;
}

export const syncCommand: Command = {
  name: 'sync',
  summary: "keep a SOUL.md current as the soul changes (only Souls' regions, atomically, edits refused)",
  help,
  async run(argv, io: CommandIo) {
    const { positionals, values, config } = splitOptions('sync', argv, ['soul', 'file'], {
      format: { type: 'string' },
      url: { type: 'string' },
      token: { type: 'string' },
      'interval-ms': { type: 'string' },
      once: { type: 'boolean' },
      force: { type: 'boolean' },
    }, io.env);
    const [target, file] = positionals;
    const requested = typeof values.format === 'string' ? values.format : undefined;
    const chosen = formatOf(requested, file);
    const intervalMs = positiveInt('--interval-ms', values['interval-ms'] as string | undefined, 200);
    const url = typeof values.url === 'string' ? values.url : null;
    const token = typeof values.token === 'string' ? values.token : (io.env.SOULS_TOKEN ?? null);
    const c = colours(io.stdout, io.env);
    const follow = url ? { ...(await followUrl(url, token, target, chosen ?? 'soulmd')), format: chosen ?? 'soulmd' } : await followDb(await openExistingDb(config, 'sync'), target, requested, file, intervalMs);
    const format = follow.format;

    const write = (state: SoulState) => {
      const { written } = syncFile(format, file, state, { force: values.force === true, stored: follow.stored() });
      io.stdout.write(written ? `${c.green('wrote')} ${file}: "${state.name}", ${state.principles.length} trait(s)\n` : `${file} already shows "${state.name}"\n`);
    };
    write(follow.initial);
    if (values.once) {
      await follow.next(() => {}, () => {})();
      return 0;
    }
    return new Promise<number>((resolve) => {
      let queue = Promise.resolve();
      let finished = false;
      const finish = (code: number) => {
        if (finished) return;
        finished = true;
        void stop().then(() => resolve(code));
      };
      const stop = follow.next(
        (state) => {
          queue = queue.then(() => {
            if (finished) return;
            try {
              write(state);
            } catch (error) {
              io.stderr.write(`souls: ${error instanceof Error ? error.message : String(error)}\n`);
              finish(1);
            }
          });
        },
        (error) => {
          io.stderr.write(`souls: ${error instanceof Error ? error.message : String(error)}\n`);
          finish(1);
        },
      );
      io.stdout.write(`following "${follow.name}" ${url ? `on ${url}` : `in ${config.db}`} (${format}); Ctrl-C to stop\n`);
      process.once('SIGINT', () => finish(0));
      process.once('SIGTERM', () => finish(0));
    });
  },
};
