import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cleanEnv } from './support/cli.ts';

const PROJECT = fileURLToPath(new URL('..', import.meta.url));

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'souls-bench-report-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function node(script: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { cwd: PROJECT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const machine = { cpu: 'Test CPU', cores: 2, memoryGiB: 8, node: '24.0.0', sqlite: '3.50.0', platform: 'linux x64' };
function report(date: string, rows: Array<{ name: string; value: string; numbers: number[]; unit: string | null; better: 'higher' | 'lower' | null }>, extra: typeof rows = []) {
  return { date, machine, loadAverage: { start: [1.5, 1, 0.5], end: [2, 1, 0.5] }, sections: [{ title: 'Engine', seconds: 1, rows: [...rows, ...extra] }] };
}

/** The compare line for a figure: its cells split on runs of two or more spaces. */
function line(stdout: string, figure: string): string[] {
  const found = stdout.split('\n').find((l) => l.startsWith(`Engine › ${figure}`));
  expect(found, `a line for ${figure} in:\n${stdout}`).toBeDefined();
  return found!.split(/ {2,}/);
}

describe('npm run bench:compare', () => {
  it('prints a and b, b ÷ a and which way each figure moved, and what only one run has', async () => {
    const a = join(dir, 'a.json');
    const b = join(dir, 'b.json');
    writeFileSync(a, JSON.stringify(report('2026-11-01T10:00:00.000Z', [
      { name: 'dropShard/s', value: '1000', numbers: [1000], unit: 'ops/s', better: 'higher' },
      { name: 'formatEvidence (ms, median)', value: '4.00', numbers: [4], unit: 'ms', better: 'lower' },
      { name: 'latency p50 / p99 (ms)', value: '2.00 / 10.00', numbers: [2, 10], unit: 'ms', better: 'lower' },
      { name: 'adjusted Rand index', value: '0.500', numbers: [0.5], unit: null, better: null },
      { name: 'deliveries missing', value: '0', numbers: [0], unit: 'count', better: 'lower' },
      { name: 'retired row', value: '7', numbers: [7], unit: null, better: null },
      { name: 'raw insert/s', value: '2909', numbers: [2909], unit: 'ops/s', better: 'higher' },
    ])));
    writeFileSync(b, JSON.stringify(report('2026-11-02T10:00:00.000Z', [
      { name: 'dropShard/s', value: '1500', numbers: [1500], unit: 'ops/s', better: 'higher' },
      { name: 'formatEvidence (ms, median)', value: '5.00', numbers: [5], unit: 'ms', better: 'lower' },
      { name: 'latency p50 / p99 (ms)', value: '1.00 / 10.00', numbers: [1, 10], unit: 'ms', better: 'lower' },
      { name: 'adjusted Rand index', value: '0.600', numbers: [0.6], unit: null, better: null },
      { name: 'deliveries missing', value: '3', numbers: [3], unit: 'count', better: 'lower' },
      { name: 'new row', value: '9', numbers: [9], unit: null, better: null },
      { name: 'raw insert/s', value: '2907', numbers: [2907], unit: 'ops/s', better: 'higher' },
    ])));
    const { code, stdout, stderr } = await node('bench/compare.ts', [a, b]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain(`a: ${a} — 2026-11-01T10:00:00.000Z, Test CPU, 2 cores, 8 GiB, Node 24.0.0, SQLite 3.50.0, load average 1.5 1 0.5 → 2 1 0.5`);
    expect(stdout).toMatch(/^figure +unit +a +b +b ÷ a$/m);
    expect(line(stdout, 'dropShard/s')).toEqual(['Engine › dropShard/s', 'ops/s', '1000', '1500', '1.50', 'better']);
    expect(line(stdout, 'formatEvidence (ms, median)')).toEqual(['Engine › formatEvidence (ms, median)', 'ms', '4', '5', '1.25', 'worse']);
    expect(line(stdout, 'latency p50 / p99 (ms) [1 of 2]')).toEqual(['Engine › latency p50 / p99 (ms) [1 of 2]', 'ms', '2', '1', '0.50', 'better']);
    expect(line(stdout, 'latency p50 / p99 (ms) [2 of 2]')).toEqual(['Engine › latency p50 / p99 (ms) [2 of 2]', 'ms', '10', '10', '1.00', 'same']);
    // No known direction: the ratio alone.
    expect(line(stdout, 'adjusted Rand index')).toEqual(['Engine › adjusted Rand index', '0.5', '0.6', '1.20']);
    expect(line(stdout, 'deliveries missing')).toEqual(['Engine › deliveries missing', 'count', '0', '3', '—', 'worse']);
    // Less than half a percent apart: the ratio prints 1.00, and that is the same.
    expect(line(stdout, 'raw insert/s')).toEqual(['Engine › raw insert/s', 'ops/s', '2909', '2907', '1.00', 'same']);
    expect(stdout).toContain('7 figures in both: 2 better, 2 worse, 3 same or without a direction.');
    expect(stdout).toMatch(/Only in a \(1\):\n {2}Engine › retired row\n/);
    expect(stdout).toMatch(/Only in b \(1\):\n {2}Engine › new row\n/);
  });

  it('refuses anything but two report files', async () => {
    const usage = await node('bench/compare.ts', [join(dir, 'a.json')]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^usage: npm run bench:compare a\.json b\.json/);
    const notJson = join(dir, 'not.json');
    writeFileSync(notJson, '{"date": 1}');
    const bad = await node('bench/compare.ts', [notJson, notJson]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(`bench:compare: ${notJson}: not a report written by npm run bench -- --json\n`);
  });
});

describe('npm run bench -- --only … --json FILE', () => {
  it('runs the chosen section only and writes its figures as numbers with units, beside the printed table', async () => {
    const file = join(dir, 'cold.json');
    const run = await node('bench/run.ts', ['--only', 'COLD START', '--json', file]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const written = JSON.parse(readFileSync(file, 'utf8'));
    expect(Object.keys(written).sort()).toEqual(['date', 'loadAverage', 'machine', 'sections']);
    expect(new Date(written.date).toISOString()).toBe(written.date);
    expect(written.machine).toEqual({ cpu: expect.any(String), cores: expect.any(Number), memoryGiB: expect.any(Number), node: process.versions.node, sqlite: process.versions.sqlite, platform: `${process.platform} ${process.arch}` });
    expect(written.loadAverage.start).toHaveLength(3);
    expect(written.loadAverage.end).toHaveLength(3);
    expect(written.sections.map((s: { title: string }) => s.title)).toEqual(['Cold start: the first calls on a new database']);
    const [section] = written.sections;
    expect(section.seconds).toBeGreaterThan(0);
    expect(section.rows.length).toBeGreaterThanOrEqual(5);
    for (const row of section.rows) {
      expect(Object.keys(row).sort()).toEqual(['better', 'name', 'numbers', 'unit', 'value']);
      expect(row).toMatchObject({ unit: 'ms', better: 'lower' });
      expect(row.numbers).toEqual([Number(row.value)]);
      // The table printed the same row.
      expect(run.stdout).toMatch(new RegExp(`^${row.name.replace(/[()]/g, '\\$&')} +${row.value}$`, 'm'));
    }
    expect(run.stdout).not.toContain('## Engine');
    expect(run.stdout).toContain(`Figures written to ${file}`);

    const same = await node('bench/compare.ts', [file, file]);
    expect(same.code).toBe(0);
    expect(same.stdout).toContain(`${section.rows.length} figures in both: 0 better, 0 worse, ${section.rows.length} same or without a direction.`);
  });

  it('names the sections when none matches, and refuses unknown options', async () => {
    const none = await node('bench/run.ts', ['--only', 'no such section']);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain(`bench: no section's title contains "no such section"; the sections are:\n  Cold start: the first calls on a new database\n  Engine\n`);
    const unknown = await node('bench/run.ts', ['--fast']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^bench: Unknown option '--fast'/);
    expect(unknown.stderr).toContain('usage: npm run bench [-- --only TEXT ...] [-- --json FILE]');
  });
});
