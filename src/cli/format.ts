/** What list, show and history print: times, readiness in words, aligned columns, and the JSON shapes scripts read. */
import type { Crystallization, Soul } from '../engine/index.ts';

/** Epoch milliseconds as minutes in UTC, the same wherever the command runs. */
export const humanTime = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
export const isoTime = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const round = (value: number, digits = 2) => Number(value.toFixed(digits));

/**
 * "ready (priority 12.5)", "dormant", or what is missing: "not ready: 2/3 shards, 1/2 sources". A soul never attuned
 * has nothing to be new since: the engine lists RECENCY when it has no shard at all, which the shard count already says.
 */
export function readinessText(c: Crystallization, crystallizationThreshold: number, lastAttunedAt: number | null): string {
  if (c.ready) return `ready (priority ${round(c.priority)})`;
  if (c.unmet.includes('DORMANT')) return 'dormant';
  const missing = c.unmet.filter((condition) => condition !== 'RECENCY' || lastAttunedAt !== null).map((condition) => {
    switch (condition) {
      case 'MIN_SHARDS':
        return `${c.pendingCount}/${crystallizationThreshold} shards`;
      case 'SOURCE_DIVERSITY':
        return `${c.distinctSources}/2 sources`;
      case 'AGE_SPREAD':
        return 'shards span a day or less';
      case 'RECENCY':
        return 'nothing new since attuned';
      case 'MIN_CLUSTERS':
        return `${c.clusterCount ?? 0}/2 clusters`;
      default:
        return condition;
    }
  });
  return `not ready: ${missing.join(', ')}`;
}

/** The crystallization verdict as the API's Crystallization type has it. */
export function crystallizationJson(c: Crystallization) {
  return {
    ready: c.ready,
    priority: c.priority,
    pendingCount: c.pendingCount,
    distinctSources: c.distinctSources,
    ageSpreadDays: c.ageSpreadDays,
    newSinceAttuned: c.newSinceAttuned,
    clusterCount: c.clusterCount,
    unmet: c.unmet,
  };
}

/** A row id as the API's ID: a decimal string. */
export const idJson = (id: number) => String(id);

/** A soul's own fields, named as the API names them (ids as strings), times in ISO 8601. */
export function soulJson(soul: Soul, options: { essence?: boolean } = {}) {
  return {
    id: idJson(soul.id),
    name: soul.name,
    slug: soul.slug,
    description: soul.description,
    ...(options.essence ? { essence: soul.essence } : {}),
    level: soul.level,
    dormant: soul.deletedAt !== null,
    createdAt: isoTime(soul.createdAt),
    updatedAt: isoTime(soul.updatedAt),
    lastAttunedAt: isoTime(soul.lastAttunedAt),
    deletedAt: isoTime(soul.deletedAt),
  };
}

/** Rows of cells as aligned columns; `style` colours a cell after its width is measured. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], style: (cell: string, column: number, row: number) => string = (cell) => cell): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: readonly string[], row: number) =>
    cells
      .map((cell, i) => (row === -1 ? cell : style(cell, i, row)) + (i === cells.length - 1 ? '' : ' '.repeat(widths[i] - cell.length + 2)))
      .join('');
  return [line(header, -1), ...rows.map((r, i) => line(r, i))].join('\n') + '\n';
}

export const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
