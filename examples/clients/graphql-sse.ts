// graphql-sse for Souls: queries, mutations and subscriptions over Server-Sent Events, for a client that cannot hold a
// WebSocket. graphql-sse retries any answer that is not a success without reading it; a refused token does not mend
// by waiting, so this client gives up at once on a 401 or 403 and keeps retrying network failures.
import { createClient, type Client } from 'graphql-sse';

/** `url` is the HTTP endpoint (http://127.0.0.1:4000/graphql); `token` a bearer token on a server with --tokens-file. */
export function soulsSseClient(url: string, token?: string, options: { singleConnection?: boolean } = {}): Client {
  let refusal: number | null = null;
  return createClient({
    url,
    singleConnection: options.singleConnection,
    headers: token ? { authorization: `Bearer ${token}` } : undefined,
    fetchFn: async (input: RequestInfo | URL, init?: RequestInit) => {
      const response = await fetch(input, init);
      refusal = response.status === 401 || response.status === 403 ? response.status : null;
      return response;
    },
    retry: async (retries: number) => {
      if (refusal !== null) throw new Error(`refused with HTTP ${refusal}: check the token`);
      await new Promise((resolve) => setTimeout(resolve, 1000 * 2 ** retries));
    },
  });
}
