// The checks `npm test` runs before Vitest, at the same time: the type checks of the server and of the web app, and
// graphql-codegen's check that the generated files match the schema. Each one's output is printed whole once it
// ends, so that two never interleave; the exit code is 1 when any failed.
//
//   node scripts/checks.ts
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PROJECT = fileURLToPath(new URL('..', import.meta.url));
// The programs' own scripts, run with this Node (node_modules/.bin holds shell shims on Windows).
const script = (path: string) => fileURLToPath(new URL(`../node_modules/${path}`, import.meta.url));
const TSC = script('typescript/bin/tsc');

export const CHECKS: ReadonlyArray<{ name: string; args: string[] }> = [
  { name: 'tsc --noEmit', args: [TSC, '--noEmit'] },
  { name: 'tsc --noEmit -p web', args: [TSC, '--noEmit', '-p', 'web'] },
  { name: 'graphql-codegen --check', args: [script('@graphql-codegen/cli/esm/bin.js'), '--check'] },
];

function run(check: (typeof CHECKS)[number]): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, check.args, { cwd: PROJECT, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    child.once('error', (error) => {
      process.stderr.write(`${check.name}: ${error.message}\n`);
      resolve(false);
    });
    child.once('close', (code, signal) => {
      const ok = code === 0;
      const text = Buffer.concat(output).toString('utf8');
      if (ok) process.stdout.write(`✓ ${check.name}\n`);
      else process.stderr.write(`✗ ${check.name} failed (${signal ?? `exit ${code}`}):\n${text}${text.endsWith('\n') || text === '' ? '' : '\n'}`);
      resolve(ok);
    });
  });
}

if (import.meta.main) {
  const results = await Promise.all(CHECKS.map(run));
  process.exitCode = results.every(Boolean) ? 0 : 1;
}
