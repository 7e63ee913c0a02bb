import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SoulsDb } from '../engine/index.ts';

export const HEALTH_PATH = '/health';
export const READY_PATH = '/ready';

/** Why the database did not answer, for the operator's log (the client only learns that it did not). */
export type ReadinessFailure = (error: unknown) => void;

/** Whether Redis answers, when events go through it (its own log says why not). */
export type RedisReadiness = () => Promise<boolean>;

/**
 * `/health`: the process answers. `/ready`: the database answers a query, and Redis a PING when events go through
 * it. Neither needs a token nor reveals more than that, so probes (load balancers, orchestrators) reach them whatever
 * Host or Origin they send. Returns false for any other path.
 */
export function serveHealth(req: IncomingMessage, res: ServerResponse, db: SoulsDb, failed: ReadinessFailure, redisReady?: RedisReadiness): boolean {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== HEALTH_PATH && path !== READY_PATH) return false;
  req.resume();
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    answer(req, res, 405, { status: 'error', reason: 'only GET and HEAD are allowed' }, { allow: 'GET, HEAD' });
    return true;
  }
  if (path === HEALTH_PATH) {
    answer(req, res, 200, { status: 'ok' });
    return true;
  }
  void serveReady(req, res, db, failed, redisReady);
  return true;
}

async function serveReady(req: IncomingMessage, res: ServerResponse, db: SoulsDb, failed: ReadinessFailure, redisReady?: RedisReadiness): Promise<void> {
  try {
    await db.store.ping();
  } catch (error) {
    failed(error);
    return answer(req, res, 503, { status: 'unavailable', reason: 'the database does not answer a query' });
  }
  const redisUp = redisReady === undefined || (await redisReady().catch(() => false));
  if (redisUp) answer(req, res, 200, { status: 'ok' });
  else answer(req, res, 503, { status: 'unavailable', reason: 'Redis does not answer (events cannot reach the other replicas)' });
}

function answer(req: IncomingMessage, res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(req.method === 'HEAD' ? undefined : text);
}
