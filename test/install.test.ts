// `npm install` is quiet: the GraphiQL packages agree on their peers (no ERESOLVE), and the only warnings the
// project's .npmrc keeps out of sight are engine checks that npm makes against the Node running npm itself,
// which the Node 24 the project pins (and runs everything on) satisfies.
import { execFile } from 'node:child_process';
import { delimiter, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * What npm would do to install from the lockfile, without doing it: its warnings are those of a real install. npm runs
 * as a user starts it, on the machine's Node: the project's node_modules/.bin (the pinned Node) is taken off PATH.
 */
async function dryRun(...flags: string[]): Promise<string> {
  const bin = `${ROOT}node_modules${sep}.bin`;
  const PATH = (process.env.PATH ?? '').split(delimiter).filter((dir) => resolve(dir) !== resolve(bin)).join(delimiter);
  const { stdout, stderr } = await promisify(execFile)('npm', ['install', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund', ...flags], {
    cwd: ROOT,
    env: { ...process.env, PATH },
  });
  return `${stdout}${stderr}`;
}

/** The machine's own npm configuration (user file, environment) may warn about itself ("Unknown user config"); not the project's. */
const projectWarnings = (output: string) => output.split('\n').filter((line) => /^npm warn /.test(line) && !/Unknown (user|global|env) config/.test(line));

/** Whether `version` (x.y.z) meets an engines range made of `>=`, `^` and `||`: the forms our dependencies use. */
function satisfies(version: string, range: string): boolean {
  const parse = (v: string) => v.split('.').map(Number).concat(0, 0).slice(0, 3);
  const compare = (a: number[], b: number[]) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
  const have = parse(version);
  return range.split('||').some((alternative) =>
    alternative
      .trim()
      .split(/\s+/)
      .every((comparator) => {
        const [, op, v] = /^(>=|\^)(\d+(?:\.\d+){0,2})$/.exec(comparator) ?? [];
        if (!op) throw new Error(`an engines range this test does not read: ${comparator}`);
        return compare(have, parse(v)) >= 0 && (op === '>=' || have[0] === parse(v)[0]);
      }),
  );
}

describe('npm install', { timeout: 120_000 }, () => {
  it('prints no warnings with the project’s npm settings', async () => {
    expect(projectWarnings(await dryRun())).toEqual([]);
  });

  it('resolves every peer dependency, and every engine warning it would print is met by the pinned Node', async () => {
    const output = await dryRun('--loglevel=warn');
    const warnings = projectWarnings(output);
    expect(warnings.filter((line) => !line.startsWith('npm warn EBADENGINE'))).toEqual([]);
    // None when the machine's own Node is new enough; then nothing is hidden.
    const required = [...output.matchAll(/required: \{ node: '([^']+)' \}/g)].map((match) => match[1]);
    for (const range of new Set(required)) expect(satisfies(process.version.slice(1), range), range).toBe(true);
  });
});
