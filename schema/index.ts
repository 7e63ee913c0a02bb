import { lexicographicSortSchema, printSchema } from 'graphql';
import { builder } from './builder.ts';
import './scalars.ts';
import './errors.ts';
import './soul.ts';
import './trait.ts';
import './shard.ts';
import './level.ts';
import './evidence.ts';
import './theme.ts';
import './settings.ts';
import './caller.ts';
import './events.ts';
import './results.ts';
import './soulmd.ts';
import '../resolvers/queries.ts';
import '../resolvers/mutations.ts';
import '../resolvers/subscriptions.ts';
import '../resolvers/soulmd.ts';
import '../resolvers/themes.ts';

export const schema = builder.toSchema();

/** The SDL as committed in schema/schema.graphql: sorted, so diffs show real changes only. */
export function printSoulsSchema(): string {
  return printSchema(lexicographicSortSchema(schema)) + '\n';
}
