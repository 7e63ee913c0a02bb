// `npm run example -- <name> [args…]`: runs examples/<name>.ts on the project's Node (npm scripts put the pinned
// Node 24 first on PATH; a bare `node` may be the machine's older one, which cannot run TypeScript or node:sqlite).
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../examples/', import.meta.url));
const names = readdirSync(dir)
  .filter((file) => file.endsWith('.ts'))
  .map((file) => file.slice(0, -3))
  .sort();
const [name, ...args] = process.argv.slice(2);

if (!name || !names.includes(name.replace(/\.ts$/, ''))) {
  console.error(`${name ? `No example "${name}". ` : ''}Usage: npm run example -- <name> [args…]\nExamples: ${names.join(', ')}`);
  process.exit(2);
}
const child = spawn(process.execPath, [`${dir}${name.replace(/\.ts$/, '')}.ts`, ...args], { stdio: 'inherit' });
// Ctrl-C reaches the example itself (the terminal signals the whole group): wait for it to finish.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
