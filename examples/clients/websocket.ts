// A plain WebSocket for Souls, no GraphQL library: the graphql-transport-ws protocol by hand (docs/game-engines.md has
// it in brief), with the WebSocket of browsers, Node 22 and later, Deno and Bun. Queries and mutations work over it
// too: one `next`, then `complete`.

export type Operation = { query: string; variables?: Record<string, unknown> };
export type Sink = { next(result: { data?: unknown; errors?: unknown[] }): void; error(reason: unknown): void; complete(): void };

/** Runs one operation on its own socket; returns a function that stops it and closes the socket. */
export function subscribe(url: string, token: string | undefined, operation: Operation, sink: Sink): () => void {
  const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
  const send = (message: object) => socket.send(JSON.stringify(message));
  let over = false;
  const end = (report: () => void) => {
    if (over) return;
    over = true;
    report();
    socket.close(1000);
  };
  socket.onopen = () => send({ type: 'connection_init', payload: token ? { authorization: `Bearer ${token}` } : {} });
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data));
    if (message.type === 'connection_ack') send({ id: 'op', type: 'subscribe', payload: operation });
    else if (message.type === 'ping') send({ type: 'pong' });
    else if (message.type === 'next') sink.next(message.payload); // { data, errors? }, one per event
    else if (message.type === 'error') end(() => sink.error(message.payload)); // refused: [{ message, extensions }]
    else if (message.type === 'complete') end(() => sink.complete());
  };
  // 4403: no valid token (retrying will not help); 1001, 1006, 4408, 4500: reconnect with backoff and subscribe again.
  socket.onclose = (event) => end(() => sink.error(new Error(`closed ${event.code} ${event.reason}`)));
  return () =>
    end(() => {
      if (socket.readyState === WebSocket.OPEN) send({ id: 'op', type: 'complete' });
    });
}
