/** Limits on what one request may ask of the server; all configurable, all enforced before execution. */
export type Limits = {
  maxDepth: number;
  maxAliases: number;
  maxTokens: number;
  maxDirectives: number;
  maxCost: number;
  maxBodyBytes: number;
};

export const defaultLimits: Limits = {
  maxDepth: 12,
  maxAliases: 30,
  maxTokens: 5000,
  maxDirectives: 30,
  maxCost: 20_000,
  // A full dropShards batch (10,000 shards) fits, given as variables.
  maxBodyBytes: 16 * 1024 * 1024,
};

export const limitNames = Object.keys(defaultLimits) as (keyof Limits)[];
