// What the PostgreSQL bridge and its worker thread exchange (postgres-bridge.ts, postgres-worker.ts).
import type { MessagePort } from 'node:worker_threads';

export type WorkerData = { port: MessagePort; flags: SharedArrayBuffer; url: string; target: string; mode: 'create' | 'read-only' | 'migrate' };
export type Call = { id: number; method: string; args: unknown[] };
export type SerializedError = { domain: true; name: string; message: string; props: Record<string, unknown> } | { domain: false; message: string; code: string | null };
export type Answer = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: SerializedError };

/** flags[0]: answers posted (the main thread waits for it to change); flags[1]: 1 once this thread is exiting. */
export const ANSWERED = 0;
export const EXITED = 1;
