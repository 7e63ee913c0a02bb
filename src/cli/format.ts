/** What list, show and history print: times, readiness in words, aligned columns, and the JSON shapes scripts read. */
import type { Crystallization, Soul, UnmetNeed } from '../engine/index.ts';

/** Epoch milliseconds as minutes in UTC, the same wherever the command runs. */
export const humanTime = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
export const isoTime = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const round = (value: number, digits = 2) => Number(value.toFixed(digits));

/**
 * "ready (priority 12.5)", "dormant", or what would make it ready, in the engine's words (unmetNeeds): "not ready:
 * needs 2 more shards (1 of the 3 needed); a shard recorded or revealed after the last attunement (…)".
 */
export function readinessText(c: Crystallization, needs: readonly UnmetNeed[]): string {
  if (c.ready) return `ready (priority ${round(c.priority)})`;
  if (c.unmet.includes('DORMANT')) return 'dormant';
  return `not ready: needs ${needs.map((n) => n.message).join('; ')}`;
}

/** The crystallization verdict as the API's Crystallization type has it. */
export function crystallizationJson(c: Crystallization, needs: readonly UnmetNeed[]) {
  return {
    ready: c.ready,
    priority: c.priority,
    pendingCount: c.pendingCount,
    distinctSources: c.distinctSources,
    ageSpreadDays: c.ageSpreadDays,
    newSinceAttuned: c.newSinceAttuned,
    clusterCount: c.clusterCount,
    unmet: c.unmet,
    needs,
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
