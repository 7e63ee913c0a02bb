/** The engine's records: plain data, timestamps in epoch milliseconds. */

export type Soul = {
  id: number;
  name: string;
  slug: string | null;
  essence: string;
  description: string;
  level: number;
  createdAt: number;
  updatedAt: number;
  /** The render's reference time: trait ages are measured at it (SPEC §6). Set by every write that changes the block, restored by a revert. */
  orderedAt: number;
  deletedAt: number | null;
  lastAttunedAt: number | null;
};

export const traitStatuses = ['active', 'consolidated', 'promoted', 'reverted'] as const;
export type TraitStatus = (typeof traitStatuses)[number];

export type Trait = {
  id: number;
  soulId: number;
  principle: string;
  provenance: string;
  generation: number;
  status: TraitStatus;
  mergedInto: number | null;
  createdAt: number;
  updatedAt: number;
};

export const shardStatuses = ['pending', 'faded'] as const;
export type ShardStatus = (typeof shardStatuses)[number];

export type Shard = {
  id: number;
  content: string;
  source: string;
  status: ShardStatus;
  sealed: boolean;
  tags: string[];
  soulIds: number[];
  /** When it was observed: the write's time, or the earlier one a historical import gives. */
  createdAt: number;
  updatedAt: number;
  /** When it was written to Souls, whatever its createdAt: what recency counts (SPEC §13). */
  recordedAt: number;
  /** When a sealed shard was revealed; null if it never was sealed or is sealed still. */
  revealedAt: number | null;
};

export type CarriedTrait = { id: number; generation: number };

export type LevelEvent = {
  id: number;
  soulId: number;
  level: number;
  essenceBefore: string;
  essenceAfter: string;
  consolidated: number[];
  promoted: number[];
  carried: CarriedTrait[];
  /** Traits created by consolidation; still listed after a revert, though the rows are gone. */
  merged: number[];
  createdAt: number;
  revertedAt: number | null;
};

/**
 * A document imported as a soul (a SOUL.md of one convention), kept whole so it can be written out again anywhere:
 * `format` names the convention, `file` the file it came from.
 */
export type SoulDocument = { soulId: number; format: string; file: string; text: string; storedAt: number };

export type Citation = { shardId: number; traitId: number; createdAt: number };

export type SourceCount = { source: string; count: number };
export type TagCount = { tag: string; count: number };

/** One page of a list; `cursors[i]` is the opaque cursor of `items[i]`, to pass as `after`. */
export type Page<T> = { items: T[]; cursors: string[]; totalCount: number; hasNextPage: boolean; endCursor: string | null };

/**
 * A theme the refiner named for some of one soul's shards (SPEC §12). `memberIds`: every shard assigned to it, any
 * status, ascending; `opposes`: the traits its members contradict, ascending.
 */
export type Theme = {
  id: number;
  soulId: number;
  name: string;
  createdBy: string;
  createdAt: number;
  updatedAt: number;
  memberIds: number[];
  opposes: number[];
};

export const themeEventKinds = ['assign', 'unassign', 'rename', 'oppose', 'unoppose'] as const;
export type ThemeEventKind = (typeof themeEventKinds)[number];

/**
 * One recorded change to a soul's themes: an assignment says which shard moved `fromThemeId` → `toThemeId` (null: the
 * unjudged pool); a rename carries the name it replaced in `detail`; an opposition the trait.
 */
export type ThemeEvent = {
  id: number;
  soulId: number;
  kind: ThemeEventKind;
  themeId: number | null;
  shardId: number | null;
  fromThemeId: number | null;
  toThemeId: number | null;
  traitId: number | null;
  detail: string | null;
  actor: string;
  at: number;
};
