#!/usr/bin/env node
// The `souls` program: every subcommand is a file of src/cli/ listed in `commands`; dispatch.ts runs the one named.
import { backupCommand } from './backup.ts';
import { calibrateCommand } from './calibrate.ts';
import type { Command } from './command.ts';
import { copyCommand } from './copy.ts';
import { runCli } from './dispatch.ts';
import { exportCommand } from './export.ts';
import { historyCommand } from './history.ts';
import { importCommand } from './import.ts';
import { listCommand } from './list.ts';
import { mcpCommand } from './mcp.ts';
import { migrateCommand } from './migrate.ts';
import { refinerCommand } from './refiner.ts';
import { reindexCommand } from './reindex.ts';
import { renderCommand } from './render.ts';
import { seedDemoCommand } from './seed-demo.ts';
import { serveCommand } from './serve.ts';
import { showCommand } from './show.ts';
import { syncCommand } from './sync.ts';

/** In the order `souls --help` lists them. */
export const commands: Command[] = [
  serveCommand,
  listCommand,
  showCommand,
  historyCommand,
  renderCommand,
  backupCommand,
  migrateCommand,
  copyCommand,
  importCommand,
  exportCommand,
  syncCommand,
  seedDemoCommand,
  mcpCommand,
  refinerCommand,
  reindexCommand,
  calibrateCommand,
];

/** Runs the command line of this process (`src/cli/souls.js` calls it after turning on Node's compile cache). */
export function main(): void {
  // A reader that stops early (`souls list --json | head -1`) is not an error.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
  runCli(commands, process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env }).then((code) => {
    process.exitCode = code;
  });
}

if (import.meta.main) main();
