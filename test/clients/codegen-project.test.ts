// A client typed outside this repo's codegen config: examples/codegen-project, copied to a folder of its own, generates
// its types from the served schema by introspection (with a token), is type-checked by tsc, then runs against the server.
import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv } from '../support/cli.ts';
import { bearer, invalidShards, newSoul, readyingShards, serverPerFile, subscriptionsLive, TOKEN, until } from './support.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** A package's command, run on this Node (a bare `node` on PATH may be an older one). */
const bin = (name: string) => [join(ROOT, 'node_modules/.bin', name)];

type Run = { code: number | null; stdout: string; stderr: string };

const server = serverPerFile({ tokens: true });
let project: string;

/** A program in the project folder, with the server's URL and token in its environment; `input` goes to its stdin. */
function run(program: string, args: string[], input = ''): { done: Promise<Run>; stdout: () => string } {
  const child = spawn(program, args, { cwd: project, env: cleanEnv({ SOULS_URL: server().url, SOULS_TOKEN: TOKEN }), stdio: ['pipe', 'pipe', 'pipe'] });
  const output = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output.stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk));
  child.stdin.end(input);
  const done = new Promise<Run>((resolve) => child.once('close', (code) => resolve({ code, ...output })));
  return { done, stdout: () => output.stdout };
}

const client = (args: string[], input?: string) => run(process.execPath, ['src/client.ts', ...args], input);
const lines = (stdout: string) => stdout.trim().split('\n').map((line) => JSON.parse(line));

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), 'souls-codegen-project-'));
  cpSync(join(ROOT, 'examples/codegen-project'), project, { recursive: true, filter: (source) => !source.includes('/src/gql') });
  symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir');
  const generated = await run(process.execPath, [...bin('graphql-codegen'), '--config', 'codegen.ts']).done;
  expect(generated.code, generated.stdout + generated.stderr).toBe(0);
}, 120_000);

afterAll(() => rmSync(project, { recursive: true, force: true }));

describe('a project typed by its own codegen from the served schema', { timeout: 60_000 }, () => {
  it('generates typed documents that tsc checks: a result union must be narrowed, an unselected field is not there', async () => {
    const typed = readFileSync(join(project, 'src/gql/graphql.ts'), 'utf8');
    expect(typed).toContain('export type ObserveMutation =');
    // Proof that the types are real: each line below must be an error, or tsc fails on an unused @ts-expect-error.
    writeFileSync(
      join(project, 'src/type-checks.ts'),
      [
        "import type { ObserveMutation, RosterQuery } from './gql/graphql.ts';",
        'export function checks(observed: ObserveMutation, roster: RosterQuery): void {',
        '  // @ts-expect-error a result union: narrow on __typename before reading a member’s field',
        '  void observed.dropShards.field;',
        "  if (observed.dropShards.__typename === 'ValidationError') void (observed.dropShards.field satisfies string);",
        '  void (roster.souls[0].crystallization.ready satisfies boolean);',
        '  // @ts-expect-error a field the operation does not select',
        '  void roster.souls[0].essence;',
        '}',
      ].join('\n'),
    );
    const checked = await new Promise<Run>((resolve) =>
      execFile(process.execPath, [...bin('tsc'), '--noEmit', '-p', 'tsconfig.json'], { cwd: project }, (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr })),
    );
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
  });

  it('reads the roster', async () => {
    const data = await server().data('{ souls(orderBy: READINESS) { name level crystallization { ready } } }', {}, bearer(TOKEN));
    const roster = await client(['roster']).done;
    expect(roster.code, roster.stderr).toBe(0);
    expect(lines(roster.stdout)).toEqual(data.souls.map((soul: { name: string; level: number; crystallization: { ready: boolean } }) => ({ name: soul.name, level: soul.level, ready: soul.crystallization.ready })));
  });

  it('hears crystallizationReady when its own dropShards makes a soul ready', async () => {
    const id = await newSoul(server(), 'Tamsin', bearer(TOKEN));
    const listener = client(['listen', id]);
    await until(() => listener.stdout().includes('listening'), () => `the listener to start: ${listener.stdout()}`);
    await subscriptionsLive(server(), 'websocket', 1, bearer(TOKEN));
    const observed = await client(['observe'], JSON.stringify(readyingShards(server(), id))).done;
    expect(observed.code, observed.stderr).toBe(0);
    expect(lines(observed.stdout)).toEqual([{ shards: 3, nowReady: ['Tamsin'] }]);
    const heard = await listener.done;
    expect(heard.code, heard.stderr).toBe(0);
    expect(lines(heard.stdout)).toEqual([{ listening: id }, { ready: 'Tamsin' }]);
  });

  it('reads a refused batch as a typed ValidationError naming the field', async () => {
    const refused = await client(['observe'], JSON.stringify(invalidShards('1'))).done;
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe('inputs[1].content: must not be empty once whitespace and punctuation noise are removed');
  });
});
