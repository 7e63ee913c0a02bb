// What a bench run measured, as data: the rows of each section with their numbers and units, for `--json` and bench:compare.
import { cpus, loadavg, totalmem } from 'node:os';
import type { BenchRow } from './engine.ts';

/** Which way a figure improves: throughput and agreement up, time and memory down; null when the row does not say. */
export type Better = 'higher' | 'lower';

export type Figure = { name: string; value: string; numbers: number[]; unit: string | null; better: Better | null };
export type SectionReport = { title: string; seconds: number; rows: Figure[] };
export type Machine = { cpu: string; cores: number; memoryGiB: number; node: string; sqlite: string; platform: string };
export type BenchReport = { date: string; machine: Machine; loadAverage: { start: number[]; end: number[] }; sections: SectionReport[] };

export function machineNow(): Machine {
  return {
    cpu: cpus()[0]?.model ?? 'unknown CPU',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.versions.node,
    sqlite: process.versions.sqlite ?? 'unknown',
    platform: `${process.platform} ${process.arch}`,
  };
}

export function describeMachine(m: Machine): string {
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}, SQLite ${m.sqlite}`;
}

export const loadAverageNow = (): number[] => loadavg().map((l) => Math.round(l * 100) / 100);

/** Decimal numbers as printed: `1,234.5`, `-0.25`, `12`; thousands separators only in groups of three. */
const NUMBER = /-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?/g;

/** Every number a value prints, in order ("2.01 / 3.50" is two; "7 of 10" is two). */
export function numbersIn(value: string): number[] {
  return [...value.matchAll(NUMBER)].map((m) => Number(m[0].replaceAll(',', '')));
}

/** The unit a row's name or value states, and which way it improves. */
export function unitOf(name: string, value: string): { unit: string | null; better: Better | null } {
  if (name.includes('÷') || /^\s*-?[\d.,]+x\b/.test(value) || /speed-up/.test(name)) return { unit: 'ratio', better: 'higher' };
  if (/\/s\b/.test(name)) return { unit: 'ops/s', better: 'higher' };
  if (/\(µs\b|\bµs\)/.test(name)) return { unit: 'µs', better: 'lower' };
  if (/\(ms\b|\bms[),;]/.test(name)) return { unit: 'ms', better: 'lower' };
  if (/\bMiB\b/.test(value) || /\(MiB\b/.test(name)) return { unit: 'MiB', better: 'lower' };
  if (/%\s*$/.test(value.trim())) return { unit: '%', better: null };
  return { unit: null, better: null };
}

/** The row as data: its own numbers and unit when it gives them, else those its text states. */
export function figureOf(row: BenchRow): Figure {
  const stated = unitOf(row.name, row.value);
  const unit = row.unit !== undefined ? row.unit : stated.unit;
  const better = row.better !== undefined ? row.better : row.unit !== undefined ? null : stated.better;
  return { name: row.name, value: row.value, numbers: row.numbers ?? numbersIn(row.value), unit, better };
}

/** The sections whose title contains one of `filters` (any case); all when there are none. */
export function selectSections<T extends { title: string }>(sections: readonly T[], filters: readonly string[]): T[] {
  if (filters.length === 0) return [...sections];
  const wanted = filters.map((f) => f.toLowerCase());
  return sections.filter((s) => wanted.some((f) => s.title.toLowerCase().includes(f)));
}
