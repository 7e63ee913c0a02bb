// souls copy: move an embedded SQLite database into PostgreSQL, then prove it by rendering every soul on both sides.
import { closeSoulsDb, listDormantSouls, listSouls, openSoulsDb, openSoulsDbAsync, renderSouls, SoulsError, type SoulsDb } from '../engine/index.ts';
import { databaseExists } from './database.ts';
import { openPostgresStore, describeDb, isPostgresUrl } from '../store/postgres-pool.ts';
import { pgDataTables } from '../store/postgres-schema.ts';
import { openSqliteStore } from '../store/sqlite.ts';
import { parseArguments, UsageError } from './arguments.ts';
import type { Command } from './command.ts';
import { commandHelp } from './help.ts';

/** Copying a large file is one transaction: it may take minutes. */
const COPY_TIMEOUT_MS = 30 * 60_000;

/** Every soul's block, with and without provenance, and its level history: what must read the same on both sides. */
async function fingerprints(db: SoulsDb, ids: readonly number[]): Promise<Map<number, string>> {
  const [plain, cited] = [await renderSouls(db, ids), await renderSouls(db, ids, { includeProvenance: true })];
  const history = await db.store.levelHistory(ids);
  return new Map(ids.map((id) => [id, `${plain.get(id)}\n${cited.get(id)}\n${JSON.stringify(history.filter((e) => e.soulId === id))}`]));
}

export const copyCommand: Command = {
  name: 'copy',
  summary: 'copy a SQLite database into an empty PostgreSQL one, verified soul by soul',
  help: commandHelp({
    usage: ['copy --from <sqlite file> --to <postgres url>'],
    description:
      'Copies every row (ids, timestamps, citations, level history and reverts, embeddings) in one transaction into a\n' +
      'PostgreSQL database that has no souls yet (its tables are created if needed), moves its id sequences past the\n' +
      'copied ids, analyzes the tables, then renders every soul on both sides and compares the bytes. Reads the file only.',
    examples: ['souls copy --from ./data/souls.db --to postgres://souls@db.internal/souls'],
  }),
  async run(argv, io) {
    const { values } = parseArguments('copy', argv, { options: { from: { type: 'string' }, to: { type: 'string' } } }, io.env);
    const from = values.from as string | undefined;
    const to = values.to as string | undefined;
    if (!from || !to) throw new UsageError('copy needs --from <sqlite file> and --to <postgres url>');
    if (isPostgresUrl(from) || !databaseExists({ db: from })) throw new UsageError(`--from must be an existing SQLite file, got ${describeDb(from)}`);
    if (!isPostgresUrl(to)) throw new UsageError(`--to must be a postgres:// URL, got ${to}`);
    const source = openSoulsDb({ store: openSqliteStore({ path: from, mode: 'read-only' }) });
    let target: SoulsDb | null = null;
    try {
      const store = await openPostgresStore({ url: to });
      target = await openSoulsDbAsync({ store });
      const { tables, idFloors } = (source.store as ReturnType<typeof openSqliteStore>).exportTables(pgDataTables);
      const copied = await store.importTables(tables, idFloors, COPY_TIMEOUT_MS);
      // Statistics for the copied rows now: until autovacuum's next visit the planner would take the tables for empty
      // and scan every pending shard on each write's gate query.
      await store.optimize();
      const ids = [...(await listSouls(source)), ...(await listDormantSouls(source))].map((s) => s.id).sort((a, b) => a - b);
      const [left, right] = [await fingerprints(source, ids), await fingerprints(target, ids)];
      const differing = ids.filter((id) => left.get(id) !== right.get(id));
      if (differing.length > 0) throw new SoulsError(`copied, but ${differing.length} souls render differently in ${describeDb(to)}: ${differing.slice(0, 10).join(', ')}`);
      io.stdout.write(
        `Copied ${from} into ${describeDb(to)}: ${pgDataTables.map((t) => `${copied[t]} ${t}`).join(', ')}\n` +
          `Verified: all ${ids.length} souls render byte-identical on both sides (blocks with and without provenance, level history)\n`,
      );
      return 0;
    } finally {
      await closeSoulsDb(source);
      if (target) await closeSoulsDb(target);
    }
  },
};
