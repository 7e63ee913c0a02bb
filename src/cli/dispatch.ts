/** Finds the command named on the command line and runs it: help, version, exit codes and error messages live here. */
import { readFileSync } from 'node:fs';
import { describeError } from '../engine/index.ts';
import { UsageError } from './arguments.ts';
import type { Command, CommandIo } from './command.ts';
import { programHelp } from './help.ts';
import { colours } from './terminal.ts';
import { editDistance } from '../engine/normalize.ts';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export function version(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

/** `--help` or `-h` anywhere before a `--` asks for the command's help, whatever else is on the line. */
const asksForHelp = (argv: readonly string[]) => {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).some((a) => a === '--help' || a === '-h');
};

/** Runs the command line `argv` (without node and the script) and resolves to the exit code. */
export async function runCli(commands: readonly Command[], argv: readonly string[], io: CommandIo): Promise<number> {
  const [first, ...rest] = argv;
  const out = (text: string) => io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  const fail = (message: string) => io.stderr.write(`${colours(io.stderr, io.env).red('souls:')} ${message}\n`);
  if (first === 'help' || first === '--help' || first === '-h') {
    const topic = first === 'help' ? rest[0] : undefined;
    const command = topic === undefined ? undefined : commands.find((c) => c.name === topic);
    if (topic !== undefined && !command) return unknownCommand(topic);
    out(command ? command.help : programHelp(commands));
    return EXIT_OK;
  }
  if (first === '--version' || first === '-v' || first === 'version') {
    out(`souls ${version()}`);
    return EXIT_OK;
  }
  // No command, or options only: the server, as `npm start` and the first releases did.
  const defaulted = first === undefined || first.startsWith('-');
  const command = defaulted ? commands.find((c) => c.name === 'serve') : commands.find((c) => c.name === first);
  if (!command) return unknownCommand(first!);
  const args = defaulted ? [...argv] : rest;
  if (asksForHelp(args)) {
    out(command.help);
    return EXIT_OK;
  }
  try {
    return await command.run(args, io);
  } catch (error) {
    if (io.env.SOULS_DEBUG) io.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    if (error instanceof UsageError) {
      fail(`${error.message}\nRun \`souls ${command.name} --help\` for its usage.`);
      return EXIT_USAGE;
    }
    // A message for people; the whole error with SOULS_DEBUG=1.
    if (!io.env.SOULS_DEBUG) fail(describeError(error));
    return EXIT_FAILURE;
  }

  function unknownCommand(name: string): number {
    const near = commands.filter((c) => editDistance(c.name, name) <= 2 || c.name.startsWith(name)).map((c) => c.name);
    fail(`unknown command "${name}"${near.length > 0 ? ` (did you mean ${near.join(' or ')}?)` : ''}\nCommands: ${commands.map((c) => c.name).join(', ')}. Run \`souls --help\` for what each does.`);
    return EXIT_USAGE;
  }
}

