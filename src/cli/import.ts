// souls import <path>: a SOUL.md workspace (OpenClaw, soul.md) or a frontmatter file becomes a soul; a dry run
// unless --apply.
import { awaitEmbeddings, closeSoulsDb, getShardEmbeddings, openSoulsDb, openSoulsDbAsync, SoulsError, type SoulsDb } from '../engine/index.ts';
import { readWorkspace, parseFormat, formatChoices } from '../interop/formats.ts';
import { applyImport, planImport, type ImportPlan, type ImportResult } from '../interop/import.ts';
import type { Command, CommandIo } from './command.ts';
import { databaseExists, embedderOf, openDb } from './database.ts';
import { commandHelp } from './help.ts';
import { splitOptions } from './interop-options.ts';
import { colours, progress } from './terminal.ts';

/** Long enough for a few thousand shards through a local model; the import itself is committed before the wait. */
const DEFAULT_EMBED_WAIT_S = 120;

const help = commandHelp({
  usage: [`import <path> [--format ${formatChoices.join('|')}] [--name NAME] [--apply] [--json] [options]`],
  description:
    'Reads a SOUL.md workspace folder (OpenClaw: SOUL.md, IDENTITY.md, memory/YYYY-MM-DD.md; soul.md: SOUL.md,\n' +
    'STYLE.md, MEMORY.md with a dated "## Log") or one markdown file with YAML frontmatter, and shows what it would\n' +
    'create: the soul (name, description, essence), its traits (provenance "imported from <file>:<heading>") and\n' +
    'one shard per dated memory entry (created on its date, the file as its source). Nothing is written without\n' +
    '--apply, and a dry run never creates the database. Only the workspace is read: a symbolic link out of it is refused.\n' +
    'A soul of that name is merged into (the plan says so): it keeps its name, description and essence, gets only the\n' +
    'traits and shards it lacks (nothing is added twice), and a new principle that nearly repeats one of its traits is\n' +
    'shown beside it (~). When the new traits would pass the trait limit, the plan is shown and the import refused (exit 1).\n' +
    'The main file is stored with the soul, so `souls export` can write it anywhere with its other sections.\n' +
    'With similarity semantic (the built-in encoder, or --embedder-url), the write never waits for vectors: once it is\n' +
    'committed, the command waits up to --embed-wait seconds for the new shards\' vectors and says how many landed; the\n' +
    'others compare lexically until `souls reindex` (or a server) embeds them. An endpoint that is down fails nothing.',
  options: [
    ['--format F', 'the convention (default auto: told apart by frontmatter, IDENTITY.md, memory/, headings)'],
    ['--name NAME', "the soul's name when the files give none (an OpenClaw SOUL.md without IDENTITY.md)"],
    ['--apply', 'write the soul, traits and shards'],
    ['--json', 'print the plan (and with --apply, what was written) as JSON'],
    ['--embed-wait S', `similarity semantic: how long to wait, after the write, for the new shards' vectors (default ${DEFAULT_EMBED_WAIT_S}; 0: not at all)`],
  ],
  groups: ['database', 'settings'],
  examples: ['souls import ~/.openclaw/workspace                      # the plan', 'souls import ~/.openclaw/workspace --apply --db souls.db', 'souls import agents/aria.md --format frontmatter --json'],
});

/**
 * Similarity semantic: waits up to `seconds` for the imported shards' vectors (the queue is dropped when the
 * database closes); how many have one then. Null in other modes.
 */
async function landedVectors(db: SoulsDb, shardIds: readonly number[], seconds: number): Promise<{ model: string; shards: number; stored: number } | null> {
  if (!db.semantic) return null;
  if (shardIds.length > 0 && seconds > 0) {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, seconds * 1000)));
    // A failure leaves those shards lexical; the count below says so.
    await Promise.race([awaitEmbeddings(db).catch(() => {}), bound]);
    clearTimeout(timer);
  }
  const stored = shardIds.length === 0 ? 0 : (await getShardEmbeddings(db, shardIds)).size;
  return { model: db.semantic.embedder.model, shards: shardIds.length, stored };
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const clip = (text: string, width: number) => (text.length > width ? `${text.slice(0, width - 1)}…` : text);

/** The plan as the GraphQL API names it: ids as strings, times in ISO 8601, problems as field and message; the document left out. */
export function planAsJson(plan: ImportPlan) {
  const { document: _, existingSoulId, problems, ...rest } = plan;
  return {
    ...rest,
    existingSoulId: existingSoulId === null ? null : String(existingSoulId),
    traits: plan.traits.map((t) => ({ ...t, nearDuplicates: t.nearDuplicates.map((d) => ({ ...d, traitId: String(d.traitId) })) })),
    shards: plan.shards.map((s) => ({ ...s, createdAt: new Date(s.createdAt).toISOString() })),
    problems: problems.map((p) => ({ field: p.field, message: p.message })),
  };
}

function printPlan(plan: ImportPlan, path: string, io: CommandIo): void {
  const c = colours(io.stdout, io.env);
  const out: string[] = [];
  const newTraits = plan.traits.filter((t) => !t.present);
  const newShards = plan.shards.filter((s) => !s.present);
  out.push(c.bold(`Import plan: ${path} (${plan.format})`));
  out.push(plan.merge === null ? `  soul     ${c.green('create')} "${plan.name}"${plan.description ? ` — ${plan.description}` : ''}` : `  soul     ${c.yellow('merge')}: the import ${plan.merge}`);
  if (plan.existingSoulId === null) out.push(`  essence  ${plan.essence.split(/\n\s*\n/).length} paragraph(s), ${[...plan.essence].length} characters`);
  out.push(`  traits   ${newTraits.length} to add, ${plan.traits.length - newTraits.length} already there`);
  for (const t of plan.traits) {
    out.push(`    ${t.present ? c.dim('=') : c.green('+')} ${clip(t.principle, 72)}  ${c.dim(`(${t.provenance.replace(/^imported from /, '')})`)}`);
    for (const d of t.nearDuplicates) out.push(`      ${c.yellow('~')} near trait ${d.traitId} (similarity ${d.similarity.toFixed(2)}): ${clip(d.principle, 64)}`);
  }
  const near = plan.traits.filter((t) => t.nearDuplicates.length > 0).length;
  if (near > 0) out.push(`    ${c.yellow(`${near} new principle(s) nearly repeat one the soul has (~): added all the same; merge them in a level-up, or drop them from the file`)}`);
  const files = new Set(plan.shards.map((s) => s.source)).size;
  out.push(`  shards   ${newShards.length} to add, ${plan.shards.length - newShards.length} already there, from ${files} file(s)`);
  for (const s of plan.shards.slice(0, 20)) out.push(`    ${s.present ? c.dim('=') : c.green('+')} ${day(s.createdAt)}  ${clip(s.content, 60)}  ${c.dim(s.source)}`);
  if (plan.shards.length > 20) out.push(`    … and ${plan.shards.length - 20} more`);
  if (plan.notes.length > 0) {
    out.push('  notes');
    for (const note of plan.notes) out.push(`    - ${note}`);
  }
  io.stdout.write(`${out.join('\n')}\n`);
}

/** The plan cannot be applied: shown all the same, then the first problem is the command's error. */
function refuse(plan: ImportPlan, path: string, apply: boolean, json: boolean, io: CommandIo): never {
  if (json) io.stdout.write(`${JSON.stringify({ applied: false, plan: planAsJson(plan) }, null, 2)}\n`);
  else {
    printPlan(plan, path, io);
    io.stdout.write(apply ? 'Nothing written.\n' : 'Dry run: nothing written, and --apply would be refused.\n');
  }
  throw plan.problems[0];
}

function resultAsJson(result: ImportResult, vectors: Awaited<ReturnType<typeof landedVectors>>) {
  return {
    soul: { id: String(result.soul.id), name: result.soul.name },
    created: result.created,
    traitsAdded: result.traitIds.length,
    shardsAdded: result.shardIds.length,
    readySoulIds: result.readySoulIds.map(String),
    ...(vectors ? { vectors } : {}),
  };
}

export const importCommand: Command = {
  name: 'import',
  summary: 'import a SOUL.md workspace or file as a soul (a dry run unless --apply)',
  help,
  async run(argv, io) {
    const { positionals, values, config } = splitOptions('import', argv, ['path'], { format: { type: 'string' }, name: { type: 'string' }, apply: { type: 'boolean' }, json: { type: 'boolean' }, 'embed-wait': { type: 'string' } }, io.env);
    const waitRaw = typeof values['embed-wait'] === 'string' ? values['embed-wait'] : String(DEFAULT_EMBED_WAIT_S);
    const embedWait = Number(waitRaw);
    if (!/^\d+(\.\d+)?$/.test(waitRaw) || embedWait > 86_400) throw new SoulsError(`--embed-wait must be a number of seconds from 0 to 86400, got ${JSON.stringify(waitRaw)}`);
    const [path] = positionals;
    const format = parseFormat('--format', typeof values.format === 'string' ? values.format : 'auto');
    const { files } = readWorkspace(path);
    const apply = values.apply === true;
    // A dry run reads the database when there is one and creates nothing: without one, every soul would be new.
    let db: SoulsDb;
    if (apply) db = await openDb(config);
    else if (databaseExists(config)) db = await openSoulsDbAsync({ path: config.db, settings: config.settings, embedder: embedderOf(config), mode: 'read-only' });
    else db = openSoulsDb({ settings: config.settings, embedder: embedderOf(config) });
    try {
      const plan = await planImport(db, files, { format, name: typeof values.name === 'string' ? values.name : null });
      if (plan.problems.length > 0) refuse(plan, path, apply, values.json === true, io);
      if (!apply) {
        if (values.json) io.stdout.write(`${JSON.stringify({ applied: false, plan: planAsJson(plan) }, null, 2)}\n`);
        else {
          printPlan(plan, path, io);
          io.stdout.write('Dry run: nothing written. Run again with --apply to import.\n');
        }
        return 0;
      }
      const fresh = plan.shards.filter((s) => !s.present).length;
      const bar = fresh > 0 && io.stderr.isTTY === true ? progress(io.stderr, 'shards', fresh) : null;
      const result = await applyImport(db, plan, (done) => bar?.update(done));
      bar?.finish();
      const vectors = await landedVectors(db, result.shardIds, embedWait);
      if (values.json) io.stdout.write(`${JSON.stringify({ applied: true, plan: planAsJson(plan), result: resultAsJson(result, vectors) }, null, 2)}\n`);
      else {
        printPlan(plan, path, io);
        if (!result.created && result.traitIds.length === 0 && result.shardIds.length === 0) io.stdout.write(`Nothing new: "${result.soul.name}" (id ${result.soul.id}) already has every trait and shard of these files.\n`);
        else io.stdout.write(
          `${result.created ? 'Created' : 'Updated'} "${result.soul.name}" (id ${result.soul.id}): ${result.traitIds.length} trait(s) and ${result.shardIds.length} shard(s) added` +
            `${result.readySoulIds.length > 0 ? '; ready for refinement' : ''}.\n`,
        );
        if (vectors && vectors.shards > 0) {
          io.stdout.write(
            `Vectors (${vectors.model}): ${vectors.stored} of ${vectors.shards} new shard(s) have theirs` +
              `${vectors.stored < vectors.shards ? '; the others compare lexically until `souls reindex` (or a running server) embeds them' : ''}.\n`,
          );
        }
      }
      return 0;
    } finally {
      await closeSoulsDb(db);
    }
  },
};
