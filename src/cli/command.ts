/** One `souls` subcommand: src/cli/index.ts lists them, dispatches, and prints their help. */
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
  /** Runs with the arguments after the command's name; resolves to the exit code. A thrown error exits 1 with its message. */
  run(argv: string[], io: CommandIo): Promise<number>;
};
