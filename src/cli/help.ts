/** The help texts: `souls --help` (every command) and `souls <command> --help` (one command, with examples). */
import { optionsHelp, type OptionGroup } from '../server/config.ts';
import type { Command } from './command.ts';

export const exitCodes = 'Exit codes: 0 success · 1 failure (a refused value, a missing soul or database) · 2 usage error (unknown command or option, missing argument).';

const column = (text: string, width: number) => (text.length < width ? text.padEnd(width) : `${text} `);

export type HelpSpec = {
  /** Synopsis lines, without the leading "souls ". */
  usage: readonly string[];
  /** What the command does, in a sentence or a short paragraph. */
  description: string;
  /** The command's own options: [flag, what it does]. */
  options?: ReadonlyArray<readonly [string, string]>;
  /** Shared option groups it takes. */
  groups?: readonly OptionGroup[];
  /** Complete command lines, each with a `# why` comment if useful. */
  examples: readonly string[];
};

export function commandHelp(spec: HelpSpec): string {
  const options = [...(spec.options ?? []), ['-h, --help', 'print this help']] as const;
  return [
    `Usage: ${spec.usage.map((u, i) => `${i === 0 ? '' : '       '}souls ${u}`).join('\n')}`,
    spec.description,
    `Options:\n${options.map(([flag, text]) => column(`  ${flag}`, 34) + text).join('\n')}`,
    ...(spec.groups && spec.groups.length > 0 ? [optionsHelp(spec.groups)] : []),
    `Examples:\n${spec.examples.map((e) => `  ${e}`).join('\n')}`,
    exitCodes,
  ].join('\n\n') + '\n';
}

export function programHelp(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length)) + 4;
  return [
    'souls: a deterministic engine that evolves the identity of AI agents and characters from evidence.',
    `Usage: souls <command> [arguments] [options]
       souls <command> --help      that command's options and examples
       souls --version             print the version (also -v)
       souls                       with no command (or options only), the same as souls serve`,
    `Commands:\n${commands.map((c) => `  ${column(c.name, width)}${c.summary}`).join('\n')}`,
    'Every command that opens a database takes --db PATH (or SOULS_DB) and the engine settings (--trait-limit N, …);\n`souls serve --help` lists every option with its environment variable.',
    exitCodes,
  ].join('\n\n') + '\n';
}
