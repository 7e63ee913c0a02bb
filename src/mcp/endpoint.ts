// /mcp on the API's server. The MCP SDK (with zod and ajv, about 20 MiB resident) is loaded by the first request to /mcp,
// so a server no agent talks to over MCP never holds it; refiners' regrets are followed from the start all the same.
import type { McpEndpoint, McpEndpointOptions } from './http.ts';
import { collectRegrets } from './refiner.ts';

export const MCP_PATH = '/mcp';

export function mcpEndpoint(options: McpEndpointOptions): McpEndpoint {
  const { db, pubsub } = options;
  // A refiner regrets a trait or a level-up taken back through any transport, GraphQL and the web app included.
  let regrets = pubsub.subscribe('soulChanged');
  let closed = false;
  void (async () => {
    while (!closed) {
      try {
        for await (const event of regrets) {
          if (event.kind === 'TRAIT_REVERTED' || event.kind === 'LEVEL_UP_REVERTED') await collectRegrets(db, pubsub).catch(() => undefined);
        }
        return;
      } catch {
        // Cut off as too slow (SUBSCRIBER_TOO_SLOW): followed again, and what was missed reconciled once.
        if (closed) return;
        regrets = pubsub.subscribe('soulChanged');
        void collectRegrets(db, pubsub).catch(() => undefined);
      }
    }
  })();
  let loaded: Promise<Omit<McpEndpoint, 'handles'>> | null = null;
  const endpoint = () => (loaded ??= import('./http.ts').then(({ createMcpEndpoint }) => createMcpEndpoint(options)));
  return {
    handles: (req) => (req.url ?? '').split('?')[0] === MCP_PATH,
    serve: async (req, res) => (await endpoint()).serve(req, res),
    close: async () => {
      closed = true;
      await regrets.return?.();
      if (loaded) await (await loaded).close();
    },
  };
}
