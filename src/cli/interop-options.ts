/** What import, export and sync share on the command line: the shared parser with the database and settings groups. */
import { parseArguments, type OptionSpec } from './arguments.ts';
import type { ServerConfig } from '../server/config.ts';

/** Positionals by name (in order), the command's own flags, and the database and knob flags as a validated config. */
export function splitOptions(
  command: string,
  argv: readonly string[],
  positionals: readonly string[],
  own: Readonly<Record<string, OptionSpec>>,
  env: NodeJS.ProcessEnv,
): { positionals: string[]; values: Record<string, string | boolean | string[] | undefined>; config: ServerConfig } {
  const { args, values, config } = parseArguments(command, argv, { positionals, options: own, groups: ['database', 'settings'] }, env);
  return { positionals: positionals.map((name) => args[name.replace(/\?$/, '')] ?? ''), values, config: config! };
}
