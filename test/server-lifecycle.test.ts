// Starting and stopping the HTTP server on its own (src/server/lifecycle.ts): a failed listen is the caller's to
// report, and stopping does not wait for a client that keeps its connection alive.
import { createServer, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { closingConnections, listen } from '../src/server/lifecycle.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function server() {
  const created = createServer((_req, res) => res.end('ok'));
  const connections = closingConnections(created);
  cleanups.push(() => (created.listening ? connections.close() : Promise.resolve()));
  return { server: created, connections };
}

describe('listening', () => {
  it('resolves with the port bound and the URL of the path there', async () => {
    const { server: one } = server();
    const listening = await listen(one, 0, '127.0.0.1', '/graphql');
    expect(listening.port).toBeGreaterThan(0);
    expect(listening.url).toBe(`http://127.0.0.1:${listening.port}/graphql`);
    expect(await (await fetch(listening.url)).text()).toBe('ok');
  });

  it('rejects a port in use, and only the caller hears it: the error listeners it had are back afterwards', async () => {
    const { server: first } = server();
    const { port } = await listen(first, 0, '127.0.0.1', '/');
    const { server: second } = server();
    const heard: Error[] = [];
    const forwarder = (error: Error) => heard.push(error);
    second.on('error', forwarder);
    await expect(listen(second, port, '127.0.0.1', '/')).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(heard).toEqual([]);
    expect(second.listeners('error')).toEqual([forwarder]);
  });
});

describe('stopping', () => {
  it('ends connections still busy (an event stream that never ends), so that the server stops at once', async () => {
    const streaming = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(':\n\n');
    });
    const connections = closingConnections(streaming);
    const { port } = await listen(streaming, 0, '127.0.0.1', '/');
    const { ended } = await new Promise<{ ended: Promise<void> }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
        res.once('data', () => resolve({ ended: new Promise<void>((closed) => res.once('close', () => closed())) }));
      });
      req.on('error', () => {});
      req.once('socket', (socket) => socket.on('error', reject));
      req.end();
    });
    await connections.close();
    await ended;
    expect(streaming.listening).toBe(false);
  });
});
