// What the PostgreSQL bridge and its worker thread exchange (postgres-bridge.ts, postgres-worker.ts).
import type { MessagePort } from 'node:worker_threads';

export type WorkerData = { port: MessagePort; flags: SharedArrayBuffer; url: string; target: string; mode: 'create' | 'read-only' | 'migrate'; connectTimeoutMs: number };
export type Call = { id: number; method: string; args: unknown[] };
export type SerializedError = { domain: true; name: string; message: string; props: Record<string, unknown> } | { domain: false; message: string; code: string | null };
export type Answer = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: SerializedError };

/**
 * flags[0]: answers posted (the main thread waits for it to change); flags[1]: 1 once this thread is exiting;
 * flags[2]: 1 while the database is taken for hung (calls fail at once until the worker's probe hears it again).
 */
export const ANSWERED = 0;
export const EXITED = 1;
export const DOWN = 2;
export const FLAG_COUNT = 3;

/** Posted by the main thread after a call timed out: the worker probes the database, out of the call queue. */
export const PROBE = '$probe';
