/** Opening the database for a command, and finding the soul a command names. */
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EmbedderConfig, ServerConfig } from '../server/config.ts';
import { createEndpointEmbedder } from '../embedder/endpoint.ts';
import { isPostgresUrl } from '../store/postgres-pool.ts';
import { closeSoulsDb, getSoul, getSoulByName, openSoulsDbAsync, SoulsError, type Embedder, type Soul, type SoulsDb } from '../engine/index.ts';

type DbConfig = Pick<ServerConfig, 'db' | 'settings'> & { embedder?: EmbedderConfig | null; dbTimeoutMs?: number; dbConnectTimeoutMs?: number; dbPoolSize?: number };

/** The configured embeddings endpoint as the database's embedder; undefined: the built-in encoder (or no semantic). */
export function embedderOf(config: { embedder?: EmbedderConfig | null }): Embedder | undefined {
  const e = config.embedder;
  return e ? createEndpointEmbedder({ url: e.url, model: e.model, key: e.key(), batchSize: e.batchSize, concurrency: e.concurrency, timeoutMs: e.timeoutMs, maxAnswerBytes: e.maxAnswerBytes }) : undefined;
}

/** For the commands that write: creates the folder and the file if needed. */
export function openDb(config: DbConfig): Promise<SoulsDb> {
  if (config.db !== ':memory:' && !isPostgresUrl(config.db)) mkdirSync(dirname(config.db), { recursive: true });
  return openSoulsDbAsync({ path: config.db, settings: config.settings, embedder: embedderOf(config), timeoutMs: config.dbTimeoutMs, connectTimeoutMs: config.dbConnectTimeoutMs, poolSize: config.dbPoolSize });
}

/** Whether a database file is there to open (never true for :memory:; a PostgreSQL URL answers when opened). */
export function databaseExists(config: Pick<ServerConfig, 'db'>): boolean {
  if (isPostgresUrl(config.db)) return true;
  return config.db !== ':memory:' && statSync(config.db, { throwIfNoEntry: false })?.isFile() === true;
}

/** For the commands that only read: the database must exist already, so a mistyped path creates nothing. */
export async function openExistingDb(config: DbConfig & Pick<ServerConfig, 'dbFrom'>, command: string): Promise<SoulsDb> {
  if (config.db !== ':memory:' && !databaseExists(config)) {
    throw new SoulsError(`no database at ${config.db} (${config.dbFrom}): ${command} only reads an existing one; \`souls serve\` or \`souls seed-demo\` creates it`);
  }
  // Read-only: never created, never migrated, writes refused.
  return openSoulsDbAsync({ path: config.db, settings: config.settings, embedder: embedderOf(config), mode: 'read-only', timeoutMs: config.dbTimeoutMs, connectTimeoutMs: config.dbConnectTimeoutMs });
}

/** A soul by id (digits) or by name (any case or width: names are looked up by their folded key); dormant ones too. */
export async function findSoul(db: SoulsDb, target: string): Promise<Soul> {
  const soul = /^[1-9][0-9]{0,14}$/.test(target) ? await getSoul(db, Number(target)) : await getSoulByName(db, target);
  if (!soul) throw new SoulsError(`no soul ${target}`);
  return soul;
}

/** Runs `body` over a database opened for reading, and closes it whatever happens. */
export async function withExistingDb<T>(config: DbConfig & Pick<ServerConfig, 'dbFrom'>, command: string, body: (db: SoulsDb) => Promise<T>): Promise<T> {
  const db = await openExistingDb(config, command);
  try {
    return await body(db);
  } finally {
    await closeSoulsDb(db);
  }
}

