// Rows as both stores read them: the same columns, the same domain objects.
import { ValidationError } from '../engine/errors.ts';
import type { CarriedTrait, LevelEvent, Shard, ShardStatus, Soul, Trait, TraitStatus } from '../engine/model.ts';
import type { ShardAggregate } from './store.ts';

export type Row = Record<string, unknown>;

export function toSoul(r: Row): Soul {
  return {
    id: Number(r.id),
    name: String(r.name),
    slug: r.slug === null ? null : String(r.slug),
    essence: String(r.essence),
    description: String(r.description),
    level: Number(r.level),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    orderedAt: Number(r.ordered_at),
    deletedAt: r.deleted_at === null ? null : Number(r.deleted_at),
    lastAttunedAt: r.last_attuned_at === null ? null : Number(r.last_attuned_at),
  };
}

export function toTrait(r: Row): Trait {
  return {
    id: Number(r.id),
    soulId: Number(r.soul_id),
    principle: String(r.principle),
    provenance: String(r.provenance),
    generation: Number(r.generation),
    status: String(r.status) as TraitStatus,
    mergedInto: r.merged_into === null ? null : Number(r.merged_into),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

export function toLevelEvent(r: Row): LevelEvent {
  return {
    id: Number(r.id),
    soulId: Number(r.soul_id),
    level: Number(r.level),
    essenceBefore: String(r.essence_before),
    essenceAfter: String(r.essence_after),
    consolidated: JSON.parse(String(r.traits_consolidated)) as number[],
    promoted: JSON.parse(String(r.traits_promoted)) as number[],
    carried: JSON.parse(String(r.traits_carried)) as CarriedTrait[],
    merged: JSON.parse(String(r.traits_merged)) as number[],
    createdAt: Number(r.created_at),
    revertedAt: r.reverted_at === null ? null : Number(r.reverted_at),
  };
}

export function toAggregate(r: Row | undefined, suffix: '' | '_before'): ShardAggregate {
  if (!r) return { count: 0, distinctSources: 0, oldest: null, newest: null, latest: null };
  const time = (column: string) => {
    const value = r[`${column}${suffix}`];
    return value === null ? null : Number(value);
  };
  return {
    count: Number(r[`count${suffix}`]),
    distinctSources: Number(r[`sources${suffix}`]),
    oldest: time('oldest'),
    newest: time('newest'),
    latest: time('latest'),
  };
}

export function parseIds(value: unknown): number[] {
  if (value === null || value === undefined) return [];
  return String(value)
    .split(',')
    .map(Number)
    .sort((a, b) => a - b);
}

export function encodeCursor(createdAt: number, id: number): string {
  return Buffer.from(`${createdAt}:${id}`).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: number; id: number } {
  const match = /^(-?\d{1,16}):(\d{1,16})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match) throw new ValidationError('after', 'is not a cursor returned by this API');
  return { createdAt: Number(match[1]), id: Number(match[2]) };
}

/** A shard row with its tags and souls, each list keyed by shard id. */
export function toShard(r: Row, tags: ReadonlyMap<number, string[]>, souls: ReadonlyMap<number, number[]>): Shard {
  return {
    id: Number(r.id),
    content: String(r.content),
    source: String(r.source),
    status: String(r.status) as ShardStatus,
    sealed: Number(r.sealed) === 1,
    tags: tags.get(Number(r.id)) ?? [],
    soulIds: souls.get(Number(r.id)) ?? [],
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    revealedAt: r.revealed_at === null ? null : Number(r.revealed_at),
  };
}
