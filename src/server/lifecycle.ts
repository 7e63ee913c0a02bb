// Starting and stopping the HTTP server: listening (a failed listen is the caller's to report), and every open
// connection tracked so that stopping never waits on a keep-alive socket.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export type Listening = { port: number; host: string; url: string };

/** Listens on host:port (port 0 picks a free one); resolves with the address actually bound and the URL of `path` there. */
export function listen(server: Server, port: number, host: string, path: string): Promise<Listening> {
  return new Promise((resolve, reject) => {
    // ws forwards the server's errors to graphql-ws, which prints them with a stack; a failed listen (a port in
    // use) is the caller's to report, so only `reject` hears it.
    const forwarders = server.listeners('error') as Array<(error: Error) => void>;
    server.removeAllListeners('error');
    const restore = () => {
      server.off('error', failed);
      for (const listener of forwarders) server.on('error', listener);
    };
    const failed = (error: Error) => {
      restore();
      reject(error);
    };
    server.on('error', failed);
    server.listen(port, host, () => {
      restore();
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : port;
      const shownHost = host.includes(':') ? `[${host}]` : host;
      resolve({ port: bound, host, url: `http://${shownHost}:${bound}${path}` });
    });
  });
}

/** Stops listening once every connection, kept alive or not, is gone: `close` destroys those still open. */
export function closingConnections(server: Server): { close(): Promise<void> } {
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return {
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
