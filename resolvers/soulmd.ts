import { ConflictError, getShards, orderForRender, ValidationError, type Citation, type Soul as SoulRecord } from '../src/engine/index.ts';
import type { Context } from '../src/server/context.ts';
import type { SoulMdFormat as Format, SoulState } from '../src/interop/document.ts';
import { EditedRegionError, exportSoulMd, storedDocument } from '../src/interop/export.ts';
import { applyImport, planImport } from '../src/interop/import.ts';
import { builder } from '../schema/builder.ts';
import { Soul } from '../schema/soul.ts';
import { ImportSoulMdInput, ImportSoulMdResult, SoulMdFormat, underInputField } from '../schema/soulmd.ts';
import { activeTraits } from './loaders.ts';
import { announceReady, soulChanged } from './mutations.ts';

/** A SOUL.md pasted into a request is a document, not a database: bounded well below the request body. */
const MAX_SOUL_MD_BYTES = 1024 * 1024;

const formatOf = (value: 'OPENCLAW' | 'SOULMD' | 'FRONTMATTER') => value.toLowerCase() as Format;

/** The soul as a SOUL.md shows it, from rows the loaders share with the rest of the query. */
async function stateOf(ctx: Context, soul: SoulRecord): Promise<SoulState> {
  const traits = await activeTraits(ctx.loaders, soul.id);
  const citations = await ctx.loaders.citationsByTrait.loadMany(traits.map((t) => t.id));
  const counts = new Map(traits.map((t, i) => [t.id, (citations[i] as Citation[]).length]));
  return { name: soul.name, description: soul.description, essence: soul.essence, principles: orderForRender(soul, traits, counts).map((t) => t.principle) };
}

function boundedText(field: string, text: string): void {
  if (Buffer.byteLength(text, 'utf8') > MAX_SOUL_MD_BYTES) throw new ValidationError(field, `must be at most ${MAX_SOUL_MD_BYTES} bytes`);
}

builder.objectField(Soul, 'soulMd', (t) =>
  t.string({
    description:
      'The soul as a SOUL.md of that convention. With `base` (a SOUL.md Souls wrote or imported), written over it: only the owned regions and identity lines change; an edit a person made inside an owned region is refused (BAD_USER_INPUT on base). Without `base`, written over the SOUL.md the soul was imported from in that convention (stored with the soul), so an untouched import comes back byte for byte; a soul never imported in it gets a new file in its layout.',
    args: { format: t.arg({ type: SoulMdFormat, required: true }), base: t.arg.string() },
    resolve: async (soul, args, ctx) => {
      if (args.base !== null && args.base !== undefined) boundedText('base', args.base);
      try {
        const format = formatOf(args.format);
        const base = args.base ?? null;
        return exportSoulMd(format, await stateOf(ctx, soul), base, { stored: base === null ? await storedDocument(ctx.db, soul.id, format) : null });
      } catch (error) {
        if (error instanceof EditedRegionError) throw new ValidationError('base', error.message);
        throw error;
      }
    },
  }),
);

/** Errors of the files name a file and heading; in the API they belong to the input field they came from. */
function underInput(error: unknown): unknown {
  if (!(error instanceof ValidationError)) return error;
  const field = underInputField(error.field);
  return new ValidationError(field, field === 'input.text' && error.field !== 'traits' ? `${error.field}: ${error.message}` : error.message);
}

builder.mutationField('importSoulMd', (t) =>
  t.field({
    authScopes: { refine: true },
    type: ImportSoulMdResult,
    description: 'A SOUL.md becomes a soul (name, description, essence, traits with provenance). apply false answers the plan only; true creates the soul or extends the one of that name, adding only what it does not have.',
    args: { input: t.arg({ type: ImportSoulMdInput, required: true }) },
    resolve: async (_, { input }, ctx) => {
      boundedText('input.text', input.text);
      const fileName = input.fileName?.trim() || 'SOUL.md';
      if (!/^[^/\\]{1,200}$/.test(fileName)) throw new ValidationError('input.fileName', 'must be a file name, without folders');
      const files = new Map([[fileName, input.text]]);
      const plan = await planImport(ctx.db, files, { format: input.format ? formatOf(input.format) : 'auto', name: input.name }).catch((error: unknown) => {
        throw underInput(error);
      });
      const named = { ...plan, __typename: 'SoulMdImportPlan' as const };
      if (!input.apply) return named;
      const result = await applyImport(ctx.db, plan).catch((error: unknown) => {
        if (error instanceof ConflictError) throw new ConflictError('input.name', error.message);
        throw underInput(error);
      });
      soulChanged(ctx, result.soul.id, result.created ? 'CREATED' : 'TRAIT_ADDED');
      const at = ctx.db.clock.now();
      const shards = await getShards(ctx.db, result.shardIds);
      ctx.pubsub.publishAll('shardDropped', [...shards.values()].map((shard) => ({ shardId: shard.id, soulIds: shard.soulIds, at })));
      return {
        __typename: 'SoulMdImportPayload' as const,
        plan: named,
        soul: result.soul,
        created: result.created,
        traitsAdded: result.traitIds.length,
        shardsAdded: result.shardIds.length,
        readySouls: await announceReady(ctx, result.readySoulIds),
      };
    },
  }),
);


