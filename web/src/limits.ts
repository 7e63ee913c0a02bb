/**
 * The server's input bounds (SPEC §11; README "Knobs and bounds"). The API does not expose them, so these are the
 * documented defaults; a server started with other bounds still has the last word. Texts are measured in UTF-8
 * bytes, names, tags and sources in characters.
 */
export const bounds = {
  nameLength: 200,
  descriptionBytes: 4 * 1024,
  essenceBytes: 64 * 1024,
  shardContentBytes: 8 * 1024,
  sourceLength: 128,
  tagLength: 64,
  tagsPerShard: 32,
  principleBytes: 2 * 1024,
  provenanceBytes: 16 * 1024,
  /** A SOUL.md (or any document) imported in one piece. */
  documentBytes: 1024 * 1024,
} as const;

/** A comma-separated list of the most tags a shard may carry, each at its longest. */
export const tagListLength = bounds.tagsPerShard * (bounds.tagLength + 2);

const encoder = new TextEncoder();
export const utf8Bytes = (text: string): number => encoder.encode(text).length;
