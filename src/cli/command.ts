/**
 * One `souls` subcommand: src/cli/index.ts lists them and src/cli/dispatch.ts runs one and prints their help.
 * parseArguments (arguments.ts) and commandHelp (help.ts) give every command the same options and help layout.
 */
export type CommandIo = {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
};

export type Command = {
  name: string;
  /** One line, for `souls --help`. */
  summary: string;
  /** The whole of `souls NAME --help`: synopsis, options, examples. */
  help: string;
  /**
   * Runs with the arguments after the command's name (never with --help: the dispatcher answers it); resolves to the
   * exit code. A thrown UsageError exits 2, any other error 1, each with its message and no stack trace.
   */
  run(argv: string[], io: CommandIo): Promise<number>;
};
