import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { renderGraphiQL, type GraphiQLOptions } from 'graphql-yoga';

/** GraphiQL's assets, served from node_modules so the page works with no network (Yoga points at a CDN by default). */
export const GRAPHIQL_ASSETS = '/graphiql-assets/';

const dist = new URL('./dist/', import.meta.resolve('@graphql-yoga/graphiql/package.json'));
const assets = new Map<string, string>([
  ['graphiql.css', 'text/css; charset=utf-8'],
  ['yoga-graphiql.umd.js', 'text/javascript; charset=utf-8'],
  ['monacoeditorwork/editor.worker.bundle.js', 'text/javascript; charset=utf-8'],
  ['monacoeditorwork/json.worker.bundle.js', 'text/javascript; charset=utf-8'],
  ['monacoeditorwork/graphql.worker..bundle.js', 'text/javascript; charset=utf-8'],
]);

export function renderLocalGraphiQL(options: GraphiQLOptions): string {
  // GraphiQL opens its first tab on `initialQuery`; Yoga only passes `defaultQuery`, which later GraphiQL uses for new tabs.
  const withInitial = { ...options, initialQuery: options.defaultQuery } as GraphiQLOptions;
  return renderGraphiQL(withInitial).replace(/https:\/\/unpkg\.com\/@graphql-yoga\/graphiql@[^/]+\/dist\//g, GRAPHIQL_ASSETS);
}

/** Answers a request for one of the known asset files; false for anything else. */
export async function serveGraphiQLAsset(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const path = (req.url ?? '').split('?')[0];
  if (!path.startsWith(GRAPHIQL_ASSETS) || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
  const name = path.slice(GRAPHIQL_ASSETS.length);
  const type = assets.get(name);
  if (!type) return false;
  const body = await readFile(new URL(name, dist));
  res.writeHead(200, { 'content-type': type, 'content-length': body.length, 'cache-control': 'public, max-age=86400' });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}
