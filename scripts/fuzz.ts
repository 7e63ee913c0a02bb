// npm run fuzz [-- --cases 10000 --seed 20260101 --concurrency 6]
//
// Fuzzes a Souls server running as a CHILD PROCESS (so a crash shows as an
// exit) on a free port, over a temporary database file, with a small body
// limit. Prints the figures and exits non-zero on any violation: a crash, a
// 5xx, a stack trace or source path in a response, a masked internal error,
// anything the server logged to stderr, a hang, a failed integrity check, or a
// change to the rows written before the fuzz.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { formatReport, integrityProblems, runFuzz } from '../test/support/fuzz.ts';

const MAX_BODY_BYTES = 64 * 1024;
const START_MS = 15_000;
const STOP_MS = 15_000;

const { values } = parseArgs({
  options: {
    cases: { type: 'string', default: '10000' },
    seed: { type: 'string', default: '20260101' },
    concurrency: { type: 'string', default: '6' },
  },
});
const cases = Number(values.cases);
const seed = Number(values.seed);
const concurrency = Number(values.concurrency);
for (const [name, value] of Object.entries({ cases, seed, concurrency })) {
  if (!Number.isSafeInteger(value) || value < (name === 'seed' ? 0 : 1)) {
    console.error(`fuzz: --${name} must be a whole number`);
    process.exit(2);
  }
}

const cli = fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'souls-fuzz-'));
const file = join(dir, 'fuzz.db');

// The child states its own settings: none inherited from this shell.
const env: NodeJS.ProcessEnv = {};
for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('SOULS_') && key !== 'NODE_OPTIONS') env[key] = value;

const child = spawn(process.execPath, [cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', file, '--max-body-bytes', String(MAX_BODY_BYTES)], {
  env,
  stdio: ['ignore', 'pipe', 'pipe'],
});
let stdout = '';
let stderr = '';
child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
const exited = new Promise<void>((resolve) =>
  child.once('exit', (code, signal) => {
    exit = { code, signal };
    resolve();
  }),
);

function listening(): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not listen within ${START_MS} ms:\n${stdout}${stderr}`)), START_MS);
    const check = () => {
      const match = /Souls API on (http:\/\/\S+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      } else if (exit) {
        clearTimeout(timer);
        reject(new Error(`the server exited before listening (${JSON.stringify(exit)}):\n${stdout}${stderr}`));
      } else setTimeout(check, 20);
    };
    check();
  });
}

let failed = false;
try {
  const url = await listening();
  console.log(`fuzz: ${cases} cases, seed ${seed}, concurrency ${concurrency}, server pid ${child.pid} at ${url}, database ${file}, body limit ${MAX_BODY_BYTES} bytes`);
  const db = new DatabaseSync(file, { timeout: 5000 });
  let done = 0;
  const report = await runFuzz({
    url,
    db,
    cases,
    seed,
    concurrency,
    maxBodyBytes: MAX_BODY_BYTES,
    alive: () => exit === null,
    onCase: () => {
      if (++done % 1000 === 0) console.log(`  … ${done} cases`);
    },
  });
  db.close();
  if (exit && report.crashes === 0) {
    report.crashes = 1;
    report.violations.push({ case: -1, kind: 'crash', detail: `the server exited: ${JSON.stringify(exit)}`, op: '', mutations: [], seedHint: `seed ${seed}` });
  }
  const logged = stderr.trim();
  console.log(formatReport(report));
  console.log(`  server stderr: ${logged === '' ? 'empty' : `${logged.split('\n').length} lines`}`);
  if (logged !== '') console.log(logged.split('\n').slice(0, 40).join('\n'));
  failed = report.violations.length > 0 || logged !== '';
} catch (error) {
  console.error(`fuzz: ${(error as Error).stack ?? error}`);
  failed = true;
} finally {
  if (!exit) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_MS);
    await exited;
    clearTimeout(timer);
    const { code, signal } = exit! as { code: number | null; signal: NodeJS.Signals | null };
    if (code !== 0) {
      console.log(`fuzz: the server did not shut down cleanly (code ${code}, signal ${signal})`);
      failed = true;
    }
  }
  // Once more on the closed, checkpointed file.
  const db = new DatabaseSync(file);
  const problems = integrityProblems(db);
  db.close();
  console.log(`fuzz: integrity of the closed database file: ${problems.length === 0 ? 'ok' : problems.join('; ')}`);
  if (problems.length > 0) failed = true;
  rmSync(dir, { recursive: true, force: true });
}
console.log(failed ? 'fuzz: FAILED' : 'fuzz: passed');
process.exit(failed ? 1 : 0);
