/** The one argument parser of the command line: a command's own options plus the shared groups of src/server/config.ts. */
import { parseArgs } from 'node:util';
import { attachNegativeNumbers, configFromFlags, optionGroups, type OptionGroup, type ServerConfig } from '../server/config.ts';

/** The command line itself is wrong (unknown option, missing argument): exit code 2, with a pointer to the help. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export type OptionSpec = { type: 'string' | 'boolean'; multiple?: boolean; short?: string };

export type ArgumentSpec = {
  /** Positional arguments in order; a name ending in `?` is optional. */
  positionals?: readonly string[];
  /** The command's own options. */
  options?: Readonly<Record<string, OptionSpec>>;
  /** Shared groups: with `database`, the result carries the validated config. */
  groups?: readonly OptionGroup[];
};

export type ParsedArguments = {
  /** Positional values by name (without the `?`). */
  args: Record<string, string | undefined>;
  /** The command's own options, as parsed. */
  values: Record<string, string | boolean | string[] | undefined>;
  /** Present when the spec has the `database` group. */
  config: ServerConfig | null;
};

/** `--json`: the output is data for scripts. */
export const jsonOption = { json: { type: 'boolean' } } as const satisfies Record<string, OptionSpec>;

export function parseArguments(command: string, argv: readonly string[], spec: ArgumentSpec, env: NodeJS.ProcessEnv): ParsedArguments {
  const groups = spec.groups ?? [];
  const own = spec.options ?? {};
  const shared: Record<string, OptionSpec> = Object.assign({}, ...groups.map((group) => optionGroups[group]));
  const options = { ...shared, ...own };
  const valued = new Set(Object.entries(options).filter(([, o]) => o.type === 'string').map(([name]) => `--${name}`));
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: attachNegativeNumbers(argv, valued), options, strict: true, allowPositionals: true, allowNegative: true });
  } catch (error) {
    throw usageErrorFrom(command, error);
  }
  const names = spec.positionals ?? [];
  if (parsed.positionals.length > names.length) {
    throw new UsageError(`${command} takes ${names.length === 0 ? 'no arguments' : names.map((n) => `<${n.replace(/\?$/, '')}>`).join(' ')}; unexpected "${parsed.positionals[names.length]}"`);
  }
  const args: ParsedArguments['args'] = {};
  names.forEach((name, i) => {
    const value = parsed.positionals[i];
    if (value === undefined && !name.endsWith('?')) throw new UsageError(`${command} needs <${name}>`);
    args[name.replace(/\?$/, '')] = value;
  });
  const values = parsed.values as ParsedArguments['values'];
  const ownValues = Object.fromEntries(Object.keys(own).map((name) => [name, values[name]]));
  const sharedValues = Object.fromEntries(Object.keys(shared).map((name) => [name, values[name]]));
  return { args, values: ownValues, config: groups.includes('database') ? configFromFlags(sharedValues, env, { server: groups.includes('server') }) : null };
}

/** parseArgs' messages, said the way the rest of the command line speaks. */
function usageErrorFrom(command: string, error: unknown): unknown {
  if (!(error instanceof TypeError) || !('code' in error) || typeof error.code !== 'string' || !error.code.startsWith('ERR_PARSE_ARGS_')) return error;
  const flag = /'(-[^' ]+)/.exec(error.message)?.[1];
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && flag) return new UsageError(`${command} has no option ${flag}`);
  if (error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && flag) {
    return new UsageError(/argument missing/.test(error.message) ? `${flag} needs a value` : `${flag} takes no value`);
  }
  return new UsageError(error.message);
}
