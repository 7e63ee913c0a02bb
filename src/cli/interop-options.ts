/** What import, export and sync share on the command line: their own flags apart from the database's, and opening it. */
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { getSoul, getSoulByName, openSoulsDb, SoulsError, type Soul, type SoulsDb } from '../engine/index.ts';
import { loadConfig } from '../server/config.ts';

type Values = Record<string, string | boolean | undefined>;

/**
 * Leading positionals, then this command's own flags (parsed by util.parseArgs), the rest left for the shared
 * database and knob flags (`--db`, `--trait-limit -1`, …), which loadConfig parses strictly.
 */
export function splitOptions(argv: readonly string[], own: ParseArgsOptionsConfig): { positionals: string[]; values: Values; config: ReturnType<typeof loadConfig> } {
  const firstFlag = argv.findIndex((a) => a.startsWith('-') && !/^-\d/.test(a));
  const positionals = firstFlag === -1 ? [...argv] : argv.slice(0, firstFlag);
  const flags = firstFlag === -1 ? [] : argv.slice(firstFlag);
  const { tokens } = parseArgs({ args: flags, options: own, strict: false, allowPositionals: true, tokens: true });
  const mine = new Set<number>();
  const values: Values = {};
  for (const token of tokens) {
    if (token.kind !== 'option' || !(token.name in own)) continue;
    mine.add(token.index);
    if (own[token.name].type === 'string') {
      if (token.value === undefined) throw new SoulsError(`--${token.name} needs a value`);
      if (!token.inlineValue) mine.add(token.index + 1);
      values[token.name] = token.value;
    } else {
      values[token.name] = true;
    }
  }
  const rest = flags.filter((_, i) => !mine.has(i));
  return { positionals, values, config: loadConfig(rest, process.env) };
}

export function databaseExists(config: ReturnType<typeof loadConfig>): boolean {
  return config.db !== ':memory:' && statSync(config.db, { throwIfNoEntry: false })?.isFile() === true;
}

/** For commands that only read: an existing database, opened read-only; a mistyped path creates nothing. */
export function openExisting(config: ReturnType<typeof loadConfig>, command: string): SoulsDb {
  if (!databaseExists(config)) {
    throw new SoulsError(`no database at ${config.db} (${config.dbFrom}): ${command} only reads an existing one; \`souls import --apply\`, \`souls serve\` or \`souls seed-demo\` creates it`);
  }
  return openSoulsDb({ path: config.db, settings: config.settings, mode: 'read-only' });
}

export function openForWriting(config: ReturnType<typeof loadConfig>): SoulsDb {
  if (config.db !== ':memory:') mkdirSync(dirname(config.db), { recursive: true });
  return openSoulsDb({ path: config.db, settings: config.settings });
}

/** A soul by id ("7") or by name. */
export async function findSoul(db: SoulsDb, target: string): Promise<Soul> {
  const soul = /^[1-9][0-9]{0,14}$/.test(target) ? await getSoul(db, Number(target)) : await getSoulByName(db, target);
  if (!soul) throw new SoulsError(`no soul ${JSON.stringify(target)}`);
  return soul;
}

export const wantsHelp = (argv: readonly string[]) => argv.includes('--help') || argv.includes('-h');
