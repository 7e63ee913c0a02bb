// Cross-site request forgery: a page of another site can make a browser send a "simple" request (a GET, or a POST of
// a form or plain text) without a preflight, so such a request must carry a header no page can add without one. A
// client that is not a browser page needs none for a GET: what a browser sends for another site's page always
// carries an Origin, a cookie or a Sec-Fetch-Site naming another site (SPEC §13). Mutations are never run over GET
// (Yoga answers 405), so a GET can only read, and the Origin check (refusals.ts) has refused other sites' pages.
import { createGraphQLError, type Plugin } from 'graphql-yoga';

/** Header names a request can carry to show it is not a cross-site form post or a cross-site page's GET. */
export const CSRF_HEADERS = ['x-graphql-yoga-csrf', 'authorization'];

/** What a form or a page's plain request can send without a preflight. */
const SIMPLE_CONTENT_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'];

/** A page of this origin, or no page at all (typed in the address bar): `same-site` is another origin, another port of localhost too. */
const OWN_SITE_FETCHES = ['same-origin', 'none'];

/** A GET that no page of another site can have made: no Origin, no cookie, no Sec-Fetch-Site naming another site. */
export function isGetWithoutBrowserContext(request: Pick<Request, 'method' | 'headers'>): boolean {
  if (request.method !== 'GET' || request.headers.has('origin') || request.headers.has('cookie')) return false;
  const site = request.headers.get('sec-fetch-site');
  return site === null || OWN_SITE_FETCHES.includes(site.toLowerCase());
}

function isPreflighted(contentType: string | null): boolean {
  return contentType !== null && !SIMPLE_CONTENT_TYPES.some((simple) => contentType.toLowerCase().startsWith(simple));
}

export function csrfPrevention(): Plugin {
  return {
    onRequestParse: ({ request }) => {
      if (isPreflighted(request.headers.get('content-type')) || isGetWithoutBrowserContext(request)) return;
      if (CSRF_HEADERS.some((name) => request.headers.has(name))) return;
      throw createGraphQLError(
        'CSRF prevention: a GET from a browser (with an Origin, a cookie or Sec-Fetch-Site naming another site) and a POST that is not JSON must carry the x-graphql-yoga-csrf header (any value) or Authorization',
        { extensions: { code: 'CSRF_HEADER_REQUIRED', http: { status: 403 } } },
      );
    },
  };
}
