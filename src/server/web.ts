import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The character-sheet app, built by `npm run build:web` (run by `npm install`) into web/dist. */
const root = fileURLToPath(new URL('../../web/dist/', import.meta.url));

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
  '.ico': 'image/x-icon',
};

/** Serves `/` and the built assets; false for every other path (the API and GraphiQL live at /graphql). */
export async function serveWebApp(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  let path: string;
  try {
    path = decodeURIComponent((req.url ?? '/').split('?')[0]);
  } catch {
    res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('Malformed URL: a percent sign must start a valid UTF-8 escape.\n');
    return true;
  }
  const relative = path === '/' || path === '/index.html' ? 'index.html' : path.startsWith('/assets/') ? path.slice(1) : null;
  if (relative === null) return false;
  const file = normalize(root + relative);
  if (!file.startsWith(root) || file.includes(`${sep}..${sep}`)) return false;
  let body: Buffer;
  try {
    body = await readFile(file);
  } catch {
    if (relative !== 'index.html') return false;
    res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('The web app is not built yet: run `npm run build:web` (npm install does it), then reload. The API is at /graphql.\n');
    return true;
  }
  const immutable = relative.startsWith('assets/');
  res.writeHead(200, {
    'content-type': types[extname(file)] ?? 'application/octet-stream',
    'content-length': body.length,
    'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    'x-content-type-options': 'nosniff',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}
