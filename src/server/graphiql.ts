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

/** The character sheet's key for the token it keeps in localStorage (web/src/api.ts); GraphiQL on the same origin reads it. */
const WEB_APP_TOKEN_KEY = 'souls.token';
const TOKEN_PLACEHOLDER = '<a token from the tokens file>';

/** The diamond of the character sheet's icon, served from here so the page needs no other host. */
const FAVICON =
  "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'><path d='M16 2 29 16 16 30 3 16z' fill='#7a2e2e'/><path d='M16 8 23 16 16 24 9 16z' fill='#e9c46a'/></svg>";

const RENDER_CALL = 'YogaGraphiQL.renderYogaGraphiQL(root,';
const CHARSET = '<meta charset=utf-8>';

/**
 * A phone renders the page at its own width (without the viewport tag it lays it out at 980 px and scales it to 40 %),
 * and below 600 px the response goes under the editors instead of beside them, each pane at full width.
 */
const NARROW = `<meta name=viewport content="width=device-width, initial-scale=1"><style>@media (max-width: 600px) {
  .graphiql-sessions > div:has(> .graphiql-editors) { flex-direction: column; }
  .graphiql-sessions > div > .graphiql-editors, .graphiql-sessions > div > .graphiql-response { flex: 1 1 0 !important; min-height: 14rem; }
  .graphiql-horizontal-drag-bar { display: none; }
}</style>`;

/**
 * Runs in the page before GraphiQL starts. Links carry an operation: `?query=`, `variables` and `operationName` open
 * it (Yoga keeps `?query=` in step with the editor). On a server that requires tokens, requests carry an
 * Authorization header from the headers editor, filled with the token the character sheet stored, or a placeholder
 * to replace; subscriptions (graphql-ws) send the same header as connectionParams when the socket opens.
 */
function pageScript(requiresToken: boolean): string {
  const constants = { requiresToken, tokenKey: WEB_APP_TOKEN_KEY, placeholder: TOKEN_PLACEHOLDER };
  return `<script>function renderSoulsGraphiQL(root, options) {
  const { requiresToken, tokenKey, placeholder } = ${JSON.stringify(constants)};
  const params = new URLSearchParams(location.search);
  const read = (key) => { try { return localStorage.getItem(key); } catch { return null; } };
  const chosen = { ...options };
  if (params.get('query')) chosen.initialQuery = params.get('query');
  if (params.get('variables')) chosen.initialVariables = params.get('variables');
  if (params.get('operationName')) chosen.operationName = params.get('operationName');
  if (requiresToken) {
    const stored = read(tokenKey);
    const edited = () => {
      try {
        const state = JSON.parse(read('graphiql:tabState'));
        return JSON.parse(state.tabs[state.activeTabIndex].headers || '{}') || {};
      } catch {
        return {};
      }
    };
    const authorization = (headers) => {
      const name = Object.keys(headers).find((key) => key.toLowerCase() === 'authorization');
      return name ? String(headers[name]) : null;
    };
    const json = (headers) => JSON.stringify(headers, null, 2);
    const offered = json({ Authorization: 'Bearer ' + (stored || placeholder) });
    chosen.headers = offered;
    chosen.initialHeaders = !stored && authorization(edited()) ? json(edited()) : offered;
    chosen.connectionParams = () => ({ authorization: authorization(edited()) || (stored ? 'Bearer ' + stored : '') });
  }
  YogaGraphiQL.renderYogaGraphiQL(root, chosen);
}</script>`;
}

/** Yoga's GraphiQL page, with every asset served from this server and the behaviour of `pageScript`. */
export function localGraphiQL(options: { requiresToken: boolean }): (graphiql: GraphiQLOptions) => string {
  return (graphiql) => {
    // GraphiQL opens its first tab on `initialQuery`; Yoga only passes `defaultQuery`, which later GraphiQL uses for new tabs.
    const html = renderGraphiQL({ ...graphiql, initialQuery: graphiql.defaultQuery } as GraphiQLOptions)
      .replace(/https:\/\/unpkg\.com\/@graphql-yoga\/graphiql@[^/]+\/dist\//g, GRAPHIQL_ASSETS)
      .replace(/<link rel=icon href=[^>]+>/, `<link rel=icon href=${GRAPHIQL_ASSETS}favicon.svg type=image/svg+xml>`);
    if (!html.includes(RENDER_CALL) || !html.includes(`${GRAPHIQL_ASSETS}favicon.svg`) || !html.includes(CHARSET)) throw new Error('Yoga’s GraphiQL page changed: update src/server/graphiql.ts');
    return html.replace(CHARSET, `${CHARSET}${NARROW}`).replace(RENDER_CALL, 'renderSoulsGraphiQL(root,').replace('<script', `${pageScript(options.requiresToken)}<script`);
  };
}

/** Answers a request for one of the known asset files; false for anything else. */
export async function serveGraphiQLAsset(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const path = (req.url ?? '').split('?')[0];
  if (!path.startsWith(GRAPHIQL_ASSETS) || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
  const name = path.slice(GRAPHIQL_ASSETS.length);
  const type = name === 'favicon.svg' ? 'image/svg+xml' : assets.get(name);
  if (!type) return false;
  const body = name === 'favicon.svg' ? Buffer.from(FAVICON) : await readFile(new URL(name, dist));
  res.writeHead(200, { 'content-type': type, 'content-length': body.length, 'cache-control': 'public, max-age=86400' });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}
